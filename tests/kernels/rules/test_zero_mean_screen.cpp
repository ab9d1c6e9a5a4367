// The zero-mean screen for ccoeff-normed (rules/zero_mean_screen.hpp) against the exact scores:
// every template's offset keeps its pixels in int8 and is the mean's nearest where it may be; the
// identity n c'' - S1 d = n c - S1 sum T holds; and for every window of frames of six kinds
// (noise, smooth with sensor noise, dark low-contrast, flat patches with a gradient, nearly flat,
// black) against templates cut from them, noise, a full-range edge, a bright low-contrast patch
// and a flat one, of 1x1 to 64x64 pixels, with the inverse root moved 2 ulp either way (the
// device's rsqrtf), the screened value's floor and ceiling bracket the exact score, a pair
// reaching a goodness is never screened out, flat windows screen to their exact 0, and the
// bound is small on ordinary content.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "rules/zero_mean_screen.hpp"
#include "test_support.hpp"

namespace nccmatch {
namespace {

enum class Scene { Noise, Smooth, Dark, FlatPatches, NearlyFlat, Black };
const Scene kScenes[] = {Scene::Noise, Scene::Smooth, Scene::Dark, Scene::FlatPatches, Scene::NearlyFlat, Scene::Black};

struct Image {
  int width = 0, height = 0;
  std::vector<uint8_t> pixels;
  uint8_t at(int x, int y) const { return pixels[std::size_t(y) * width + x]; }
};

Image sceneOf(Scene scene, int width, int height, std::mt19937_64& gen) {
  std::normal_distribution<double> noise(0.0, 1.0);
  Image img{width, height, std::vector<uint8_t>(std::size_t(width) * height)};
  for (int y = 0; y < height; ++y)
    for (int x = 0; x < width; ++x) {
      double v = 0;
      switch (scene) {
        case Scene::Noise: v = double(gen() % 256); break;
        case Scene::Smooth: v = 128 + 80 * std::sin(x * 0.13) * std::cos(y * 0.11) + 6 * noise(gen); break;
        case Scene::Dark: v = 20 + 3 * noise(gen) + 5 * std::sin(x * 0.3); break;
        case Scene::FlatPatches: v = (x < width / 2 ? 200 : x * 0.4) + ((x / 12 + y / 12) % 2 ? 0.0 : 0.7 * noise(gen)); break;
        case Scene::NearlyFlat: v = 110 + 1.2 * noise(gen); break;
        case Scene::Black: v = 0; break;
      }
      img.pixels[std::size_t(y) * width + x] = uint8_t(std::clamp(std::lround(v), 0L, 255L));
    }
  return img;
}

float movedUlps(float v, int ulps) {
  for (int i = 0; i < std::abs(ulps); ++i) v = std::nextafter(v, ulps > 0 ? INFINITY : -INFINITY);
  return v;
}

TEST(ZeroMeanScreen, OffsetsKeepEveryPixelInInt8NearestTheMean) {
  auto& gen = test::rng();
  for (int rep = 0; rep < 20000; ++rep) {
    const int n = 1 + int(gen() % 300);
    const int from = int(gen() % 256), to = from + int(gen() % (256 - from));
    std::vector<uint8_t> t(n);
    for (auto& v : t) v = uint8_t(from + int(gen() % (to - from + 1)));
    if (rep % 2 == 0) {  // often the whole range
      t[0] = uint8_t(from);
      t[n - 1] = uint8_t(to);
    }
    int64_t sum = 0;
    int lo = 255, hi = 0;
    for (uint8_t v : t) {
      sum += v;
      lo = std::min(lo, int(v));
      hi = std::max(hi, int(v));
    }
    const int r = zeroMeanOffset(lo, hi, sum, n);
    for (uint8_t v : t) {
      ASSERT_GE(int(v) - r, -128) << "lo " << lo << " hi " << hi;
      ASSERT_LE(int(v) - r, 127) << "lo " << lo << " hi " << hi;
    }
    const long nearest = std::lround(double(sum) / n);
    if (nearest >= hi - 127 && nearest <= lo + 128) {
      // The mean's nearest integer (a half rounds up either way).
      ASSERT_LE(std::fabs(double(r) - double(sum) / n), 0.5) << "lo " << lo << " hi " << hi;
    }
    ASSERT_EQ(zeroMeanTemplate(t.data(), n).offset, r);
  }
  // The extremes: 0 and 255 in one template take r = 128 (-128 .. 127).
  EXPECT_EQ(zeroMeanOffset(0, 255, 255 * 5, 10), 128);
  EXPECT_EQ(zeroMeanOffset(0, 0, 0, 7), 0);
  EXPECT_EQ(zeroMeanOffset(255, 255, 255 * 7, 7), 255);
}

struct Checked {
  long pairs = 0, flatWindows = 0, perturbedPairs = 0;
  double widestOrdinaryBound = 0;  // score units, windows with kappa below 8
  double largestErrorShare = 0;    // |g - X| over the per-pair bound at 2^-21: how much of it is used
};

// Every window of `frame` against `tpl` (side x side), the inverse root moved -2, 0, +2 ulp.
void checkWindows(const Image& frame, const std::vector<uint8_t>& tpl, int tw, int th, const std::string& what,
                  Checked* seen) {
  const int64_t n = int64_t(tw) * th;
  TemplateImage t;
  t.width = tw;
  t.height = th;
  t.pixels = tpl;
  const TemplateStats stats = templateStats(t);
  const ZeroMeanTemplate z = zeroMeanTemplate(tpl.data(), n);
  const bool flatTemplate = centredSquares<int64_t>(n, stats.sum, stats.sumSq) == 0;
  for (int y = 0; y + th <= frame.height; ++y)
    for (int x = 0; x + tw <= frame.width; ++x) {
      int64_t s1 = 0, s2 = 0, c = 0, cPrime = 0;
      for (int j = 0; j < th; ++j)
        for (int i = 0; i < tw; ++i) {
          const int v = frame.at(x + i, y + j), tv = tpl[std::size_t(j) * tw + i];
          s1 += v;
          s2 += v * v;
          c += v * tv;
          cPrime += v * (tv - z.offset);
        }
      ASSERT_EQ(n * cPrime - s1 * int64_t(z.d), n * c - s1 * stats.sum) << what;
      ASSERT_EQ(c, cPrime + int64_t(z.offset) * s1) << what;
      ASSERT_LE(std::llabs(cPrime), int64_t(INT32_MAX)) << what;
      const double exact = scoreFromSums(Method::CCoeffNormed, stats, s1, s2, c);
      if (flatTemplate) {
        ASSERT_EQ(exact, 1.0) << what;  // the rules' constant: the caller's case
        ASSERT_EQ(z.gtLow, 0.0f) << what;
        continue;
      }
      const int64_t centred = centredSquares<int64_t>(n, s1, s2);
      const bool flat = zeroMeanWindowIsFlat(n, int32_t(s1), int32_t(s2));
      for (int ulps : {-2, 0, 2}) {
        const float root = centred > 0 ? movedUlps(screenInverseRoot(centred), ulps) : 0.0f;
        const ZeroMeanWindow w = zeroMeanWindowFrom(n, int32_t(s1), int32_t(s2), true, root);
        const float g = zeroMeanPair(w, z.d, int32_t(cPrime));
        ++seen->pairs;
        if (ulps != 0) ++seen->perturbedPairs;
        if (flat) {
          // The rules' flat window: exactly 0, screened so, left out of the tile's condition.
          ASSERT_EQ(exact, 0.0) << what;
          ASSERT_EQ(g, 0.0f) << what;
          ASSERT_EQ(w.kappaSq, 0.0f) << what;
          ++seen->flatWindows;
          continue;
        }
        const long double kappaSq = (long double)n * s2 / (long double)centred;
        ASSERT_GE((long double)w.kappaSq, kappaSq) << what;
        // The proof's per-pair step: |g - X| <= 2^-21.09 (n |c''| + S1 |d|) / sqrt(VI), X = N / sqrt(VI).
        const long double rootVi = std::sqrt((long double)centred);
        const long double x = (long double)(n * c - s1 * stats.sum) / rootVi;
        const long double scale = ((long double)n * std::llabs(cPrime) + (long double)s1 * std::fabs(z.d)) / rootVi;
        ASSERT_LE(std::fabs((long double)g - x), std::ldexp(1.0L, -21) * scale) << what << " ulps " << ulps;
        if (scale > 0) seen->largestErrorShare = std::max(seen->largestErrorShare, double(std::fabs((long double)g - x) / (std::ldexp(1.0L, -21) * scale)));
        const float bound = zeroMeanBound(zeroMeanTileKappa(w.kappaSq), z.boundK);
        const float floor = zeroMeanFloorOf(zero_mean_detail::addDown(g, -bound), z);
        const float ceiling = zeroMeanCeilingOf(zero_mean_detail::addUp(g, bound), z);
        ASSERT_LE(double(floor), exact) << what << " ulps " << ulps << " g " << g << " bound " << bound;
        ASSERT_GE(double(ceiling), exact) << what << " ulps " << ulps << " g " << g << " bound " << bound;
        // A pair whose goodness reaches R is pushed: g >= its scaled reach less the bound.
        const float reachAt = float(exact) > exact ? std::nextafter(float(exact), -INFINITY) : float(exact);
        ASSERT_GE(g, zero_mean_detail::addDown(zeroMeanScaledReach(reachAt, z), -bound)) << what << " ulps " << ulps;
        if (kappaSq < 64.0L)
          seen->widestOrdinaryBound = std::max(seen->widestOrdinaryBound, double(bound) * double(z.gtHigh));
      }
    }
}

TEST(ZeroMeanScreen, FloorAndCeilingBracketTheExactScoreOnEveryKindOfWindow) {
  auto& gen = test::rng();
  Checked seen;
  const int sizes[][2] = {{1, 1}, {3, 2}, {8, 8}, {16, 16}, {13, 29}, {32, 32}, {64, 64}};
  for (Scene scene : kScenes) {
    const Image frame = sceneOf(scene, 96, 80, gen);
    for (const auto& size : sizes) {
      const int tw = size[0], th = size[1];
      for (int kind = 0; kind < 6; ++kind) {
        std::vector<uint8_t> tpl(std::size_t(tw) * th);
        const int tx = int(gen() % (frame.width - tw + 1)), ty = int(gen() % (frame.height - th + 1));
        for (int j = 0; j < th; ++j)
          for (int i = 0; i < tw; ++i) {
            uint8_t& v = tpl[std::size_t(j) * tw + i];
            switch (kind) {
              case 0: case 1: v = frame.at(tx + i, ty + j); break;  // a cut: the best match is exact
              case 2: v = uint8_t(gen()); break;
              case 3: v = i < tw / 2 ? 0 : 255; break;  // full range: r = 128
              case 4: v = uint8_t(250 + gen() % 6); break;
              default: v = 77; break;  // flat
            }
          }
        const std::string what = "scene " + std::to_string(int(scene)) + " " + std::to_string(tw) + "x" +
                                 std::to_string(th) + " template kind " + std::to_string(kind);
        checkWindows(frame, tpl, tw, th, what, &seen);
        if (HasFatalFailure()) return;
      }
    }
  }
  EXPECT_GT(seen.pairs, 500000) << "pairs checked";
  EXPECT_GT(seen.perturbedPairs, seen.pairs / 2);
  EXPECT_GT(seen.flatWindows, 1000) << "flat windows seen (black frame, 1x1 windows)";
  // Tight enough to tell scores apart where windows are ordinary (kappa below 8): at most about
  // today's per-pair screen (score_screen.hpp: ~7.6e-5 on typical 32x32 windows).
  EXPECT_LT(seen.widestOrdinaryBound, 1e-4) << "widest bound on ordinary windows, score units";
  EXPECT_GT(seen.widestOrdinaryBound, 0.0);
  // The per-pair bound is not loose: some pairs' errors use a good part of it (the proof allows
  // 2^-21.09, just under the 2^-21 checked; eps = 2^-20 leaves twice that for the tile's bound).
  EXPECT_GT(seen.largestErrorShare, 0.25) << "largest error as a share of 2^-21 (n|c''| + S1|d|) / sqrt(VI)";
}

TEST(ZeroMeanScreen, WindowsOutsideTheMapNeverReach) {
  const ZeroMeanWindow outside = zeroMeanWindow(16, 100, 1000, false);
  EXPECT_EQ(zeroMeanPair(outside, 3.0f, 12345), -INFINITY);
  EXPECT_EQ(zeroMeanPair(outside, -3.0f, -12345), -INFINITY);
  EXPECT_EQ(outside.kappaSq, 0.0f);
  // A tile of flat and outside windows only: its bound is that of kappa 1.
  EXPECT_EQ(zeroMeanTileKappa(0.0f), 1.0f);
  EXPECT_EQ(zeroMeanBound(zeroMeanTileKappa(0.0f), 1000.0f), zeroMeanBound(zeroMeanTileKappa(1.0f), 1000.0f));
  EXPECT_GT(zeroMeanBound(zeroMeanTileKappa(0.0f), 1000.0f), 0.0f);
  // The bound grows with the tile's condition.
  EXPECT_LT(zeroMeanBound(zeroMeanTileKappa(4.0f), 1000.0f), zeroMeanBound(zeroMeanTileKappa(400.0f), 1000.0f));
  EXPECT_GE(zeroMeanTileKappa(400.0f), 20.0f);
}

}  // namespace
}  // namespace nccmatch
