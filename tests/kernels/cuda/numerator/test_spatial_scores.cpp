// The fused spatial kernel alone: every method's score map bit-identical to the CPU Reference
// engine (numerator by tensor cores or dp4a, window sums from the tile's column sums), launched
// whole or in bands of output rows, alone or as a bank of templates in one launch, and its peak
// handoff (per-block bests, positions above the threshold) equal to what the map itself says.
#include <gtest/gtest.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cstring>
#include <memory>
#include <string>
#include <tuple>

#include "cuda/numerator/spatial_scores.hpp"
#include "gpu_test_support.hpp"
#include "handoff_check.hpp"
#include "test_support.hpp"

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

// Device buffers of one template's fused outputs (HandoffBuffers, one tile per 128x16 block)
// and its packed template.
struct FusedOutputs : HandoffBuffers {
  uint8_t* tpl = nullptr;
  FusedOutputs(const TemplateImage& t, int frameW, int frameH, cuda::FusedNumerator numerator)
      : HandoffBuffers(frameW - t.width + 1, frameH - t.height + 1,
                       cuda::fusedSpatialBlocks(frameW - t.width + 1, frameH - t.height + 1)) {
    const std::vector<uint8_t> packed =
        numerator == cuda::FusedNumerator::TensorCores
            ? cuda::fusedSpatialFragments(t.pixels.data(), t.width, t.height)
            : cuda::fusedSpatialPack(t.pixels.data(), t.width, t.height);
    EXPECT_EQ(cudaMalloc(&tpl, packed.size()), cudaSuccess);
    EXPECT_EQ(cudaMemcpy(tpl, packed.data(), packed.size(), cudaMemcpyHostToDevice), cudaSuccess);
  }
  ~FusedOutputs() { cudaFree(tpl); }
};

