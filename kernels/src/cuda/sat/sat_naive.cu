// SAT_NAIVE: one thread per row for the row sums, then one thread per column.
// The slow baseline: the row pass strides through memory by the row width.
#include <cuda_runtime.h>

#include "cuda/sat/sat_builders.hpp"
#include "cuda/cuda_check.hpp"

namespace nccmatch::cuda {
namespace {

constexpr int kThreads = 128;

__global__ void naiveRowKernel(const uint8_t* __restrict__ image, std::size_t pitch, int width,
                               int height, int64_t* __restrict__ S, int64_t* __restrict__ Q) {
  for (int y = blockIdx.x * blockDim.x + threadIdx.x; y < height; y += gridDim.x * blockDim.x) {
    const uint8_t* row = image + std::size_t(y) * pitch;
    int64_t* s = S + std::size_t(y) * width;
    int64_t* q = Q + std::size_t(y) * width;
    int64_t sum = 0, sumSq = 0;
    for (int x = 0; x < width; ++x) {
      const int v = row[x];
      sum += v;
      sumSq += v * v;
      s[x] = sum;
      q[x] = sumSq;
    }
  }
}

__global__ void naiveColumnKernel(int width, int height, int64_t* __restrict__ S,
                                  int64_t* __restrict__ Q) {
  for (int x = blockIdx.x * blockDim.x + threadIdx.x; x < width; x += gridDim.x * blockDim.x) {
    int64_t sum = 0, sumSq = 0;
    for (int y = 0; y < height; ++y) {
      const std::size_t i = std::size_t(y) * width + x;
      sum += S[i];
      sumSq += Q[i];
      S[i] = sum;
      Q[i] = sumSq;
    }
  }
}

class NaiveSatBuilder final : public SatBuilder {
 public:
  NaiveSatBuilder(int maxWidth, int maxHeight) : maxWidth_(maxWidth), maxHeight_(maxHeight) {}
  SatBuild kind() const override { return SatBuild::Naive; }

  Status build(const uint8_t* image, std::size_t pitch, int width, int height, void* sum,
               void* sumSq, cudaStream_t stream) override {
    NCC_RETURN_IF_ERROR(validateSatBuildArgs("SatBuilder(naive)::build", image, pitch, width, height,
                                             sum, sumSq, maxWidth_, maxHeight_));
    auto* S = static_cast<int64_t*>(sum);
    auto* Q = static_cast<int64_t*>(sumSq);
    naiveRowKernel<<<(height + kThreads - 1) / kThreads, kThreads, 0, stream>>>(image, pitch, width,
                                                                                height, S, Q);
    NCC_CUDA_CHECK(cudaGetLastError());
    naiveColumnKernel<<<(width + kThreads - 1) / kThreads, kThreads, 0, stream>>>(width, height, S,
                                                                                  Q);
    NCC_CUDA_CHECK(cudaGetLastError());
    return Status();
  }

 private:
  int maxWidth_, maxHeight_;
};

}  // namespace

Status createNaiveSatBuilder(int maxWidth, int maxHeight, std::unique_ptr<SatBuilder>* out) {
  *out = std::make_unique<NaiveSatBuilder>(maxWidth, maxHeight);
  return Status();
}

}  // namespace nccmatch::cuda
