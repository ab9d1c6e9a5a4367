// The GEMM bank numerator: banks of 1 to 1000 templates of one size, every map bit-identical to
// the CPU Reference engine's, every tile best (a sparse map's: empty where the tile cannot hold the
// frame's best, and on a frame of more tiles than resident blocks some are) and above-threshold
// list what the map implies, for
// frames whose sizes are no multiple of a tile, odd strides, sub-frames at odd addresses, bands
// of output rows, all-255 frames and templates, flat frames with textured templates (every window
// flat: a template's pairs all tie at the rules' constant, and its tile best is the first), and
// every method; and the same for banks with the zero-mean screen (s8 templates T - r, one bound a
// template and tile for ccoeff-normed, rules/zero_mean_screen.hpp), on frames whose tiles take the
// one bound and frames whose nearly flat windows send the tile to the per-pair screen.
#include <gtest/gtest.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <memory>
#include <string>

#include "cuda/numerator/gemm_bank.hpp"
#include "gpu_test_support.hpp"
#include "handoff_check.hpp"
#include "rules/zero_mean_screen.hpp"
#include "test_support.hpp"

namespace nccmatch::test {
namespace {

struct GemmCase {
  int frameW, frameH;
  std::size_t padding;   // an odd stride sends the tile load down its byte path
  std::size_t offset;    // the frame starts this many bytes into its allocation (a sub-frame)
  int tplW, tplH, count;
  Fill fill;             // Flat: frame and templates all 255 (the largest sums)
  int bandRows;          // output rows per launch (a multiple of 16); 0: one launch
  std::vector<Method> methods;
  bool texturedTemplates = false;  // with Fill::Flat: the frame flat, the templates as for other fills
  bool zeroMean = false;           // the bank with its zero-mean screen (GemmBank::set's zeroMeanScreen)
  bool sprinkled = false;          // every 97th byte of the frame 254: nearly flat windows (kappa in the
                                   // thousands) on a 255 frame, where the zero-mean tile takes the per-pair screen
  int maxNTiles = 4;               // GemmBank::set's (8: one block an SM, each warp 64 templates)
  int maxGroupChunks = cuda::kGemmMaxGroupChunks;  // GemmBank::set's (1: a chunk a block)
};

std::ostream& operator<<(std::ostream& os, const GemmCase& c) {
  return os << describe(c.frameW, c.frameH, c.padding) << " offset " << c.offset << ", " << c.count << " x "
            << c.tplW << "x" << c.tplH << " bands " << c.bandRows << (c.texturedTemplates ? " textured" : "")
            << (c.zeroMean ? " zero-mean" : "") << (c.sprinkled ? " sprinkled" : "") << " n-tiles <= " << c.maxNTiles
            << " chunks a block <= " << c.maxGroupChunks;
}

// Tile bests a sparse launch left empty (index -1).
std::size_t countEmptyTiles(const HandoffBuffers& o) {
  std::vector<cuda::Ranked> best(o.tiles);
  EXPECT_EQ(cudaMemcpy(best.data(), o.best, best.size() * sizeof(cuda::Ranked), cudaMemcpyDeviceToHost), cudaSuccess);
  return std::size_t(std::count_if(best.begin(), best.end(), [](const cuda::Ranked& r) { return r.index < 0; }));
}

class GemmBankScores : public ::testing::TestWithParam<GemmCase> {};

TEST_P(GemmBankScores, EveryTemplateAsTheCpuScoresIt) {
  SKIP_WITHOUT_GPU();
  bool wgmma = false;
  ASSERT_TRUE(cuda::gemmBankUsesWgmma(&wgmma).ok());
  if (GetParam().count == 1) std::printf("GEMM numerator on this device: %s\n", wgmma ? "wgmma (sm_90a)" : "mma.sync");
  const GemmCase c = GetParam();
  SCOPED_TRACE(::testing::PrintToString(c));
  const bool flat = c.fill == Fill::Flat;
  Image img = makeImage(c.frameW, c.frameH, flat ? Fill::Flat : c.fill, c.padding, 255);
  if (c.sprinkled)
    for (std::size_t i = 0; i < img.bytes.size(); i += 97) img.bytes[i] = 254;
  std::vector<TemplateImage> templates;
  for (int i = 0; i < c.count; ++i) {
    if (flat && !c.texturedTemplates) {
      templates.push_back(makeTemplate(c.tplW, c.tplH, Fill::Flat, "t", 255));
    } else if (i % 3 == 1) {  // cut from the frame: some windows score near 1
      const int x = int(rng()() % (c.frameW - c.tplW + 1)), y = int(rng()() % (c.frameH - c.tplH + 1));
      templates.push_back(cutTemplate(img, x, y, c.tplW, c.tplH));
    } else {
      templates.push_back(makeTemplate(c.tplW, c.tplH, i % 3 == 2 ? Fill::Smooth : Fill::Random));
    }
  }
  auto cpu = makeEngine(Backend::Cpu);
  ASSERT_TRUE(cpu->setTemplates(templates).ok());

  const cuda::GemmBankShape shape =
      cuda::gemmBankShape(c.tplW, c.tplH, c.count, cuda::kGemmSharedLimit, 4, c.zeroMean);
  ASSERT_GT(shape.kSteps, 0);
  std::vector<std::unique_ptr<HandoffBuffers>> outs;
  std::vector<cuda::FusedBankTemplate> members;
  std::vector<const uint8_t*> pixels;
  for (const TemplateImage& t : templates) {
    const int mapW = c.frameW - t.width + 1, mapH = c.frameH - t.height + 1;
    outs.push_back(std::make_unique<HandoffBuffers>(mapW, mapH, cuda::gemmBankTiles(mapW, mapH)));
    cuda::FusedBankTemplate m;
    m.templateWidth = t.width;
    m.templateHeight = t.height;
    m.stats = templateStats(t);
    m.map = outs.back()->map;
    m.blockBest = outs.back()->best;
    m.above = outs.back()->above;
    m.aboveCount = outs.back()->count;
    m.aboveBits = outs.back()->bits;
    m.frameFloor = outs.back()->frameFloor;
    members.push_back(m);
    pixels.push_back(t.pixels.data());
  }
  cuda::GemmBank bank;
  Status s = bank.set(pixels, c.tplW, c.tplH, members, 4, c.maxNTiles, c.zeroMean, c.maxGroupChunks);
  ASSERT_TRUE(s.ok()) << s.message();
  ASSERT_EQ(bank.size(), templates.size());
  if (c.maxGroupChunks == 1) ASSERT_EQ(bank.shape().groupChunks, 1);
  if (c.maxNTiles == 8 && c.count > 56) ASSERT_EQ(bank.shape().nTiles, 8) << "the 8-n-tile kernel went untested";

  uint8_t* allocation = nullptr;
  ASSERT_EQ(cudaMalloc(&allocation, img.bytes.size() + c.offset), cudaSuccess);
  uint8_t* dImage = allocation + c.offset;
  ASSERT_EQ(cudaMemcpy(dImage, img.bytes.data(), img.bytes.size(), cudaMemcpyHostToDevice), cudaSuccess);
  const int mapH = outs[0]->mapH;
  for (Method method : c.methods) {
    SCOPED_TRACE(methodName(method));
    std::vector<std::vector<double>> want(templates.size());
    for (std::size_t i = 0; i < templates.size(); ++i) {
      s = cpu->scoreMap(img.view(), method, uint32_t(i), &want[i]);
      ASSERT_TRUE(s.ok()) << s.message();
    }
    // Every score in the map; a sparse map with half the positions above the threshold; a
    // sparse map with no threshold list (tile bests alone); a sparse map whose threshold only the
    // best positions reach.
    struct Mode {
      const char* name;
      bool everyScore, collect;
      double quantile;
    };
    for (const Mode mode : {Mode{"every score", true, true, 0.5}, Mode{"sparse", false, true, 0.5},
                            Mode{"sparse, bests only", false, false, 0.5}, Mode{"sparse, top", false, true, 0.999}}) {
      SCOPED_TRACE(mode.name);
      cuda::FusedBankRule rule;
      rule.sign = lowerIsBetter(method) ? -1.0 : 1.0;
      rule.goodEnough = quantileGoodness(want[0], rule.sign, mode.quantile);
      rule.collect = mode.collect;
      rule.everyScore = mode.everyScore;
      for (const auto& o : outs) o->poison();
      std::size_t emptyTiles = 0;
      const int band = c.bandRows > 0 ? c.bandRows : mapH;
      for (int y0 = 0; y0 < mapH; y0 += band) {
        s = bank.score(dImage, img.stride, img.width, img.height, method, rule, y0, std::min(mapH, y0 + band),
                       nullptr);
        ASSERT_TRUE(s.ok()) << s.message();
      }
      ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
      for (std::size_t i = 0; i < templates.size(); ++i) {
        SCOPED_TRACE("template " + std::to_string(i));
        HandoffView v;
        v.mapW = outs[i]->mapW;
        v.mapH = outs[i]->mapH;
        v.tileW = shape.tileWidth;
        v.tileH = cuda::kGemmTileRows;
        v.map = outs[i]->map;
        v.best = outs[i]->best;
        v.above = outs[i]->above;
        v.count = outs[i]->count;
        v.bits = mode.everyScore ? nullptr : outs[i]->bits;
        expectHandoff(v, want[i], rule.sign, rule.goodEnough, rule.collect);
        if (::testing::Test::HasFatalFailure()) return;
        if (!mode.everyScore) emptyTiles += countEmptyTiles(*outs[i]);
      }
      // The frame floors at work: past the first wave of blocks, tiles that cannot hold a
      // template's best and have no pair reaching the threshold push nothing and report none
      // (with half the positions above the threshold every tile has some).
      if (!mode.everyScore && (!mode.collect || mode.quantile > 0.9) && c.frameW * c.frameH >= 701 * 403 &&
          c.fill == Fill::Random)
        EXPECT_GT(emptyTiles, 0u);
    }
  }
  cudaFree(allocation);
}

const std::vector<Method> kAll = {Method::SqDiff, Method::SqDiffNormed, Method::CCorr,
                                  Method::CCorrNormed, Method::CCoeff, Method::CCoeffNormed};
const std::vector<Method> kTwo = {Method::CCoeffNormed, Method::SqDiff};

INSTANTIATE_TEST_SUITE_P(Banks, GemmBankScores, ::testing::Values(
    //       frame      pad off template count  fill          bands methods
    GemmCase{1, 1,      0,  0,  1, 1,   1,      Fill::Random, 0,    kAll},
    GemmCase{9, 7,      3,  1,  1, 1,   7,      Fill::Random, 0,    kAll},
    GemmCase{13, 11,    0,  0,  13, 11, 3,      Fill::Random, 0,    kAll},  // template == frame
    GemmCase{101, 67,   0,  0,  8, 8,   32,     Fill::Random, 16,   kAll},
    GemmCase{97, 61,    5,  3,  12, 12, 7,      Fill::Random, 0,    kAll},  // odd stride, odd address
    GemmCase{130, 70,   0,  0,  16, 16, 64,     Fill::Random, 32,   kAll},
    GemmCase{150, 90,   1,  0,  24, 24, 33,     Fill::Smooth, 0,    kAll},
    GemmCase{157, 93,   0,  0,  32, 32, 64,     Fill::Random, 48,   kAll},
    GemmCase{171, 88,   0,  16, 48, 48, 20,     Fill::Random, 0,    kAll},
    GemmCase{200, 130,  0,  0,  64, 64, 16,     Fill::Random, 32,   kAll},
    GemmCase{133, 99,   7,  0,  63, 17, 9,      Fill::Binary, 16,   kAll},
    GemmCase{77, 80,    0,  0,  5, 64,  11,     Fill::Random, 0,    kAll},
    // Sliding Hankel rows (gemm_tile_load.cuh): 4 chunks a row in slabs of 29, 29 and 6 template
    // rows (4 n-tiles, one block an SM); 3 chunks read as 4 (the fourth's B zeros) in slabs of 13;
    // 33 wide, one byte into its third chunk.
    GemmCase{150, 100,  0,  0,  64, 64, 40,     Fill::Random, 0,    kTwo},
    GemmCase{131, 77,   1,  0,  40, 56, 20,     Fill::Random, 16,   kTwo},
    GemmCase{97, 61,    0,  5,  33, 9,  5,      Fill::Random, 0,    kAll},
    GemmCase{90, 70,    0,  0,  16, 16, 256,    Fill::Random, 0,    kTwo},
    GemmCase{64, 48,    0,  0,  8, 8,   1000,   Fill::Random, 16,   {Method::CCoeffNormed}},
    GemmCase{100, 90,   0,  0,  64, 64, 9,      Fill::Flat,   0,    kAll},  // all 255: the largest sums
    GemmCase{40, 40,    0,  0,  32, 32, 17,     Fill::Flat,   0,    kAll},
    GemmCase{190, 120,  0,  0,  32, 32, 40,     Fill::Flat,   0,    kAll, true},  // flat windows only
    GemmCase{130, 100,  3,  0,  16, 16, 70,     Fill::Flat,   32,   kAll, true},
    // More tiles (517) than the persistent blocks (2 x 132 on an H200): blocks take tiles in turn,
    // their shared memory reused, at a fifth of the next case's positions (that one ran past 575 s
    // under compute-sanitizer racecheck in sessions 13-15).
    GemmCase{701, 403,  0,  0,  32, 32, 9,      Fill::Random, 0,    kTwo},
    GemmCase{1921, 1079, 0, 0,  32, 32, 9,      Fill::Random, 272,  {Method::CCoeffNormed}},
    // Eight n-tiles (one block an SM): 70 templates, a second chunk of 6.
    GemmCase{157, 93,   0,  0,  32, 32, 70,     Fill::Random, 48,   kAll, false, false, false, 8},
    GemmCase{99, 77,    3,  0,  16, 16, 70,     Fill::Flat,   0,    kTwo, true, false, false, 8},
    // A chunk a block (the 64 x 16² above take two a block: one tile load and fold for both).
    GemmCase{130, 70,   0,  0,  16, 16, 64,     Fill::Random, 32,   kAll, false, false, false, 4, 1},
    GemmCase{90, 70,    0,  0,  16, 16, 256,    Fill::Random, 0,    kTwo, false, false, false, 4, 1}));

// Zero-mean banks: ccoeff-normed screened from s8 templates (and a second method, which such a bank
// runs from its u8 templates as any bank does).
const std::vector<Method> kZeroMeanMethods = {Method::CCoeffNormed, Method::SqDiffNormed};
INSTANTIATE_TEST_SUITE_P(ZeroMeanBanks, GemmBankScores, ::testing::Values(
    //       frame      pad off template count  fill          bands methods            textured zero-mean sprinkled
    GemmCase{1, 1,      0,  0,  1, 1,   1,      Fill::Random, 0,    kZeroMeanMethods, false, true},
    GemmCase{9, 7,      3,  1,  1, 1,   7,      Fill::Random, 0,    kZeroMeanMethods, false, true},
    GemmCase{13, 11,    0,  0,  13, 11, 3,      Fill::Random, 0,    kZeroMeanMethods, false, true},
    GemmCase{97, 61,    5,  3,  12, 12, 7,      Fill::Random, 0,    kZeroMeanMethods, false, true},
    GemmCase{130, 70,   0,  0,  16, 16, 64,     Fill::Random, 32,   kZeroMeanMethods, false, true},
    GemmCase{150, 90,   1,  0,  24, 24, 33,     Fill::Smooth, 0,    kZeroMeanMethods, false, true},
    GemmCase{157, 93,   0,  0,  32, 32, 64,     Fill::Random, 48,   kZeroMeanMethods, false, true},
    GemmCase{171, 88,   0,  16, 48, 48, 20,     Fill::Random, 0,    kZeroMeanMethods, false, true},
    GemmCase{200, 130,  0,  0,  64, 64, 16,     Fill::Random, 32,   kZeroMeanMethods, false, true},
    GemmCase{133, 99,   7,  0,  63, 17, 9,      Fill::Binary, 16,   kZeroMeanMethods, false, true},
    GemmCase{150, 100,  0,  0,  64, 64, 40,     Fill::Random, 0,    {Method::CCoeffNormed}, false, true},
    GemmCase{131, 77,   1,  0,  40, 56, 20,     Fill::Random, 16,   {Method::CCoeffNormed}, false, true},
    GemmCase{90, 70,    0,  0,  16, 16, 256,    Fill::Random, 0,    {Method::CCoeffNormed}, false, true},
    GemmCase{64, 48,    0,  0,  8, 8,   1000,   Fill::Random, 16,   {Method::CCoeffNormed}, false, true},
    GemmCase{100, 90,   0,  0,  64, 64, 9,      Fill::Flat,   0,    kZeroMeanMethods, false, true},  // flat templates
    GemmCase{190, 120,  0,  0,  32, 32, 40,     Fill::Flat,   0,    kZeroMeanMethods, true, true},   // flat windows
    GemmCase{160, 90,   0,  0,  32, 32, 24,     Fill::Flat,   0,    kZeroMeanMethods, true, true, true},  // nearly flat
    GemmCase{120, 70,   3,  0,  16, 16, 40,     Fill::Flat,   16,   kZeroMeanMethods, true, true, true},
    GemmCase{701, 403,  0,  0,  32, 32, 9,      Fill::Random, 0,    {Method::CCoeffNormed}, false, true},
    GemmCase{157, 93,   0,  0,  32, 32, 70,     Fill::Random, 48,   kZeroMeanMethods, false, true, false, 8},
    GemmCase{160, 90,   0,  0,  24, 24, 70,     Fill::Flat,   0,    kZeroMeanMethods, true, true, true, 8},
    GemmCase{90, 70,    0,  0,  16, 16, 256,    Fill::Random, 0,    {Method::CCoeffNormed}, false, true, false, 4, 1},
    GemmCase{120, 70,   3,  0,  16, 16, 40,     Fill::Flat,   16,   kZeroMeanMethods, true, true, true, 4, 1}));

TEST(GemmBank, ShapesFillTheTensorCoresAndSharedMemory) {
  // 64 templates of 32x32 with 8 n-tiles allowed: two 16-byte chunks a row, 64 slices, 32
  // k-steps, one slab of all 32 rows, 8 n-tiles of 8 templates: one chunk, one block an SM.
  cuda::GemmBankShape s = cuda::gemmBankShape(32, 32, 64, cuda::kGemmSharedLimit, 8);
  EXPECT_EQ(s.rowChunks, 2);
  EXPECT_EQ(s.slabRows, 32);
  EXPECT_EQ(s.kSteps, 32);
  EXPECT_EQ(s.nTiles, 8);
  EXPECT_EQ(s.tileWidth, cuda::kGemmTileWidth);
  EXPECT_EQ(s.chunks, 1);
  EXPECT_LE(s.sharedBytes(), cuda::kGemmSharedLimit);
  // By default 4 n-tiles, two chunks, two blocks an SM: slabs cut to fit half the memory.
  s = cuda::gemmBankShape(32, 32, 64);
  EXPECT_EQ(s.nTiles, 4);
  EXPECT_EQ(s.chunks, 2);
  EXPECT_GE(s.slabRows, 8);
  EXPECT_LE(s.sharedBytes(), cuda::kGemmSharedLimitTwoBlocks);
  EXPECT_EQ(s.kSteps, (32 / s.slabRows) * s.slabSteps + (32 % s.slabRows) * 2 / 2);
  // 64x64: 32 templates' B (128 KB) fits one block an SM with slabs of at least 8 rows.
  s = cuda::gemmBankShape(64, 64, 100);
  EXPECT_EQ(s.nTiles, 4);
  EXPECT_EQ(s.chunks, 4);
  EXPECT_GE(s.slabRows, 8);
  EXPECT_LE(s.sharedBytes(), cuda::kGemmSharedLimit);
  EXPECT_EQ(s.kSteps, (64 / s.slabRows) * s.slabSteps + (64 % s.slabRows) * 4 / 2);
  // 16 templates of 64x64 (one chunk of 2 n-tiles) stay two blocks an SM, in slabs of 5 rows.
  s = cuda::gemmBankShape(64, 64, 16);
  EXPECT_EQ(s.nTiles, 2);
  EXPECT_EQ(s.chunks, 1);
  EXPECT_EQ(s.slabRows, 5);
  EXPECT_LE(s.sharedBytes(), cuda::kGemmSharedLimitTwoBlocks);
  EXPECT_EQ(s.kSteps, (64 / 5) * s.slabSteps + (64 % 5) * 4 / 2);
  // 17 of them take 4 n-tiles alone on an SM (slabs of at least 8 rows), as 100 do.
  s = cuda::gemmBankShape(64, 64, 17);
  EXPECT_EQ(s.nTiles, 4);
  EXPECT_GE(s.slabRows, 8);
  // A smaller limit takes fewer templates a chunk, then thinner slabs (a Hankel row of a 64-wide
  // template: 112 entries of 16 bytes); none fits at last.
  const cuda::GemmBankShape fewer = cuda::gemmBankShape(64, 64, 100, 128 * 1024);
  EXPECT_EQ(fewer.nTiles, 2);
  EXPECT_GE(fewer.slabRows, 8);
  EXPECT_LE(fewer.sharedBytes(), std::size_t(128 * 1024));
  const cuda::GemmBankShape small = cuda::gemmBankShape(64, 64, 100, 108 * 1024);
  EXPECT_EQ(small.nTiles, 2);
  EXPECT_LT(small.slabRows, 8);
  EXPECT_EQ(small.sharedBytes() - cuda::gemmBankShape(64, 64, 100, 108 * 1024 - 1792).sharedBytes(), 1792u);
  EXPECT_LE(small.sharedBytes(), std::size_t(108 * 1024));
  EXPECT_EQ(cuda::gemmBankShape(64, 64, 100, 16 * 1024).kSteps, 0);
  EXPECT_EQ(cuda::gemmBankShape(8, 8, 3).nTiles, 2);
  EXPECT_EQ(cuda::gemmBankShape(8, 8, 30).nTiles, 4);
  // 5x3: one chunk a row, 3 slices in one slab: 2 k-steps, the last slice a zero pad.
  s = cuda::gemmBankShape(5, 3, 1);
  EXPECT_EQ(s.rowChunks, 1);
  EXPECT_EQ(s.slabRows, 3);
  EXPECT_EQ(s.kSteps, 2);
  EXPECT_EQ(cuda::gemmBankShape(65, 8, 4).kSteps, 0);
  EXPECT_EQ(cuda::gemmBankShape(8, 8, 0).kSteps, 0);
  // Step 0's second slice is template row 1; step 1's second slice is the pad.
  const std::vector<uint8_t> a(15, 1), b = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15};
  const std::vector<uint8_t> frags = cuda::gemmBankFragments({a.data(), b.data()}, s);
  ASSERT_EQ(frags.size(), s.chunkBytes());
  auto slice = [&](int step, int half, int member) {
    const std::size_t at = ((std::size_t(step) * 2 + half) * s.chunkTemplates + member) * 16;
    return std::vector<uint8_t>(frags.begin() + at, frags.begin() + at + 16);
  };
  EXPECT_EQ(slice(0, 1, 1), (std::vector<uint8_t>{6, 7, 8, 9, 10, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0}));
  EXPECT_EQ(slice(1, 0, 1), (std::vector<uint8_t>{11, 12, 13, 14, 15, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0}));
  EXPECT_EQ(slice(1, 1, 0), std::vector<uint8_t>(16, 0));
  EXPECT_EQ(slice(0, 0, 0), (std::vector<uint8_t>{1, 1, 1, 1, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0}));
  EXPECT_EQ(cuda::gemmBankTiles(64, 8), 1);
  EXPECT_EQ(cuda::gemmBankTiles(65, 9), 4);
  // Above one chunk a row the chunks are made even (a k-step's two chunks in one Hankel row): a
  // 40-wide template reads 4 chunks a row, its third half zeros and its fourth all zeros in B.
  const cuda::GemmBankShape odd = cuda::gemmBankShape(40, 2, 1);
  EXPECT_EQ(odd.rowChunks, 4);
  EXPECT_EQ(odd.kSteps, 4);
  EXPECT_EQ(cuda::gemmBankShape(17, 2, 1).rowChunks, 2);
  EXPECT_EQ(cuda::gemmBankShape(16, 2, 1).rowChunks, 1);
  std::vector<uint8_t> wide(80);
  for (std::size_t i = 0; i < wide.size(); ++i) wide[i] = uint8_t(1 + i);
  const std::vector<uint8_t> oddFrags = cuda::gemmBankFragments({wide.data()}, odd);
  auto oddSlice = [&](int step, int half) {
    const std::size_t at = (std::size_t(step) * 2 + half) * odd.chunkTemplates * 16;
    return std::vector<uint8_t>(oddFrags.begin() + at, oddFrags.begin() + at + 16);
  };
  EXPECT_EQ(oddSlice(1, 0), (std::vector<uint8_t>{33, 34, 35, 36, 37, 38, 39, 40, 0, 0, 0, 0, 0, 0, 0, 0}));
  EXPECT_EQ(oddSlice(1, 1), std::vector<uint8_t>(16, 0));
  EXPECT_EQ(oddSlice(2, 0)[0], 41);  // row 1 starts step 2
  EXPECT_EQ(oddSlice(3, 1), std::vector<uint8_t>(16, 0));
  // Zero-mean fragments: each template's bytes less its offset, as s8 (the pads stay 0).
  const std::vector<int> offsets = {1, 8};
  const std::vector<uint8_t> signedFrags = cuda::gemmBankFragments({a.data(), b.data()}, s, &offsets);
  auto signedSlice = [&](int step, int half, int member) {
    const std::size_t at = ((std::size_t(step) * 2 + half) * s.chunkTemplates + member) * 16;
    std::vector<int> v;
    for (std::size_t i = at; i < at + 16; ++i) v.push_back(int(int8_t(signedFrags[i])));
    return v;
  };
  EXPECT_EQ(signedSlice(0, 1, 1), (std::vector<int>{-2, -1, 0, 1, 2, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0}));
  EXPECT_EQ(signedSlice(1, 0, 1), (std::vector<int>{3, 4, 5, 6, 7, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0}));
  EXPECT_EQ(signedSlice(0, 0, 0), (std::vector<int>{0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0}));
  EXPECT_EQ(signedSlice(1, 1, 0), std::vector<int>(16, 0));
  // A zero-mean bank's shape keeps room for its templates' screen constants.
  const cuda::GemmBankShape plain = cuda::gemmBankShape(16, 16, 64), zeroMean = cuda::gemmBankShape(16, 16, 64,
                                                                                                    cuda::kGemmSharedLimit, 4, true);
  EXPECT_TRUE(zeroMean.zeroMean);
  EXPECT_EQ(zeroMean.slabRows, plain.slabRows);
  EXPECT_EQ(zeroMean.groupChunks, plain.groupChunks);
  EXPECT_EQ(zeroMean.sharedBytes(), plain.sharedBytes() + std::size_t(plain.groupChunks) * plain.chunkTemplates *
                                                              sizeof(ZeroMeanTemplate));
  // Groups: 256 templates of 16x16 are 8 chunks of 32; a block holds as many as keep two blocks an
  // SM (their B operands, descriptors and the group's folded windows), a divisor of 8.
  const cuda::GemmBankShape grouped = cuda::gemmBankShape(16, 16, 256);
  EXPECT_EQ(grouped.chunks, 8);
  EXPECT_GE(grouped.groupChunks, 2);
  EXPECT_EQ(grouped.chunks % grouped.groupChunks, 0);
  EXPECT_EQ(grouped.groups() * grouped.groupChunks, grouped.chunks);
  EXPECT_LE(grouped.sharedBytes(), cuda::kGemmSharedLimitTwoBlocks);
  const cuda::GemmBankShape alone = cuda::gemmBankShape(16, 16, 256, cuda::kGemmSharedLimit, 4, false, 1);
  EXPECT_EQ(alone.groupChunks, 1);
  EXPECT_EQ(alone.groups(), 8);
  EXPECT_EQ(alone.slabRows, grouped.slabRows);
  EXPECT_LT(alone.sharedBytes(), grouped.sharedBytes());
  // 64 x 32x32: two chunks whose B operands (32 KB each) do not fit one block beside the slab.
  EXPECT_EQ(cuda::gemmBankShape(32, 32, 64).groupChunks, 1);
}

TEST(GemmBank, BadArgumentsAreErrors) {
  cuda::GemmBank bank;
  EXPECT_FALSE(bank.set({}, 8, 8, {}, 1).ok());
  cuda::FusedBankRule rule;
  EXPECT_FALSE(bank.score(nullptr, 100, 100, 100, Method::CCoeffNormed, rule, 0, 10, nullptr).ok());
  const std::vector<uint8_t> px(64 * 65, 1);
  cuda::FusedBankTemplate t;
  t.templateWidth = 65;
  t.templateHeight = 8;
  EXPECT_FALSE(bank.set({px.data()}, 65, 8, {t}, 1).ok());  // too wide
  t.templateWidth = 8;
  EXPECT_FALSE(bank.set({px.data()}, 8, 8, {t}, 1).ok());   // no buffers
  EXPECT_FALSE(bank.set({px.data()}, 8, 7, {t}, 1).ok());   // sizes disagree
}

// A sparse launch needs each template's frame floor: without it the launch is refused by name (a
// dense launch, which keeps every tile's exact best, still runs).
TEST(GemmBank, SparseLaunchWithoutFrameFloorsIsRefused) {
  SKIP_WITHOUT_GPU();
  const TemplateImage tpl = makeTemplate(8, 8, Fill::Random);
  const int frame = 40, map = frame - 8 + 1;
  HandoffBuffers out(map, map, cuda::gemmBankTiles(map, map));
  cuda::FusedBankTemplate t;
  t.templateWidth = t.templateHeight = 8;
  t.stats = templateStats(tpl);
  t.map = out.map;
  t.blockBest = out.best;
  t.above = out.above;
  t.aboveCount = out.count;
  t.aboveBits = out.bits;  // no frameFloor
  cuda::GemmBank bank;
  Status s = bank.set({tpl.pixels.data()}, 8, 8, {t}, 1);
  ASSERT_TRUE(s.ok()) << s.message();
  uint8_t* image = nullptr;
  ASSERT_EQ(cudaMalloc(&image, frame * frame), cudaSuccess);
  ASSERT_EQ(cudaMemset(image, 9, frame * frame), cudaSuccess);
  cuda::FusedBankRule rule;
  rule.collect = true;
  s = bank.score(image, frame, frame, frame, Method::CCoeffNormed, rule, 0, map, nullptr);
  EXPECT_TRUE(s.ok()) << s.message();  // every score: no floor needed
  rule.everyScore = false;
  s = bank.score(image, frame, frame, frame, Method::CCoeffNormed, rule, 0, map, nullptr);
  EXPECT_FALSE(s.ok());
  EXPECT_NE(s.message().find("frameFloor"), std::string::npos) << s.message();
  EXPECT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  cudaFree(image);
}

}  // namespace
}  // namespace nccmatch::test
