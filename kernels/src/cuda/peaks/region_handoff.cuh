// How the region kernels (the fused region kernel's last tile of a region, the region peak kernel)
// hand a region's results to the host without a copy back (RegionPeakJob): candidates into the
// host's mapped slots first, the rest on the device; and the block that finishes the call's last
// region publishes the candidate count to the host and leaves the call's counters zero for the
// next call, so nothing is uploaded to zero them either.
#pragma once

#include "common/region_peaks.hpp"
#include "cuda/block_arrival.cuh"
#include "cuda/peaks/region_peaks.hpp"

namespace nccmatch::cuda {

// Candidate `slot` of the call (from atomicAdd on job.candidateCount): the first
// job.hostCandidateSlots go to the host's mapped slots, the others up to job.capacity to the
// device list at the same index.
__device__ __forceinline__ void storeRegionCandidate(const RegionPeakJob& job, int slot, const RegionPeak& peak) {
  if (slot < job.hostCandidateSlots)
    job.hostCandidates[slot] = peak;
  else if (slot < job.capacity)
    job.candidates[slot] = peak;
}

// Called by every thread of the block that wrote a region's best and candidates, after it did:
// counts the region done; the block that counts the call's last region hands the candidate
// count to the host and zeroes the call's counters. The other blocks' candidate atomics happened
// before their own count (barrier, fence), so the count read here is final.
__device__ __forceinline__ void finishRegionHandoff(const RegionPeakJob& job) {
  __syncthreads();
  if (threadIdx.x == 0 && threadIdx.y == 0 && threadIdx.z == 0) {
    if (countBlockDone(job.regionsDone, unsigned(job.regionCount))) {
      *job.hostCandidateCount = atomicExch(job.candidateCount, 0);
      *job.regionsDone = 0;
    }
  }
}

}  // namespace nccmatch::cuda
