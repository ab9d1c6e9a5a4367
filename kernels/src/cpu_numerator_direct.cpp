#include "cpu_numerator_direct.hpp"

#include <algorithm>

namespace nccmatch {

namespace {

// One template row against one image row, added into 32-bit lanes. Written as broadcast-tap
// loops over x so that g++ vectorises them (vpmovzxbw, vpmullw, vpmovzxwd, vpaddd); the products
// of two bytes fit uint16. Cloned for AVX-512 and AVX2 with a run-time pick (ifunc), so one build
// runs everywhere and uses the widest vectors present.
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
#define NCCMATCH_SIMD_CLONES __attribute__((target_clones("arch=x86-64-v4", "avx2", "default")))
#else
#define NCCMATCH_SIMD_CLONES
#endif

NCCMATCH_SIMD_CLONES
void accumulateTemplateRow(int32_t* __restrict acc, const uint8_t* __restrict src, int n,
                           const uint8_t* __restrict tpl, int tw) {
  int tx = 0;
  // Four taps per pass: one load and store of the accumulators per four products.
  for (; tx + 4 <= tw; tx += 4) {
    const uint16_t a = tpl[tx], b = tpl[tx + 1], c = tpl[tx + 2], d = tpl[tx + 3];
    const uint8_t* s = src + tx;
    for (int x = 0; x < n; ++x)
      acc[x] += int32_t(uint16_t(s[x] * a)) + int32_t(uint16_t(s[x + 1] * b)) +
                int32_t(uint16_t(s[x + 2] * c)) + int32_t(uint16_t(s[x + 3] * d));
  }
  for (; tx < tw; ++tx) {
    const uint16_t a = tpl[tx];
    const uint8_t* s = src + tx;
    for (int x = 0; x < n; ++x) acc[x] += int32_t(uint16_t(s[x] * a));
  }
}

}  // namespace

void directCrossRow(const uint8_t* frame, std::size_t stride, int mapWidth, int y,
                    const TemplateImage& t, int32_t* scratch, int64_t* cross) {
  // int32 lanes hold rowsPerFlush template rows: rows * width * 255^2 < 2^31.
  const int rowsPerFlush = std::max(1, int(33025 / t.width));
  std::fill(cross, cross + mapWidth, 0);
  for (int ty0 = 0; ty0 < t.height; ty0 += rowsPerFlush) {
    const int ty1 = std::min(t.height, ty0 + rowsPerFlush);
    std::fill(scratch, scratch + mapWidth, 0);
    for (int ty = ty0; ty < ty1; ++ty)
      accumulateTemplateRow(scratch, frame + std::size_t(y + ty) * stride, mapWidth,
                            t.pixels.data() + std::size_t(ty) * t.width, t.width);
    for (int x = 0; x < mapWidth; ++x) cross[x] += scratch[x];
  }
}

int64_t directCrossAt(const uint8_t* frame, std::size_t stride, int x, int y, const TemplateImage& t) {
  int64_t sum = 0;
  for (int ty = 0; ty < t.height; ++ty) {
    const uint8_t* img = frame + std::size_t(y + ty) * stride + x;
    const uint8_t* tpl = t.pixels.data() + std::size_t(ty) * t.width;
    int32_t row = 0;  // width * 255^2 < 2^31 for widths below 33025 (validated bank sizes)
    for (int tx = 0; tx < t.width; ++tx) row += int32_t(img[tx]) * tpl[tx];
    sum += row;
  }
  return sum;
}

}  // namespace nccmatch
