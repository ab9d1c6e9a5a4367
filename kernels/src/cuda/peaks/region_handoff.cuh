// How the region kernels (the fused region kernel's tiles, the region peak kernel's regions) hand
// their results to the host without a copy back (RegionPeakJob): candidates into the host's mapped
// slots first, the rest on the device; each hand-off unit (a fused tile, a region of the peak
// kernel) its candidate count into the host's mapped unit counts, which the host sums once the
// stream is done.
//
// A warp with candidates reserves their slots with one atomic on the call's counter
// (RegionPeakJob::callCounter); a warp without takes none, and no block waits on another's or on
// a block-wide reservation (session 41's ncu: the hand-off's barriers behind thread 0's atomic were
// 13 % of the region kernel). The counters alternate between calls: each unit zeroes the next
// call's (nextCounter), so nothing is uploaded or memset to zero it.
#pragma once

#include "common/region_peaks.hpp"
#include "cuda/peaks/region_peaks.hpp"

namespace nccmatch::cuda {

// Candidate `slot` of the call: the first job.hostCandidateSlots go to the host's mapped slots,
// the others up to job.capacity to the device list at the same index.
__device__ __forceinline__ void storeRegionCandidate(const RegionPeakJob& job, int slot, const RegionPeak& peak) {
  if (slot < job.hostCandidateSlots)
    job.hostCandidates[slot] = peak;
  else if (slot < job.capacity)
    job.candidates[slot] = peak;
}

// The warp's candidates, lane l holding found[u] for its positions: their number in the warp
// (every lane) and, in *before, how many the lanes below this one hold. All lanes call it.
template <int kPer>
__device__ __forceinline__ int warpCandidateCount(const bool (&found)[kPer], int* before) {
  const int lane = int(threadIdx.x) & 31;
  int mine = 0;
#pragma unroll
  for (int u = 0; u < kPer; ++u) mine += found[u] ? 1 : 0;
  int upTo = mine;  // inclusive scan over the warp's lanes
#pragma unroll
  for (int d = 1; d < 32; d <<= 1) {
    const int v = __shfl_up_sync(0xffffffffu, upTo, d);
    if (lane >= d) upTo += v;
  }
  *before = upTo - mine;
  return __shfl_sync(0xffffffffu, upTo, 31);
}

// Stores the warp's `total` candidates (warpCandidateCount's), each as sample(x, y) (a RegionPeak),
// in slots reserved by one atomic of lane 0; a warp without candidates takes none. All lanes call
// it with the same total.
template <int kPer, typename Sample>
__device__ __forceinline__ void storeWarpCandidates(const RegionPeakJob& job, const Sample& sample,
                                                    const bool (&found)[kPer], const int (&xs)[kPer],
                                                    const int (&ys)[kPer], int before, int total) {
  if (total == 0) return;
  unsigned base = 0;
  if ((threadIdx.x & 31) == 0) base = atomicAdd(job.callCounter, unsigned(total));
  int slot = int(__shfl_sync(0xffffffffu, base, 0)) + before;
#pragma unroll
  for (int u = 0; u < kPer; ++u)
    if (found[u]) storeRegionCandidate(job, slot++, sample(xs[u], ys[u]));
}

// A unit's candidate count where the host reads it (one thread, once the unit's warps' counts are
// summed), and the next call's counter zeroed.
__device__ __forceinline__ void publishUnitCount(const RegionPeakJob& job, int unit, int count) {
  job.unitCounts[unit] = count;
  *job.nextCounter = 0u;
}

}  // namespace nccmatch::cuda
