// Scores screened in float: an estimate of a window's score for every method, with a bound on
// its distance from the exact score (scoreFromSums), so that a kernel scoring millions of
// (position, template) pairs computes the exact double score only where a pair can reach the
// threshold or its tile's best, and writes no score map:
//
//   |scoreFromSums(method, t, s1, s2, c) - p.score| <= p.bound,
//   p = screenPair(screenMethod(method), screenTemplate(method, t), screenWindow(method, t.n, s1, s2), c).
//
// Every method is one linear form in c = sum I*T, evaluated in float without branches:
//
//   score = (A c + U V + W + Z) * Gw * Gt      (then at most `highest`)
//   bound = 2^-18 * (|A| c + U |V| + W + Z) * |Gw * Gt|
//
//   method         A    U (window)  V (template)  W (window)  Z (template)  Gw (window)  Gt (template)
//   sqdiff        -2    0           0             sum I^2     sum T^2       1            1
//   ccorr          1    0           0             0           0             1            1
//   ccoeff         n    sum I       -sum T        0           0             1            1/n
//   sqdiff-normed -2    0           0             sum I^2     sum T^2       1/root(I)    1/root(T)   (at most 1)
//   ccorr-normed   1    0           0             0           0             1/root(I)    1/root(T)
//   ccoeff-normed  n    sum I       -sum T        0           0             1/root(I)    1/root(T)
//
// with the normalising roots of score_rules.hpp (sqrt(sum X^2), or sqrt(n sum X^2 - (sum X)^2)
// for ccoeff-normed). Why the bound holds: U, V are exact in float (sums below 2^24) and each of
// the about 5 roundings forming A c + U V + W + Z adds at most 2^-24 of the magnitude
// |A| c + U |V| + W + Z; Gw (device rsqrtf, 2 ulp, of a float-rounded sum) and Gt (rounded from
// double) and the two products add at most 2^-22 + 3.5 * 2^-24 relative: about 13 * 2^-24 =
// 2^-20.3 of magnitude * |Gw Gt| in all, against exact doubles within 2^-50 of the real
// quotients; the bound is 4.9 times that. Clamping at `highest` (the sqdiff-normed rule's edge)
// moves nothing further away, and a value surely beyond it is the edge exactly (bound 0). A flat window or template (the exact rules' constants) screens to
// that constant with bound 0.
//
// Valid for n <= kScreenMaxPixels: every sum then fits int32.
#pragma once

#include <cmath>
#include <cstdint>

#include "rules/score_rules.hpp"

