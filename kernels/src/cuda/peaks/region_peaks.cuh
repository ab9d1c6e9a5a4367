// One region's peaks found by one block of kThreads threads (device side of region_peaks.hpp):
// the block scans the region's whole map, appends every position that passes the threshold and the
// local-peak rule to the job's candidate list (atomically; the host sorts them) and writes the
// region's best position, each sampled with its neighbours. The region peak kernel runs it once per
// region; the fused region kernel runs it in the last block to finish a region's tiles.
#pragma once

#include "cuda/numerator/region_scores.hpp"
#include "cuda/peaks/region_peaks.hpp"
#include "rules/peak_rules.hpp"

namespace nccmatch::cuda::region_peaks {

// sharedGood / sharedIndex: kThreads entries each of the block's shared memory. Ends with a barrier.
template <int kThreads>
__device__ __forceinline__ void scan(const RegionScoreDesc& r, int launchRegion, const RegionPeakJob& job,
                                     double* sharedGood, int* sharedIndex) {
  const int region = job.firstRegion + launchRegion;
  const int mapWidth = r.width - r.templateWidth + 1, mapHeight = r.height - r.templateHeight + 1;
  const int positions = mapWidth * mapHeight;
  const GoodnessMap<int> good{r.map, mapWidth, mapHeight, job.sign};
  double myGood = 0.0;
  int myIndex = -1;  // none yet
  // Four positions a thread per round, their loads issued together (the scan waits on memory).
  constexpr int kUnroll = 4;
  for (int base = threadIdx.x; base < positions; base += kThreads * kUnroll) {
    double g[kUnroll];
#pragma unroll
    for (int u = 0; u < kUnroll; ++u) {
      const int i = base + u * kThreads;
      g[u] = i < positions ? job.sign * r.map[i] : 0.0;
    }
#pragma unroll
    for (int u = 0; u < kUnroll; ++u) {
      const int i = base + u * kThreads;
      if (i >= positions) break;
      if (myIndex < 0 || rankedBefore(g[u], i, myGood, myIndex)) myGood = g[u], myIndex = i;
      const int y = i / mapWidth, x = i - y * mapWidth;
      if (job.collect && g[u] >= job.goodEnough && isLocalPeak(good, x, y, g[u])) {
        const int slot = atomicAdd(job.candidateCount, 1);
        if (slot < job.capacity) job.candidates[slot] = sampleRegionPeak(good, r.map, region, x, y);
      }
    }
  }
  // The block's best by the rules' order (raster index breaks ties); threads without a position
  // (maps smaller than the block) never win.
  sharedGood[threadIdx.x] = myGood;
  sharedIndex[threadIdx.x] = myIndex;
  __syncthreads();
  for (int stride = kThreads / 2; stride > 0; stride >>= 1) {
    if (threadIdx.x < stride) {
      const int other = threadIdx.x + stride;
      const int oi = sharedIndex[other], mi = sharedIndex[threadIdx.x];
      if (oi >= 0 && (mi < 0 || rankedBefore(sharedGood[other], oi, sharedGood[threadIdx.x], mi))) {
        sharedGood[threadIdx.x] = sharedGood[other];
        sharedIndex[threadIdx.x] = oi;
      }
    }
    __syncthreads();
  }
  if (threadIdx.x == 0) {
    const int i = sharedIndex[0];
    job.bests[region] = sampleRegionPeak(good, r.map, region, i % mapWidth, i / mapWidth);
  }
}

}  // namespace nccmatch::cuda::region_peaks
