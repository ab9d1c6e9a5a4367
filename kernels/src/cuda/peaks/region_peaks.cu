#include "cuda/peaks/region_peaks.hpp"

#include "common/integer_math.hpp"
#include "cuda/copy/block_descriptor.cuh"
#include "cuda/cuda_check.hpp"
#include "cuda/peaks/region_handoff.cuh"
#include "rules/peak_rules.hpp"

namespace nccmatch::cuda {

namespace {

constexpr int kThreads = 256;

// One region's peaks by the whole block: every position of its map that passes the threshold and
// the local-peak rule goes to the candidate list, and its best to bests. sharedGood / sharedIndex:
// kThreads entries each of the block's shared memory.
__device__ __forceinline__ void scanRegion(const RegionScoreDesc& r, int launchRegion, const RegionPeakJob& job,
                                     double* sharedGood, int* sharedIndex) {
  const int region = job.firstRegion + launchRegion;
  const int mapWidth = r.width - r.templateWidth + 1, mapHeight = r.height - r.templateHeight + 1;
  const int positions = mapWidth * mapHeight;
  const GoodnessMap<int> good{r.map, mapWidth, mapHeight, job.sign};
  double myGood = 0.0;
  int myIndex = -1;  // none yet
  // Four positions a thread per round, their loads issued together (the scan waits on memory); a
  // round's candidates handed off by each warp that has some (one atomic a warp and round).
  constexpr int kUnroll = 4;
  int warpTotal = 0;  // the warp's candidates of every round
  const int rounds = max(1, ceilDiv(positions, kThreads * kUnroll));
  for (int round = 0; round < rounds; ++round) {
    const int base = round * kThreads * kUnroll + int(threadIdx.x);
    double g[kUnroll];
#pragma unroll
    for (int u = 0; u < kUnroll; ++u) {
      const int i = base + u * kThreads;
      g[u] = i < positions ? job.sign * r.map[i] : 0.0;
    }
    bool found[kUnroll];
    int xs[kUnroll], ys[kUnroll];
#pragma unroll
    for (int u = 0; u < kUnroll; ++u) {
      const int i = base + u * kThreads;
      found[u] = false;
      xs[u] = ys[u] = 0;
      if (i >= positions) continue;
      if (myIndex < 0 || rankedBefore(g[u], i, myGood, myIndex)) myGood = g[u], myIndex = i;
      ys[u] = i / mapWidth;
      xs[u] = i - ys[u] * mapWidth;
      found[u] = job.collect && g[u] >= job.goodEnough && isLocalPeak(good, xs[u], ys[u], g[u]);
    }
    const auto sample = [&](int x, int y) { return sampleRegionPeak(good, r.map, region, x, y); };
    int before = 0;
    const int warpCount = warpCandidateCount(found, &before);
    storeWarpCandidates(job, sample, found, xs, ys, before, warpCount);
    warpTotal += warpCount;
  }
  // The block's best by the rules' order (raster index breaks ties); threads without a position
  // (maps smaller than the block) never win. Beside it the region's candidate count.
  __shared__ int warpTotals[kThreads / 32];
  if ((threadIdx.x & 31) == 0) warpTotals[threadIdx.x >> 5] = warpTotal;
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
    int count = 0;
    for (int w = 0; w < kThreads / 32; ++w) count += warpTotals[w];
    publishUnitCount(job, launchRegion, count);
  }
}


__global__ void __launch_bounds__(kThreads) regionPeaksKernel(const RegionScoreDesc* __restrict__ descs,
                                                               RegionPeakJob job) {
  __shared__ double bestGood[kThreads];
  __shared__ int bestIndex[kThreads];
  scanRegion(blockDescriptor(descs + blockIdx.x), int(blockIdx.x), job, bestGood, bestIndex);
}

}  // namespace

Status checkRegionPeakJob(const RegionPeakJob& job) {
  if (job.bests == nullptr || job.callCounter == nullptr || job.nextCounter == nullptr ||
      job.unitCounts == nullptr || (job.collect && (job.candidates == nullptr || job.hostCandidates == nullptr)))
    return Status::error("region peaks: buffers missing");
  if (job.firstRegion < 0 || job.hostCandidateSlots < 0)
    return Status::error("region peaks: bad first region or host slots");
  return Status();
}

Status findRegionPeaks(const RegionScoreDesc* descs, int count, const RegionPeakJob& job, cudaStream_t stream) {
  if (count <= 0) return Status();
  if (descs == nullptr) return Status::error("findRegionPeaks: descriptors missing");
  NCC_RETURN_IF_ERROR(checkRegionPeakJob(job));
  if (count > 2147483647 / 2) return Status::error("findRegionPeaks: too many regions");
  regionPeaksKernel<<<count, kThreads, 0, stream>>>(descs, job);
  NCC_CUDA_CHECK(cudaGetLastError());
  return Status();
}

}  // namespace nccmatch::cuda
