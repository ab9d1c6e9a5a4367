// Scores screened in float: an estimate of a window's score for every method from the exact
// integer sums, within a known relative distance of the exact score (scoreFromSums), so that a
// kernel scoring millions of (position, template) pairs computes the exact double score only
// where a pair can reach the threshold or its tile's best, and writes no score map.
//
//   |scoreFromSums(method, t, s1, s2, c) - f| <= screenRelativeBound(method) * |f|,
//   f = screenedScore(method, screenTemplate(method, t), screenWindow(method, t.n, s1, s2), c).
//
// Why it holds: the integer parts (n*c - s1*sum T, n*sum I^2 - (sum I)^2, sum I^2 - 2c + sum T^2)
// are formed exactly in int64 and rounded once to float (2^-24 relative); the normalising roots
// are float reciprocal square roots (device rsqrtf: at most 2 ulp, 2^-22; the template's is
// rounded from double, 2^-24) and two float products follow (2^-24 each): at most 8.5 * 2^-24
// in all for the normalised methods, 3 * 2^-24 for ccoeff, 2^-24 for sqdiff and ccorr, against
// exact doubles within 2^-50 of the real quotients. The bounds below are 3.7 times those or
// more, so sums and differences of screened goodness, rounded in float once more, stay safe.
// Flat windows and templates score the exact rule's constants (0 or 1, bound 0 needed). Every
// part is relative (no subtraction happens in float), so the bound holds near 0 as well.
//
// Valid for n <= kScreenMaxPixels: every sum then fits int32 and every product int64.
#pragma once

#include <cmath>
#include <cstdint>

#include "rules/score_rules.hpp"

namespace nccmatch {

constexpr int64_t kScreenMaxPixels = 32768;  // n * 255^2 < 2^31

// The bound of the header comment: |exact - f| <= screenRelativeBound(method) * |f|.
NCC_HOST_DEVICE constexpr float screenRelativeBound(Method method) {
  return method == Method::SqDiff || method == Method::CCorr || method == Method::CCoeff
             ? 1.0f / (1 << 20)   // 2^-20 against 3 * 2^-24
             : 1.0f / (1 << 19);  // 2^-19 against 8.5 * 2^-24
}

// 1 / sqrt(v) in float for v > 0: the device's rsqrtf (2 ulp at most); the host's is closer.
NCC_HOST_DEVICE inline float screenInverseRoot(int64_t v) {
#if defined(__CUDA_ARCH__)
  return rsqrtf(__ll2float_rn(v));
#else
  return float(1.0 / std::sqrt(double(float(v))));
#endif
}

NCC_HOST_DEVICE inline float screenFloat(int64_t v) {
#if defined(__CUDA_ARCH__)
  return __ll2float_rn(v);
#else
  return float(v);
#endif
}

// What a window gives every template's screened score: its sums and, for the normalised
// methods, 1/sqrt of its normalising sum (n sum I^2 - (sum I)^2 for ccoeff-normed, sum I^2 for
// the uncentred two); 0 where the exact rules call the window flat.
struct ScreenWindow {
  int32_t s1 = 0, s2 = 0;
  float inverseRoot = 0.0f;
};

NCC_HOST_DEVICE inline ScreenWindow screenWindow(Method method, int64_t n, int32_t s1, int32_t s2) {
  ScreenWindow w;
  w.s1 = s1;
  w.s2 = s2;
  if (method == Method::CCoeffNormed) {
    if (!windowIsFlat(windowVarianceSum<int64_t>(n, s1, s2), double(s2)))
      w.inverseRoot = screenInverseRoot(centredSquares<int64_t>(n, s1, s2));
  } else if (method == Method::CCorrNormed || method == Method::SqDiffNormed) {
    if (!windowIsFlat(double(s2), double(s2))) w.inverseRoot = screenInverseRoot(s2);
  }
  return w;
}

// A template's part: its sums and 1/sqrt of its normalising sum (0 for a flat template, whose
// exact rule gives a constant), 1/n for ccoeff.
struct ScreenTemplate {
  int32_t n = 0, sum = 0, sumSq = 0;
  float inverseRoot = 0.0f;
  float inverseN = 0.0f;
};

NCC_HOST_DEVICE inline ScreenTemplate screenTemplate(Method method, const TemplateStats& t) {
  ScreenTemplate s;
  s.n = int32_t(t.n);
  s.sum = int32_t(t.sum);
  s.sumSq = int32_t(t.sumSq);
  s.inverseN = float(1.0 / double(t.n));
  const int64_t root = method == Method::CCoeffNormed ? centredSquares<int64_t>(t.n, t.sum, t.sumSq)
                                                      : t.sumSq;  // sqrt(sum T^2): the uncentred two
  if (root > 0) s.inverseRoot = float(1.0 / sqrt(double(root)));
  return s;
}

// The screened score of a window (w) against a template (t) whose cross sum is c = sum I*T.
NCC_HOST_DEVICE inline float screenedScore(Method method, const ScreenTemplate& t, const ScreenWindow& w,
                                           int32_t c) {
  switch (method) {
    case Method::SqDiff:
      return screenFloat(int64_t(w.s2) - 2 * int64_t(c) + t.sumSq);
    case Method::CCorr:
      return screenFloat(c);
    case Method::CCoeff:
      return screenFloat(int64_t(t.n) * c - int64_t(w.s1) * t.sum) * t.inverseN;
    case Method::SqDiffNormed: {
      // A flat window or template scores 1 (the worst); a ratio of 1 or more is 1 (the rule's edge).
      if (t.inverseRoot == 0.0f || w.inverseRoot == 0.0f) return 1.0f;
      const float r = screenFloat(int64_t(w.s2) - 2 * int64_t(c) + t.sumSq) * w.inverseRoot * t.inverseRoot;
      return r < 1.0f ? r : 1.0f;
    }
    case Method::CCorrNormed:  // 0 for a flat window or template
      return screenFloat(c) * w.inverseRoot * t.inverseRoot;
    case Method::CCoeffNormed:  // 1 for a flat template, 0 for a flat window
      if (t.inverseRoot == 0.0f) return 1.0f;
      return screenFloat(int64_t(t.n) * c - int64_t(w.s1) * t.sum) * w.inverseRoot * t.inverseRoot;
  }
  return 0.0f;
}

// The largest goodness the exact score of a pair screened at goodness g can have, and the least.
NCC_HOST_DEVICE inline float screenCeiling(float g, float bound) { return g + bound * fabsf(g); }
NCC_HOST_DEVICE inline float screenFloor(float g, float bound) { return g - bound * fabsf(g); }

}  // namespace nccmatch