namespace nccmatch {

constexpr int64_t kScreenMaxPixels = 32768;  // n * 255^2 < 2^31
constexpr float kScreenBoundScale = 1.0f / (1 << 18);

// 1 / sqrt(v) in float for v > 0: the device's rsqrtf (2 ulp at most); the host's is closer.
NCC_HOST_DEVICE inline float screenInverseRoot(int64_t v) {
#if defined(__CUDA_ARCH__)
  return rsqrtf(__ll2float_rn(v));
#else
  return float(1.0 / std::sqrt(double(float(v))));
#endif
}

// The method's constants: A, |A|, the clamp, and what flat windows and flat templates score.
struct ScreenMethod {
  float a = 0.0f, absA = 0.0f;
  float highest = INFINITY;
  bool normed = false;
  float flatWindowScore = 0.0f;    // normed methods: a flat window (rules: normaliseScore over 0)
  float flatTemplateScore = 0.0f;  // normed methods: a flat template
};

NCC_HOST_DEVICE inline ScreenMethod screenMethod(Method method, int64_t n) {
  ScreenMethod m;
  const bool centred = method == Method::CCoeff || method == Method::CCoeffNormed;
  const bool sqdiff = method == Method::SqDiff || method == Method::SqDiffNormed;
  m.a = centred ? float(n) : (sqdiff ? -2.0f : 1.0f);
  m.absA = fabsf(m.a);
  m.normed = method == Method::SqDiffNormed || method == Method::CCorrNormed || method == Method::CCoeffNormed;
  if (method == Method::SqDiffNormed) {
    m.highest = 1.0f;
    m.flatWindowScore = m.flatTemplateScore = 1.0f;
  } else if (method == Method::CCoeffNormed) {
    m.flatTemplateScore = 1.0f;
  }
  return m;
}

// A window's part: U, W and Gw (0 where the exact rules call the window flat).
struct ScreenWindow {
  float u = 0.0f, w = 0.0f, scale = 1.0f;
};

NCC_HOST_DEVICE inline ScreenWindow screenWindow(Method method, int64_t n, int32_t s1, int32_t s2) {
  ScreenWindow win;
  switch (method) {
    case Method::SqDiff: win.w = float(s2); break;
    case Method::CCorr: break;
    case Method::CCoeff: win.u = float(s1); break;
    case Method::SqDiffNormed:
      win.w = float(s2);
      win.scale = windowIsFlat(double(s2), double(s2)) ? 0.0f : screenInverseRoot(s2);
      break;
    case Method::CCorrNormed:
      win.scale = windowIsFlat(double(s2), double(s2)) ? 0.0f : screenInverseRoot(s2);
      break;
    case Method::CCoeffNormed: {
      win.u = float(s1);
      // The rules' flat test compares the variance sum D / n with at most 0.5: a D above n
      // (integers) is never flat, and the double division is left for the few windows at or
      // below it.
      const int64_t centred = centredSquares<int64_t>(n, s1, s2);
      const bool flat = centred <= n && windowIsFlat(windowVarianceSum<int64_t>(n, s1, s2), double(s2));
      win.scale = flat ? 0.0f : screenInverseRoot(centred);
      break;
    }
  }
  return win;
}

// A template's part: V, |V|, Z and Gt (0 for a flat template of a normed method).
struct ScreenTemplate {
  float v = 0.0f, absV = 0.0f, z = 0.0f, scale = 1.0f;
};

NCC_HOST_DEVICE inline ScreenTemplate screenTemplate(Method method, const TemplateStats& t) {
  ScreenTemplate s;
  if (method == Method::CCoeff || method == Method::CCoeffNormed) {
    s.v = -float(t.sum);
    s.absV = float(t.sum);
  }
  if (method == Method::SqDiff || method == Method::SqDiffNormed) s.z = float(t.sumSq);
  if (method == Method::CCoeff) s.scale = float(1.0 / double(t.n));
  const int64_t root = method == Method::CCoeffNormed ? centredSquares<int64_t>(t.n, t.sum, t.sumSq) : t.sumSq;
  if (method == Method::SqDiffNormed || method == Method::CCorrNormed || method == Method::CCoeffNormed)
    s.scale = root > 0 ? float(1.0 / sqrt(double(root))) : 0.0f;
  return s;
}

struct ScreenedPair {
  float score, bound;
};

// The screened score of window `win` against template `t` whose cross sum is c = sum I*T.
NCC_HOST_DEVICE inline ScreenedPair screenPair(const ScreenMethod& m, const ScreenTemplate& t, const ScreenWindow& win,
                                               uint32_t c) {
  const float cf = float(c);
  const float wz = win.w + t.z;
  const float value = fmaf(m.a, cf, fmaf(win.u, t.v, wz));
  const float magnitude = fmaf(m.absA, cf, fmaf(win.u, t.absV, wz));
  const float scale = win.scale * t.scale;
  const float unclamped = value * scale;
  float bound = magnitude * fabsf(scale) * kScreenBoundScale;
  // Surely past the clamp (sqdiff-normed's ratio of 1 or more): the exact rule's edge, exactly.
  if (unclamped - bound >= m.highest) bound = 0.0f;
  float score = fminf(unclamped, m.highest);
  if (m.normed && (t.scale == 0.0f || win.scale == 0.0f)) {  // the exact rules' constants
    score = t.scale == 0.0f ? m.flatTemplateScore : m.flatWindowScore;
    bound = 0.0f;
  }
  return {score, bound};
}

// The same screen folded for a kernel that screens each window against many templates: the
// window's part, with the goodness sign, the flat-window constant and the window's validity
// folded in, is formed once, and a pair then costs a handful of multiply-adds. It gives the
// range [floor, ceiling] of the pair's exact goodness (sign * scoreFromSums):
//
//   goodness = (A c + U V + W + Z) * (sign Gw) * Gt + offset      (flat window: Gw 0, offset the
//   bound    = (|A| c + U |V| + W + Z) * |Gw Gt| * 2^-18             rule's constant times sign)
//   ceiling  = max(goodness + bound, lowest),  floor = goodness - bound
//
// the same value and bound as screenPair's. The exact goodness is at least `lowest`
// (screenLowestGoodness: sqdiff-normed's clamp at 1 with sign -1; -inf otherwise), so the
// ceiling is clamped there and a floor may be raised to it (the caller's max over floors). An
// invalid window (outside the map) has goodness, ceiling and floor -inf. A flat template of a
// normed method scores its constant everywhere: the caller's case (screenFlatTemplate).
struct ScreenFoldedWindow {
  float u = 0.0f, w = 0.0f;
  float gw = 0.0f;             // sign * Gw; 0 for a flat or invalid window
  float offset = -INFINITY;    // sign * the flat window's constant, 0, or -inf (invalid)
};

NCC_HOST_DEVICE inline ScreenFoldedWindow screenFoldWindow(const ScreenMethod& m, const ScreenWindow& win, float sign,
                                                           bool valid) {
  ScreenFoldedWindow f;
  const bool flat = m.normed && win.scale == 0.0f;
  f.u = win.u;
  f.w = win.w;
  f.gw = valid && !flat ? sign * win.scale : 0.0f;
  f.offset = !valid ? -INFINITY : (flat ? sign * m.flatWindowScore : 0.0f);
  return f;
}

// The least exact goodness of the method: -highest where the rule clamps (sign -1), else -inf.
NCC_HOST_DEVICE inline float screenLowestGoodness(const ScreenMethod& m, float sign) {
  return sign < 0.0f && m.highest != INFINITY ? -m.highest : -INFINITY;
}

// A normed method's flat template (its Gt 0): every window's goodness is this constant.
NCC_HOST_DEVICE inline bool screenFlatTemplate(const ScreenMethod& m, const ScreenTemplate& t) {
  return m.normed && t.scale == 0.0f;
}

struct ScreenedRange {
  float ceiling, floor;
};

// The range from a pair's value and magnitude (the part both forms share).
NCC_HOST_DEVICE inline ScreenedRange screenFoldedRange(const ScreenTemplate& t, const ScreenFoldedWindow& f,
                                                       float lowest, float value, float magnitude) {
  const float scale = f.gw * t.scale;
  const float goodness = fmaf(value, scale, f.offset);
  const float bound = magnitude * fabsf(scale) * kScreenBoundScale;
  return {fmaxf(goodness + bound, lowest), goodness - bound};
}

// A pair's range in the form of its method's kind: centred (ccoeff, ccoeff-normed: W = Z = 0,
// |V| = -V) or not (U = V = 0), screenCentred(method) says which. The zero terms are left out:
// the value and magnitude are bit for bit those of screenPair's five-term forms (a product plus
// zero rounds as the product alone; a negated product is the product of the negation), so the
// range is screenPair's (sign * score less and plus its bound, the ceiling at least `lowest`)
// wherever screenPair does not clamp at `highest`.
template <bool kCentred>
NCC_HOST_DEVICE inline ScreenedRange screenFoldedPair(const ScreenMethod& m, const ScreenTemplate& t,
                                                      const ScreenFoldedWindow& f, float lowest, uint32_t c) {
  const float cf = float(c);
  if constexpr (kCentred) {
    const float uv = f.u * t.v;
    return screenFoldedRange(t, f, lowest, fmaf(m.a, cf, uv), fmaf(m.absA, cf, -uv));
  } else {
    const float wz = f.w + t.z;
    return screenFoldedRange(t, f, lowest, fmaf(m.a, cf, wz), fmaf(m.absA, cf, wz));
  }
}

// Whether a method's screen is centred (U V terms) rather than not (W + Z terms).
NCC_HOST_DEVICE inline bool screenCentred(Method method) {
  return method == Method::CCoeff || method == Method::CCoeffNormed;
}

}  // namespace nccmatch
