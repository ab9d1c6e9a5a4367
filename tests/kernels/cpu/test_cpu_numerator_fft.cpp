// The FFT numerator: its float centred numerator against exact integers (within its own error
// bound), and the Fft engine path against the Reference engine: ccoeff-normed within 1e-4, the
// other methods within float rounding, no NaN/Inf, identical matches with exact scores.
#include <gtest/gtest.h>

#include <array>
#include <cmath>
#include <cstdio>

#include "cpu/cpu_cost_model.hpp"
#include "nccmatch/engine.hpp"
#include "test_support.hpp"
#ifdef NCCMATCH_HAVE_FFTW
#include "cpu/cpu_numerator_fft.hpp"
#endif

namespace nccmatch::test {
namespace {

#define SKIP_WITHOUT_FFTW() \
  if (!cpuFftAvailable()) GTEST_SKIP() << "this build has no FFTW3 (-Dfftw=disabled or not found)"

TEST(FftPath, UnavailableWithoutFftwSaysSo) {
  if (cpuFftAvailable()) GTEST_SKIP() << "this build has FFTW3; the test covers builds without it";
  auto fft = makeCpuEngine(CpuPath::Fft);
  ASSERT_TRUE(fft->setTemplates({makeTemplate(3, 3, Fill::Random)}).ok());
  Image img = makeImage(10, 10, Fill::Random);
  FrameResult r;
  Status s = fft->match(img.view(), MatchParams{}, &r);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("FFTW"), std::string::npos) << s.message();
}

class FftEngine : public ::testing::TestWithParam<ScoreMapCase> {};

TEST_P(FftEngine, MapsAgreeWithReference) {
  SKIP_WITHOUT_FFTW();
  const ScoreMapCase c = GetParam();
  Image img = makeImage(c.frameW, c.frameH, c.frameFill, c.padding);
  TemplateImage t = makeTemplate(c.tplW, c.tplH, c.tplFill);
  auto reference = makeCpuEngine(CpuPath::Reference);
  auto fft = makeCpuEngine(CpuPath::Fft);
  ASSERT_TRUE(reference->setTemplates({t}).ok());
  ASSERT_TRUE(fft->setTemplates({t}).ok());
  const double n = double(c.tplW) * c.tplH;
  for (int m = 0; m <= 5; ++m) {
    const Method method = Method(m);
    std::vector<double> want, got;
    ASSERT_TRUE(reference->scoreMap(img.view(), method, 0, &want).ok());
    Status s = fft->scoreMap(img.view(), method, 0, &got);
    ASSERT_TRUE(s.ok()) << s.message();
    ASSERT_EQ(got.size(), want.size());
    // Normalised scores: absolute; sums: float rounding relative to their largest possible value.
    const bool normalised = method == Method::SqDiffNormed || method == Method::CCorrNormed ||
                            method == Method::CCoeffNormed;
    const double tol = normalised ? 1e-4 : 1e-5 * n * 255.0 * 255.0;
    for (std::size_t k = 0; k < got.size(); ++k) {
      ASSERT_TRUE(std::isfinite(got[k])) << methodName(method) << " at " << k << " " << c;
      ASSERT_NEAR(got[k], want[k], tol) << methodName(method) << " at " << k << " " << c;
    }
  }
  std::vector<double> got;
  ASSERT_TRUE(fft->scoreMap(img.view(), Method::CCoeffNormed, 0, &got).ok());
  EXPECT_NEAR(got[0], bruteForceScore(img, t, Method::CCoeffNormed, 0, 0), 1e-4);
}

INSTANTIATE_TEST_SUITE_P(Sizes, FftEngine, ::testing::Values(
    //      frame      template  pad  frame fill     template fill
    ScoreMapCase{1, 1,      1, 1,     0,   Fill::Random, Fill::Random},
    ScoreMapCase{9, 7,      1, 1,     3,   Fill::Random, Fill::Random},
    ScoreMapCase{13, 11,    13, 11,   0,   Fill::Random, Fill::Random},   // template == frame
    ScoreMapCase{71, 45,    5, 3,     1,   Fill::Random, Fill::Random},
    ScoreMapCase{160, 97,   33, 31,   7,   Fill::Smooth, Fill::Smooth},   // bright, near-cancelling
    ScoreMapCase{160, 97,   16, 16,   0,   Fill::Smooth, Fill::Random},
    ScoreMapCase{133, 90,   24, 17,   2,   Fill::Binary, Fill::Random},
    ScoreMapCase{64, 48,    8, 8,     0,   Fill::Flat,   Fill::Random},   // every window flat
    ScoreMapCase{64, 48,    6, 7,     2,   Fill::Random, Fill::Flat},     // flat template
    ScoreMapCase{320, 240,  64, 64,   0,   Fill::Random, Fill::Random},   // several tiles
    ScoreMapCase{1, 37,     1, 5,     0,   Fill::Random, Fill::Random},
    ScoreMapCase{37, 1,     4, 1,     5,   Fill::Random, Fill::Random}));

#ifdef NCCMATCH_HAVE_FFTW
// The float numerator is within its stated bound of the exact one, and the bound is not vacuous.
TEST(FftNumerator, CentredCrossWithinItsBound) {
  ThreadPool pool(2);
  for (auto [w, h, tw, th] : {std::array<int, 4>{200, 150, 16, 16}, {257, 131, 40, 9}, {90, 90, 90, 90},
                              {640, 480, 64, 64}, {640, 480, 8, 8}, {500, 400, 200, 150}}) {
    Image img = makeImage(w, h, Fill::Random, 3);
    std::vector<TemplateImage> bank{makeTemplate(tw, th, Fill::Random)};
    FftNumerator fft;
    fft.prepare(&bank, 1, {true}, w, h);
    fft.transformFrame(img.view(), pool);
    const int mapW = w - tw + 1, mapH = h - th + 1;
    std::vector<float> centred(std::size_t(mapW) * mapH), bound(centred.size());
    fft.centredCross(0, pool, centred.data(), bound.data());
    const TemplateImage& t = bank[0];
    double meanT = 0;
    for (uint8_t v : t.pixels) meanT += v;
    meanT /= double(t.pixels.size());
    double worstRatio = 0;
    // Sample about 20M multiply-adds' worth of windows, always including the last row/column.
    const int step = std::max(1, int(std::sqrt(double(mapW) * mapH * tw * th / 2e7)));
    int samples = 0;
    for (int y = 0; y < mapH; y = (y + step < mapH || y == mapH - 1) ? y + step : mapH - 1) {
      for (int x = 0; x < mapW; x = (x + step < mapW || x == mapW - 1) ? x + step : mapW - 1) {
        ++samples;
        double exact = 0;
        for (int ty = 0; ty < th; ++ty)
          for (int tx = 0; tx < tw; ++tx)
            exact += img.at(x + tx, y + ty) * (t.pixels[std::size_t(ty) * tw + tx] - meanT);
        const std::size_t k = std::size_t(y) * mapW + x;
        ASSERT_LE(std::fabs(centred[k] - exact), bound[k]) << x << "," << y << " of " << tw << "x" << th;
        worstRatio = std::max(worstRatio, std::fabs(centred[k] - exact) / bound[k]);
      }
    }
    // A bound far above the real error would send every window to the exact repair.
    if (samples > 1000) {
      EXPECT_GT(worstRatio, 1e-2) << tw << "x" << th;
    }
  }
}

TEST(FftTiling, TilesCoverTheTemplateAndStayWithinTheFrame) {
  for (auto [w, h, tw, th] : {std::array<int, 4>{1920, 1080, 8, 8}, {1920, 1080, 256, 256},
                              {640, 480, 64, 64}, {13, 11, 13, 11}, {1, 1, 1, 1},
                              // Sides past 8192 (found by tests/fuzz/fuzz_engine: no tile, a division
                              // by zero planning it).
                              {16384, 2, 16384, 1}, {16384, 3, 9000, 2}, {5, 16384, 1, 12000}}) {
    FftTiling tiling = chooseFftTiling(w, h, tw, th);
    EXPECT_GE(tiling.tileWidth, tw);
    EXPECT_GE(tiling.tileHeight, th);
    EXPECT_GT(tiling.forwardWork, 0);
    // No tile larger than the first smooth size covering the frame (at most 8/7 of it).
    EXPECT_LE(tiling.tileWidth, std::max(tw, w * 8 / 7 + 1));
    EXPECT_LE(tiling.tileHeight, std::max(th, h * 8 / 7 + 1));
  }
}

// With several threads a large template gets several tiles (one tile keeps one thread busy), and
// the busiest thread's share of the work goes down.
TEST(FftTiling, SeveralThreadsGetSeveralTiles) {
  const FftTiling one = chooseFftTiling(1920, 1080, 128, 128, 1);
  const FftTiling two = chooseFftTiling(1920, 1080, 128, 128, 2);
  const int mapW = 1920 - 128 + 1, mapH = 1080 - 128 + 1;
  const int tilesTwo = ((mapW + two.tileWidth - 128) / (two.tileWidth - 127)) *
                       ((mapH + two.tileHeight - 128) / (two.tileHeight - 127));
  EXPECT_GE(tilesTwo, 2);
  EXPECT_LT(two.makespanWork, 0.75 * one.makespanWork);
  EXPECT_EQ(one.makespanWork, one.forwardWork + one.inverseWork);
}
#endif

TEST(FftEngine, MatchesEqualReferenceWithExactScores) {
  SKIP_WITHOUT_FFTW();
  Image img = makeImage(241, 163, Fill::Random, 5);
  TemplateImage a = makeTemplate(16, 12, Fill::Random, "a");
  TemplateImage b = makeTemplate(9, 21, Fill::Smooth, "b");
  TemplateImage c = makeTemplate(40, 36, Fill::Random, "c");
  paste(&img, a, 17, 33);
  paste(&img, a, 150, 90);
  paste(&img, b, 70, 5);
  paste(&img, c, 190, 120);
  auto reference = makeCpuEngine(CpuPath::Reference);
  auto fft = makeCpuEngine(CpuPath::Fft, 3);
  ASSERT_TRUE(reference->setTemplates({a, b, c}).ok());
  ASSERT_TRUE(fft->setTemplates({a, b, c}).ok());
  for (int m = 0; m <= 5; ++m) {
    if (m == 0 || m == 2 || m == 4) continue;  // unnormalised: no threshold separates matches
    MatchParams p;
    p.method = Method(m);
    p.threshold = m == 1 ? 1e-4 : 0.99;
    p.maxMatches = 5;
    FrameResult want, got;
    ASSERT_TRUE(reference->match(img.view(), p, &want).ok());
    ASSERT_TRUE(fft->match(img.view(), p, &got).ok());
    ASSERT_EQ(got.matches.size(), want.matches.size()) << methodName(p.method);
    for (std::size_t k = 0; k < want.matches.size(); ++k) {
      EXPECT_EQ(got.matches[k].templateIndex, want.matches[k].templateIndex);
      EXPECT_EQ(got.matches[k].x, want.matches[k].x) << methodName(p.method) << " match " << k;
      EXPECT_EQ(got.matches[k].y, want.matches[k].y) << methodName(p.method) << " match " << k;
      EXPECT_EQ(got.matches[k].score, want.matches[k].score);
      EXPECT_EQ(got.matches[k].subX, want.matches[k].subX);
      EXPECT_EQ(got.matches[k].subY, want.matches[k].subY);
    }
    for (std::size_t i = 0; i < want.best.size(); ++i) {
      ASSERT_TRUE(got.best[i] && want.best[i]);
      EXPECT_EQ(got.best[i]->x, want.best[i]->x);
      EXPECT_EQ(got.best[i]->y, want.best[i]->y);
      EXPECT_EQ(got.best[i]->score, want.best[i]->score);
    }
  }
}

TEST(FftEngine, BankAndFrameSizeChanges) {
  SKIP_WITHOUT_FFTW();
  auto fft = makeCpuEngine(CpuPath::Fft);
  TemplateImage t = makeTemplate(12, 10, Fill::Random);
  TemplateImage u = makeTemplate(30, 30, Fill::Random);
  for (int round = 0; round < 2; ++round) {
    ASSERT_TRUE(fft->setTemplates(round == 0 ? std::vector<TemplateImage>{t, u}
                                             : std::vector<TemplateImage>{u, t}).ok());
    for (int size : {150, 40, 200, 31}) {
      Image img = makeImage(size, size + 3, Fill::Random);
      paste(&img, t, size - 12, 3);
      FrameResult r;
      ASSERT_TRUE(fft->match(img.view(), MatchParams{}, &r).ok());
      const uint32_t ti = round == 0 ? 0 : 1;
      ASSERT_TRUE(r.best[ti]) << size;
      EXPECT_EQ(r.best[ti]->x, size - 12) << size;
      EXPECT_EQ(r.best[ti]->y, 3) << size;
      EXPECT_NEAR(r.best[ti]->score, 1.0, 1e-9);  // exact, not float: refined on the integers
    }
  }
}

}  // namespace
}  // namespace nccmatch::test

