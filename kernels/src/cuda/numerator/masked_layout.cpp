// The masked kernel's template layout (masked_scores.hpp), built on the host: plain C++, so the
// host compiler's flags vectorise it.
#include <cstdint>

#include "cuda/numerator/masked_scores.hpp"

namespace nccmatch::cuda {

std::size_t maskedLayoutBytes(int width, int height) {
  return 2 * std::size_t(maskedRowBytes(width)) * height + 2 * sizeof(int32_t) * std::size_t(height);
}

namespace {

// One row of the layout and its sums (a row's fit 32 bits: 16384 * 255^2 < 2^32). Branch-free,
// restrict pointers: the compiler vectorises it (a coarse-to-fine refinement lays out every
// variant it searches once a call).
void packRow(const uint8_t* __restrict pixels, const uint8_t* __restrict mask, int width, uint8_t* __restrict taps,
             uint8_t* __restrict weights, uint32_t sums[3]) {
  uint32_t n = 0, sum = 0, sumSq = 0;
  for (int x = 0; x < width; ++x) {
    const uint8_t keep = mask[x] != 0 ? 0xFF : 0;
    const uint32_t v = uint32_t(pixels[x] & keep);
    taps[x] = uint8_t(v);
    weights[x] = keep;
    n += keep & 1u;
    sum += v;
    sumSq += v * v;
  }
  sums[0] = n, sums[1] = sum, sums[2] = sumSq;
}

void packUnmaskedRow(const uint8_t* __restrict pixels, int width, uint8_t* __restrict taps,
                     uint8_t* __restrict weights, uint32_t sums[3]) {
  uint32_t sum = 0, sumSq = 0;
  for (int x = 0; x < width; ++x) {
    const uint32_t v = pixels[x];
    taps[x] = pixels[x];
    weights[x] = 0xFF;
    sum += v;
    sumSq += v * v;
  }
  sums[0] = uint32_t(width), sums[1] = sum, sums[2] = sumSq;
}

}  // namespace

TemplateStats packMaskedTemplate(const TemplateImage& t, uint8_t* out) {
  const std::size_t rowBytes = std::size_t(maskedRowBytes(t.width));
  uint8_t* const tapPlane = out;
  uint8_t* const weightPlane = out + rowBytes * t.height;
  int32_t* const spans = reinterpret_cast<int32_t*>(out + 2 * rowBytes * t.height);
  TemplateStats stats;
  for (int y = 0; y < t.height; ++y) {
    const uint8_t* pixels = t.pixels.data() + std::size_t(y) * t.width;
    uint8_t* taps = tapPlane + std::size_t(y) * rowBytes;
    uint8_t* weights = weightPlane + std::size_t(y) * rowBytes;
    uint32_t sums[3];
    if (t.mask.empty())
      packUnmaskedRow(pixels, t.width, taps, weights, sums);
    else
      packRow(pixels, t.mask.data() + std::size_t(y) * t.width, t.width, taps, weights, sums);
    for (int x = t.width; x < int(rowBytes); ++x) taps[x] = weights[x] = 0;  // the padding
    stats.n += sums[0];
    stats.sum += sums[1];
    stats.sumSq += sums[2];
    int first = 0, last = t.width - 1;
    while (first < t.width && weights[first] == 0) ++first;
    while (last > first && weights[last] == 0) --last;
    spans[2 * std::size_t(y)] = first < t.width ? first / 4 : 0;
    spans[2 * std::size_t(y) + 1] = first < t.width ? last / 4 + 1 : 0;
  }
  return stats;
}

}  // namespace nccmatch::cuda
