// Peak finding on the GPU against peaks.cpp: the same best position, the same kept matches in
// the same order, bit-identical scores and sub-pixel positions, on maps with plateaus and ties.
#include <gtest/gtest.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cstring>
#include <optional>
#include <string>

#include "cuda/peaks/peaks_kernels.hpp"
#include "gpu_test_support.hpp"
#include "common/peaks.hpp"
#include "test_support.hpp"

namespace nccmatch::test {
namespace {

enum class MapKind { Random, Quantised, Flat, Blobs };

std::vector<double> makeMap(int w, int h, MapKind kind) {
  std::vector<double> map(std::size_t(w) * h);
  std::uniform_real_distribution<double> uni(-1.0, 1.0);
  for (int y = 0; y < h; ++y) {
    for (int x = 0; x < w; ++x) {
      double v = 0;
      switch (kind) {
        case MapKind::Random: v = uni(rng()); break;
        case MapKind::Quantised: v = double(int(rng()() % 5)) / 4.0; break;  // many ties, plateaus
        case MapKind::Flat: v = 0.5; break;
        case MapKind::Blobs: v = std::sin(x * 0.3) * std::cos(y * 0.21); break;  // smooth peaks
      }
      map[std::size_t(y) * w + x] = v;
    }
  }
  return map;
}

// A score kernel's handoff as the host builds it: the best of each run of 1..maxSpan positions
// (runs of random length, like blocks of any shape), and every position at or above the
// threshold, in random order.
struct HostHandoff {
  std::vector<cuda::Ranked> partial;
  std::vector<int> above;
};
HostHandoff makeHandoff(const std::vector<double>& map, double sign, double threshold, int maxSpan) {
  HostHandoff h;
  const int span = 1 + int(rng()() % maxSpan);
  for (int i = 0; i < int(map.size()); ++i) {
    const double g = sign * map[i];
    if (i % span == 0) h.partial.push_back(cuda::Ranked{g, i});
    if (g > h.partial.back().goodness) h.partial.back() = cuda::Ranked{g, i};
    if (g >= sign * threshold) h.above.push_back(i);
  }
  std::shuffle(h.above.begin(), h.above.end(), rng());
  return h;
}

// The GPU's best and kept matches against peaks.cpp's: the same places in the same order,
// bit-identical scores and sub-pixel positions.
void expectSameAsCpu(const cuda::DeviceMatch& best, const cuda::DeviceMatch* kept, int count,
                     const std::optional<Match>& wantBest, const std::vector<Match>& want,
                     const std::string& where) {
  ASSERT_TRUE(wantBest.has_value()) << where;
  EXPECT_EQ(best.x, wantBest->x) << where;
  EXPECT_EQ(best.y, wantBest->y) << where;
  EXPECT_EQ(best.score, wantBest->score) << where;
  EXPECT_EQ(best.subX, wantBest->subX) << where;
  EXPECT_EQ(best.subY, wantBest->subY) << where;
  ASSERT_EQ(count, int(want.size())) << where;
  for (int k = 0; k < count; ++k) {
    EXPECT_EQ(kept[k].x, want[k].x) << where << " match " << k;
    EXPECT_EQ(kept[k].y, want[k].y) << where << " match " << k;
    EXPECT_EQ(kept[k].score, want[k].score) << where << " match " << k;
    EXPECT_EQ(kept[k].subX, want[k].subX) << where << " match " << k;  // bit-identical arithmetic
    EXPECT_EQ(kept[k].subY, want[k].subY) << where << " match " << k;
  }
}

struct PeakCase {
  int w, h;
  MapKind kind;
  Method method;
  double threshold;
  int maxMatches;
  double nmsIou;
  int tplW, tplH;
};

class GpuPeaks : public ::testing::TestWithParam<PeakCase> {};

TEST_P(GpuPeaks, SameAsTheCpuPeaks) {
  SKIP_WITHOUT_GPU();
  const PeakCase c = GetParam();
  const std::vector<double> map = makeMap(c.w, c.h, c.kind);
  MatchParams p;
  p.method = c.method;
  p.threshold = c.threshold;
  p.maxMatches = c.maxMatches;
  p.nmsIou = c.nmsIou;
  std::vector<Match> want;
  std::optional<Match> wantBest;
  findPeaks(map.data(), c.w, c.h, c.tplW, c.tplH, 0, p, &want, &wantBest);

  double* dMap = nullptr;
  cuda::DeviceMatch* dBest = nullptr;
  cuda::DeviceMatch* dKept = nullptr;
  int* dCount = nullptr;
  ASSERT_EQ(cudaMalloc(&dMap, map.size() * sizeof(double)), cudaSuccess);
  ASSERT_EQ(cudaMalloc(&dBest, sizeof(cuda::DeviceMatch)), cudaSuccess);
  ASSERT_EQ(cudaMemset(dBest, 0xff, sizeof(cuda::DeviceMatch)), cudaSuccess);  // read whether written or not
  ASSERT_EQ(cudaMalloc(&dKept, sizeof(cuda::DeviceMatch) * std::max(1, c.maxMatches)), cudaSuccess);
  ASSERT_EQ(cudaMalloc(&dCount, sizeof(int)), cudaSuccess);
  ASSERT_EQ(cudaMemcpy(dMap, map.data(), map.size() * sizeof(double), cudaMemcpyHostToDevice), cudaSuccess);
  ASSERT_EQ(cudaMemset(dCount, 0xff, sizeof(int)), cudaSuccess);
  cuda::PeakFinder finder;
  Status s = finder.find({dMap, c.w, c.h, c.tplW, c.tplH}, p, {dBest, dKept, dCount}, nullptr);
  ASSERT_TRUE(s.ok()) << s.message();
  int count = -1;
  cuda::DeviceMatch best;
  std::vector<cuda::DeviceMatch> kept(std::max(1, c.maxMatches));
  ASSERT_EQ(cudaMemcpy(&count, dCount, sizeof(int), cudaMemcpyDeviceToHost), cudaSuccess);
  ASSERT_EQ(cudaMemcpy(&best, dBest, sizeof(best), cudaMemcpyDeviceToHost), cudaSuccess);
  // Only the matches the finder wrote (the rest of the buffer was never written: compute-sanitizer
  // initcheck counts reading it).
  const std::size_t written = std::size_t(std::clamp(count, 0, int(kept.size())));
  ASSERT_EQ(cudaMemcpy(kept.data(), dKept, sizeof(cuda::DeviceMatch) * written, cudaMemcpyDeviceToHost), cudaSuccess);
  cudaFree(dMap);
  cudaFree(dBest);
  cudaFree(dKept);
  cudaFree(dCount);
  expectSameAsCpu(best, kept.data(), count, wantBest, want, "scan");
}

// The same results from a score kernel's handoff: per-block bests (blocks of any shape) and the
// positions above the threshold in any order.
TEST_P(GpuPeaks, SameAsTheCpuPeaksFromAHandoff) {
  SKIP_WITHOUT_GPU();
  const PeakCase c = GetParam();
  const std::vector<double> map = makeMap(c.w, c.h, c.kind);
  MatchParams p;
  p.method = c.method;
  p.threshold = c.threshold;
  p.maxMatches = c.maxMatches;
  p.nmsIou = c.nmsIou;
  std::vector<Match> want;
  std::optional<Match> wantBest;
  findPeaks(map.data(), c.w, c.h, c.tplW, c.tplH, 0, p, &want, &wantBest);

  const double sign = lowerIsBetter(c.method) ? -1.0 : 1.0;
  HostHandoff handoff = makeHandoff(map, sign, c.threshold, 300);
  const std::vector<cuda::Ranked>& partial = handoff.partial;
  std::vector<int>& above = handoff.above;
  above.push_back(-1);  // room for an empty list

  double* dMap = nullptr;
  cuda::Ranked* dPartial = nullptr;
  int *dAbove = nullptr, *dAboveCount = nullptr, *dCount = nullptr;
  cuda::DeviceMatch* dBest = nullptr;
  cuda::DeviceMatch* dKept = nullptr;
  ASSERT_EQ(cudaMalloc(&dMap, map.size() * sizeof(double)), cudaSuccess);
  ASSERT_EQ(cudaMalloc(&dPartial, partial.size() * sizeof(cuda::Ranked)), cudaSuccess);
  ASSERT_EQ(cudaMalloc(&dAbove, above.size() * sizeof(int)), cudaSuccess);
  ASSERT_EQ(cudaMalloc(&dAboveCount, sizeof(int)), cudaSuccess);
  ASSERT_EQ(cudaMalloc(&dBest, sizeof(cuda::DeviceMatch)), cudaSuccess);
  ASSERT_EQ(cudaMemset(dBest, 0xff, sizeof(cuda::DeviceMatch)), cudaSuccess);  // read whether written or not
  ASSERT_EQ(cudaMalloc(&dKept, sizeof(cuda::DeviceMatch) * std::max(1, c.maxMatches)), cudaSuccess);
  ASSERT_EQ(cudaMalloc(&dCount, sizeof(int)), cudaSuccess);
  const int aboveCount = int(above.size()) - 1;
  ASSERT_EQ(cudaMemcpy(dMap, map.data(), map.size() * sizeof(double), cudaMemcpyHostToDevice), cudaSuccess);
  ASSERT_EQ(cudaMemcpy(dPartial, partial.data(), partial.size() * sizeof(cuda::Ranked), cudaMemcpyHostToDevice), cudaSuccess);
  ASSERT_EQ(cudaMemcpy(dAbove, above.data(), above.size() * sizeof(int), cudaMemcpyHostToDevice), cudaSuccess);
  ASSERT_EQ(cudaMemcpy(dAboveCount, &aboveCount, sizeof(int), cudaMemcpyHostToDevice), cudaSuccess);
  ASSERT_EQ(cudaMemset(dCount, 0xff, sizeof(int)), cudaSuccess);
  cuda::PeakHandoff h;
  h.blockBest = dPartial;
  h.above = dAbove;
  h.aboveCount = dAboveCount;
  h.sign = sign;
  h.goodEnough = sign * c.threshold;
  h.collect = c.maxMatches > 0;
  cuda::PeakFinder finder;
  Status s = finder.findFromHandoff({dMap, c.w, c.h, c.tplW, c.tplH}, p, h, int(partial.size()),
                                    {dBest, dKept, dCount}, nullptr);
  ASSERT_TRUE(s.ok()) << s.message();
  int count = -1;
  cuda::DeviceMatch best;
  std::vector<cuda::DeviceMatch> kept(std::max(1, c.maxMatches));
  ASSERT_EQ(cudaMemcpy(&count, dCount, sizeof(int), cudaMemcpyDeviceToHost), cudaSuccess);
  ASSERT_EQ(cudaMemcpy(&best, dBest, sizeof(best), cudaMemcpyDeviceToHost), cudaSuccess);
  // Only the matches the finder wrote (the rest of the buffer was never written: compute-sanitizer
  // initcheck counts reading it).
  const std::size_t written = std::size_t(std::clamp(count, 0, int(kept.size())));
  ASSERT_EQ(cudaMemcpy(kept.data(), dKept, sizeof(cuda::DeviceMatch) * written, cudaMemcpyDeviceToHost), cudaSuccess);
  cudaFree(dMap);
  cudaFree(dPartial);
  cudaFree(dAbove);
  cudaFree(dAboveCount);
  cudaFree(dBest);
  cudaFree(dKept);
  cudaFree(dCount);
  expectSameAsCpu(best, kept.data(), count, wantBest, want, "handoff");
}

// A bank's peaks in two launches (BankPeakFinder): every template's results equal peaks.cpp's,
// in the results slot of its template index, for maps of many sizes and kinds sharing one rule.
TEST(GpuBankPeaks, EveryTemplateSameAsTheCpuPeaks) {
  SKIP_WITHOUT_GPU();
  struct Map {
    int w, h;
    MapKind kind;
    int tplW, tplH;
  };
  const Map maps[] = {{1, 1, MapKind::Random, 4, 4},       {37, 23, MapKind::Quantised, 5, 5},
                      {64, 64, MapKind::Flat, 8, 8},        {200, 100, MapKind::Random, 16, 9},
                      {120, 90, MapKind::Blobs, 7, 11},     {40, 1, MapKind::Quantised, 2, 2}};
  const int T = int(std::size(maps));
  struct Rule {
    Method method;
    double threshold;
    int maxMatches;
    double nmsIou;
  };
  const Rule rules[] = {{Method::CCoeffNormed, 0.5, 10, 0.3}, {Method::SqDiff, 0.25, 5, 0.0},
                        {Method::CCorr, 0.5, 3, 1.0},         {Method::CCoeffNormed, 0.9, 0, 0.3},
                        {Method::CCoeffNormed, 0.0, 3000, 0.3}, {Method::CCorr, 0.5, 100000, 1.0}};
  for (const Rule& rule : rules) {
    SCOPED_TRACE(methodName(rule.method));
    MatchParams p;
    p.method = rule.method;
    p.threshold = rule.threshold;
    p.maxMatches = rule.maxMatches;
    p.nmsIou = rule.nmsIou;
    const double sign = lowerIsBetter(rule.method) ? -1.0 : 1.0;
    std::vector<void*> allocations;
    auto upload = [&](const void* data, std::size_t bytes) {
      void* d = nullptr;
      EXPECT_EQ(cudaMalloc(&d, std::max<std::size_t>(bytes, 4)), cudaSuccess);
      if (bytes > 0) {
        EXPECT_EQ(cudaMemcpy(d, data, bytes, cudaMemcpyHostToDevice), cudaSuccess);
      }
      allocations.push_back(d);
      return d;
    };
    std::vector<std::vector<double>> hostMaps;
    std::vector<cuda::BankPeakJob> jobs;
    for (int k = 0; k < T; ++k) {
      const Map& m = maps[k];
      hostMaps.push_back(makeMap(m.w, m.h, m.kind));
      const std::vector<double>& map = hostMaps.back();
      const HostHandoff handoff = makeHandoff(map, sign, rule.threshold, 200);
      const std::vector<cuda::Ranked>& partial = handoff.partial;
      const std::vector<int>& above = handoff.above;
      const int aboveCount = int(above.size());
      cuda::BankPeakJob j;
      j.map = static_cast<const double*>(upload(map.data(), map.size() * sizeof(double)));
      j.mapWidth = m.w;
      j.mapHeight = m.h;
      j.templateWidth = m.tplW;
      j.templateHeight = m.tplH;
      j.templateIndex = T - 1 - k;  // results slots in another order than the jobs
      j.blockBest = static_cast<const cuda::Ranked*>(upload(partial.data(), partial.size() * sizeof(cuda::Ranked)));
      j.partials = int(partial.size());
      j.above = static_cast<const int*>(upload(above.data(), above.size() * sizeof(int)));
      j.aboveCount = static_cast<const int*>(upload(&aboveCount, sizeof(int)));
      jobs.push_back(j);
    }
    const int M = std::max(1, rule.maxMatches);
    std::vector<cuda::DeviceMatch> none(std::size_t(T) * M);
    auto* dBest = static_cast<cuda::DeviceMatch*>(upload(none.data(), T * sizeof(cuda::DeviceMatch)));
    auto* dKept = static_cast<cuda::DeviceMatch*>(upload(none.data(), none.size() * sizeof(cuda::DeviceMatch)));
    std::vector<int> minusOne(T, -1);
    auto* dCount = static_cast<int*>(upload(minusOne.data(), T * sizeof(int)));
    cuda::BankPeakFinder finder;
    Status s = finder.set(jobs);
    ASSERT_TRUE(s.ok()) << s.message();
    s = finder.find(p, cuda::DeviceFrame{}, dBest, dKept, dCount, nullptr);  // dense maps: no frame needed
    ASSERT_TRUE(s.ok()) << s.message();
    std::vector<cuda::DeviceMatch> best(T), kept(none.size());
    std::vector<int> count(T);
    ASSERT_EQ(cudaMemcpy(best.data(), dBest, T * sizeof(cuda::DeviceMatch), cudaMemcpyDeviceToHost), cudaSuccess);
    ASSERT_EQ(cudaMemcpy(kept.data(), dKept, kept.size() * sizeof(cuda::DeviceMatch), cudaMemcpyDeviceToHost), cudaSuccess);
    ASSERT_EQ(cudaMemcpy(count.data(), dCount, T * sizeof(int), cudaMemcpyDeviceToHost), cudaSuccess);
    for (void* d : allocations) cudaFree(d);
    for (int k = 0; k < T; ++k) {
      const Map& m = maps[k];
      const int t = T - 1 - k;
      std::vector<Match> want;
      std::optional<Match> wantBest;
      findPeaks(hostMaps[k].data(), m.w, m.h, m.tplW, m.tplH, 0, p, &want, &wantBest);
      // With max-matches 0 the CPU keeps none either: want is empty.
      expectSameAsCpu(best[t], kept.data() + std::size_t(t) * rule.maxMatches, count[t], wantBest, want,
                      "map " + std::to_string(k));
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Maps, GpuPeaks, ::testing::Values(
    //       map         kind                method                  thresh  max  iou   tpl
    PeakCase{1, 1,       MapKind::Random,    Method::CCoeffNormed,   -2.0,   1,   0.3,  4, 4},
    PeakCase{1, 40,      MapKind::Random,    Method::CCoeffNormed,   0.0,    5,   0.3,  3, 3},
    PeakCase{40, 1,      MapKind::Quantised, Method::SqDiff,         0.5,    5,   0.0,  2, 2},
    PeakCase{37, 23,     MapKind::Quantised, Method::CCoeffNormed,   0.5,    10,  0.3,  5, 5},
    PeakCase{37, 23,     MapKind::Quantised, Method::SqDiffNormed,   0.25,   10,  1.0,  5, 5},  // nothing suppressed
    PeakCase{64, 64,     MapKind::Flat,      Method::CCorr,          0.5,    3,   0.3,  8, 8},  // every position a peak
    PeakCase{64, 64,     MapKind::Flat,      Method::CCorr,          0.6,    3,   0.3,  8, 8},  // none passes
    PeakCase{500, 300,   MapKind::Random,    Method::CCoeffNormed,   0.9,    0,   0.3,  16, 16},  // best only
    // More than kSelectRoundsLimit matches: the sorted NMS (radix sort + one-warp walk).
    PeakCase{64, 64,     MapKind::Flat,      Method::CCorr,          0.5,    5000, 1.0, 8, 8},  // all kept, raster order
    PeakCase{64, 64,     MapKind::Flat,      Method::CCorr,          0.5,    5000, 0.0, 8, 8},  // boxes tile the map
    PeakCase{37, 23,     MapKind::Quantised, Method::CCoeffNormed,   0.5,    100, 0.3,  5, 5},
    PeakCase{200, 150,   MapKind::Quantised, Method::SqDiff,         0.5,    1000, 0.95, 7, 4},
    PeakCase{500, 300,   MapKind::Random,    Method::CCoeffNormed,   0.0,    100000, 0.5, 16, 16},
    PeakCase{300, 200,   MapKind::Blobs,     Method::SqDiffNormed,   0.9,    65,  0.1,  3, 30},
    PeakCase{500, 300,   MapKind::Random,    Method::CCoeffNormed,   0.9,    50,  0.3,  16, 16},
    PeakCase{500, 300,   MapKind::Blobs,     Method::CCoeffNormed,   0.5,    20,  0.2,  30, 20},
    PeakCase{500, 300,   MapKind::Blobs,     Method::SqDiffNormed,   -0.5,   20,  0.5,  9, 9},
    PeakCase{1905, 1065, MapKind::Random,    Method::CCoeffNormed,   0.99,   100, 0.3,  16, 16},
    PeakCase{1905, 1065, MapKind::Quantised, Method::CCoeffNormed,   1.0,    4,   0.3,  16, 16},  // ~20% on plateaus
    PeakCase{3585, 1905, MapKind::Blobs,     Method::CCoeff,         0.9,    8,   0.3,  256, 256},
    // Thousands of kept matches: one pass over the candidates per round, not one per kept box.
    PeakCase{300, 200,   MapKind::Flat,      Method::CCorr,          0.0,    5000, 1.0, 8, 8},
    PeakCase{600, 400,   MapKind::Random,    Method::CCoeffNormed,   -2.0,   3000, 0.5, 3, 3}));

}  // namespace
}  // namespace nccmatch::test
