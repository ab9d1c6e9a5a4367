// Built with -fno-math-errno -fno-trapping-math (kernels/meson.build): GCC vectorises the square
// roots and compares of the score loops only then (a pragma does not reach the sqrt builtin).
#include "cpu/cpu_score_rows.hpp"
#include "cpu/simd_clones.hpp"

#include <cfloat>
#include <cmath>

#include "cpu/cpu_score_centred.hpp"

namespace nccmatch {

namespace {

// normaliseScore (score_rules.hpp) with every arm computed and one picked, so the same values come
// out of a loop the compiler vectorises (a division inside a branch keeps it scalar).
inline double normaliseSelect(double num, double t, bool sqdiffNormed) {
  const double quotient = num / t;
  const double edge = num > 0 ? 1.0 : -1.0;
  const double beyond = sqdiffNormed ? 1.0 : 0.0;
  const double a = std::fabs(num);
  return a < t ? quotient : (a < t * 1.125 ? edge : beyond);
}

// sqrt(diff2) * rootT, or 0 where windowIsFlat(diff2, windowSumSq) (score_rules.hpp).
inline double denominatorSelect(double diff2, double windowSumSq, double rootT) {
  const double limit = 10.0 * FLT_EPSILON * windowSumSq;
  const double root = std::sqrt(diff2) * rootT;
  return diff2 <= (limit < 0.5 ? limit : 0.5) ? 0.0 : root;
}

}  // namespace

// Cloned for AVX-512 (int64 multiplies and int64 -> double conversions in vectors) and AVX2, with
// a run-time pick; the arithmetic is the same in every clone, so results are too.
NCCMATCH_SIMD_CLONES
void scoreRowExact(Method method, const TemplateStats& t, const int64_t* s1, const int64_t* s2,
                   const int64_t* cross, int mapW, double* out) {
  // n^2 * 255^2 < 2^63 keeps every product below in int64.
  if (t.n >= 11000000) {
    for (int x = 0; x < mapW; ++x) out[x] = scoreFromSums(method, t, s1[x], s2[x], cross[x]);
    return;
  }
  const int64_t n = t.n, sumT = t.sum, sumSqT = t.sumSq;
  const double nd = double(n);
  switch (method) {
    case Method::SqDiff:
      for (int x = 0; x < mapW; ++x) out[x] = double(s2[x] - 2 * cross[x] + sumSqT);
      return;
    case Method::CCorr:
      for (int x = 0; x < mapW; ++x) out[x] = double(cross[x]);
      return;
    case Method::CCoeff:
      for (int x = 0; x < mapW; ++x) out[x] = double(n * cross[x] - s1[x] * sumT) / nd;
      return;
    case Method::SqDiffNormed:
    case Method::CCorrNormed: {
      const bool sq = method == Method::SqDiffNormed;
      const double rootT = std::sqrt(double(sumSqT));
      for (int x = 0; x < mapW; ++x) {
        double num = sq ? double(s2[x] - 2 * cross[x] + sumSqT) : double(cross[x]);
        double w2 = double(s2[x]);
        out[x] = normaliseSelect(num, denominatorSelect(w2, w2, rootT), sq);
      }
      return;
    }
    case Method::CCoeffNormed: {
      const __int128 varT = t.centredSq();
      if (varT == 0) {
        for (int x = 0; x < mapW; ++x) out[x] = 1.0;
        return;
      }
      const double rootT = std::sqrt(double(varT) / nd);
      for (int x = 0; x < mapW; ++x) {
        double num = double(n * cross[x] - s1[x] * sumT) / nd;
        double diff2 = double(n * s2[x] - s1[x] * s1[x]) / nd;
        out[x] = normaliseSelect(num, denominatorSelect(diff2, double(s2[x]), rootT), false);
      }
      return;
    }
  }
}

NCCMATCH_SIMD_CLONES
bool scoreRowCentred(Method method, const TemplateStats& t, const int64_t* s1, const int64_t* s2,
                     const float* centred, int count, double minDenominator, double* out) {
  // n^2 * 255^2 < 2^63 keeps n * s2 and s1^2 in int64.
  if (t.n >= 11000000) {
    bool inaccurate = false;
    for (int x = 0; x < count; ++x) {
      CentredScore r = scoreFromCentred(method, t, s1[x], s2[x], centred[x]);
      out[x] = r.score;
      inaccurate |= r.denominator > 0 && r.denominator < minDenominator;
    }
    return inaccurate;
  }
  const int64_t n = t.n;
  const double meanT = double(t.sum) / double(t.n);
  const double sumSqT = double(t.sumSq);
  switch (method) {
    case Method::SqDiff:
      for (int x = 0; x < count; ++x)
        out[x] = double(s2[x]) - 2.0 * (double(centred[x]) + double(s1[x]) * meanT) + sumSqT;
      return false;
    case Method::CCorr:
      for (int x = 0; x < count; ++x) out[x] = double(centred[x]) + double(s1[x]) * meanT;
      return false;
    case Method::CCoeff:
      for (int x = 0; x < count; ++x) out[x] = double(centred[x]);
      return false;
    case Method::SqDiffNormed:
    case Method::CCorrNormed: {
      const bool sq = method == Method::SqDiffNormed;
      const double rootT = std::sqrt(sumSqT);
      int inaccurate = 0;
      for (int x = 0; x < count; ++x) {
        const double cross = double(centred[x]) + double(s1[x]) * meanT;
        double num = sq ? double(s2[x]) - 2.0 * cross + sumSqT : cross;
        double w2 = double(s2[x]);
        double tt = denominatorSelect(w2, w2, rootT);
        out[x] = normaliseSelect(num, tt, sq);
        inaccurate |= int(tt > 0) & int(tt < minDenominator);
      }
      return inaccurate != 0;
    }
    case Method::CCoeffNormed: {
      const __int128 varT = t.centredSq();
      if (varT == 0) {
        for (int x = 0; x < count; ++x) out[x] = 1.0;
        return false;
      }
      const double nd = double(n);
      const double rootT = std::sqrt(double(varT) / nd);
      int inaccurate = 0;
      for (int x = 0; x < count; ++x) {
        double diff2 = double(n * s2[x] - s1[x] * s1[x]) / nd;
        double tt = denominatorSelect(diff2, double(s2[x]), rootT);
        out[x] = normaliseSelect(double(centred[x]), tt, false);
        inaccurate |= int(tt > 0) & int(tt < minDenominator);
      }
      return inaccurate != 0;
    }
  }
  return false;
}

}  // namespace nccmatch
