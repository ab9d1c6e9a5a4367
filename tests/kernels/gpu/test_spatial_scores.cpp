// The fused spatial kernel alone: every method's score map bit-identical to the CPU Reference
// engine (numerator by dp4a, window sums from the tile's column sums), launched whole or in
// bands of output rows, and its peak handoff (per-block bests, positions above the threshold)
// equal to what the map itself says.
#include <gtest/gtest.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cstring>
#include <tuple>

#include "cuda/spatial_scores.hpp"
#include "gpu_test_support.hpp"
#include "../test_support.hpp"

namespace nccmatch::test {
namespace {

struct FusedCase {
  int frameW, frameH, tplW, tplH;
  std::size_t padding;  // an odd stride sends the kernel down its byte-load path
  Fill frameFill, tplFill;
  int bandRows;         // output rows per launch (a multiple of 16); 0: one launch
};

std::ostream& operator<<(std::ostream& os, const FusedCase& c) {
  return os << describe(c.frameW, c.frameH, c.padding) << " template " << c.tplW << "x" << c.tplH
            << " bands " << c.bandRows;
}

TemplateStats statsOf(const TemplateImage& t) {
  TemplateStats s;
  s.n = int64_t(t.width) * t.height;
  for (uint8_t v : t.pixels) {
    s.sum += v;
    s.sumSq += int64_t(v) * v;
  }
  return s;
}

TEST(FusedSpatial, FitsUpTo64AndPacksWholeWords) {
  EXPECT_TRUE(cuda::fusedSpatialFits(1, 1));
  EXPECT_TRUE(cuda::fusedSpatialFits(64, 64));
  EXPECT_FALSE(cuda::fusedSpatialFits(65, 1));
  EXPECT_FALSE(cuda::fusedSpatialFits(1, 65));
  const std::vector<uint8_t> px = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10};
  const std::vector<uint8_t> packed = cuda::fusedSpatialPack(px.data(), 5, 2);
  const std::vector<uint8_t> want = {1, 2, 3, 4, 5, 0, 0, 0, 6, 7, 8, 9, 10, 0, 0, 0};
  EXPECT_EQ(packed, want);
  // Fragments: 16-byte lanes, 32 a step, ceil((w + 15) / 32) steps a row; lane 0's first
  // register holds row m = 0 at k = 0..3, i.e. template bytes 0..3.
  const std::vector<uint8_t> frags = cuda::fusedSpatialFragments(px.data(), 5, 2);
  ASSERT_EQ(frags.size(), 2u * 1 * 32 * 16);
  EXPECT_EQ(std::vector<uint8_t>(frags.begin(), frags.begin() + 4), (std::vector<uint8_t>{1, 2, 3, 4}));
  // Lane 4 (g = 1, t = 0): row m = 1 sees template column k - 1: 0, 1, 2, 3.
  EXPECT_EQ(std::vector<uint8_t>(frags.begin() + 64, frags.begin() + 68), (std::vector<uint8_t>{0, 1, 2, 3}));
  const std::vector<uint8_t> wide(64, 7);
  EXPECT_EQ(cuda::fusedSpatialFragments(wide.data(), 17, 1).size(), 1u * 1 * 32 * 16);  // w + 15 = 32
  EXPECT_EQ(cuda::fusedSpatialFragments(wide.data(), 18, 1).size(), 1u * 2 * 32 * 16);
  EXPECT_EQ(cuda::fusedSpatialFragments(wide.data(), 64, 1).size(), 1u * 3 * 32 * 16);
  EXPECT_EQ(cuda::fusedSpatialBlocks(128, 16), 1);
  EXPECT_EQ(cuda::fusedSpatialBlocks(129, 17), 4);
}

class FusedSpatialScores
    : public ::testing::TestWithParam<std::tuple<cuda::FusedNumerator, FusedCase>> {};

TEST_P(FusedSpatialScores, MapsBitIdenticalAndHandoffComplete) {
  SKIP_WITHOUT_GPU();
  const cuda::FusedNumerator numerator = std::get<0>(GetParam());
  const FusedCase c = std::get<1>(GetParam());
  Image img = makeImage(c.frameW, c.frameH, c.frameFill, c.padding);
  TemplateImage t = makeTemplate(c.tplW, c.tplH, c.tplFill);
  auto cpu = makeEngine(Backend::Cpu);
  ASSERT_TRUE(cpu->setTemplates({t}).ok());
  const int mapW = c.frameW - c.tplW + 1, mapH = c.frameH - c.tplH + 1;
  const std::size_t n = std::size_t(mapW) * mapH;
  const int blocks = cuda::fusedSpatialBlocks(mapW, mapH);
  const std::vector<uint8_t> packed =
      numerator == cuda::FusedNumerator::TensorCores
          ? cuda::fusedSpatialFragments(t.pixels.data(), t.width, t.height)
          : cuda::fusedSpatialPack(t.pixels.data(), t.width, t.height);

  uint8_t *dImage = nullptr, *dTpl = nullptr;
  double* dMap = nullptr;
  cuda::Ranked* dBest = nullptr;
  int *dAbove = nullptr, *dCount = nullptr;
  ASSERT_EQ(cudaMalloc(&dImage, img.bytes.size()), cudaSuccess);
  ASSERT_EQ(cudaMalloc(&dTpl, packed.size()), cudaSuccess);
  ASSERT_EQ(cudaMalloc(&dMap, n * sizeof(double)), cudaSuccess);
  ASSERT_EQ(cudaMalloc(&dBest, blocks * sizeof(cuda::Ranked)), cudaSuccess);
  ASSERT_EQ(cudaMalloc(&dAbove, n * sizeof(int)), cudaSuccess);
  ASSERT_EQ(cudaMalloc(&dCount, sizeof(int)), cudaSuccess);
  ASSERT_EQ(cudaMemcpy(dImage, img.bytes.data(), img.bytes.size(), cudaMemcpyHostToDevice), cudaSuccess);
  ASSERT_EQ(cudaMemcpy(dTpl, packed.data(), packed.size(), cudaMemcpyHostToDevice), cudaSuccess);

  for (int m = 0; m <= 5; ++m) {
    const Method method = static_cast<Method>(m);
    SCOPED_TRACE(methodName(method));
    std::vector<double> want;
    Status s = cpu->scoreMap(img.view(), method, 0, &want);
    ASSERT_TRUE(s.ok()) << s.message();
    // A threshold that some but not all positions pass: the median goodness.
    const double sign = lowerIsBetter(method) ? -1.0 : 1.0;
    std::vector<double> good(want.size());
    for (std::size_t i = 0; i < n; ++i) good[i] = sign * want[i];
    std::vector<double> sorted = good;
    std::nth_element(sorted.begin(), sorted.begin() + n / 2, sorted.end());
    cuda::PeakHandoff h;
    h.blockBest = dBest;
    h.above = dAbove;
    h.aboveCount = dCount;
    h.sign = sign;
    h.goodEnough = sorted[n / 2];
    h.collect = true;

    ASSERT_EQ(cudaMemset(dMap, 0xff, n * sizeof(double)), cudaSuccess);  // poison: NaN
    ASSERT_EQ(cudaMemset(dBest, 0xff, blocks * sizeof(cuda::Ranked)), cudaSuccess);
    ASSERT_EQ(cudaMemset(dCount, 0, sizeof(int)), cudaSuccess);
    cuda::FusedSpatialArgs a;
    a.image = dImage;
    a.pitch = img.stride;
    a.width = img.width;
    a.height = img.height;
    a.numerator = numerator;
    a.packedTemplate = dTpl;
    a.templateWidth = t.width;
    a.templateHeight = t.height;
    a.stats = statsOf(t);
    a.method = method;
    a.map = dMap;
    const int band = c.bandRows > 0 ? c.bandRows : mapH;
    for (int y0 = 0; y0 < mapH; y0 += band) {
      s = cuda::fusedSpatialScores(a, y0, std::min(mapH, y0 + band), h, nullptr);
      ASSERT_TRUE(s.ok()) << s.message();
    }
    std::vector<double> got(n);
    std::vector<cuda::Ranked> best(blocks);
    int count = -1;
    ASSERT_EQ(cudaMemcpy(got.data(), dMap, n * sizeof(double), cudaMemcpyDeviceToHost), cudaSuccess);
    ASSERT_EQ(cudaMemcpy(best.data(), dBest, blocks * sizeof(cuda::Ranked), cudaMemcpyDeviceToHost), cudaSuccess);
    ASSERT_EQ(cudaMemcpy(&count, dCount, sizeof(int), cudaMemcpyDeviceToHost), cudaSuccess);
    for (std::size_t i = 0; i < n; ++i)
      ASSERT_EQ(got[i], want[i]) << "at " << i % mapW << "," << i / mapW << " " << c;

    // Block bests: the best goodness of each 128x16 tile, the first in raster order on ties.
    const int blocksX = (mapW + 127) / 128;
    for (int b = 0; b < blocks; ++b) {
      const int x0 = (b % blocksX) * 128, y0 = (b / blocksX) * 16;
      int at = -1;
      for (int y = y0; y < std::min(mapH, y0 + 16); ++y)
        for (int x = x0; x < std::min(mapW, x0 + 128); ++x) {
          const int i = y * mapW + x;
          if (at < 0 || good[i] > good[at] || (good[i] == good[at] && i < at)) at = i;
        }
      ASSERT_EQ(best[b].index, at) << "block " << b;
      ASSERT_EQ(best[b].goodness, good[at]) << "block " << b;
    }

    // Above the threshold: each such position once, nothing else.
    std::vector<int> above(std::max(count, 0));
    ASSERT_EQ(cudaMemcpy(above.data(), dAbove, above.size() * sizeof(int), cudaMemcpyDeviceToHost), cudaSuccess);
    std::sort(above.begin(), above.end());
    std::vector<int> wantAbove;
    for (std::size_t i = 0; i < n; ++i)
      if (good[i] >= h.goodEnough) wantAbove.push_back(int(i));
    ASSERT_FALSE(wantAbove.empty());
    ASSERT_EQ(above, wantAbove);
  }
  cudaFree(dImage);
  cudaFree(dTpl);
  cudaFree(dMap);
  cudaFree(dBest);
  cudaFree(dAbove);
  cudaFree(dCount);
}

INSTANTIATE_TEST_SUITE_P(Sizes, FusedSpatialScores, ::testing::Combine(
    ::testing::Values(cuda::FusedNumerator::TensorCores, cuda::FusedNumerator::Dp4a), ::testing::Values(
    //       frame        template  pad  frame fill     template fill  bands
    FusedCase{1, 1,       1, 1,     0,   Fill::Random,  Fill::Random,  0},
    FusedCase{9, 7,       1, 1,     3,   Fill::Random,  Fill::Random,  0},
    FusedCase{13, 11,     13, 11,   0,   Fill::Random,  Fill::Random,  0},   // template == frame
    FusedCase{31, 17,     5, 3,     2,   Fill::Random,  Fill::Random,  0},   // odd stride: byte loads
    FusedCase{129, 40,    2, 2,     0,   Fill::Random,  Fill::Random,  16},  // 2 blocks wide, bands
    FusedCase{200, 150,   64, 64,   0,   Fill::Random,  Fill::Random,  32},  // largest template
    FusedCase{211, 97,    63, 17,   5,   Fill::Smooth,  Fill::Random,  48},  // odd sizes, padded words
    FusedCase{300, 200,   17, 33,   0,   Fill::Smooth,  Fill::Smooth,  0},
    FusedCase{40, 70,     7, 9,     0,   Fill::Binary,  Fill::Random,  16},
    FusedCase{24, 24,     6, 6,     2,   Fill::Flat,    Fill::Random,  0},   // every window flat
    FusedCase{24, 20,     6, 5,     0,   Fill::Random,  Fill::Flat,    0},   // flat template
    FusedCase{1, 37,      1, 5,     0,   Fill::Random,  Fill::Random,  16},
    FusedCase{37, 1,      4, 1,     5,   Fill::Random,  Fill::Random,  0},
    FusedCase{1920, 1080, 16, 16,   0,   Fill::Random,  Fill::Random,  272},
    FusedCase{1921, 1079, 33, 31,   7,   Fill::Smooth,  Fill::Smooth,  272})));

TEST(FusedSpatial, BadArgumentsAreErrors) {
  cuda::FusedSpatialArgs a;
  a.width = 100;
  a.height = 100;
  a.templateWidth = 65;
  a.templateHeight = 8;
  cuda::PeakHandoff h;
  EXPECT_FALSE(cuda::fusedSpatialScores(a, 0, 10, h, nullptr).ok());  // too wide for the kernel
  a.templateWidth = 8;
  EXPECT_FALSE(cuda::fusedSpatialScores(a, 0, 10, h, nullptr).ok());  // no handoff buffers
  EXPECT_FALSE(cuda::fusedSpatialScores(a, 8, 10, h, nullptr).ok());  // band not on a tile row
  EXPECT_FALSE(cuda::fusedSpatialScores(a, 0, 94, h, nullptr).ok());  // past the map's 93 rows
}

}  // namespace
}  // namespace nccmatch::test
