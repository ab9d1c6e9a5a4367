// How the region kernels (the fused region kernel's tiles, the region peak kernel's regions) hand
// their results to the host without a copy back (RegionPeakJob): candidates into the host's mapped
// slots first, the rest on the device; and the block that makes the call's last hand-off publishes
// the candidate count to the host and leaves the call's counter zero for the next call, so nothing
// is uploaded to zero it either.
//
// The call's counter (RegionPeakJob::callCounter) holds the candidate slots taken in its low 32
// bits and the hand-offs made in its high 32 (one a fused tile, one a region of the peak kernel):
// one atomic of a block reserves a round's candidate slots and, in its last round, counts its
// hand-off, so the block that makes the call's last hand-off reads the call's candidate count in
// the same atomic. No fence and no second atomic stand between a block's last candidate and its
// hand-off (each was a round trip to L2 on the kernel's critical path); the host reads the slots
// once the stream is done.
#pragma once

#include "common/region_peaks.hpp"
#include "cuda/peaks/region_peaks.hpp"

namespace nccmatch::cuda {

constexpr unsigned long long kHandOffDone = 1ull << 32;  // one hand-off in RegionPeakJob::callCounter

// Candidate `slot` of the call: the first job.hostCandidateSlots go to the host's mapped slots,
// the others up to job.capacity to the device list at the same index.
__device__ __forceinline__ void storeRegionCandidate(const RegionPeakJob& job, int slot, const RegionPeak& peak) {
  if (slot < job.hostCandidateSlots)
    job.hostCandidates[slot] = peak;
  else if (slot < job.capacity)
    job.candidates[slot] = peak;
}

// One round of a block's candidates, called by every thread of the block (kThreads of them, one
// warp at least): thread t found the candidates (xs[u], ys[u]) where found[u], each stored as
// sample(x, y) (a RegionPeak). Their slots are reserved by one atomic of thread 0 (a block scan
// orders them), which also counts the block's hand-off when `lastRound` (called by the whole block
// with the same value); then each candidate is sampled and stored. The block that makes the call's
// last hand-off writes the call's candidate count to the host and zeroes the counter: every other
// hand-off counted before it, so every reservation of the call is in the count.
template <int kThreads, int kPer, typename Sample>
__device__ __forceinline__ void handOffCandidates(const RegionPeakJob& job, const Sample& sample,
                                                  const bool (&found)[kPer], const int (&xs)[kPer],
                                                  const int (&ys)[kPer], bool lastRound) {
  static_assert(kThreads % 32 == 0 && kThreads / 32 <= 32, "whole warps, at most 32");
  constexpr int kWarps = kThreads / 32;
  __shared__ int warpStart[kWarps];
  __shared__ unsigned blockStart;
  const int lane = int(threadIdx.x) & 31, warp = int(threadIdx.x) >> 5;
  int mine = 0;
#pragma unroll
  for (int u = 0; u < kPer; ++u) mine += found[u] ? 1 : 0;
  int before = mine;  // inclusive scan over the warp's lanes
#pragma unroll
  for (int d = 1; d < 32; d <<= 1) {
    const int v = __shfl_up_sync(0xffffffffu, before, d);
    if (lane >= d) before += v;
  }
  if (lane == 31) warpStart[warp] = before;
  before -= mine;
  __syncthreads();
  if (warp == 0) {
    const int total = lane < kWarps ? warpStart[lane] : 0;
    int start = total;
#pragma unroll
    for (int d = 1; d < 32; d <<= 1) {
      const int v = __shfl_up_sync(0xffffffffu, start, d);
      if (lane >= d) start += v;
    }
    const int blockTotal = __shfl_sync(0xffffffffu, start, 31);
    if (lane < kWarps) warpStart[lane] = start - total;
    if (lane == 0 && (blockTotal > 0 || lastRound)) {
      const unsigned long long old =
          atomicAdd(job.callCounter, (lastRound ? kHandOffDone : 0ull) + unsigned(blockTotal));
      blockStart = unsigned(old);
      if (lastRound && unsigned(old >> 32) == unsigned(job.handOffs - 1)) {
        *job.hostCandidateCount = int(unsigned(old) + unsigned(blockTotal));
        *job.callCounter = 0;
      }
    }
  }
  __syncthreads();
  int slot = int(blockStart) + warpStart[warp] + before;
#pragma unroll
  for (int u = 0; u < kPer; ++u)
    if (found[u]) storeRegionCandidate(job, slot++, sample(xs[u], ys[u]));
  if (!lastRound) __syncthreads();  // the next round rewrites warpStart and blockStart
}

}  // namespace nccmatch::cuda
