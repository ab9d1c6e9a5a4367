// The six methods from a centred numerator held in floating point (the FFT path): C' = sum of
// I*(T - mean T). Same rules as score_rules.hpp; the window sums s1, s2 stay exact integers.
#pragma once

#include <cmath>
#include <cstdint>

#include "rules/score_rules.hpp"

namespace nccmatch {

struct CentredScore {
  double score = 0;
  // The denominator of a normalised method (0 for a flat window or an unnormalised method): a
  // numerator error e moves the score by about e / denominator.
  double denominator = 0;
};

inline CentredScore scoreFromCentred(Method method, const TemplateStats& t, int64_t s1, int64_t s2,
                                     double centred) {
  const double meanT = double(t.sum) / double(t.n);
  const double cross = centred + double(s1) * meanT;  // sum I*T
  switch (method) {
    case Method::SqDiff:
      return {double(s2) - 2.0 * cross + double(t.sumSq), 0.0};
    case Method::CCorr:
      return {cross, 0.0};
    case Method::CCoeff:
      return {centred, 0.0};
    case Method::SqDiffNormed:
    case Method::CCorrNormed: {
      const bool sq = method == Method::SqDiffNormed;
      double num = sq ? double(s2) - 2.0 * cross + double(t.sumSq) : cross;
      double w2 = double(s2);
      double tt = windowIsFlat(w2, w2) ? 0.0 : std::sqrt(w2) * std::sqrt(double(t.sumSq));
      return {normaliseScore(num, tt, sq), tt};
    }
    case Method::CCoeffNormed: {
      __int128 varT = t.centredSq();
      if (varT == 0) return {1.0, 0.0};
      double n = double(t.n);
      double diff2 = double((__int128)t.n * s2 - (__int128)s1 * s1) / n;
      double tt = windowIsFlat(diff2, double(s2)) ? 0.0 : std::sqrt(diff2) * std::sqrt(double(varT) / n);
      return {normaliseScore(centred, tt, false), tt};
    }
  }
  return {0.0, 0.0};
}

}  // namespace nccmatch
