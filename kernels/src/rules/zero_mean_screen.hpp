// ccoeff-normed screened from zero-mean signed-byte templates: one multiply-add a pair and one
// error bound for every pair of a tile (issue 12; the numbers behind it: bench_screen_study).
//
// A template T becomes T'' = T - r with r an integer for which every T'' fits int8 (r within
// [max T - 127, min T + 128], the one nearest the mean). With c'' = sum I*T'' (what the tensor
// cores sum from u8 frames and s8 templates) the centred numerator is exactly
//
//   N = n sum I*T - S1 sum T = n c'' - S1 d,   d = sum T - n r,   and   sum I*T = c'' + r S1,
//
// so the exact scoring keeps its integers. A pair's goodness over the template's factor
// Gt = 1 / sqrt(n sum T^2 - (sum T)^2) is X = N / sqrt(VI), VI = n S2 - S1^2, screened as
//
//   g = fma(float(c''), a, fma(b, d, offset)),   a = n Gw, b = -S1 Gw, Gw = rsqrtf(VI)
//
// (offset 0, or -inf for a window outside the map; a flat window, by the rules' test, has a = b = 0
// and its exact goodness 0).
//
// Bound. float(c'') is within 2^-24 of c''; Gw within 2^-22 + 2^-25 of 1/sqrt(VI) (the device's
// rsqrtf: 2 ulp, at most 2^-22; float(VI): half an ulp, halved by the root); a, b, b d and the
// last fma add one rounding of 2^-24 each. Each of the two terms carries three roundings of 2^-24
// and Gw's error: 2^-22 (1 + 3/4 + 1/8) = 2^-21.09 of its size. So
// |g - X| <= 2^-21.09 (n |c''| + S1 |d|) / sqrt(VI), and by Cauchy-Schwarz
// (|c''| <= sqrt(S2 sum T''^2), S1 <= sqrt(n S2))
//
//   (n |c''| + S1 |d|) / sqrt(VI) <= kappa (sqrt(n sum T''^2) + |d|) = kappa K,
//   kappa = sqrt(n S2 / VI)   (a window's condition: 1 for a mean-free window, large near flat),
//
// so eps kappa K with eps = 2^-20 (twice the roundings' sum) bounds every pair of a tile whose
// windows' largest kappa is kappa: one bound a template and tile (zeroMeanBound), a tile of
// ordinary content has kappa below 32, nearly flat content about 100. The goodness itself is
// X Gt: the conversions below round outward through Gt's own float rounding.
//
// Valid for n <= kScreenMaxPixels (score_screen.hpp): S1, |d|, S2 and |c''| fit int32.
#pragma once

#include <cmath>
#include <cstdint>

#include "rules/score_rules.hpp"
#include "rules/score_screen.hpp"