namespace nccmatch::test {
namespace {

// Found by tests/fuzz/fuzz_engine (corpus/fuzz_engine/crash-de561860...): matches were chosen on
// float scores and only then given their exact ones, so an sqdiff of exactly 0 (a copy of the
// template) was reported against a threshold just below 0, which no sqdiff passes. Every reported
// match passes the threshold with its exact score and is one of the Reference path's matches; below
// 0 neither path reports any.
TEST(FftEngine, ReportedMatchesPassTheThresholdWithTheirExactScores) {
  SKIP_WITHOUT_FFTW();
  struct Case {
    int frameW, frameH, tplW, tplH;
    Fill frameFill;
  };
  const Case cases[] = {
      {40, 30, 8, 6, Fill::Random}, {64, 64, 16, 16, Fill::Random}, {33, 17, 5, 9, Fill::Smooth},
      {90, 20, 12, 4, Fill::Random}, {25, 25, 25, 25, Fill::Random}, {48, 40, 3, 3, Fill::Smooth},
  };
  auto reference = makeCpuEngine(CpuPath::Reference);
  auto fft = makeCpuEngine(CpuPath::Fft);
  for (const Case& c : cases) {
    Image img = makeImage(c.frameW, c.frameH, c.frameFill);
    TemplateImage t = makeTemplate(c.tplW, c.tplH, Fill::Random);
    paste(&img, t, 0, 0);
    paste(&img, t, c.frameW - c.tplW, c.frameH - c.tplH);
    ASSERT_TRUE(reference->setTemplates({t}).ok());
    ASSERT_TRUE(fft->setTemplates({t}).ok());
    for (Method method : {Method::SqDiff, Method::SqDiffNormed}) {
      for (double threshold : {-1e-120, -1e-300, 0.0, 1e-9}) {
        SCOPED_TRACE(::testing::Message() << c.frameW << "x" << c.frameH << " template " << c.tplW << "x"
                                          << c.tplH << " " << methodName(method) << " threshold " << threshold);
        MatchParams p;
        p.method = method;
        p.threshold = threshold;
        p.maxMatches = 4;
        FrameResult want, got;
        ASSERT_TRUE(reference->match(img.view(), p, &want).ok());
        ASSERT_TRUE(fft->match(img.view(), p, &got).ok());
        for (const Match& m : got.matches) {
          EXPECT_LE(m.score, threshold) << "at " << m.x << "," << m.y;
          // Each is one of the Reference's matches. Not all of them: at a threshold equal to a
          // copy's exact score the float score may land on either side (the Fft path equals the
          // Reference where the threshold separates the scores).
          bool found = false;
          for (const Match& w : want.matches) found = found || (w.x == m.x && w.y == m.y && w.score == m.score);
          EXPECT_TRUE(found) << "at " << m.x << "," << m.y << " score " << m.score;
        }
        if (threshold < 0) {
          EXPECT_TRUE(got.matches.empty() && want.matches.empty());
        }
      }
    }
  }
}

}  // namespace
}  // namespace nccmatch::test

