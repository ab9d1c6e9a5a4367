// The six matchTemplate methods from the window sums, with OpenCV's CPU rules for (near-)flat
// windows and templates: the one definition that the CPU reference, the CPU row loops and every
// CUDA score kernel call. Exact inputs (int64 sums), double arithmetic; host and device.
//
// Products of sums are formed in a signed integer type Wide: __int128 always fits; int64_t fits
// while n <= kInt64SafePixels and then gives the same integers, so the same doubles (and a
// hardware conversion instead of a software 128-bit one). scoreFromSums / scoreFromCentred pick
// the width; the ...As<Wide> forms name it.
//
// normaliseScore and normedDenominator compute every arm and pick one: the values are those of
// the branches, and a loop over them vectorises (a division or square root inside a branch
// keeps a CPU loop scalar).
#pragma once

#include <cfloat>
#include <cmath>
#include <cstdint>

#include "nccmatch/sat.hpp"  // NCC_HOST_DEVICE
#include "nccmatch/types.hpp"

namespace nccmatch {

// Every product below fits int64 while n^2 * 255^2 < 2^63 (n below 1.19e7 pixels).
constexpr int64_t kInt64SafePixels = 11000000;

// n * sum(I*T) - sum(I) * sum(T): n times the centred cross term sum (I - mean I)(T - mean T).
template <typename Wide>
NCC_HOST_DEVICE inline Wide centredCross(int64_t n, int64_t sumT, int64_t s1, int64_t c) {
  return (Wide)n * c - (Wide)s1 * sumT;
}

// n * sum(X^2) - sum(X)^2: n^2 times the variance of n values (a window or a template).
template <typename Wide>
NCC_HOST_DEVICE inline Wide centredSquares(int64_t n, int64_t sum, int64_t sumSq) {
  return (Wide)n * sumSq - (Wide)sum * sum;
}

// Statistics of one template, computed once per bank.
struct TemplateStats {
  int64_t n = 0;      // pixel count
  int64_t sum = 0;    // sum of T
  int64_t sumSq = 0;  // sum of T^2
  // n*sumSq - sum^2 (n^2 times the variance); 0 means a flat template.
  NCC_HOST_DEVICE __int128 centredSq() const { return centredSquares<__int128>(n, sum, sumSq); }
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
  const double quotient = num / t;
  const double edge = num > 0 ? 1.0 : -1.0;
  const double beyond = sqdiffNormed ? 1.0 : 0.0;
  const double a = fabs(num);
  return a < t ? quotient : (a < t * 1.125 ? edge : beyond);
}

// OpenCV's bound below which a window's variance sum counts as rounding noise.
NCC_HOST_DEVICE inline double flatLimit(double windowSumSq) {
  const double limit = 10.0 * FLT_EPSILON * windowSumSq;
  return limit < 0.5 ? limit : 0.5;
}

// OpenCV treats a window as flat when its variance sum is tiny against rounding.
NCC_HOST_DEVICE inline bool windowIsFlat(double diff2, double windowSumSq) {
  return diff2 <= flatLimit(windowSumSq);
}

// The denominator of a normalised method: sqrt(diff2) * templateRoot, 0 for a flat window.
// diff2 is the window's variance sum (sum I^2 for the uncentred methods), templateRoot the
// template's part (sqrt(sum T^2), or sqrt(varT / n) for ccoeff-normed).
NCC_HOST_DEVICE inline double normedDenominator(double diff2, double windowSumSq,
                                                double templateRoot) {
  const double root = sqrt(diff2) * templateRoot;
  return windowIsFlat(diff2, windowSumSq) ? 0.0 : root;
}

// A score and its denominator (0 for a flat window, a flat template or an unnormalised method):
// a numerator error e moves the score by about e / denominator.
struct CentredScore {
  double score = 0;
  double denominator = 0;
};

// sqrt(sum T^2): the template's part of the sqdiff-normed and ccorr-normed denominators.
NCC_HOST_DEVICE inline double uncentredTemplateRoot(const TemplateStats& t) {
  return sqrt((double)t.sumSq);
}

// sqrt(varT / n), varT = n * sum T^2 - (sum T)^2: the template's part of the ccoeff-normed
// denominator; 0 exactly for a flat template.
template <typename Wide>
NCC_HOST_DEVICE inline double centredTemplateRoot(const TemplateStats& t) {
  return sqrt((double)centredSquares<Wide>(t.n, t.sum, t.sumSq) / (double)t.n);
}

// sqdiff-normed (sqdiffNormed) or ccorr-normed from its numerator and the window's sum I^2.
NCC_HOST_DEVICE inline CentredScore uncentredNormed(double num, int64_t s2, double templateRoot,
                                                    bool sqdiffNormed) {
  const double w2 = (double)s2;
  const double tt = normedDenominator(w2, w2, templateRoot);
  return {normaliseScore(num, tt, sqdiffNormed), tt};
}

// ccoeff-normed from the centred numerator num = sum I*T - sum I * sum T / n and the window's
// variance sum diff2 = sum I^2 - (sum I)^2 / n. A flat template (templateRoot 0) scores 1
// everywhere: OpenCV's CPU result.
NCC_HOST_DEVICE inline CentredScore ccoeffNormed(double num, double diff2, int64_t s2,
                                                 double templateRoot) {
  if (templateRoot == 0.0) return {1.0, 0.0};
  const double tt = normedDenominator(diff2, (double)s2, templateRoot);
  return {normaliseScore(num, tt, false), tt};
}

// The exact sqdiff sum: sum I^2 - 2 sum I*T + sum T^2.
NCC_HOST_DEVICE inline int64_t sqDiffSum(const TemplateStats& t, int64_t s2, int64_t c) {
  return s2 - 2 * c + t.sumSq;
}

// sum (I - mean I)(T - mean T) from exact sums: one rounding after the integer products.
template <typename Wide>
NCC_HOST_DEVICE inline double ccoeffFromSums(const TemplateStats& t, int64_t s1, int64_t c) {
  return (double)centredCross<Wide>(t.n, t.sum, s1, c) / (double)t.n;
}

// The window's variance sum sum I^2 - (sum I)^2 / n from exact sums.
template <typename Wide>
NCC_HOST_DEVICE inline double windowVarianceSum(int64_t n, int64_t s1, int64_t s2) {
  return (double)centredSquares<Wide>(n, s1, s2) / (double)n;
}

// Score of one window in the integer width Wide. s1 = sum I, s2 = sum I^2, c = sum I*T.
template <typename Wide>
NCC_HOST_DEVICE inline double scoreFromSumsAs(Method method, const TemplateStats& t, int64_t s1,
                                              int64_t s2, int64_t c) {
  switch (method) {
    case Method::SqDiff:
      return (double)sqDiffSum(t, s2, c);
    case Method::CCorr:
      return (double)c;
    case Method::CCoeff:
      return ccoeffFromSums<Wide>(t, s1, c);
    case Method::SqDiffNormed:
      return uncentredNormed((double)sqDiffSum(t, s2, c), s2, uncentredTemplateRoot(t), true).score;
    case Method::CCorrNormed:
      return uncentredNormed((double)c, s2, uncentredTemplateRoot(t), false).score;
    case Method::CCoeffNormed:
      return ccoeffNormed(ccoeffFromSums<Wide>(t, s1, c), windowVarianceSum<Wide>(t.n, s1, s2), s2,
                          centredTemplateRoot<Wide>(t))
          .score;
  }
  return 0.0;
}

// Score of one window, exact: int64 products where they fit, 128-bit ones beyond.
NCC_HOST_DEVICE inline double scoreFromSums(Method method, const TemplateStats& t, int64_t s1,
                                            int64_t s2, int64_t c) {
  return t.n <= kInt64SafePixels ? scoreFromSumsAs<int64_t>(method, t, s1, s2, c)
                                 : scoreFromSumsAs<__int128>(method, t, s1, s2, c);
}

// sum I*T from the centred numerator sum I*T' (T' = T - mean T): sum I*T' + sum I * mean T.
NCC_HOST_DEVICE inline double crossFromCentred(double centred, int64_t s1, double meanT) {
  return centred + (double)s1 * meanT;
}

// sqdiff from an approximate cross term: sum I^2 - 2 cross + sum T^2.
NCC_HOST_DEVICE inline double sqDiffFromCross(int64_t s2, double cross, double sumSqT) {
  return (double)s2 - 2.0 * cross + sumSqT;
}

// The six methods from exact window sums and a centred numerator held in floating point
// (sum I*T' from the FFT path), with the same flat-window and flat-template rules as
// scoreFromSums; the integer width as there.
template <typename Wide>
NCC_HOST_DEVICE inline CentredScore scoreFromCentredAs(Method method, const TemplateStats& t,
                                                       int64_t s1, int64_t s2, double centred) {
  const double meanT = (double)t.sum / (double)t.n;
  switch (method) {
    case Method::SqDiff:
      return {sqDiffFromCross(s2, crossFromCentred(centred, s1, meanT), (double)t.sumSq), 0.0};
    case Method::CCorr:
      return {crossFromCentred(centred, s1, meanT), 0.0};
    case Method::CCoeff:
      return {centred, 0.0};
    case Method::SqDiffNormed:
      return uncentredNormed(
          sqDiffFromCross(s2, crossFromCentred(centred, s1, meanT), (double)t.sumSq), s2,
          uncentredTemplateRoot(t), true);
    case Method::CCorrNormed:
      return uncentredNormed(crossFromCentred(centred, s1, meanT), s2, uncentredTemplateRoot(t),
                             false);
    case Method::CCoeffNormed:
      return ccoeffNormed(centred, windowVarianceSum<Wide>(t.n, s1, s2), s2,
                          centredTemplateRoot<Wide>(t));
  }
  return {0.0, 0.0};
}

NCC_HOST_DEVICE inline CentredScore scoreFromCentred(Method method, const TemplateStats& t,
                                                     int64_t s1, int64_t s2, double centred) {
  return t.n <= kInt64SafePixels ? scoreFromCentredAs<int64_t>(method, t, s1, s2, centred)
                                 : scoreFromCentredAs<__int128>(method, t, s1, s2, centred);
}

// A ccoeff-normed template's constants for a kernel that scores many windows with int64 sums
// (n <= kInt64SafePixels): its root, and 1/n where n is a power of two (a division by n is then
// an exact multiplication, so the doubles stay those of scoreFromSums).
struct NormedConstants {
  double templateScale = 0.0;  // centredTemplateRoot; 0 for a flat template
  double inverseN = 0.0;       // 1/n when n is a power of two, else 0 (divide)
};

NCC_HOST_DEVICE inline NormedConstants normedConstantsFor(const TemplateStats& s) {
  NormedConstants k;
  k.templateScale = centredTemplateRoot<int64_t>(s);
  if ((s.n & (s.n - 1)) == 0) k.inverseN = 1.0 / (double)s.n;
  return k;
}

// a / n, as a multiplication by k.inverseN where that is exact.
NCC_HOST_DEVICE inline double divideByCount(double a, double n, const NormedConstants& k) {
  return k.inverseN != 0.0 ? a * k.inverseN : a / n;
}

// windowVarianceSum<int64_t> with the constants above (n <= kInt64SafePixels): the same double.
NCC_HOST_DEVICE inline double windowVarianceSum(int64_t n, int64_t s1, int64_t s2, const NormedConstants& k) {
  return divideByCount((double)centredSquares<int64_t>(n, s1, s2), (double)n, k);
}

// scoreFromSums's ccoeff-normed value with the constants above (t.n <= kInt64SafePixels).
NCC_HOST_DEVICE inline double ccoeffNormedScore(const TemplateStats& t, const NormedConstants& k,
                                                int64_t s1, int64_t s2, int64_t c) {
  // A flat template scores 1 (ccoeffNormed's rule), taken before the products: in a kernel's
  // epilogue, fewer values live at once.
  if (k.templateScale == 0.0) return 1.0;
  const double n = (double)t.n;
  const double num = divideByCount((double)centredCross<int64_t>(t.n, t.sum, s1, c), n, k);
  return ccoeffNormed(num, windowVarianceSum(t.n, s1, s2, k), s2, k.templateScale).score;
}

}  // namespace nccmatch
