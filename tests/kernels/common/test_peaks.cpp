// Peak finding on constructed maps: threshold direction, NMS, max-matches, ordering, sub-pixel.
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <vector>

#include "common/peaks.hpp"
#include "test_support.hpp"

namespace nccmatch {
namespace {

struct Map {
  int w, h;
  std::vector<double> v;
  Map(int w_, int h_, double fill) : w(w_), h(h_), v(std::size_t(w_) * h_, fill) {}
  double& at(int x, int y) { return v[std::size_t(y) * w + x]; }
};

std::vector<Match> peaks(const Map& m, int tw, int th, MatchParams p, std::optional<Match>* best = nullptr) {
  std::vector<Match> out;
  std::optional<Match> b;
  findPeaks(m.v.data(), m.w, m.h, tw, th, 3, p, &out, &b);
  if (best) *best = b;
  return out;
}

TEST(Peaks, ThresholdAndOrderForHigherIsBetter) {
  Map m(50, 40, 0.0);
  m.at(10, 10) = 0.9;
  m.at(40, 30) = 0.95;
  m.at(25, 5) = 0.5;  // below threshold
  MatchParams p;
  p.threshold = 0.8;
  p.maxMatches = 5;
  auto out = peaks(m, 8, 8, p);
  ASSERT_EQ(out.size(), 2u);
  EXPECT_EQ(out[0].x, 40); EXPECT_EQ(out[0].y, 30); EXPECT_EQ(out[0].score, 0.95);
  EXPECT_EQ(out[1].x, 10); EXPECT_EQ(out[1].y, 10);
  EXPECT_EQ(out[0].templateIndex, 3u);
  EXPECT_EQ(out[0].width, 8);
}

TEST(Peaks, LowerIsBetterForSqdiff) {
  Map m(20, 20, 100.0);
  m.at(3, 4) = 5.0;
  m.at(15, 15) = 1.0;
  MatchParams p;
  p.method = Method::SqDiff;
  p.threshold = 10.0;
  p.maxMatches = 3;
  std::optional<Match> best;
  auto out = peaks(m, 4, 4, p, &best);
  ASSERT_EQ(out.size(), 2u);
  EXPECT_EQ(out[0].x, 15);
  EXPECT_EQ(out[1].x, 3);
  ASSERT_TRUE(best);
  EXPECT_EQ(best->x, 15);
}

TEST(Peaks, NmsDropsOverlappingWeakerBoxes) {
  Map m(100, 100, 0.0);
  m.at(20, 20) = 0.99;
  m.at(24, 20) = 0.98;  // 16x16 boxes 4 px apart: IoU = 12*16/(2*256-192) = 0.6 > 0.3
  m.at(60, 60) = 0.97;
  MatchParams p;
  p.threshold = 0.5;
  p.maxMatches = 10;
  auto out = peaks(m, 16, 16, p);
  ASSERT_EQ(out.size(), 2u);
  EXPECT_EQ(out[0].x, 20);
  EXPECT_EQ(out[1].x, 60);
  p.nmsIou = 0.7;  // now the second box is allowed
  EXPECT_EQ(peaks(m, 16, 16, p).size(), 3u);
}

TEST(Peaks, MaxMatchesLimitsAndZeroStillGivesBest) {
  Map m(30, 30, 0.0);
  for (int i = 0; i < 5; ++i) m.at(i * 6, 0) = 0.9 + 0.01 * i;
  MatchParams p;
  p.threshold = 0.5;
  p.maxMatches = 2;
  auto out = peaks(m, 2, 2, p);
  ASSERT_EQ(out.size(), 2u);
  EXPECT_EQ(out[0].x, 24);
  EXPECT_EQ(out[1].x, 18);
  p.maxMatches = 0;
  std::optional<Match> best;
  EXPECT_TRUE(peaks(m, 2, 2, p, &best).empty());
  ASSERT_TRUE(best);
  EXPECT_EQ(best->x, 24);
}

TEST(Peaks, BestTieBreaksByRasterOrder) {
  Map m(10, 10, 0.5);
  std::optional<Match> best;
  MatchParams p;
  peaks(m, 1, 1, p, &best);
  ASSERT_TRUE(best);
  EXPECT_EQ(best->x, 0);
  EXPECT_EQ(best->y, 0);
}

// rankedKey: one 64-bit key a pair whose unsigned order is rankedBefore's (the GEMM bank keeps a
// template's tied pairs as the atomicMax of their keys), and it gives back the goodness and index.
TEST(Peaks, RankedKeysOrderAsRankedBefore) {
  auto& gen = test::rng();
  std::vector<float> values = {0.0f, -0.0f, 1.0f, -1.0f, 0.5f, -0.5f, 1e-38f, -1e-38f, 1e-45f, -1e-45f,
                               3.4e38f, -3.4e38f, INFINITY, -INFINITY, 0.25f, 0.2500001f};
  for (int k = 0; k < 200; ++k) values.push_back(std::ldexp(float(int(gen() % 2001) - 1000), -int(gen() % 40)));
  const int indices[] = {0, 1, 2, 1919, 1920, 2073600, 2147483646, 2147483647};
  for (float a : values)
    for (float b : values)
      for (int ia : indices)
        for (int ib : indices) {
          if (a == b && ia == ib) continue;
          const uint64_t ka = rankedKey(a, ia), kb = rankedKey(b, ib);
          ASSERT_NE(ka, 0u);
          ASSERT_EQ(ka > kb, rankedBefore(double(a), ia, double(b), ib))
              << a << "@" << ia << " against " << b << "@" << ib;
        }
  for (float a : values)
    for (int i : indices) {
      EXPECT_EQ(double(rankedKeyGoodness(rankedKey(a, i))), double(a)) << a;
      EXPECT_EQ(rankedKeyIndex(rankedKey(a, i)), i);
    }
}

// goodnessKey: a double goodness as a key whose unsigned order is the goodness order (the GEMM
// bank's tile best is the atomicMax of its candidates' keys), and goodnessFromKey gives it back.
TEST(Peaks, GoodnessKeysOrderAsGoodness) {
  auto& gen = test::rng();
  std::vector<double> values = {0.0, -0.0, 1.0, -1.0, 0.5, -0.5, 1e-308, -1e-308, 4.9e-324, -4.9e-324,
                                1.7e308, -1.7e308, INFINITY, -INFINITY, 0.25, std::nextafter(0.25, 1.0),
                                std::nextafter(0.25, 0.0), std::nextafter(-0.25, 0.0)};
  for (int k = 0; k < 300; ++k) {
    const double mantissa = double(int64_t(gen() % 2000001) - 1000000) / 1000000.0;
    values.push_back(std::ldexp(mantissa, int(gen() % 200) - 100));
  }
  for (double a : values)
    for (double b : values) {
      const uint64_t ka = goodnessKey(a), kb = goodnessKey(b);
      ASSERT_EQ(ka > kb, a > b) << a << " against " << b;
      ASSERT_EQ(ka == kb, a == b) << a << " against " << b;
    }
  for (double a : values) {
    EXPECT_EQ(goodnessFromKey(goodnessKey(a)), a) << a;
    EXPECT_FALSE(std::signbit(goodnessFromKey(goodnessKey(a))) && a == 0.0) << "-0 comes back as +0";
  }
}

TEST(Peaks, SubPixelFromParabola) {
  // Samples of -(x - 10.3)^2 - (y - 7.8)^2 at integers: the parabola vertex is exact.
  Map m(20, 20, 0.0);
  for (int y = 0; y < 20; ++y)
    for (int x = 0; x < 20; ++x) m.at(x, y) = 1.0 - 0.001 * ((x - 10.3) * (x - 10.3) + (y - 7.8) * (y - 7.8));
  MatchParams p;
  p.threshold = 0.9;
  auto out = peaks(m, 5, 5, p);
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].x, 10);
  EXPECT_EQ(out[0].y, 8);
  EXPECT_NEAR(out[0].subX, 10.3, 1e-9);
  EXPECT_NEAR(out[0].subY, 7.8, 1e-9);
}

