#include "cuda/peaks/region_peaks.hpp"

#include <cmath>

#include "cuda/cuda_check.hpp"
#include "rules/peak_rules.hpp"

namespace nccmatch::cuda {

namespace {

constexpr int kThreads = 256;

__global__ void __launch_bounds__(kThreads)
    regionPeaksKernel(const RegionScoreDesc* __restrict__ descs, double sign, double goodEnough, bool collect,
                      RegionPeak* candidates, int capacity, int* candidateCount, RegionPeak* bests) {
  __shared__ double bestGood[kThreads];
  __shared__ int bestIndex[kThreads];
  const RegionScoreDesc r = descs[blockIdx.x];
  const int mapWidth = r.width - r.templateWidth + 1, mapHeight = r.height - r.templateHeight + 1;
  const int positions = mapWidth * mapHeight;
  const GoodnessMap<int> good{r.map, mapWidth, mapHeight, sign};
  double myGood = 0.0;
  int myIndex = -1;  // none yet
  for (int i = threadIdx.x; i < positions; i += kThreads) {
    const int y = i / mapWidth, x = i - y * mapWidth;
    const double g = good(x, y);
    if (myIndex < 0 || rankedBefore(g, i, myGood, myIndex)) myGood = g, myIndex = i;
    if (collect && g >= goodEnough && isLocalPeak(good, x, y, g)) {
      const int slot = atomicAdd(candidateCount, 1);
      if (slot < capacity) candidates[slot] = sampleRegionPeak(good, r.map, int(blockIdx.x), x, y);
    }
  }
  // The block's best by the rules' order (raster index breaks ties); threads without a position
  // (maps smaller than the block) never win.
  bestGood[threadIdx.x] = myGood;
  bestIndex[threadIdx.x] = myIndex;
  __syncthreads();
  for (int stride = kThreads / 2; stride > 0; stride >>= 1) {
    if (threadIdx.x < stride) {
      const int other = threadIdx.x + stride;
      const int oi = bestIndex[other], mi = bestIndex[threadIdx.x];
      if (oi >= 0 && (mi < 0 || rankedBefore(bestGood[other], oi, bestGood[threadIdx.x], mi))) {
        bestGood[threadIdx.x] = bestGood[other];
        bestIndex[threadIdx.x] = oi;
      }
    }
    __syncthreads();
  }
  if (threadIdx.x == 0) {
    const int i = bestIndex[0];
    bests[blockIdx.x] = sampleRegionPeak(good, r.map, int(blockIdx.x), i % mapWidth, i / mapWidth);
  }
}

}  // namespace

Status findRegionPeaks(const RegionScoreDesc* descs, int count, double sign, double goodEnough, bool collect,
                       RegionPeak* candidates, int capacity, int* candidateCount, RegionPeak* bests,
                       cudaStream_t stream) {
  if (count <= 0) return Status();
  if (descs == nullptr || bests == nullptr || candidateCount == nullptr || (collect && candidates == nullptr))
    return Status::error("findRegionPeaks: buffers missing");
  if (count > 2147483647 / 2) return Status::error("findRegionPeaks: too many regions");
  regionPeaksKernel<<<count, kThreads, 0, stream>>>(descs, sign, goodEnough, collect, candidates, capacity,
                                                     candidateCount, bests);
  NCC_CUDA_CHECK(cudaGetLastError());
  return Status();
}

}  // namespace nccmatch::cuda
