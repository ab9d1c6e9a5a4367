// Device scoring shared by the score kernels and the fused spatial kernel: the CPU's
// scoreFromSums / scoreFromCentred with an int64 shortcut that gives the same doubles.
#pragma once

#include "cuda/score/score_centred.hpp"
#include "rules/score_rules.hpp"

namespace nccmatch::cuda {

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

// The denominator of a normalised method (0 for a flat window, a flat template or an
// unnormalised method): a numerator error e moves the score by about e / denominator.
__device__ inline double centredDenominator(Method method, const TemplateStats& t, int64_t s1,
                                            int64_t s2) {
  switch (method) {
    case Method::CCoeffNormed: {
      double varT, diff2;
      const double n = (double)t.n;
      if (t.n <= kInt64SafePixels) {
        varT = (double)(t.n * t.sumSq - t.sum * t.sum);
        diff2 = (double)(t.n * s2 - s1 * s1) / n;
      } else {
        varT = (double)t.centredSq();
        diff2 = (double)((__int128)t.n * s2 - (__int128)s1 * s1) / n;
      }
      if (varT == 0) return 0.0;
      return windowIsFlat(diff2, (double)s2) ? 0.0 : sqrt(diff2) * sqrt(varT / n);
    }
    case Method::SqDiffNormed:
    case Method::CCorrNormed: {
      const double w2 = (double)s2;
      return windowIsFlat(w2, w2) ? 0.0 : sqrt(w2) * sqrt((double)t.sumSq);
    }
    default:
      return 0.0;
  }
}

}  // namespace nccmatch::cuda
