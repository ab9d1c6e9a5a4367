// The six methods from exact window sums and an approximate centred numerator
// (sum I*T' with T' = T - mean T, e.g. from the FFT path): the float-path twin of
// scoreFromSums in score_rules.hpp, with the same flat-window and flat-template rules.
#pragma once

#include "rules/score_rules.hpp"

namespace nccmatch {

NCC_HOST_DEVICE inline double scoreFromCentred(Method method, const TemplateStats& t, int64_t s1,
                                               int64_t s2, double centred) {
  const double n = (double)t.n;
  switch (method) {
    case Method::CCoeff:
      return centred;
    case Method::CCoeffNormed: {
      __int128 varT = t.centredSq();
      if (varT == 0) return 1.0;
      double diff2 = (double)((__int128)t.n * s2 - (__int128)s1 * s1) / n;
      double tt = windowIsFlat(diff2, (double)s2) ? 0.0 : sqrt(diff2) * sqrt((double)varT / n);
      return normaliseScore(centred, tt, false);
    }
    default:
      break;
  }
  // sum I*T = sum I*T' + sum I * mean T.
  const double cross = centred + (double)s1 * ((double)t.sum / n);
  switch (method) {
    case Method::SqDiff:
      return (double)(s2 + t.sumSq) - 2.0 * cross;
    case Method::CCorr:
      return cross;
    case Method::SqDiffNormed:
    case Method::CCorrNormed: {
      double num = method == Method::SqDiffNormed ? (double)(s2 + t.sumSq) - 2.0 * cross : cross;
      double w2 = (double)s2;
      double tt = windowIsFlat(w2, w2) ? 0.0 : sqrt(w2) * sqrt((double)t.sumSq);
      return normaliseScore(num, tt, method == Method::SqDiffNormed);
    }
    default:
      break;
  }
  return 0.0;
}

}  // namespace nccmatch
