// The six matchTemplate methods from the window sums, with OpenCV's CPU rules for (near-)flat
// windows and templates. Exact inputs (int64 sums), double arithmetic; usable on host and device.
#pragma once

#include <cfloat>
#include <cmath>
#include <cstdint>

#include "nccmatch/sat.hpp"  // NCC_HOST_DEVICE
#include "nccmatch/types.hpp"

namespace nccmatch {

// Statistics of one template, computed once per bank.
struct TemplateStats {
  int64_t n = 0;      // pixel count
  int64_t sum = 0;    // sum of T
  int64_t sumSq = 0;  // sum of T^2
  // n*sumSq - sum^2 (n^2 times the variance); 0 means a flat template.
  NCC_HOST_DEVICE __int128 centredSq() const { return (__int128)n * sumSq - (__int128)sum * sum; }
};

// A template's statistics from its pixels (host).
inline TemplateStats templateStats(const TemplateImage& t) {
  TemplateStats s;
  s.n = int64_t(t.width) * t.height;
  for (uint8_t v : t.pixels) {
    s.sum += v;
    s.sumSq += int64_t(v) * v;
  }
  return s;
}

// OpenCV's normalisation step: num / t, where t == 0 marks a window treated as flat.
// A ratio just outside [-1, 1] (rounding) is clamped; anything further out gives 0 (1 for
// sqdiff-normed, its worst value).
NCC_HOST_DEVICE inline double normaliseScore(double num, double t, bool sqdiffNormed) {
  if (fabs(num) < t) return num / t;
  if (fabs(num) < t * 1.125) return num > 0 ? 1.0 : -1.0;
  return sqdiffNormed ? 1.0 : 0.0;
}

// OpenCV treats a window as flat when its variance sum is tiny against rounding.
NCC_HOST_DEVICE inline bool windowIsFlat(double diff2, double windowSumSq) {
  double limit = 10.0 * FLT_EPSILON * windowSumSq;
  return diff2 <= (limit < 0.5 ? limit : 0.5);
}

// Score of one window. s1 = sum I, s2 = sum I^2, c = sum I*T over the window.
NCC_HOST_DEVICE inline double scoreFromSums(Method method, const TemplateStats& t, int64_t s1,
                                            int64_t s2, int64_t c) {
  switch (method) {
    case Method::SqDiff:
      return (double)(s2 - 2 * c + t.sumSq);
    case Method::CCorr:
      return (double)c;
    case Method::CCoeff:
      // sum (I - mean I)(T - mean T) = c - s1*sumT/n, exact in 128 bits before the one division.
      return (double)((__int128)t.n * c - (__int128)s1 * t.sum) / (double)t.n;
    case Method::SqDiffNormed:
    case Method::CCorrNormed: {
      double num = method == Method::SqDiffNormed ? (double)(s2 - 2 * c + t.sumSq) : (double)c;
      double w2 = (double)s2;
      double tt = windowIsFlat(w2, w2) ? 0.0 : sqrt(w2) * sqrt((double)t.sumSq);
      return normaliseScore(num, tt, method == Method::SqDiffNormed);
    }
    case Method::CCoeffNormed: {
      __int128 varT = t.centredSq();
      if (varT == 0) return 1.0;  // flat template: OpenCV's CPU result, 1 everywhere
      double n = (double)t.n;
      double num = (double)((__int128)t.n * c - (__int128)s1 * t.sum) / n;
      double diff2 = (double)((__int128)t.n * s2 - (__int128)s1 * s1) / n;
      double tt = windowIsFlat(diff2, (double)s2) ? 0.0 : sqrt(diff2) * sqrt((double)varT / n);
      return normaliseScore(num, tt, false);
    }
  }
  return 0.0;
}

}  // namespace nccmatch
