#include "cuda/peaks/region_peaks.hpp"

#include "cuda/cuda_check.hpp"
#include "cuda/peaks/region_peaks.cuh"

namespace nccmatch::cuda {

namespace {

constexpr int kThreads = 256;

__global__ void __launch_bounds__(kThreads) regionPeaksKernel(const RegionScoreDesc* __restrict__ descs,
                                                               RegionPeakJob job) {
  __shared__ double bestGood[kThreads];
  __shared__ int bestIndex[kThreads];
  region_peaks::scan<kThreads>(descs[blockIdx.x], int(blockIdx.x), job, bestGood, bestIndex);
}

}  // namespace

Status checkRegionPeakJob(const RegionPeakJob& job) {
  if (job.bests == nullptr || job.candidateCount == nullptr || (job.collect && job.candidates == nullptr))
    return Status::error("region peaks: buffers missing");
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
