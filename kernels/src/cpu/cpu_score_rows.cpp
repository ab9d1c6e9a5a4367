// Built with -fno-math-errno -fno-trapping-math (kernels/meson.build): GCC vectorises the square
// roots and compares of the score loops only then (a pragma does not reach the sqrt builtin).
#include "cpu/cpu_score_rows.hpp"
#include "cpu/simd_clones.hpp"

#include <cmath>

namespace nccmatch {

// Cloned for AVX-512 (int64 multiplies and int64 -> double conversions in vectors) and AVX2, with
// a run-time pick; the arithmetic is the same in every clone, so results are too.
NCCMATCH_SIMD_CLONES
void scoreRowExact(Method method, const TemplateStats& t, const int64_t* s1, const int64_t* s2,
                   const int64_t* cross, int mapW, double* out) {
  if (t.n > kInt64SafePixels) {
    for (int x = 0; x < mapW; ++x) out[x] = scoreFromSums(method, t, s1[x], s2[x], cross[x]);
    return;
  }
  // scoreFromSumsAs<int64_t> with the method's switch outside the loops, so each loop vectorises.
  const TemplateStats stats = t;
  switch (method) {
    case Method::SqDiff:
      for (int x = 0; x < mapW; ++x) out[x] = double(sqDiffSum(stats, s2[x], cross[x]));
      return;
    case Method::CCorr:
      for (int x = 0; x < mapW; ++x) out[x] = double(cross[x]);
      return;
    case Method::CCoeff:
      for (int x = 0; x < mapW; ++x) out[x] = ccoeffFromSums<int64_t>(stats, s1[x], cross[x]);
      return;
    case Method::SqDiffNormed:
    case Method::CCorrNormed: {
      const bool sq = method == Method::SqDiffNormed;
      const double rootT = uncentredTemplateRoot(stats);
      for (int x = 0; x < mapW; ++x) {
        const double num = sq ? double(sqDiffSum(stats, s2[x], cross[x])) : double(cross[x]);
        out[x] = uncentredNormed(num, s2[x], rootT, sq).score;
      }
      return;
    }
    case Method::CCoeffNormed: {
      const double rootT = centredTemplateRoot<int64_t>(stats);
      if (rootT == 0.0) {
        for (int x = 0; x < mapW; ++x) out[x] = 1.0;
        return;
      }
      for (int x = 0; x < mapW; ++x)
        out[x] = ccoeffNormed(ccoeffFromSums<int64_t>(stats, s1[x], cross[x]),
                              windowVarianceSum<int64_t>(stats.n, s1[x], s2[x]), s2[x], rootT)
                     .score;
      return;
    }
  }
}

NCCMATCH_SIMD_CLONES
bool scoreRowCentred(Method method, const TemplateStats& t, const int64_t* s1, const int64_t* s2,
                     const float* centred, int count, double minDenominator, double* out) {
  if (t.n > kInt64SafePixels) {
    bool inaccurate = false;
    for (int x = 0; x < count; ++x) {
      CentredScore r = scoreFromCentred(method, t, s1[x], s2[x], centred[x]);
      out[x] = r.score;
      inaccurate |= r.denominator > 0 && r.denominator < minDenominator;
    }
    return inaccurate;
  }
  // scoreFromCentredAs<int64_t> with the method's switch outside the loops.
  const int64_t n = t.n;
  const double meanT = double(t.sum) / double(t.n);
  const double sumSqT = double(t.sumSq);
  switch (method) {
    case Method::SqDiff:
      for (int x = 0; x < count; ++x)
        out[x] = sqDiffFromCross(s2[x], crossFromCentred(centred[x], s1[x], meanT), sumSqT);
      return false;
    case Method::CCorr:
      for (int x = 0; x < count; ++x) out[x] = crossFromCentred(centred[x], s1[x], meanT);
      return false;
    case Method::CCoeff:
      for (int x = 0; x < count; ++x) out[x] = double(centred[x]);
      return false;
    case Method::SqDiffNormed:
    case Method::CCorrNormed: {
      const bool sq = method == Method::SqDiffNormed;
      const double rootT = uncentredTemplateRoot(t);
      int inaccurate = 0;
      for (int x = 0; x < count; ++x) {
        const double cross = crossFromCentred(centred[x], s1[x], meanT);
        const CentredScore r = uncentredNormed(sq ? sqDiffFromCross(s2[x], cross, sumSqT) : cross, s2[x], rootT, sq);
        out[x] = r.score;
        inaccurate |= int(r.denominator > 0) & int(r.denominator < minDenominator);
      }
      return inaccurate != 0;
    }
    case Method::CCoeffNormed: {
      const double rootT = centredTemplateRoot<int64_t>(t);
      if (rootT == 0.0) {
        for (int x = 0; x < count; ++x) out[x] = 1.0;
        return false;
      }
      int inaccurate = 0;
      for (int x = 0; x < count; ++x) {
        const CentredScore r = ccoeffNormed(centred[x], windowVarianceSum<int64_t>(n, s1[x], s2[x]), s2[x], rootT);
        out[x] = r.score;
        inaccurate |= int(r.denominator > 0) & int(r.denominator < minDenominator);
      }
      return inaccurate != 0;
    }
  }
  return false;
}

}  // namespace nccmatch