TEST(Peaks, SubPixelAtBorderStaysInteger) {
  Map m(5, 5, 0.0);
  m.at(0, 4) = 1.0;
  MatchParams p;
  p.threshold = 0.5;
  auto out = peaks(m, 3, 3, p);
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].subX, 0.0);
  EXPECT_EQ(out[0].subY, 4.0);
}

TEST(Peaks, IouOfBoxes) {
  Match a; a.x = 0; a.y = 0; a.width = 10; a.height = 10;
  Match b = a; b.x = 5;
  EXPECT_NEAR(boxIou(a, b), 50.0 / 150.0, 1e-12);
  b.x = 10;
  EXPECT_EQ(boxIou(a, b), 0.0);
  EXPECT_EQ(boxIou(a, a), 1.0);
}

// The kept-box index answers exactly as comparing with every kept box, below and above the
// count where it starts filing boxes in cells, for IoU limits through 0 and 1, at map edges.
TEST(KeptBoxes, SameAnswersAsComparingWithEveryKeptBox) {
  struct Case {
    int mapW, mapH, w, h;
    double iou;
  };
  const Case cases[] = {{1, 1, 1, 1, 0.3},    {50, 40, 1, 1, 0.0},  {200, 150, 9, 5, 0.0},
                        {200, 150, 9, 5, 0.3}, {200, 150, 9, 5, 0.9}, {64, 64, 64, 64, 0.5},
                        {300, 7, 4, 7, 0.2},   {120, 90, 13, 11, 1.0}};
  for (const Case& c : cases) {
    SCOPED_TRACE(std::to_string(c.mapW) + "x" + std::to_string(c.mapH) + " box " + std::to_string(c.w) + "x" +
                 std::to_string(c.h) + " iou " + std::to_string(c.iou));
    KeptBoxes index(c.mapW, c.mapH, c.w, c.h, c.iou);
    std::vector<Match> all;
    std::uniform_int_distribution<int> px(0, c.mapW - 1), py(0, c.mapH - 1);
    for (int i = 0; i < 3000; ++i) {
      Match m;
      m.x = px(test::rng());
      m.y = py(test::rng());
      m.width = c.w;
      m.height = c.h;
      const bool want = suppressedByAny(m, all, c.iou);
      ASSERT_EQ(index.suppresses(m), want) << "box " << i << " at " << m.x << "," << m.y;
      if (!want) {
        index.add(m);
        all.push_back(m);
      }
    }
    EXPECT_EQ(index.boxes().size(), all.size());
  }
}

// Huge max-matches where every position is a candidate (a flat map): every position is kept with
// nms-iou 1, boxes tile the map with nms-iou 0; in well under the test timeout (comparing each
// candidate with every kept box took hours on a 1080p map).
TEST(Peaks, HugeMaxMatchesOnAFlatMapStaysFast) {
  Map m(600, 400, 0.5);
  MatchParams p;
  p.threshold = 0.0;
  p.maxMatches = 1 << 30;
  p.nmsIou = 1.0;
  std::vector<Match> out = peaks(m, 8, 8, p);
  ASSERT_EQ(out.size(), std::size_t(600) * 400);
  EXPECT_EQ(out[0].x, 0);
  EXPECT_EQ(out[1].x, 1);
  EXPECT_EQ(out.back().y, 399);
  p.nmsIou = 0.0;
  out = peaks(m, 8, 8, p);
  ASSERT_EQ(out.size(), std::size_t(600 / 8) * (400 / 8));
  for (const Match& a : out) {
    EXPECT_EQ(a.x % 8, 0);
    EXPECT_EQ(a.y % 8, 0);
  }
}

}  // namespace
}  // namespace nccmatch
