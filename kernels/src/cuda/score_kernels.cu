#include "cuda/score_kernels.hpp"

#include "cuda/score_centred.hpp"
#include "cuda_check.hpp"
#include "nccmatch/sat.hpp"

namespace nccmatch::cuda {

namespace {

struct Geometry {
  int frameWidth, mapWidth, mapHeight, w, h;
};

template <typename Table>
__device__ inline void windowSums(const Table* sum, const Table* sumSq, const Geometry& g, int x,
                                  int y, int64_t* s1, int64_t* s2) {
  // uint32 tables: the wrapped difference is the exact box sum (< 2^32), zero-extended.
  *s1 = int64_t(satBox(sum, g.frameWidth, x, y, x + g.w, y + g.h));
  *s2 = int64_t(satBox(sumSq, g.frameWidth, x, y, x + g.w, y + g.h));
}

template <typename Table>
__global__ void exactScoreKernel(const Table* __restrict__ sum, const Table* __restrict__ sumSq,
                                 Geometry g, TemplateStats stats, Method method,
                                 const int64_t* __restrict__ numerator, double* __restrict__ map) {
  const int x = blockIdx.x * blockDim.x + threadIdx.x;
  const int y = blockIdx.y * blockDim.y + threadIdx.y;
  if (x >= g.mapWidth || y >= g.mapHeight) return;
  int64_t s1, s2;
  windowSums(sum, sumSq, g, x, y, &s1, &s2);
  const std::size_t i = std::size_t(y) * g.mapWidth + x;
  map[i] = scoreFromSums(method, stats, s1, s2, numerator[i]);
}

template <typename Table>
__global__ void centredScoreKernel(const Table* __restrict__ sum, const Table* __restrict__ sumSq,
                                   Geometry g, TemplateStats stats, Method method,
                                   const float* __restrict__ centred, std::size_t pitch,
                                   double* __restrict__ map) {
  const int x = blockIdx.x * blockDim.x + threadIdx.x;
  const int y = blockIdx.y * blockDim.y + threadIdx.y;
  if (x >= g.mapWidth || y >= g.mapHeight) return;
  int64_t s1, s2;
  windowSums(sum, sumSq, g, x, y, &s1, &s2);
  map[std::size_t(y) * g.mapWidth + x] =
      scoreFromCentred(method, stats, s1, s2, double(centred[std::size_t(y) * pitch + x]));
}

Status check(const ScoreInputs& in, Geometry* g) {
  if (in.sum == nullptr || in.sumSq == nullptr) return Status::error("score: SAT pointers are null");
  if (in.templateWidth < 1 || in.templateHeight < 1 || in.templateWidth > in.frameWidth ||
      in.templateHeight > in.frameHeight)
    return Status::error("score: template does not fit the frame");
  *g = Geometry{in.frameWidth, in.frameWidth - in.templateWidth + 1,
                in.frameHeight - in.templateHeight + 1, in.templateWidth, in.templateHeight};
  return Status();
}

}  // namespace

Status scoreFromExactNumerator(const ScoreInputs& in, const int64_t* numerator, double* map,
                               cudaStream_t stream) {
  Geometry g;
  NCC_RETURN_IF_ERROR(check(in, &g));
  dim3 block(64, 4);
  dim3 grid((g.mapWidth + 63) / 64, (g.mapHeight + 3) / 4);
  if (in.sat32) {
    exactScoreKernel<<<grid, block, 0, stream>>>(static_cast<const uint32_t*>(in.sum),
                                                 static_cast<const uint32_t*>(in.sumSq), g,
                                                 in.stats, in.method, numerator, map);
  } else {
    exactScoreKernel<<<grid, block, 0, stream>>>(static_cast<const int64_t*>(in.sum),
                                                 static_cast<const int64_t*>(in.sumSq), g,
                                                 in.stats, in.method, numerator, map);
  }
  NCC_CUDA_CHECK(cudaGetLastError());
  return Status();
}

Status scoreFromCentredNumerator(const ScoreInputs& in, const float* centred, std::size_t pitch,
                                 double* map, cudaStream_t stream) {
  Geometry g;
  NCC_RETURN_IF_ERROR(check(in, &g));
  dim3 block(64, 4);
  dim3 grid((g.mapWidth + 63) / 64, (g.mapHeight + 3) / 4);
  if (in.sat32) {
    centredScoreKernel<<<grid, block, 0, stream>>>(static_cast<const uint32_t*>(in.sum),
                                                   static_cast<const uint32_t*>(in.sumSq), g,
                                                   in.stats, in.method, centred, pitch, map);
  } else {
    centredScoreKernel<<<grid, block, 0, stream>>>(static_cast<const int64_t*>(in.sum),
                                                   static_cast<const int64_t*>(in.sumSq), g,
                                                   in.stats, in.method, centred, pitch, map);
  }
  NCC_CUDA_CHECK(cudaGetLastError());
  return Status();
}

}  // namespace nccmatch::cuda