namespace nccmatch {

constexpr float kZeroMeanBoundScale = 1.0f / (1 << 20);

// Directed float products and sums: on the device its own instructions; on the host the exact
// double result (two floats' product or sum fits a double) rounded the asked way.
namespace zero_mean_detail {
inline float roundedDown(double v) {  // host
  float f = float(v);
  return double(f) > v ? std::nextafter(f, -INFINITY) : f;
}
inline float roundedUp(double v) {  // host
  float f = float(v);
  return double(f) < v ? std::nextafter(f, INFINITY) : f;
}
// a * b (kSum false) or a + b (kSum true), rounded down (kUp false) or up.
template <bool kSum, bool kUp>
NCC_HOST_DEVICE inline float directed(float a, float b) {
#if defined(__CUDA_ARCH__)
  if constexpr (kSum) return kUp ? __fadd_ru(a, b) : __fadd_rd(a, b);
  else return kUp ? __fmul_ru(a, b) : __fmul_rd(a, b);
#else
  const double exact = kSum ? double(a) + double(b) : double(a) * double(b);
  return kUp ? roundedUp(exact) : roundedDown(exact);
#endif
}
NCC_HOST_DEVICE inline float mulDown(float a, float b) { return directed<false, false>(a, b); }
NCC_HOST_DEVICE inline float mulUp(float a, float b) { return directed<false, true>(a, b); }
NCC_HOST_DEVICE inline float addDown(float a, float b) { return directed<true, false>(a, b); }
NCC_HOST_DEVICE inline float addUp(float a, float b) { return directed<true, true>(a, b); }
}  // namespace zero_mean_detail

// The offset r of a template whose smallest and largest pixels are lo and hi and whose pixel
// sum is sum over n pixels: T - r fits int8 for every pixel, r nearest the mean.
NCC_HOST_DEVICE inline int zeroMeanOffset(int lo, int hi, int64_t sum, int64_t n) {
  const int64_t nearest = (2 * sum + n) / (2 * n);  // round(sum / n), sum >= 0
  const int64_t least = hi - 127, most = lo + 128;   // least <= most: hi - lo <= 255
  return int(nearest < least ? least : (nearest > most ? most : nearest));
}

// A template's constants for the screen (host, once per bank). Gt and its root with a margin of
// 2^-22 each way around their float rounding, so that a product with either rounded outward
// stays on its side of the exact one; all 0 for a flat template (the caller's constant case).
struct ZeroMeanTemplate {
  int offset = 0;      // r
  float d = 0.0f;      // sum T - n r (exact: |d| <= 128 n < 2^24)
  float boundK = 0.0f; // sqrt(n sum T''^2) + |d|, rounded up
  float gtLow = 0.0f, gtHigh = 0.0f;      // 1 / sqrt(n sum T^2 - (sum T)^2), below and above
  float rootLow = 0.0f, rootHigh = 0.0f;  // sqrt(n sum T^2 - (sum T)^2), below and above
};

inline ZeroMeanTemplate zeroMeanTemplate(const uint8_t* pixels, int64_t n) {  // host
  using zero_mean_detail::roundedDown;
  using zero_mean_detail::roundedUp;
  int lo = 255, hi = 0;
  int64_t sum = 0, sumSq = 0;
  for (int64_t i = 0; i < n; ++i) {
    lo = pixels[i] < lo ? pixels[i] : lo;
    hi = pixels[i] > hi ? pixels[i] : hi;
    sum += pixels[i];
    sumSq += int64_t(pixels[i]) * pixels[i];
  }
  ZeroMeanTemplate t;
  t.offset = zeroMeanOffset(lo, hi, sum, n);
  const int64_t d = sum - n * t.offset;
  const int64_t offsetSq = sumSq - 2 * t.offset * sum + n * t.offset * t.offset;  // sum (T - r)^2
  t.d = float(d);
  t.boundK = roundedUp((std::sqrt(double(n) * double(offsetSq)) + double(d < 0 ? -d : d)) * (1.0 + 0x1p-40));
  const int64_t centred = centredSquares<int64_t>(n, sum, sumSq);
  if (centred > 0) {
    const double root = std::sqrt(double(centred));
    t.rootLow = roundedDown(root * (1.0 - 0x1p-22));
    t.rootHigh = roundedUp(root * (1.0 + 0x1p-22));
    t.gtLow = roundedDown(1.0 / root * (1.0 - 0x1p-22));
    t.gtHigh = roundedUp(1.0 / root * (1.0 + 0x1p-22));
  }
  return t;
}

// A window's part: g = fma(c'', a, fma(b, d, offset)); kappaSq above the window's kappa^2 (0 for a
// flat or invalid window, which the tile's largest leaves out). invSqrtCentred: 1/sqrt(VI) as
// the device computes it (screenInverseRoot), given apart so a test can move it.
struct ZeroMeanWindow {
  float a = 0.0f, b = 0.0f, offset = -INFINITY, kappaSq = 0.0f;
};

NCC_HOST_DEVICE inline bool zeroMeanWindowIsFlat(int64_t n, int32_t s1, int32_t s2) {
  // The rules' flat test for ccoeff-normed, as screenWindow forms it.
  const int64_t centred = centredSquares<int64_t>(n, s1, s2);
  return centred <= n && windowIsFlat(windowVarianceSum<int64_t>(n, s1, s2), double(s2));
}

NCC_HOST_DEVICE inline ZeroMeanWindow zeroMeanWindowFrom(int64_t n, int32_t s1, int32_t s2, bool valid,
                                                          float invSqrtCentred) {
  ZeroMeanWindow w;
  if (!valid) return w;  // offset -inf: never reaches, never raises a floor
  w.offset = 0.0f;
  if (zeroMeanWindowIsFlat(n, s1, s2)) return w;  // a = b = 0: g = 0, the rules' exact score
  const int64_t centred = centredSquares<int64_t>(n, s1, s2);
  w.a = float(n) * invSqrtCentred;
  w.b = -(float(s1) * invSqrtCentred);
  // kappa^2 = n S2 / VI, rounded up: n S2 rounded up (n is exact) over VI rounded down.
#if defined(__CUDA_ARCH__)
  w.kappaSq = __fdiv_ru(__fmul_ru(float(n), __int2float_ru(s2)), __ll2float_rd(centred));
#else
  const float numerator = zero_mean_detail::mulUp(float(n), zero_mean_detail::roundedUp(double(s2)));
  w.kappaSq = zero_mean_detail::roundedUp(double(numerator) / double(zero_mean_detail::roundedDown(double(centred))));
#endif
  return w;
}

NCC_HOST_DEVICE inline ZeroMeanWindow zeroMeanWindow(int64_t n, int32_t s1, int32_t s2, bool valid) {
  const int64_t centred = centredSquares<int64_t>(n, s1, s2);
  return zeroMeanWindowFrom(n, s1, s2, valid, centred > 0 ? screenInverseRoot(centred) : 0.0f);
}

// A pair's screened goodness over Gt.
NCC_HOST_DEVICE inline float zeroMeanPair(const ZeroMeanWindow& w, float d, int32_t cPrime) {
  return fmaf(float(cPrime), w.a, fmaf(w.b, d, w.offset));
}

// A tile's condition from its windows' largest kappaSq, rounded up: at least 1 (a tile of flat and
// outside windows only, kappaSq 0, takes 1). Once a tile.
NCC_HOST_DEVICE inline float zeroMeanTileKappa(float kappaSqMax) {
#if defined(__CUDA_ARCH__)
  const float kappa = __fsqrt_ru(kappaSqMax);
#else
  const float kappa = zero_mean_detail::roundedUp(std::sqrt(double(kappaSqMax)));
#endif
  return kappaSqMax > 1.0f ? kappa : 1.0f;
}

// The bound, over Gt, of every pair of a tile of condition kappa (zeroMeanTileKappa).
NCC_HOST_DEVICE inline float zeroMeanBound(float kappa, float boundK) {
  using zero_mean_detail::mulUp;
  return mulUp(mulUp(kappa, boundK), kZeroMeanBoundScale);
}

// Over Gt to goodness and back, rounded outward. floorOf: at most the goodness of any pair whose
// value over Gt is at least `scaled`; ceilingOf: at least the goodness of any pair whose value over
// Gt is at most `scaled`; scaledReach: at most goodness / Gt for every goodness at least `goodness`.
NCC_HOST_DEVICE inline float zeroMeanFloorOf(float scaled, const ZeroMeanTemplate& t) {
  return zero_mean_detail::mulDown(scaled, scaled >= 0.0f ? t.gtLow : t.gtHigh);
}
NCC_HOST_DEVICE inline float zeroMeanCeilingOf(float scaled, const ZeroMeanTemplate& t) {
  return zero_mean_detail::mulUp(scaled, scaled >= 0.0f ? t.gtHigh : t.gtLow);
}
NCC_HOST_DEVICE inline float zeroMeanScaledReach(float goodness, const ZeroMeanTemplate& t) {
  return zero_mean_detail::mulDown(goodness, goodness >= 0.0f ? t.rootLow : t.rootHigh);
}

}  // namespace nccmatch
