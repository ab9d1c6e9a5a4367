// finishRegionPeaks (the host half of the GPU's region peaks) against findPeaks on the whole map:
// candidates sampled by the same rule the device applies, handed over in a shuffled order, give
// the same matches and best bit for bit. Maps of 1x1, one row, one column, odd sizes, plateaus
// and ties (values drawn from a few levels), both goodness directions, max-matches 0..many,
// nms-iou 0, 0.3 and 1; and again into one result reused for every case (its old matches never
// show through). A region's best from its tiles' bests, as the fused region kernel hands them over.
#include <gtest/gtest.h>

#include <algorithm>
#include <random>
#include <string>
#include <vector>

#include "common/peaks.hpp"
#include "common/region_peaks.hpp"
#include "test_support.hpp"

namespace nccmatch::test {
namespace {

struct MapCase {
  int w, h;
  int levels;  // distinct values the map takes (few: ties and plateaus)
};

TEST(RegionPeaks, FinishedFromSamplesEqualsFindPeaksOnTheMap) {
  const std::vector<MapCase> cases = {{1, 1, 3}, {1, 17, 4}, {23, 1, 4}, {2, 2, 2}, {31, 19, 5},
                                      {64, 48, 50}, {97, 97, 1000}, {40, 30, 1}};
  std::mt19937_64& g = rng();
  RegionResult reused;  // one result for every case: its matches' memory is reused, never its matches
  for (const MapCase& c : cases)
    for (Method method : {Method::CCoeffNormed, Method::SqDiffNormed})
      for (int maxMatches : {0, 1, 5, 100000})
        for (double iou : {0.0, 0.3, 1.0})
          for (double threshold : {-1e300, 0.5, 0.9}) {
            std::vector<double> map(std::size_t(c.w) * c.h);
            for (double& v : map) v = double(g() % uint64_t(c.levels)) / double(c.levels);
            MatchParams params;
            params.method = method;
            params.maxMatches = maxMatches;
            params.nmsIou = iou;
            params.threshold = lowerIsBetter(method) ? -threshold : threshold;
            const int tw = 1 + int(g() % 9), th = 1 + int(g() % 9);
            std::vector<Match> want;
            std::optional<Match> wantBest;
            findPeaks(map.data(), c.w, c.h, tw, th, 3, params, &want, &wantBest);

            // The device's half, on the host: candidates by the rule, the best by the order.
            const double sign = goodnessSign(method), goodEnough = sign * params.threshold;
            const GoodnessMap<std::size_t> good = goodnessMap(map.data(), c.w, c.h, sign);
            std::vector<RegionPeak> candidates;
            int bx = 0, by = 0;
            for (int y = 0; y < c.h; ++y)
              for (int x = 0; x < c.w; ++x) {
                const double v = good(x, y);
                if (rankedBefore(v, rasterKey(x, y), good(bx, by), rasterKey(bx, by))) bx = x, by = y;
                if (maxMatches > 0 && v >= goodEnough && isLocalPeak(good, x, y, v))
                  candidates.push_back(sampleRegionPeak(good, map.data(), 7, x, y));
              }
            std::shuffle(candidates.begin(), candidates.end(), g);
            RegionResult got;
            finishRegionPeaks(candidates.data(), candidates.size(), sampleRegionPeak(good, map.data(), 7, bx, by), c.w,
                              c.h, tw, th, 3, params, &got);
            const std::string where = std::to_string(c.w) + "x" + std::to_string(c.h) + " " + methodName(method) +
                                      " max " + std::to_string(maxMatches) + " iou " + std::to_string(iou) +
                                      " seed " + std::to_string(testSeed());
            ASSERT_EQ(got.matches.size(), want.size()) << where;
            for (std::size_t i = 0; i < want.size(); ++i) {
              EXPECT_EQ(got.matches[i].x, want[i].x) << where;
              EXPECT_EQ(got.matches[i].y, want[i].y) << where;
              EXPECT_EQ(got.matches[i].score, want[i].score) << where;
              EXPECT_EQ(got.matches[i].subX, want[i].subX) << where;
              EXPECT_EQ(got.matches[i].subY, want[i].subY) << where;
              EXPECT_EQ(got.matches[i].width, tw);
              EXPECT_EQ(got.matches[i].templateIndex, 3u);
            }
            std::shuffle(candidates.begin(), candidates.end(), g);
            finishRegionPeaks(candidates.data(), candidates.size(), sampleRegionPeak(good, map.data(), 7, bx, by), c.w,
                              c.h, tw, th, 3, params, &reused);
            ASSERT_EQ(reused.matches.size(), want.size()) << where << " (reused result)";
            for (std::size_t i = 0; i < want.size(); ++i) {
              EXPECT_EQ(reused.matches[i].x, want[i].x) << where << " (reused result)";
              EXPECT_EQ(reused.matches[i].y, want[i].y) << where << " (reused result)";
              EXPECT_EQ(reused.matches[i].subX, want[i].subX) << where << " (reused result)";
            }
            ASSERT_TRUE(got.best && wantBest) << where;
            EXPECT_EQ(got.best->x, wantBest->x) << where;
            EXPECT_EQ(got.best->y, wantBest->y) << where;
            EXPECT_EQ(got.best->subX, wantBest->subX) << where;
            EXPECT_EQ(got.best->subY, wantBest->subY) << where;
          }
}

// bestOfTiles against the whole map's best: maps with ties and plateaus (few levels) cut into tiles
// of random sizes (1x1 to the whole map), each tile's best by the rules' order sampled as the
// fused region kernel hands it over, the tiles handed over in a shuffled order; both goodness
// directions.
TEST(RegionPeaks, BestOfTheTilesBestsIsTheMapsBest) {
  const std::vector<MapCase> cases = {{1, 1, 3}, {1, 17, 4}, {23, 1, 4}, {2, 2, 2}, {31, 19, 5},
                                      {64, 48, 50}, {97, 97, 1000}, {40, 30, 1}, {300, 40, 3}};
  std::mt19937_64& g = rng();
  for (const MapCase& c : cases)
    for (Method method : {Method::CCoeffNormed, Method::SqDiffNormed})
      for (int round = 0; round < 8; ++round) {
        std::vector<double> map(std::size_t(c.w) * c.h);
        for (double& v : map) v = double(g() % uint64_t(c.levels)) / double(c.levels);
        const double sign = goodnessSign(method);
        const GoodnessMap<std::size_t> good = goodnessMap(map.data(), c.w, c.h, sign);
        const auto before = [&](int x, int y, int bx, int by) {
          return rankedBefore(good(x, y), rasterKey(x, y), good(bx, by), rasterKey(bx, by));
        };
        int bx = 0, by = 0;
        for (int y = 0; y < c.h; ++y)
          for (int x = 0; x < c.w; ++x)
            if (before(x, y, bx, by)) bx = x, by = y;
        const int tw = 1 + int(g() % uint64_t(c.w)), th = 1 + int(g() % uint64_t(c.h));
        std::vector<RegionPeak> tiles;
        for (int y0 = 0; y0 < c.h; y0 += th)
          for (int x0 = 0; x0 < c.w; x0 += tw) {
            int tx = x0, ty = y0;
            for (int y = y0; y < std::min(y0 + th, c.h); ++y)
              for (int x = x0; x < std::min(x0 + tw, c.w); ++x)
                if (before(x, y, tx, ty)) tx = x, ty = y;
            tiles.push_back(sampleRegionPeak(good, map.data(), 2, tx, ty));
          }
        std::shuffle(tiles.begin(), tiles.end(), g);
        const RegionPeak best = bestOfTiles(tiles.data(), tiles.size(), sign);
        const std::string where = std::to_string(c.w) + "x" + std::to_string(c.h) + " in " + std::to_string(tw) +
                                  "x" + std::to_string(th) + " tiles, " + methodName(method) + ", seed " +
                                  std::to_string(testSeed());
        EXPECT_EQ(best.x, bx) << where;
        EXPECT_EQ(best.y, by) << where;
        EXPECT_EQ(best.score, map[std::size_t(by) * c.w + bx]) << where;
        EXPECT_EQ(best.region, 2) << where;
      }
}

// RegionCandidates against a plain filter per region: every region's candidates in the order
// handed over, for calls of 1 to 40 regions with 0 to 20000 candidates (regions with none among
// them) in one object reused call after call; a candidate naming a region outside the call is
// refused, and trim() keeps small calls' memory and gives back a big one's.
TEST(RegionPeaks, CandidatesGroupedByRegionInTheOrderHandedOver) {
  std::mt19937_64& g = rng();
  RegionCandidates grouped;
  for (std::size_t count : {0, 1, 7, 256, 3000, 20000, 5})
    for (std::size_t regions : {1, 3, 40}) {
      std::vector<RegionPeak> handed(count);
      for (std::size_t k = 0; k < count; ++k) {
        // Region 1 of 3 and of 40 gets none: an empty group between others.
        int region = int(g() % regions);
        if (regions > 1 && region == 1) region = 0;
        handed[k].region = region;
        handed[k].x = int(k);  // the order handed over
      }
      const std::string where = std::to_string(count) + " candidates, " + std::to_string(regions) +
                                " regions, seed " + std::to_string(testSeed());
      ASSERT_TRUE(grouped.group(handed.data(), handed.size(), regions)) << where;
      std::size_t seen = 0;
      for (std::size_t i = 0; i < regions; ++i) {
        std::vector<int> want;
        for (const RegionPeak& p : handed)
          if (p.region == int(i)) want.push_back(p.x);
        ASSERT_EQ(grouped.count(i), want.size()) << where << ", region " << i;
        for (std::size_t j = 0; j < want.size(); ++j) {
          EXPECT_EQ(grouped.of(i)[j].region, int(i)) << where;
          EXPECT_EQ(grouped.of(i)[j].x, want[j]) << where << ", region " << i << ", candidate " << j;
        }
        seen += want.size();
      }
      EXPECT_EQ(seen, count) << where;
      grouped.trim();
      if (count <= RegionCandidates::kKeptCandidates)
        EXPECT_GE(grouped.capacity(), count) << where << ": a small call's memory is kept";
      else
        EXPECT_EQ(grouped.capacity(), 0u) << where << ": a big call's memory is given back";
    }
  std::vector<RegionPeak> stray(3);
  stray[2].region = 5;
  EXPECT_FALSE(grouped.group(stray.data(), stray.size(), 5));
  stray[2].region = -1;
  EXPECT_FALSE(grouped.group(stray.data(), stray.size(), 5));
  EXPECT_EQ(grouped.count(4), 0u) << "a refused call groups nothing";
}

}  // namespace
}  // namespace nccmatch::test