// The map bit-identical to `want`, each 128x16 block's best and the above list (expectHandoff).
void expectOutputs(const FusedOutputs& o, const std::vector<double>& want, double sign,
                   double goodEnough, bool collect) {
  HandoffView v;
  v.mapW = o.mapW;
  v.mapH = o.mapH;
  v.tileW = cuda::kFusedTileWidth;
  v.tileH = cuda::kFusedTileHeight;
  v.map = o.map;
  v.best = o.best;
  v.above = o.above;
  v.count = o.count;
  expectHandoff(v, want, sign, goodEnough, collect);
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
  // Fragments: K = w + 15 in steps of 32 (16-byte lanes, 512 bytes a step) and, where 16 or
  // fewer remain, one step of 16 (8-byte lanes, 256 bytes); lane 0's first register holds row
  // m = 0 at k = 0..3, i.e. template bytes 0..3.
  const std::vector<uint8_t> frags = cuda::fusedSpatialFragments(px.data(), 5, 2);
  ASSERT_EQ(frags.size(), 2u * 1 * 32 * 16);
  EXPECT_EQ(std::vector<uint8_t>(frags.begin(), frags.begin() + 4), (std::vector<uint8_t>{1, 2, 3, 4}));
  // Lane 4 (g = 1, t = 0): row m = 1 sees template column k - 1: 0, 1, 2, 3.
  EXPECT_EQ(std::vector<uint8_t>(frags.begin() + 64, frags.begin() + 68), (std::vector<uint8_t>{0, 1, 2, 3}));
  const std::vector<uint8_t> wide(64, 7);
  EXPECT_EQ(cuda::fusedSpatialFragments(wide.data(), 17, 1).size(), 512u);       // K 32: one step
  EXPECT_EQ(cuda::fusedSpatialFragments(wide.data(), 18, 1).size(), 512u + 256);  // K 33: 32 + 16
  EXPECT_EQ(cuda::fusedSpatialFragments(wide.data(), 33, 1).size(), 512u + 256);  // K 48
  EXPECT_EQ(cuda::fusedSpatialFragments(wide.data(), 34, 2).size(), 2u * 1024);   // K 49: 64
  EXPECT_EQ(cuda::fusedSpatialFragments(wide.data(), 64, 1).size(), 1024u + 256); // K 79: 80
  EXPECT_EQ(cuda::fusedSpatialFragments(wide.data(), 16, 1).size(), 512u);       // K 31
  EXPECT_EQ(cuda::fusedKSteps(64).paddedK(), 80);
  EXPECT_EQ(cuda::fusedKSteps(32).paddedK(), 48);
  EXPECT_EQ(cuda::fusedKSteps(16).paddedK(), 32);
  // w = 1: a single step of 16. Lane 0 (g 0, t 0): row 0 at k 0..3 is T[0], 0, 0, 0; lane 4
  // (g 1): row 1 sees column k - 1, so T[0] at k = 1; rows g + 8 see nothing.
  const std::vector<uint8_t> one = cuda::fusedSpatialFragments(px.data(), 1, 1);
  ASSERT_EQ(one.size(), 256u);
  EXPECT_EQ(std::vector<uint8_t>(one.begin(), one.begin() + 8), (std::vector<uint8_t>{1, 0, 0, 0, 0, 0, 0, 0}));
  EXPECT_EQ(std::vector<uint8_t>(one.begin() + 32, one.begin() + 40), (std::vector<uint8_t>{0, 1, 0, 0, 0, 0, 0, 0}));
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
  const FusedOutputs out(t, c.frameW, c.frameH, numerator);
  uint8_t* dImage = nullptr;
  ASSERT_EQ(cudaMalloc(&dImage, img.bytes.size()), cudaSuccess);
  ASSERT_EQ(cudaMemcpy(dImage, img.bytes.data(), img.bytes.size(), cudaMemcpyHostToDevice), cudaSuccess);

  for (int m = 0; m <= 5; ++m) {
    const Method method = static_cast<Method>(m);
    SCOPED_TRACE(methodName(method));
    std::vector<double> want;
    Status s = cpu->scoreMap(img.view(), method, 0, &want);
    ASSERT_TRUE(s.ok()) << s.message();
    cuda::PeakHandoff h;
    h.blockBest = out.best;
    h.above = out.above;
    h.aboveCount = out.count;
    h.sign = lowerIsBetter(method) ? -1.0 : 1.0;
    h.goodEnough = medianGoodness(want, h.sign);
    h.collect = true;
    out.poison();
    cuda::FusedSpatialArgs a;
    a.image = dImage;
    a.pitch = img.stride;
    a.width = img.width;
    a.height = img.height;
    a.numerator = numerator;
    a.packedTemplate = out.tpl;
    a.templateWidth = t.width;
    a.templateHeight = t.height;
    a.stats = templateStats(t);
    a.method = method;
    a.map = out.map;
    const int band = c.bandRows > 0 ? c.bandRows : out.mapH;
    for (int y0 = 0; y0 < out.mapH; y0 += band) {
      s = cuda::fusedSpatialScores(a, y0, std::min(out.mapH, y0 + band), h, nullptr);
      ASSERT_TRUE(s.ok()) << s.message();
    }
    SCOPED_TRACE(::testing::PrintToString(c));
    expectOutputs(out, want, h.sign, h.goodEnough, true);
  }
  cudaFree(dImage);
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

// A bank launch: several templates (mixed sizes, heights repeated and not) scored from one
// image tile per block, each template's outputs equal to the CPU's map and what it implies.
struct BankCase {
  int frameW, frameH;
  std::size_t padding;
  std::vector<std::pair<int, int>> sizes;  // template width, height, in bank order
  int bandRows;                            // output rows per launch (a multiple of 16); 0: one
  std::vector<Method> methods;
};

std::ostream& operator<<(std::ostream& os, const BankCase& c) {
  os << describe(c.frameW, c.frameH, c.padding) << " bands " << c.bandRows << " bank";
  for (const auto& [w, h] : c.sizes) os << " " << w << "x" << h;
  return os;
}

class FusedSpatialBankScores
    : public ::testing::TestWithParam<std::tuple<cuda::FusedNumerator, BankCase>> {};

TEST_P(FusedSpatialBankScores, EachTemplateAsTheCpuScoresIt) {
  SKIP_WITHOUT_GPU();
  const cuda::FusedNumerator numerator = std::get<0>(GetParam());
  const BankCase c = std::get<1>(GetParam());
  SCOPED_TRACE(::testing::PrintToString(c));
  Image img = makeImage(c.frameW, c.frameH, Fill::Random, c.padding);
  std::vector<TemplateImage> templates;
  for (const auto& [w, h] : c.sizes) {
    // Some templates cut from the frame, so that some windows score near 1.
    if (templates.size() % 3 == 1) {
      const int x = int(rng()() % (c.frameW - w + 1)), y = int(rng()() % (c.frameH - h + 1));
      templates.push_back(cutTemplate(img, x, y, w, h));
    } else {
      templates.push_back(makeTemplate(w, h, templates.size() % 3 == 2 ? Fill::Smooth : Fill::Random));
    }
  }
  auto cpu = makeEngine(Backend::Cpu);
  ASSERT_TRUE(cpu->setTemplates(templates).ok());
  std::vector<std::unique_ptr<FusedOutputs>> outs;
  std::vector<cuda::FusedBankTemplate> bankTemplates;
  int tallest = 0;
  for (const TemplateImage& t : templates) {
    outs.push_back(std::make_unique<FusedOutputs>(t, c.frameW, c.frameH, numerator));
    const FusedOutputs& o = *outs.back();
    cuda::FusedBankTemplate b;
    b.packedTemplate = o.tpl;
    b.templateWidth = t.width;
    b.templateHeight = t.height;
    b.stats = templateStats(t);
    b.map = o.map;
    b.blockBest = o.best;
    b.above = o.above;
    b.aboveCount = o.count;
    bankTemplates.push_back(b);
    tallest = std::max(tallest, o.mapH);
  }
  cuda::FusedSpatialBank bank;
  Status s = bank.set(bankTemplates, numerator);
  ASSERT_TRUE(s.ok()) << s.message();
  ASSERT_EQ(bank.size(), templates.size());
  uint8_t* dImage = nullptr;
  ASSERT_EQ(cudaMalloc(&dImage, img.bytes.size()), cudaSuccess);
  ASSERT_EQ(cudaMemcpy(dImage, img.bytes.data(), img.bytes.size(), cudaMemcpyHostToDevice), cudaSuccess);

  for (Method method : c.methods) {
    SCOPED_TRACE(methodName(method));
    std::vector<std::vector<double>> want(templates.size());
    for (std::size_t i = 0; i < templates.size(); ++i) {
      s = cpu->scoreMap(img.view(), method, uint32_t(i), &want[i]);
      ASSERT_TRUE(s.ok()) << s.message();
    }
    cuda::FusedBankRule rule;
    rule.sign = lowerIsBetter(method) ? -1.0 : 1.0;
    rule.goodEnough = medianGoodness(want[0], rule.sign);  // one threshold for the whole bank
    rule.collect = true;
    for (const auto& o : outs) o->poison();
    const int band = c.bandRows > 0 ? c.bandRows : tallest;
    for (int y0 = 0; y0 < tallest; y0 += band) {
      s = bank.score(dImage, img.stride, img.width, img.height, method, rule, y0,
                     std::min(tallest, y0 + band), nullptr);
      ASSERT_TRUE(s.ok()) << s.message();
    }
    ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
    for (std::size_t i = 0; i < templates.size(); ++i) {
      SCOPED_TRACE("template " + std::to_string(i));
      expectOutputs(*outs[i], want[i], rule.sign, rule.goodEnough, true);
    }
  }
  cudaFree(dImage);
}

const std::vector<Method> kAllMethods = {Method::SqDiff, Method::SqDiffNormed, Method::CCorr,
                                         Method::CCorrNormed, Method::CCoeff, Method::CCoeffNormed};

INSTANTIATE_TEST_SUITE_P(Banks, FusedSpatialBankScores, ::testing::Combine(
    ::testing::Values(cuda::FusedNumerator::TensorCores, cuda::FusedNumerator::Dp4a), ::testing::Values(
    BankCase{200, 150, 0, {{64, 64}}, 32, kAllMethods},                         // bank of 1
    BankCase{211, 97, 5, {{63, 17}, {5, 3}}, 48, kAllMethods},                  // 2, heights differ
    BankCase{129, 40, 0, {{16, 16}, {33, 16}}, 16, kAllMethods},                // 2, one height
    BankCase{301, 203, 3, {{8, 8}, {8, 8}, {16, 16}, {16, 16}, {32, 32}, {32, 32}, {17, 33},
                           {64, 64}, {1, 1}, {7, 9}, {63, 17}, {24, 24}, {24, 24}, {40, 12},
                           {12, 40}, {5, 64}}, 0, {Method::CCoeffNormed, Method::SqDiff}},
    BankCase{300, 150, 0, {{32, 32}, {32, 32}, {32, 32}, {32, 32}, {32, 32}, {32, 32}, {32, 32},
                           {32, 32}, {32, 32}, {32, 32}, {32, 32}, {32, 32}, {32, 32}, {32, 32},
                           {32, 32}, {32, 32}}, 32, {Method::CCoeffNormed}})));

TEST(FusedSpatial, BankBadArgumentsAreErrors) {
  cuda::FusedSpatialBank bank;
  EXPECT_FALSE(bank.set({}, cuda::FusedNumerator::TensorCores).ok());  // empty
  cuda::FusedBankRule rule;
  EXPECT_FALSE(bank.score(nullptr, 100, 100, 100, Method::CCoeffNormed, rule, 0, 10, nullptr).ok());
  cuda::FusedBankTemplate t;
  t.templateWidth = 65;
  t.templateHeight = 8;
  EXPECT_FALSE(bank.set({t}, cuda::FusedNumerator::TensorCores).ok());  // too wide
  t.templateWidth = 8;
  EXPECT_FALSE(bank.set({t}, cuda::FusedNumerator::TensorCores).ok());  // no buffers
}

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
