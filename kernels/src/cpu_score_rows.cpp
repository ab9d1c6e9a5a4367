#include "cpu_score_rows.hpp"

#include <cmath>

namespace nccmatch {

void boxSumsRow(const int64_t* sat, const int64_t* satSq, int frameWidth, int tw, int th, int y,
                int mapW, int64_t* s1, int64_t* s2) {
  const std::ptrdiff_t W = frameWidth;
  const int64_t* bottom = sat + (y + th - 1) * W;
  const int64_t* bottomSq = satSq + (y + th - 1) * W;
  const int64_t* top = y > 0 ? sat + (y - 1) * W : nullptr;
  const int64_t* topSq = y > 0 ? satSq + (y - 1) * W : nullptr;
  // Column x + tw - 1 minus column x - 1, both for the bottom row and (if any) the row above.
  s1[0] = bottom[tw - 1] - (top ? top[tw - 1] : 0);
  s2[0] = bottomSq[tw - 1] - (topSq ? topSq[tw - 1] : 0);
  if (top) {
    for (int x = 1; x < mapW; ++x) {
      s1[x] = bottom[x + tw - 1] - bottom[x - 1] - top[x + tw - 1] + top[x - 1];
      s2[x] = bottomSq[x + tw - 1] - bottomSq[x - 1] - topSq[x + tw - 1] + topSq[x - 1];
    }
  } else {
    for (int x = 1; x < mapW; ++x) {
      s1[x] = bottom[x + tw - 1] - bottom[x - 1];
      s2[x] = bottomSq[x + tw - 1] - bottomSq[x - 1];
    }
  }
}

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
        double tt = windowIsFlat(w2, w2) ? 0.0 : std::sqrt(w2) * rootT;
        out[x] = normaliseScore(num, tt, sq);
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
        double tt = windowIsFlat(diff2, double(s2[x])) ? 0.0 : std::sqrt(diff2) * rootT;
        out[x] = normaliseScore(num, tt, false);
      }
      return;
    }
  }
}

}  // namespace nccmatch