namespace nccmatch::test {
namespace {

// Templates wider (or taller) than 8192 pixels, found by tests/fuzz/fuzz_engine (its input is in
// tests/fuzz/corpus/fuzz_engine/crash-732180ea...): they had no tile, and planning them divided
// by zero. They now score on the Fft path as on the Reference path, in bounded memory.
TEST(FftEngine, TemplatesPast8192PixelsASide) {
  SKIP_WITHOUT_FFTW();
  Image img = makeImage(16384, 2, Fill::Random, 0);
  const TemplateImage wide = makeTemplate(16384, 1, Fill::Random, "wide");
  const TemplateImage long9000 = makeTemplate(9000, 2, Fill::Random, "9000");
  // A small template beside a wide one on the frame-wide tile: its own group (sharing the wide
  // one's would step one column a tile: 16364 tiles, gigabytes of spectra; found by the fuzzer).
  const TemplateImage small = makeTemplate(21, 2, Fill::Random, "small");
  // One thread: the small template's best tile is then the frame-wide one, as the wide ones'.
  auto fft = makeCpuEngine(CpuPath::Fft, 1), reference = makeCpuEngine(CpuPath::Reference, 2);
  ASSERT_TRUE(fft->setTemplates({wide, long9000, small}).ok());
  ASSERT_TRUE(reference->setTemplates({wide, long9000, small}).ok());
  // Resident memory of this process in MiB (/proc/self/statm, pages of 4 KiB).
  auto residentMiB = [] {
    long pages = 0, resident = 0;
    if (FILE* f = std::fopen("/proc/self/statm", "r")) {
      if (std::fscanf(f, "%ld %ld", &pages, &resident) != 2) resident = 0;
      std::fclose(f);
    }
    return double(resident) * 4096.0 / (1 << 20);
  };
  const double before = residentMiB();
  for (uint32_t i = 0; i < 3; ++i) {
    std::vector<double> want, got;
    ASSERT_TRUE(reference->scoreMap(img.view(), Method::CCoeffNormed, i, &want).ok());
    Status s = fft->scoreMap(img.view(), Method::CCoeffNormed, i, &got);
    ASSERT_TRUE(s.ok()) << s.message();
    ASSERT_EQ(got.size(), want.size());
    for (std::size_t k = 0; k < got.size(); ++k) ASSERT_NEAR(got[k], want[k], 1e-4) << "template " << i << " at " << k;
  }
  EXPECT_LT(residentMiB() - before, 256.0) << "the frame-wide tiles took 4 GiB when the small template shared them";
}

}  // namespace
}  // namespace nccmatch::test
