// The screened float scores (rules/score_screen.hpp) against the exact scores: for windows and
// templates of 1 to 4096 pixels drawn from noise, near-flat patches, binary patterns, copies and
// negatives of each other, all-0 and all-255, every method's screened score lies within
// its bound of scoreFromSums, also with both inverse roots moved 2 ulp either way (the device's
// rsqrtf may be 2 ulp off), the bound is small on noise, and flat windows and templates screen to
// the exact rule's constants with bound 0 (where the rules call them flat). The folded form the
// GEMM bank's tile epilogue runs (screenFoldedPair of the method's kind) brackets the exact
// goodness and is screenPair's range bit for bit wherever screenPair does not clamp.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "rules/score_screen.hpp"
#include "test_support.hpp"

namespace nccmatch {
namespace {

const Method kMethods[] = {Method::SqDiff, Method::SqDiffNormed, Method::CCorr,
                           Method::CCorrNormed, Method::CCoeff, Method::CCoeffNormed};

enum class Pattern { Noise, NearFlat, Binary, Flat0, Flat255, Dark };

std::vector<uint8_t> pixelsOf(Pattern p, int n, std::mt19937_64& gen) {
  std::vector<uint8_t> v(static_cast<std::size_t>(n));
  const int base = int(gen() % 256);
  for (auto& x : v) {
    switch (p) {
      case Pattern::Noise: x = uint8_t(gen()); break;
      case Pattern::NearFlat: x = uint8_t(std::min(255, std::max(0, base + int(gen() % 3) - 1))); break;
      case Pattern::Binary: x = gen() % 2 ? 255 : 0; break;
      case Pattern::Flat0: x = 0; break;
      case Pattern::Flat255: x = 255; break;
      case Pattern::Dark: x = uint8_t(gen() % 4); break;
    }
  }
  if (p == Pattern::NearFlat && n > 1) v[0] = uint8_t(base ^ 1);  // one pixel off: barely not flat
  return v;
}

bool isNormed(Method m) {
  return m == Method::SqDiffNormed || m == Method::CCorrNormed || m == Method::CCoeffNormed;
}

float movedUlps(float v, int ulps) {
  for (int i = 0; i < std::abs(ulps); ++i) v = std::nextafter(v, ulps > 0 ? INFINITY : -INFINITY);
  return v;
}

// The folded range in the form the GEMM bank's tile epilogue takes for the method
// (screenCentred picks it per launch there).
ScreenedRange foldedRange(Method m, const ScreenMethod& sm, const ScreenTemplate& t, const ScreenFoldedWindow& f,
                          float lowest, uint32_t c) {
  return screenCentred(m) ? screenFoldedPair<true>(sm, t, f, lowest, c) : screenFoldedPair<false>(sm, t, f, lowest, c);
}

// Pairs whose folded range was checked, and those of them compared bit for bit with screenPair's
// (the test checks that is most of them: only sqdiff-normed's clamp is left out).
long foldedPairs = 0, unclampedPairs = 0, exactFlatPairs = 0;

// Checks one window against one template for every method and every rsqrt perturbation.
// tight: also check the bound is small (noise windows of 64 pixels or more: near-flat windows
// have large bounds, rightly, since the float numerator cancels there).
void expectWithinBound(const std::vector<uint8_t>& window, const std::vector<uint8_t>& tpl, const std::string& what,
                       bool tight = false) {
  TemplateImage t;
  t.width = int(tpl.size());
  t.height = 1;
  t.pixels = tpl;
  const TemplateStats stats = templateStats(t);
  int64_t s1 = 0, s2 = 0, c = 0;
  for (std::size_t i = 0; i < window.size(); ++i) {
    s1 += window[i];
    s2 += int64_t(window[i]) * window[i];
    c += int64_t(window[i]) * tpl[i];
  }
  for (Method m : kMethods) {
    const double exact = scoreFromSums(m, stats, s1, s2, c);
    const ScreenMethod sm = screenMethod(m, stats.n);
    const ScreenTemplate st = screenTemplate(m, stats);
    const ScreenWindow sw = screenWindow(m, stats.n, int32_t(s1), int32_t(s2));
    // The window is flat for the screen exactly where the rules call it flat.
    if (m == Method::CCoeffNormed) {
      ASSERT_EQ(sw.scale == 0.0f, windowIsFlat(windowVarianceSum<int64_t>(stats.n, s1, s2), double(s2))) << what;
    }
    if (m == Method::CCorrNormed || m == Method::SqDiffNormed) {
      ASSERT_EQ(sw.scale == 0.0f, windowIsFlat(double(s2), double(s2))) << what;
    }
    for (int du = -2; du <= 2; ++du)
      for (int tu = -2; tu <= 2; ++tu) {
        ScreenWindow w = sw;
        ScreenTemplate tt = st;
        if (isNormed(m) && w.scale != 0.0f) w.scale = movedUlps(w.scale, du);
        if (isNormed(m) && tt.scale != 0.0f) tt.scale = movedUlps(tt.scale, tu);
        const ScreenedPair p = screenPair(sm, tt, w, uint32_t(c));
        ASSERT_TRUE(std::isfinite(p.score) && std::isfinite(p.bound)) << what << " " << methodName(m);
        ASSERT_LE(std::fabs(exact - double(p.score)), double(p.bound))
            << what << " " << methodName(m) << " n=" << stats.n << " exact " << exact << " screened " << p.score
            << " bound " << p.bound << " ulps " << du << "," << tu;
        // The folded form the GEMM bank's tile epilogue runs (one window against many
        // templates) brackets the exact goodness, is no wider than screenPair's range, and is
        // that range bit for bit wherever screenPair does not clamp (its flat windows included).
        const float sign = lowerIsBetter(m) ? -1.0f : 1.0f;
        if (!screenFlatTemplate(sm, tt)) {
          const float lowest = screenLowestGoodness(sm, sign);
          const ScreenedRange r = foldedRange(m, sm, tt, screenFoldWindow(sm, w, sign, true), lowest, uint32_t(c));
          const double goodness = double(sign) * exact;
          ++foldedPairs;
          ASSERT_LE(double(r.floor), goodness) << what << " " << methodName(m) << " ulps " << du << "," << tu;
          ASSERT_GE(double(r.ceiling), goodness) << what << " " << methodName(m) << " ulps " << du << "," << tu;
          const float pairGoodness = sign * p.score;
          ASSERT_LE(r.ceiling, std::max(pairGoodness + p.bound, lowest)) << what << " " << methodName(m);
          if (p.score < sm.highest || (isNormed(m) && w.scale == 0.0f)) {
            ++unclampedPairs;
            ASSERT_EQ(r.ceiling, std::max(pairGoodness + p.bound, lowest))
                << what << " " << methodName(m) << " ulps " << du << "," << tu;
            ASSERT_EQ(r.floor, pairGoodness - p.bound) << what << " " << methodName(m) << " ulps " << du << "," << tu;
          }
          // A normed method's flat window: the screened goodness is the exact one, bit for bit as
          // a double (the tile epilogue keeps such pairs as ties without scoring them again).
          if (isNormed(m) && w.scale == 0.0f) {
            ++exactFlatPairs;
            ASSERT_EQ(r.ceiling, r.floor) << what << " " << methodName(m);
            ASSERT_EQ(double(r.ceiling), goodness) << what << " " << methodName(m);
          }
        } else {
          // A normed flat template: every window's exact goodness is the constant the epilogue takes.
          ASSERT_EQ(double(sign * sm.flatTemplateScore), double(sign) * exact) << what << " " << methodName(m);
        }
        // Tight enough to tell scores apart: within a millionth or so of the score's scale
        // (1 for the normed methods; the largest sum for the others).
        const double scale = isNormed(m) ? 1.0 : double(stats.n) * 255.0 * 255.0 * 4.0;
        if (tight) {
          ASSERT_LE(double(p.bound), 1e-4 * scale) << what << " " << methodName(m);
        }
      }
  }
}

TEST(ScoreScreen, EveryMethodWithinItsBoundOnEveryKindOfWindow) {
  auto& gen = test::rng();
  const Pattern patterns[] = {Pattern::Noise, Pattern::NearFlat, Pattern::Binary,
                              Pattern::Flat0, Pattern::Flat255, Pattern::Dark};
  for (int n : {1, 2, 3, 7, 64, 255, 256, 1024, 2304, 4096}) {
    for (Pattern wp : patterns)
      for (Pattern tp : patterns)
        for (int rep = 0; rep < 3; ++rep) {
          const std::vector<uint8_t> w = pixelsOf(wp, n, gen), t = pixelsOf(tp, n, gen);
          const std::string what = "n " + std::to_string(n) + " patterns " + std::to_string(int(wp)) + "/" +
                                   std::to_string(int(tp));
          expectWithinBound(w, t, what, n >= 64 && wp == Pattern::Noise && tp == Pattern::Noise);
          if (HasFatalFailure()) return;
        }
    // Matches and near-matches: the scores near +-1 where the exact rule clamps.
    for (Pattern p : patterns) {
      std::vector<uint8_t> w = pixelsOf(p, n, gen), copy = w, negative = w, nudged = w;
      for (auto& v : negative) v = uint8_t(255 - v);
      nudged[gen() % nudged.size()] ^= 1;
      expectWithinBound(w, copy, "copy n " + std::to_string(n));
      expectWithinBound(w, negative, "negative n " + std::to_string(n));
      expectWithinBound(w, nudged, "nudged n " + std::to_string(n));
      if (HasFatalFailure()) return;
    }
  }
  EXPECT_GT(unclampedPairs, foldedPairs * 3 / 4) << unclampedPairs << " of " << foldedPairs << " folded pairs";
  EXPECT_GT(exactFlatPairs, 100) << "flat windows of normed methods seen";
}

TEST(ScoreScreen, FlatWindowsAndTemplatesScreenToTheExactConstants) {
  TemplateImage t;
  t.width = 4;
  t.height = 1;
  t.pixels = {10, 20, 30, 40};
  const TemplateStats stats = templateStats(t);
  auto pair = [&](Method m, const TemplateStats& ts, int32_t s1, int32_t s2, uint32_t c) {
    return screenPair(screenMethod(m, ts.n), screenTemplate(m, ts), screenWindow(m, ts.n, s1, s2), c);
  };
  // A flat window of four 50s: ccoeff-normed 0 exactly, and so screened, with bound 0.
  EXPECT_EQ(screenWindow(Method::CCoeffNormed, 4, 200, 10000).scale, 0.0f);
  ScreenedPair p = pair(Method::CCoeffNormed, stats, 200, 10000, 5000);
  EXPECT_EQ(p.score, 0.0f);
  EXPECT_EQ(p.bound, 0.0f);
  // Three 100s and a 101: n sum I^2 - (sum I)^2 = 3, at most n, so the rules' double test
  // decides: 3 / 4 is above its 0.5: not flat.
  EXPECT_GT(screenWindow(Method::CCoeffNormed, 4, 401, 3 * 10000 + 10201).scale, 0.0f);
  // A black window: ccorr-normed 0, sqdiff-normed 1.
  EXPECT_EQ(pair(Method::CCorrNormed, stats, 0, 0, 0).score, 0.0f);
  EXPECT_EQ(pair(Method::SqDiffNormed, stats, 0, 0, 0).score, 1.0f);
  // A flat template: ccoeff-normed 1 everywhere, also on a flat window.
  t.pixels = {9, 9, 9, 9};
  const TemplateStats flat = templateStats(t);
  EXPECT_EQ(screenTemplate(Method::CCoeffNormed, flat).scale, 0.0f);
  EXPECT_EQ(pair(Method::CCoeffNormed, flat, 10, 50, 90).score, 1.0f);
  EXPECT_EQ(pair(Method::CCoeffNormed, flat, 200, 10000, 1800).score, 1.0f);
  // Folded: a flat window screens to the rule's constant times the sign, an invalid window to
  // -inf, and a normed flat template is the caller's case.
  for (Method m : kMethods) {
    const float sign = lowerIsBetter(m) ? -1.0f : 1.0f;
    const ScreenMethod sm = screenMethod(m, 4);
    const ScreenWindow black = screenWindow(m, 4, 0, 0);
    const ScreenedRange r = foldedRange(m, sm, screenTemplate(m, stats), screenFoldWindow(sm, black, sign, true),
                                        screenLowestGoodness(sm, sign), 0);
    const double exact = double(sign) * scoreFromSums(m, stats, 0, 0, 0);
    EXPECT_LE(double(r.floor), exact) << methodName(m);
    EXPECT_GE(double(r.ceiling), exact) << methodName(m);
    if (isNormed(m)) {
      EXPECT_EQ(r.ceiling, r.floor) << methodName(m);  // bound 0
    }
    const ScreenedRange outside = foldedRange(m, sm, screenTemplate(m, stats),
                                              screenFoldWindow(sm, black, sign, false), -INFINITY, 7);
    EXPECT_EQ(outside.ceiling, -INFINITY) << methodName(m);
    EXPECT_EQ(outside.floor, -INFINITY) << methodName(m);
    // With the method's own lowest goodness the ceiling of a window outside the map is that
    // lowest (sqdiff-normed: -1), not -inf: the tile epilogue tests the window's offset instead.
    const float lowest = screenLowestGoodness(sm, sign);
    const ScreenedRange clamped = foldedRange(m, sm, screenTemplate(m, stats),
                                              screenFoldWindow(sm, black, sign, false), lowest, 7);
    EXPECT_EQ(clamped.ceiling, lowest) << methodName(m);
    EXPECT_EQ(screenFoldWindow(sm, black, sign, false).offset, -INFINITY) << methodName(m);
    // Constant pixels flatten only the centred normed method's template; all zeros every normed one.
    EXPECT_EQ(screenFlatTemplate(sm, screenTemplate(m, flat)), m == Method::CCoeffNormed) << methodName(m);
    TemplateImage zeros = t;
    zeros.pixels = {0, 0, 0, 0};
    EXPECT_EQ(screenFlatTemplate(sm, screenTemplate(m, templateStats(zeros))), isNormed(m)) << methodName(m);
  }
  // An all-zero template: ccorr-normed 0, sqdiff-normed 1.
  t.pixels = {0, 0, 0, 0};
  const TemplateStats zero = templateStats(t);
  EXPECT_EQ(pair(Method::CCorrNormed, zero, 10, 50, 0).score, 0.0f);
  EXPECT_EQ(pair(Method::SqDiffNormed, zero, 10, 50, 0).score, 1.0f);
}

}  // namespace
}  // namespace nccmatch
