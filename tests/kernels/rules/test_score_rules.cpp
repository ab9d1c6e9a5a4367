// The rules layer on hand-made sums and maps: each method's score from exact sums and from a
// centred numerator, the flat-window and flat-template rules, the two integer widths agreeing,
// no NaN/Inf; and the peak rules (goodness sign, candidate order, local peak, parabola, IoU).
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <vector>

#include "rules/peak_rules.hpp"
#include "rules/masked_score_rules.hpp"
#include "rules/score_rules.hpp"

namespace nccmatch {
namespace {

TemplateStats statsOf(std::initializer_list<int> px) {
  TemplateStats s;
  for (int v : px) { s.n++; s.sum += v; s.sumSq += v * v; }
  return s;
}

TEST(ScoreRules, FlatWindowGivesZeroForCorrelationAndOneForSqdiffNormed) {
  TemplateStats t = statsOf({10, 20, 30, 40});
  // Window of four 50s: sum 200, sum of squares 10000, sum I*T = 50*100.
  EXPECT_EQ(scoreFromSums(Method::CCoeffNormed, t, 200, 10000, 5000), 0.0);
  // All-black window: sum of squares 0.
  EXPECT_EQ(scoreFromSums(Method::CCorrNormed, t, 0, 0, 0), 0.0);
  EXPECT_EQ(scoreFromSums(Method::SqDiffNormed, t, 0, 0, 0), 1.0);
}

TEST(ScoreRules, FlatTemplateGivesOneForCCoeffNormed) {
  TemplateStats flat = statsOf({9, 9, 9, 9});
  EXPECT_EQ(scoreFromSums(Method::CCoeffNormed, flat, 10, 50, 90), 1.0);
  TemplateStats zero = statsOf({0, 0, 0, 0});
  EXPECT_EQ(scoreFromSums(Method::CCorrNormed, zero, 10, 50, 0), 0.0);
  EXPECT_EQ(scoreFromSums(Method::SqDiffNormed, zero, 10, 50, 0), 1.0);
}

TEST(ScoreRules, PerfectMatchScoresOne) {
  TemplateStats t = statsOf({1, 5, 200, 7});
  int64_t s1 = 213, s2 = 1 + 25 + 40000 + 49;
  EXPECT_DOUBLE_EQ(scoreFromSums(Method::CCoeffNormed, t, s1, s2, s2), 1.0);
  EXPECT_DOUBLE_EQ(scoreFromSums(Method::CCorrNormed, t, s1, s2, s2), 1.0);
  EXPECT_DOUBLE_EQ(scoreFromSums(Method::SqDiff, t, s1, s2, s2), 0.0);
  EXPECT_DOUBLE_EQ(scoreFromSums(Method::SqDiffNormed, t, s1, s2, s2), 0.0);
}

TEST(ScoreRules, UnnormalisedMethodsAreExact) {
  TemplateStats t = statsOf({1, 2, 3});
  // Window 4, 5, 6: sum 15, squares 77, cross 4+10+18 = 32.
  EXPECT_EQ(scoreFromSums(Method::SqDiff, t, 15, 77, 32), 27.0);  // 9+9+9
  EXPECT_EQ(scoreFromSums(Method::CCorr, t, 15, 77, 32), 32.0);
  EXPECT_EQ(scoreFromSums(Method::CCoeff, t, 15, 77, 32), 2.0);  // (-1)(-1)+0+1*1
}

TEST(ScoreRules, NeverNaNOrInfOnExtremeSums) {
  TemplateStats big;
  big.n = 16384LL * 16384LL;
  big.sum = big.n * 255;
  big.sumSq = big.n * 255 * 255;
  for (int m = 0; m <= 5; ++m) {
    double v = scoreFromSums(static_cast<Method>(m), big, big.sum, big.sumSq, big.sumSq);
    EXPECT_TRUE(std::isfinite(v)) << m;
  }
}

// Sums of a window against a template, both given by their pixels (same length).
struct WindowSums {
  TemplateStats t;
  int64_t s1 = 0, s2 = 0, c = 0;
};

WindowSums sumsOf(const std::vector<int>& tpl, const std::vector<int>& window) {
  WindowSums w;
  for (std::size_t i = 0; i < tpl.size(); ++i) {
    w.t.n++;
    w.t.sum += tpl[i];
    w.t.sumSq += tpl[i] * tpl[i];
    w.s1 += window[i];
    w.s2 += window[i] * window[i];
    w.c += window[i] * tpl[i];
  }
  return w;
}

// Every method from sums, a row each: template and window pixels, the method, the score.
struct SumsCase {
  const char* what;
  std::vector<int> tpl, window;
  Method method;
  double score;
};

const SumsCase kSumsCases[] = {
    // what                          template            window              method                  score
    {"sqdiff",                       {1, 2, 3},          {4, 5, 6},          Method::SqDiff,         27.0},
    {"ccorr",                        {1, 2, 3},          {4, 5, 6},          Method::CCorr,          32.0},
    {"ccoeff",                       {1, 2, 3},          {4, 5, 6},          Method::CCoeff,         2.0},
    {"sqdiff-normed",                {1, 2, 3},          {4, 5, 6},          Method::SqDiffNormed,   27.0 / std::sqrt(77.0 * 14.0)},
    {"ccorr-normed",                 {1, 2, 3},          {4, 5, 6},          Method::CCorrNormed,    32.0 / std::sqrt(77.0 * 14.0)},
    {"ccoeff-normed shifted copy",   {1, 2, 3},          {4, 5, 6},          Method::CCoeffNormed,   1.0},
    {"ccoeff-normed reversed",       {1, 2, 3},          {6, 5, 4},          Method::CCoeffNormed,   -1.0},
    {"ccoeff-normed flat window",    {10, 20, 30, 40},   {50, 50, 50, 50},   Method::CCoeffNormed,   0.0},
    {"ccorr-normed black window",    {10, 20, 30, 40},   {0, 0, 0, 0},       Method::CCorrNormed,    0.0},
    {"sqdiff-normed black window",   {10, 20, 30, 40},   {0, 0, 0, 0},       Method::SqDiffNormed,   1.0},
    {"ccoeff-normed flat template",  {9, 9, 9, 9},       {1, 7, 3, 200},     Method::CCoeffNormed,   1.0},
    {"ccorr-normed black template",  {0, 0, 0, 0},       {1, 7, 3, 200},     Method::CCorrNormed,    0.0},
    {"sqdiff-normed black template", {0, 0, 0, 0},       {1, 7, 3, 200},     Method::SqDiffNormed,   1.0},
    {"sqdiff-normed exact match",    {1, 5, 200, 7},     {1, 5, 200, 7},     Method::SqDiffNormed,   0.0},
};

TEST(ScoreRules, EachMethodFromSums) {
  for (const SumsCase& k : kSumsCases) {
    const WindowSums w = sumsOf(k.tpl, k.window);
    EXPECT_NEAR(scoreFromSums(k.method, w.t, w.s1, w.s2, w.c), k.score, 1e-15) << k.what;
  }
}

TEST(ScoreRules, IntegerWidthsGiveTheSameDoubles) {
  for (const SumsCase& k : kSumsCases) {
    const WindowSums w = sumsOf(k.tpl, k.window);
    EXPECT_EQ(scoreFromSumsAs<int64_t>(k.method, w.t, w.s1, w.s2, w.c),
              scoreFromSumsAs<__int128>(k.method, w.t, w.s1, w.s2, w.c)) << k.what;
  }
  // The largest template the int64 width takes, at the extremes of its sums.
  TemplateStats t;
  t.n = kInt64SafePixels;
  t.sum = 255 * t.n - 12345;
  t.sumSq = 255 * t.sum - 777;
  struct Window { int64_t s1, s2, c; };
  const Window windows[] = {
      {255 * t.n, 255 * 255 * t.n, 255 * t.sum},  // white window
      {0, 0, 0},                                  // black window
      {128 * t.n, 128 * 128 * t.n, 128 * t.sum},  // flat grey window
      {200 * t.n - 1, 254 * 200 * t.n, 250 * t.sum / 2},
  };
  for (const Window& w : windows)
    for (int m = 0; m <= 5; ++m) {
      const Method method = static_cast<Method>(m);
      EXPECT_EQ(scoreFromSumsAs<int64_t>(method, t, w.s1, w.s2, w.c),
                scoreFromSumsAs<__int128>(method, t, w.s1, w.s2, w.c)) << m;
      const double centred = double(w.c) - double(w.s1) * double(t.sum) / double(t.n);
      const CentredScore a = scoreFromCentredAs<int64_t>(method, t, w.s1, w.s2, centred);
      const CentredScore b = scoreFromCentredAs<__int128>(method, t, w.s1, w.s2, centred);
      EXPECT_EQ(a.score, b.score) << m;
      EXPECT_EQ(a.denominator, b.denominator) << m;
    }
}

TEST(ScoreRules, CentredNumeratorAgreesWithExactSums) {
  for (const SumsCase& k : kSumsCases) {
    const WindowSums w = sumsOf(k.tpl, k.window);
    const double centred = double(w.c) - double(w.s1) * (double(w.t.sum) / double(w.t.n));
    const CentredScore r = scoreFromCentred(k.method, w.t, w.s1, w.s2, centred);
    EXPECT_NEAR(r.score, scoreFromSums(k.method, w.t, w.s1, w.s2, w.c), 1e-12) << k.what;
    EXPECT_TRUE(std::isfinite(r.denominator) && r.denominator >= 0.0) << k.what;
  }
}

TEST(ScoreRules, CentredDenominatorIsZeroWhereTheScoreIsByRule) {
  // Unnormalised methods, flat windows and flat templates carry no denominator.
  struct Case { const char* what; std::vector<int> tpl, window; Method method; bool positive; };
  const Case cases[] = {
      {"ccoeff",                      {1, 2, 3},        {4, 5, 6},        Method::CCoeff,       false},
      {"sqdiff",                      {1, 2, 3},        {4, 5, 6},        Method::SqDiff,       false},
      {"ccoeff-normed",               {1, 2, 3},        {4, 5, 6},        Method::CCoeffNormed, true},
      {"ccorr-normed",                {1, 2, 3},        {4, 5, 6},        Method::CCorrNormed,  true},
      {"ccoeff-normed flat window",   {1, 2, 3},        {5, 5, 5},        Method::CCoeffNormed, false},
      {"ccoeff-normed flat template", {7, 7, 7},        {4, 5, 6},        Method::CCoeffNormed, false},
      {"ccorr-normed black window",   {1, 2, 3},        {0, 0, 0},        Method::CCorrNormed,  false},
  };
  for (const Case& k : cases) {
    const WindowSums w = sumsOf(k.tpl, k.window);
    const double centred = double(w.c) - double(w.s1) * (double(w.t.sum) / double(w.t.n));
    EXPECT_EQ(scoreFromCentred(k.method, w.t, w.s1, w.s2, centred).denominator > 0.0, k.positive) << k.what;
  }
  const WindowSums w = sumsOf({1, 2, 3}, {4, 5, 6});
  EXPECT_DOUBLE_EQ(scoreFromCentred(Method::CCoeffNormed, w.t, w.s1, w.s2, 2.0).denominator, 2.0);
}

TEST(ScoreRules, NormedConstantsGiveScoreFromSums) {
  // Template sizes with n a power of two (multiplication by 1/n) and not (division).
  for (int n : {1, 3, 4, 12, 16, 64, 100, 4096}) {
    std::vector<int> tpl(n), window(n);
    for (int i = 0; i < n; ++i) {
      tpl[i] = (i * 37 + 11) % 256;
      window[i] = (i * 101 + n) % 256;
    }
    const WindowSums w = sumsOf(tpl, window);
    EXPECT_EQ(ccoeffNormedScore(w.t, normedConstantsFor(w.t), w.s1, w.s2, w.c),
              scoreFromSums(Method::CCoeffNormed, w.t, w.s1, w.s2, w.c)) << n;
    // The window's variance sum as the float-fft score kernel takes it.
    EXPECT_EQ(windowVarianceSum(w.t.n, w.s1, w.s2, normedConstantsFor(w.t)),
              windowVarianceSum<int64_t>(w.t.n, w.s1, w.s2)) << n;
  }
  // Sums of 256x256 windows near the int64 products' range (n = 65536, 1/n exact).
  const int64_t n = 65536;
  for (int64_t s1 : {int64_t(0), int64_t(1), n * 255 - 1, n * 128 + 7}) {
    const int64_t s2 = s1 * 255;  // sum I^2 <= 255 sum I
    TemplateStats t;
    t.n = n;
    t.sum = n * 100;
    t.sumSq = n * 100 * 101;
    EXPECT_EQ(windowVarianceSum(n, s1, s2, normedConstantsFor(t)), windowVarianceSum<int64_t>(n, s1, s2)) << s1;
  }
  const WindowSums flat = sumsOf({9, 9, 9, 9}, {1, 2, 3, 4});
  EXPECT_EQ(normedConstantsFor(flat.t).templateScale, 0.0);
  EXPECT_EQ(ccoeffNormedScore(flat.t, normedConstantsFor(flat.t), flat.s1, flat.s2, flat.c), 1.0);
}

TEST(ScoreRules, WindowIsFlatFollowsOpenCVsLimit) {
  struct Case { double diff2, windowSumSq; bool flat; };
  const Case cases[] = {
      // diff2   sum I^2   flat
      {0.0,      0.0,      true},
      {0.0,      1e6,      true},
      {0.5,      1e9,      true},   // the limit stops at 0.5
      {0.51,     1e9,      false},
      {1e-4,     1e2,      true},   // 10 * FLT_EPSILON * 100 = 1.19e-4
      {2e-4,     1e2,      false},
  };
  for (const Case& k : cases) EXPECT_EQ(windowIsFlat(k.diff2, k.windowSumSq), k.flat) << k.diff2;
}

TEST(PeakRules, GoodnessSignPointsToBetter) {
  struct Case { Method method; double sign; };
  const Case cases[] = {
      {Method::SqDiff, -1.0},      {Method::SqDiffNormed, -1.0}, {Method::CCorr, 1.0},
      {Method::CCorrNormed, 1.0},  {Method::CCoeff, 1.0},        {Method::CCoeffNormed, 1.0},
  };
  for (const Case& k : cases) EXPECT_EQ(goodnessSign(k.method), k.sign) << int(k.method);
}

TEST(PeakRules, CandidatesRankByGoodnessThenRasterOrder) {
  struct Case { double ga; int xa, ya; double gb; int xb, yb; bool before; };
  const Case cases[] = {
      // goodness, x, y of a     goodness, x, y of b     a first
      {0.9, 5, 5,                0.8, 0, 0,              true},
      {0.8, 0, 0,                0.9, 5, 5,              false},
      {0.9, 7, 1,                0.9, 0, 2,              true},   // same goodness: earlier row
      {0.9, 1, 2,                0.9, 3, 2,              true},   // same row: smaller x
      {0.9, 3, 2,                0.9, 3, 2,              false},  // strict
      {0.9, 70000, 1,            0.9, 0, 2,              true},   // wide maps
  };
  for (const Case& k : cases) {
    EXPECT_EQ(rankedBefore(k.ga, rasterKey(k.xa, k.ya), k.gb, rasterKey(k.xb, k.yb)), k.before);
  }
  // Linear indices of one map rank the same way.
  EXPECT_TRUE(rankedBefore(0.5, 3, 0.5, 4));
  EXPECT_FALSE(rankedBefore(0.5, 4, 0.5, 3));
}

TEST(PeakRules, LocalPeakHasNoBetterNeighbour) {
  // 4 x 3 map; with sign -1 the minima are the peaks.
  const std::vector<double> map = {
      1, 2, 1, 0,
      2, 5, 2, 0,
      1, 2, 5, 9,
  };
  struct Case { double sign; int x, y; bool peak; };
  const Case cases[] = {
      {1.0, 1, 1, true},    // 5, ties with the other 5 allowed
      {1.0, 2, 2, false},   // 9 beside it
      {1.0, 3, 2, true},    // corner of the map
      {1.0, 0, 0, false},
      {-1.0, 3, 0, true},   // 0, ties with the 0 below
      {-1.0, 0, 0, true},   // 1 among 2, 2 and 5
      {-1.0, 1, 0, false},  // the 1 beside it is lower
      {-1.0, 0, 2, true},
  };
  for (const Case& k : cases) {
    const double g = k.sign * map[std::size_t(k.y) * 4 + k.x];
    const bool hostIndex = isLocalPeak(GoodnessMap<std::size_t>{map.data(), 4, 3, k.sign}, k.x, k.y, g);
    const bool deviceIndex = isLocalPeak(GoodnessMap<int>{map.data(), 4, 3, k.sign}, k.x, k.y, g);
    EXPECT_EQ(hostIndex, k.peak) << k.x << "," << k.y << " sign " << k.sign;
    EXPECT_EQ(deviceIndex, hostIndex) << k.x << "," << k.y;
  }
}

TEST(PeakRules, ParabolaOffsetOfTheVertex) {
  struct Case { double left, centre, right, offset; };
  const Case cases[] = {
      // left      centre   right      offset
      {0.0,        1.0,     0.0,       0.0},         // symmetric
      {1.0,        2.0,     0.0,       -1.0 / 6.0},  // leans left
      {0.0,        2.0,     1.0,       1.0 / 6.0},   // leans right
      {1.0,        2.0,     3.0,       0.0},         // collinear
      {0.0,        0.1,     10.0,      -0.5},        // clamped
      {10.0,       0.1,     0.0,       0.5},         // clamped
      {HUGE_VAL,   1.0,     0.0,       0.0},         // not finite
      {NAN,        1.0,     0.0,       0.0},
  };
  for (const Case& k : cases)
    EXPECT_DOUBLE_EQ(parabolaOffset(k.left, k.centre, k.right), k.offset) << k.left << " " << k.right;
}

TEST(PeakRules, SubPixelCornerFromTheNeighbours) {
  // 3 x 3 map: the centre's row leans left, its column leans down; edges have no parabola.
  const std::vector<double> map = {
      0, 1, 0,
      2, 3, 1,
      0, 2, 0,
  };
  const GoodnessMap<std::size_t> good{map.data(), 3, 3, 1.0};
  struct Case { int x, y; double subX, subY; };
  const Case cases[] = {
      // x  y  subX                                 subY
      {1, 1, 1.0 + parabolaOffset(2, 3, 1),        1.0 + parabolaOffset(1, 3, 2)},
      {0, 1, 0.0,                                  1.0 + parabolaOffset(0, 2, 0)},
      {1, 0, 1.0 + parabolaOffset(0, 1, 0),        0.0},
      {2, 2, 2.0,                                  2.0},
  };
  for (const Case& k : cases) {
    EXPECT_EQ(subPixelX(good, 3, k.x, k.y), k.subX) << k.x << "," << k.y;
    EXPECT_EQ(subPixelY(good, 3, k.x, k.y), k.subY) << k.x << "," << k.y;
  }
  EXPECT_LT(subPixelX(good, 3, 1, 1), 1.0);
  EXPECT_GT(subPixelY(good, 3, 1, 1), 1.0);
}

// parabolaVertex with unit steps is parabolaOffset; with unequal steps the vertex of the parabola
// through the three points; clamped half way to either neighbour; 0 unless the centre is a peak.
TEST(PeakRules, ParabolaVertexThroughUnequalSteps) {
  const double triples[][3] = {{0.7, 0.9, 0.8}, {0.85, 0.9, 0.7}, {0.5, 1.0, 0.5}, {-3, 2, 1}};
  for (const auto& t : triples)
    EXPECT_NEAR(parabolaVertex(-1, t[0], t[1], 1, t[2]), parabolaOffset(t[0], t[1], t[2]), 1e-15);
  // f(x) = 1 - (x - 1.5)^2 sampled at -5, 0, 10: the vertex at 1.5.
  auto f = [](double x) { return 1 - (x - 1.5) * (x - 1.5); };
  EXPECT_NEAR(parabolaVertex(-5, f(-5), f(0), 10, f(10)), 1.5, 1e-12);
  // Equal steps of 10: ten times the unit-step offset.
  EXPECT_NEAR(parabolaVertex(-10, 0.9, 1.0, 10, 0.99), 10 * parabolaOffset(0.9, 1.0, 0.99), 1e-12);
  // A vertex beyond half a step (a neighbour above the centre): clamped there.
  EXPECT_EQ(parabolaVertex(-1, 0.0, 0.5, 1, 0.9), 0.5);
  auto g = [](double x) { return 1 - (x + 3) * (x + 3) / 16; };  // vertex at -3
  EXPECT_EQ(parabolaVertex(-2, g(-2), g(0), 4, g(4)), -1.0);
  // Not a peak, flat, or not finite: 0.
  EXPECT_EQ(parabolaVertex(-1, 1.0, 0.5, 1, 1.0), 0.0);
  EXPECT_EQ(parabolaVertex(-1, 1.0, 1.0, 1, 1.0), 0.0);
  EXPECT_EQ(parabolaVertex(-1, NAN, 1.0, 1, 0.5), 0.0);
  EXPECT_EQ(parabolaVertex(-1, 0.5, INFINITY, 1, 0.5), 0.0);
}

TEST(PeakRules, BoxIou) {
  struct Case { int ax, ay, aw, ah, bx, by, bw, bh; double iou; };
  const Case cases[] = {
      // box a            box b              IoU
      {0, 0, 10, 10,      0, 0, 10, 10,      1.0},
      {0, 0, 10, 10,      5, 0, 10, 10,      50.0 / 150.0},
      {0, 0, 10, 10,      10, 0, 10, 10,     0.0},  // touching
      {0, 0, 10, 10,      30, 30, 10, 10,    0.0},
      {0, 0, 10, 10,      0, 0, 5, 5,        0.25},  // one inside the other
      {2, 3, 4, 6,        4, 6, 6, 2,        4.0 / 32.0},
  };
  for (const Case& k : cases) {
    EXPECT_DOUBLE_EQ(boxIou(k.ax, k.ay, k.aw, k.ah, k.bx, k.by, k.bw, k.bh), k.iou);
    EXPECT_EQ(boxIou(k.ax, k.ay, k.aw, k.ah, k.bx, k.by, k.bw, k.bh),
              boxIou(k.bx, k.by, k.bw, k.bh, k.ax, k.ay, k.aw, k.ah));
  }
}

// The masked rules: the unmasked formulas over the compared pixels, and the empty mask's values.
TEST(MaskedScoreRules, CompareOnlyTheComparedPixels) {
  TemplateImage t;
  t.width = 3, t.height = 2;
  t.pixels = {10, 20, 30, 40, 50, 60};
  t.mask = {1, 0, 255, 0, 7, 0};
  const TemplateStats s = maskedTemplateStats(t);
  EXPECT_EQ(s.n, 3);
  EXPECT_EQ(s.sum, 10 + 30 + 50);
  EXPECT_EQ(s.sumSq, 100 + 900 + 2500);
  EXPECT_EQ(numeratorTemplate(t).pixels, (std::vector<uint8_t>{10, 0, 30, 0, 50, 0}));
  EXPECT_TRUE(ignoresPixels(t));
  TemplateImage full = t;
  full.mask.assign(6, 3);
  EXPECT_FALSE(ignoresPixels(full));
  const TemplateStats f = maskedTemplateStats(full), u = templateStats(full);
  EXPECT_EQ(f.n, u.n);
  EXPECT_EQ(f.sum, u.sum);
  EXPECT_EQ(f.sumSq, u.sumSq);
  for (int m = 0; m <= 5; ++m)
    EXPECT_EQ(maskedScoreFromSums(Method(m), s, 300, 35000, 9000), scoreFromSums(Method(m), s, 300, 35000, 9000));
  TemplateStats empty;
  const double want[] = {0, 1, 0, 0, 0, 1};  // sqdiff, sqdiff-normed, ccorr, ccorr-normed, ccoeff, ccoeff-normed
  for (int m = 0; m <= 5; ++m) {
    EXPECT_EQ(maskedScoreFromSums(Method(m), empty, 0, 0, 0), want[m]) << methodName(Method(m));
    EXPECT_EQ(maskedScoreFromCentred(Method(m), empty, 0, 0, 0.0).score, want[m]) << methodName(Method(m));
  }
}

}  // namespace
}  // namespace nccmatch
