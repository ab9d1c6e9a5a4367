#include "cpu/cpu_numerator_direct.hpp"
#include "cpu/simd_clones.hpp"

#include <algorithm>

#if defined(__x86_64__) && defined(__GNUC__)
// GCC 12's AVX-512 intrinsics pass _mm512_undefined_epi32() to their masked builtins, which
// -Wuninitialized reports at the header's lines (GCC bug 105593, fixed in GCC 13).
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wuninitialized"
#include <immintrin.h>
#pragma GCC diagnostic pop
#define NCCMATCH_HAVE_VNNI_KERNEL 1
#endif

namespace nccmatch {

namespace {

// One template row against one image row, added into 32-bit lanes. Written as broadcast-tap
// loops over x so that g++ vectorises them (vpmovzxbw, vpmullw, vpmovzxwd, vpaddd); the products
// of two bytes fit uint16. Cloned for AVX-512 and AVX2 with a run-time pick (ifunc), so one build
// runs everywhere and uses the widest vectors present.
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

namespace {

// cross[x] for x in [xBegin, xEnd) with the auto-vectorised row loops.
void crossRange(const uint8_t* frame, std::size_t stride, int xBegin, int xEnd, int y,
                const TemplateImage& t, int32_t* scratch, int64_t* cross) {
  const int n = xEnd - xBegin;
  if (n <= 0) return;
  // int32 lanes hold rowsPerFlush template rows: rows * width * 255^2 < 2^31.
  const int rowsPerFlush = std::max(1, int(33025 / t.width));
  std::fill(cross + xBegin, cross + xEnd, 0);
  for (int ty0 = 0; ty0 < t.height; ty0 += rowsPerFlush) {
    const int ty1 = std::min(t.height, ty0 + rowsPerFlush);
    std::fill(scratch, scratch + n, 0);
    for (int ty = ty0; ty < ty1; ++ty)
      accumulateTemplateRow(scratch, frame + std::size_t(y + ty) * stride + xBegin, n,
                            t.pixels.data() + std::size_t(ty) * t.width, t.width);
    for (int x = 0; x < n; ++x) cross[xBegin + x] += scratch[x];
  }
}

#ifdef NCCMATCH_HAVE_VNNI_KERNEL
#define NCCMATCH_VNNI_TARGET __attribute__((target("avx512f,avx512bw,avx512vnni")))

// 64 windows x0 .. x0 + 63 of row y. The int32 lane j of a 64-byte load at s + k holds the bytes
// s + 4j + k .. s + 4j + k + 3: exactly the four taps of window 4j + k. So four plain loads feed
// four vpdpbusd per group of four taps (no shuffles), and the four accumulators are interleaved
// back into window order once at the end. Masked (the block at the right edge): bytes at or past
// rowEnd load as zeros; a valid window never reads them with a nonzero tap, so its sum is exact.
template <bool kMasked>
NCCMATCH_VNNI_TARGET inline __m512i loadRowBytes(const uint8_t* s, int validBytes) {
  if constexpr (kMasked) {
    const __mmask64 m = validBytes >= 64 ? ~__mmask64(0)
                        : validBytes <= 0 ? __mmask64(0)
                                          : (__mmask64(1) << validBytes) - 1;
    return _mm512_maskz_loadu_epi8(m, s);
  } else {
    (void)validBytes;
    return _mm512_loadu_si512(s);
  }
}

template <bool kMasked>
NCCMATCH_VNNI_TARGET void vnniBlock64(const uint8_t* frame, std::size_t stride, int x0, int y,
                                      const DirectTemplate& p, int rowEnd, int32_t* out) {
  __m512i a0 = _mm512_setzero_si512(), a1 = a0, a2 = a0, a3 = a0;
  for (int ty = 0; ty < p.height; ++ty) {
    const uint8_t* s = frame + std::size_t(y + ty) * stride + x0;
    const int32_t* taps = p.taps.data() + std::size_t(ty) * p.groups;
    for (int g = 0, valid = rowEnd - x0; g < p.groups; ++g, s += 4, valid -= 4) {
      const __m512i w = _mm512_set1_epi32(taps[g]);
      a0 = _mm512_dpbusd_epi32(a0, loadRowBytes<kMasked>(s, valid), w);
      a1 = _mm512_dpbusd_epi32(a1, loadRowBytes<kMasked>(s + 1, valid - 1), w);
      a2 = _mm512_dpbusd_epi32(a2, loadRowBytes<kMasked>(s + 2, valid - 2), w);
      a3 = _mm512_dpbusd_epi32(a3, loadRowBytes<kMasked>(s + 3, valid - 3), w);
    }
  }
  // ak lane j = window 4j + k. A 4x4 transpose inside each 128-bit lane, then one across lanes.
  const __m512i t0 = _mm512_unpacklo_epi32(a0, a1), t1 = _mm512_unpackhi_epi32(a0, a1);
  const __m512i t2 = _mm512_unpacklo_epi32(a2, a3), t3 = _mm512_unpackhi_epi32(a2, a3);
  const __m512i r0 = _mm512_unpacklo_epi64(t0, t2), r1 = _mm512_unpackhi_epi64(t0, t2);
  const __m512i r2 = _mm512_unpacklo_epi64(t1, t3), r3 = _mm512_unpackhi_epi64(t1, t3);
  // 128-bit lane L of r0, r1, r2, r3: windows 16L + 0..3, 4..7, 8..11, 12..15.
  const __m512i u0 = _mm512_shuffle_i32x4(r0, r1, 0x44), u1 = _mm512_shuffle_i32x4(r2, r3, 0x44);
  const __m512i u2 = _mm512_shuffle_i32x4(r0, r1, 0xEE), u3 = _mm512_shuffle_i32x4(r2, r3, 0xEE);
  _mm512_storeu_si512(out, _mm512_shuffle_i32x4(u0, u1, 0x88));
  _mm512_storeu_si512(out + 16, _mm512_shuffle_i32x4(u0, u1, 0xDD));
  _mm512_storeu_si512(out + 32, _mm512_shuffle_i32x4(u2, u3, 0x88));
  _mm512_storeu_si512(out + 48, _mm512_shuffle_i32x4(u2, u3, 0xDD));
}

bool cpuHasVnni() {
  static const bool has = __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
                          __builtin_cpu_supports("avx512vnni");
  return has;
}

NCCMATCH_SIMD_CLONES
void addWindowSums(const int32_t* __restrict dots, const int64_t* __restrict windowSum, int n,
                   int64_t* __restrict cross) {
  for (int x = 0; x < n; ++x) cross[x] = int64_t(dots[x]) + 128 * windowSum[x];
}
#endif

}  // namespace

void directCrossRow(const uint8_t* frame, std::size_t stride, int mapWidth, int y,
                    const TemplateImage& t, int32_t* scratch, int64_t* cross) {
  crossRange(frame, stride, 0, mapWidth, y, t, scratch, cross);
}

DirectTemplate packDirectTemplate(const TemplateImage& t) {
  DirectTemplate p;
  p.width = t.width;
  p.height = t.height;
  p.groups = (t.width + 3) / 4;
  p.taps.assign(std::size_t(p.height) * p.groups, 0);
  for (int ty = 0; ty < t.height; ++ty)
    for (int tx = 0; tx < t.width; ++tx) {
      const std::size_t k = std::size_t(ty) * t.width + tx;
      if (!t.mask.empty() && t.mask[k] == 0) continue;  // an ignored pixel: a zero tap
      const uint32_t tap = uint8_t(int8_t(int(t.pixels[k]) - 128));
      p.taps[std::size_t(ty) * p.groups + tx / 4] |= int32_t(tap << (8 * (tx % 4)));
    }
  return p;
}

bool directVnniUsable(int templateWidth, int templateHeight) {
#ifdef NCCMATCH_HAVE_VNNI_KERNEL
  return cpuHasVnni() && int64_t(templateWidth) * templateHeight <= 65792;
#else
  (void)templateWidth, (void)templateHeight;
  return false;
#endif
}

void directCrossRowVnni(const uint8_t* frame, std::size_t stride, int frameWidth, int mapWidth, int y,
                        const TemplateImage& t, const DirectTemplate& packed, const int64_t* windowSum,
                        int32_t* scratch, int64_t* cross) {
  int x = 0;
#ifdef NCCMATCH_HAVE_VNNI_KERNEL
  // Unmasked loads of a block reach byte x0 + 3 + 4 * (groups - 1) + 63 of each row.
  const int lastUnmaskedX0 = frameWidth - 63 - 4 * packed.groups;
  for (; x + 64 <= mapWidth && x <= lastUnmaskedX0; x += 64)
    vnniBlock64<false>(frame, stride, x, y, packed, frameWidth, scratch + x);
  addWindowSums(scratch, windowSum, x, cross);
  for (; x < mapWidth; x += 64) {
    alignas(64) int32_t block[64];
    vnniBlock64<true>(frame, stride, x, y, packed, frameWidth, block);
    const int n = std::min(64, mapWidth - x);
    addWindowSums(block, windowSum + x, n, cross + x);
  }
#else
  (void)frameWidth, (void)packed, (void)windowSum;
#endif
  crossRange(frame, stride, x, mapWidth, y, t, scratch, cross);
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
