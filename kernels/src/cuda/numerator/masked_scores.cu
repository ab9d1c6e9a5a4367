#include "cuda/numerator/masked_scores.hpp"

#include "common/integer_math.hpp"
#include "cuda/cuda_check.hpp"
#include "rules/masked_score_rules.hpp"

namespace nccmatch::cuda {

namespace {

constexpr int kBlockWidth = 32, kBlockHeight = 8;

// One thread per window. Row partial sums fit uint32: a row of at most 16384 pixels sums I^2
// (and I*T) to at most 16384 * 255^2 < 2^32.
__global__ void maskedScoresKernel(const uint8_t* __restrict__ image, std::size_t pitch, int mapW, int mapH,
                                   MaskedTemplateDevice t, Method method, double* __restrict__ map) {
  const int x = blockIdx.x * kBlockWidth + threadIdx.x;
  const int y = blockIdx.y * kBlockHeight + threadIdx.y;
  if (x >= mapW || y >= mapH) return;
  int64_t s1 = 0, s2 = 0, c = 0;
  for (int ty = 0; ty < t.height; ++ty) {
    const int begin = __ldg(t.spans + 2 * ty), end = __ldg(t.spans + 2 * ty + 1);
    const uint8_t* row = image + std::size_t(y + ty) * pitch + x;
    const uint8_t* taps = t.taps + std::size_t(ty) * t.width;
    const uint8_t* weights = t.weights + std::size_t(ty) * t.width;
    uint32_t r1 = 0, r2 = 0, rc = 0;
    for (int tx = begin; tx < end; ++tx) {
      const uint32_t v = __ldg(row + tx), m = __ldg(weights + tx);
      const uint32_t vm = v * m;
      r1 += vm;
      r2 += vm * v;
      rc += v * __ldg(taps + tx);
    }
    s1 += r1;
    s2 += r2;
    c += rc;
  }
  map[std::size_t(y) * mapW + x] = maskedScoreFromSums(method, t.stats, s1, s2, c);
}

}  // namespace

MaskedTemplateLayout maskedTemplateLayout(const TemplateImage& t) {
  MaskedTemplateLayout l;
  const std::size_t n = std::size_t(t.width) * t.height;
  l.taps.assign(n, 0);
  l.weights.assign(n, 0);
  l.spans.assign(std::size_t(2) * t.height, 0);
  for (int y = 0; y < t.height; ++y) {
    int first = -1, last = -1;
    for (int x = 0; x < t.width; ++x) {
      const std::size_t k = std::size_t(y) * t.width + x;
      if (!comparedPixel(t, k)) continue;
      l.taps[k] = t.pixels[k];
      l.weights[k] = 1;
      if (first < 0) first = x;
      last = x;
    }
    if (first >= 0) {
      l.spans[2 * std::size_t(y)] = first;
      l.spans[2 * std::size_t(y) + 1] = last + 1;
    }
  }
  return l;
}

Status maskedScoreMap(const uint8_t* image, std::size_t pitch, int width, int height,
                      const MaskedTemplateDevice& t, Method method, double* map, cudaStream_t stream) {
  if (t.width > width || t.height > height)
    return Status::error("maskedScoreMap: template " + std::to_string(t.width) + "x" + std::to_string(t.height) +
                         " is larger than the frame " + std::to_string(width) + "x" + std::to_string(height));
  const int mapW = width - t.width + 1, mapH = height - t.height + 1;
  const dim3 block(kBlockWidth, kBlockHeight);
  const dim3 grid(ceilDiv(mapW, kBlockWidth), ceilDiv(mapH, kBlockHeight));
  maskedScoresKernel<<<grid, block, 0, stream>>>(image, pitch, mapW, mapH, t, method, map);
  NCC_CUDA_CHECK(cudaGetLastError());
  return Status();
}

}  // namespace nccmatch::cuda
