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

// Every 128-bit product of scoreFromSums fits int64 while n^2 * 255^2 < 2^63 (n below 1.19e7
// pixels): then the same integers are formed in int64 (a hardware conversion to double instead
// of a software __int128 one) and every result is bit-identical to the CPU's.
constexpr int64_t kInt64SafePixels = 11000000;

__device__ inline double exactScoreFast(Method method, const TemplateStats& t, int64_t s1,
                                        int64_t s2, int64_t c) {
  if (t.n > kInt64SafePixels) return scoreFromSums(method, t, s1, s2, c);
  switch (method) {
    case Method::CCoeff:
      return (double)(t.n * c - s1 * t.sum) / (double)t.n;
    case Method::CCoeffNormed: {
      const int64_t varT = t.n * t.sumSq - t.sum * t.sum;
      if (varT == 0) return 1.0;
      const double n = (double)t.n;
      const double num = (double)(t.n * c - s1 * t.sum) / n;
      const double diff2 = (double)(t.n * s2 - s1 * s1) / n;
      const double tt = windowIsFlat(diff2, (double)s2) ? 0.0 : sqrt(diff2) * sqrt((double)varT / n);
      return normaliseScore(num, tt, false);
    }
    default:
      return scoreFromSums(method, t, s1, s2, c);  // no 128-bit arithmetic in the others
  }
}

// scoreFromCentred with the same int64 shortcut for its one 128-bit expression.
__device__ inline double centredScoreFast(Method method, const TemplateStats& t, int64_t s1,
                                          int64_t s2, double centred) {
  if (method != Method::CCoeffNormed || t.n > kInt64SafePixels)
    return scoreFromCentred(method, t, s1, s2, centred);
  const int64_t varT = t.n * t.sumSq - t.sum * t.sum;
  if (varT == 0) return 1.0;
  const double n = (double)t.n;
  const double diff2 = (double)(t.n * s2 - s1 * s1) / n;
  const double tt = windowIsFlat(diff2, (double)s2) ? 0.0 : sqrt(diff2) * sqrt((double)varT / n);
  return normaliseScore(centred, tt, false);
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
  map[i] = exactScoreFast(method, stats, s1, s2, numerator[i]);
}

template <typename Table>
__global__ void centredScoreKernel(const Table* __restrict__ sum, const Table* __restrict__ sumSq,
                                   Geometry g, TemplateStats stats, Method method,
                                   const double* __restrict__ centred, std::size_t pitch,
                                   double* __restrict__ map) {
  const int x = blockIdx.x * blockDim.x + threadIdx.x;
  const int y = blockIdx.y * blockDim.y + threadIdx.y;
  if (x >= g.mapWidth || y >= g.mapHeight) return;
  int64_t s1, s2;
  windowSums(sum, sumSq, g, x, y, &s1, &s2);
  map[std::size_t(y) * g.mapWidth + x] =
      centredScoreFast(method, stats, s1, s2, centred[std::size_t(y) * pitch + x]);
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

Status scoreFromCentredNumerator(const ScoreInputs& in, const double* centred, std::size_t pitch,
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
