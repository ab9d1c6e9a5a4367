// The CPU backend's parallel peak finder against findPeaks (the reference): the same matches, in
// the same order, and the same best position, on maps with peaks, plateaus, ties and flat areas,
// for both score directions, several thread counts and map sizes through 1.
#include <gtest/gtest.h>

#include <random>

#include "cpu/cpu_peaks.hpp"
#include "common/peaks.hpp"
#include "test_support.hpp"

namespace nccmatch::test {
namespace {

enum class MapKind { Random, Quantised, Flat, Plateaus };

struct PeaksCase {
  int w, h;
  MapKind kind;
  Method method;
  double threshold;
  int maxMatches;
};

std::vector<double> makeMap(int w, int h, MapKind kind) {
  std::uniform_real_distribution<double> uniform(-1.0, 1.0);
  std::vector<double> map(std::size_t(w) * h);
  for (std::size_t i = 0; i < map.size(); ++i) {
    const int x = int(i % w), y = int(i / w);
    switch (kind) {
      case MapKind::Random: map[i] = uniform(rng()); break;
      // Few distinct values: many exact ties between neighbours and across the map.
      case MapKind::Quantised: map[i] = std::round(uniform(rng()) * 4) / 4; break;
      case MapKind::Flat: map[i] = 1.0; break;
      // Blocks of equal scores (a flat template, or bars in the frame), with -0.0 among zeros.
      case MapKind::Plateaus: map[i] = ((x / 7 + y / 5) % 3 == 0) ? 0.95 : ((x / 7) % 2 ? 0.0 : -0.0); break;
    }
  }
  return map;
}

void expectSameMatch(const Match& a, const Match& b, const char* what) {
  EXPECT_EQ(a.x, b.x) << what;
  EXPECT_EQ(a.y, b.y) << what;
  EXPECT_EQ(a.score, b.score) << what;
  EXPECT_EQ(a.subX, b.subX) << what;
  EXPECT_EQ(a.subY, b.subY) << what;
  EXPECT_EQ(a.width, b.width) << what;
  EXPECT_EQ(a.height, b.height) << what;
  EXPECT_EQ(a.templateIndex, b.templateIndex) << what;
}

class CpuPeaks : public ::testing::TestWithParam<PeaksCase> {};

TEST_P(CpuPeaks, SameAsTheReference) {
  const PeaksCase c = GetParam();
  std::vector<double> map = makeMap(c.w, c.h, c.kind);
  if (lowerIsBetter(c.method))
    for (double& v : map) v = -v;
  MatchParams p;
  p.method = c.method;
  p.threshold = c.threshold;
  p.maxMatches = c.maxMatches;
  std::vector<Match> want;
  std::optional<Match> wantBest;
  findPeaks(map.data(), c.w, c.h, 9, 6, 2, p, &want, &wantBest);
  for (int threads : {1, 2, 5}) {
    ThreadPool pool(threads);
    std::vector<Match> got{Match{}};  // results are appended after what is there
    std::optional<Match> gotBest;
    findPeaksParallel(map.data(), c.w, c.h, 9, 6, 2, p, pool, &got, &gotBest);
    ASSERT_EQ(got.size(), want.size() + 1) << threads << " threads";
    for (std::size_t i = 0; i < want.size(); ++i) expectSameMatch(got[i + 1], want[i], "match");
    ASSERT_TRUE(gotBest.has_value());
    expectSameMatch(*gotBest, *wantBest, "best");
  }
}

INSTANTIATE_TEST_SUITE_P(Maps, CpuPeaks, ::testing::Values(
    //        w    h    kind                 method                 threshold  max
    PeaksCase{1,   1,   MapKind::Random,     Method::CCoeffNormed,  0.0,       3},
    PeaksCase{1,   37,  MapKind::Random,     Method::CCoeffNormed,  0.5,       5},
    PeaksCase{41,  1,   MapKind::Quantised,  Method::SqDiffNormed,  -0.2,      5},
    PeaksCase{8,   9,   MapKind::Random,     Method::CCoeffNormed,  0.0,       0},   // best only
    PeaksCase{203, 157, MapKind::Random,     Method::CCoeffNormed,  0.9,       20},
    PeaksCase{203, 157, MapKind::Random,     Method::SqDiff,        -0.9,      20},
    PeaksCase{120, 90,  MapKind::Quantised,  Method::CCorrNormed,   0.5,       50},
    PeaksCase{120, 90,  MapKind::Quantised,  Method::SqDiffNormed,  0.25,      1000},
    PeaksCase{64, 48,   MapKind::Flat,       Method::CCoeffNormed,  0.8,       4},   // every position ties
    PeaksCase{64, 48,   MapKind::Flat,       Method::CCoeffNormed,  1.5,       4},   // none above
    PeaksCase{97, 61,   MapKind::Plateaus,   Method::CCoeffNormed,  0.9,       7},
    PeaksCase{97, 61,   MapKind::Plateaus,   Method::CCoeffNormed,  -0.5,      7},
    PeaksCase{97, 61,   MapKind::Plateaus,   Method::SqDiffNormed,  0.1,       7}));

}  // namespace
}  // namespace nccmatch::test
