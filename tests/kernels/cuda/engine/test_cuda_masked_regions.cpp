// CudaEngine::matchRegions with masked templates and templates larger than 64x64 (the masked
// region kernel, numerator/masked_scores.hpp) against the CPU Reference engine, bit for bit:
// every method; masks of one pixel, full (the same results as no mask), discs, rings, random,
// all-zero; templates of 1x1 to 128x128 and a tall one whose rows take several chunks; regions
// of 1x1, odd sizes, smaller than their template, larger than the kernel's 128x8 tiles; bank
// templates and own images (one own image named by several regions); host and device frames;
// fused and masked regions mixed in one call. Every local peak of every region is compared
// (threshold off, no suppression), so the maps agree wherever a peak is. Overlapping regions of a
// host frame (their bounding rectangle uploaded once). Skips without a GPU.
#include <gtest/gtest.h>
#include <cuda_runtime.h>

#include <random>
#include <sstream>
#include <string>

#include "region_check.hpp"
#include "region_set_scene.hpp"

namespace nccmatch::test {
namespace {


// Matches the regions on both backends, host and device frames, every method.
void checkAllMethods(const Image& img, const std::vector<TemplateImage>& bank, const std::vector<RegionQuery>& regions,
                     const std::string& what) {
  expectRegionsLikeTheCpu(img, bank, regions, everyRegionPeak, what);
}

struct MaskedRegionCase {
  int tplW, tplH;
  MaskShape mask;       // Full: no mask at all
  int regionW, regionH;  // at (x, y) below
  int x, y;
  bool own;  // RegionQuery::image rather than the bank
};

std::ostream& operator<<(std::ostream& os, const MaskedRegionCase& c) {
  return os << "template " << c.tplW << "x" << c.tplH << " mask " << maskShapeName(c.mask) << ", region " << c.regionW
            << "x" << c.regionH << " at " << c.x << "," << c.y << (c.own ? ", own image" : ", bank");
}

class CudaMaskedRegions : public ::testing::TestWithParam<MaskedRegionCase> {};

TEST_P(CudaMaskedRegions, EqualTheCpuReferenceBitForBit) {
  SKIP_WITHOUT_GPU();
  const MaskedRegionCase c = GetParam();
  Image img = makeImage(400, 300, Fill::Smooth, 5);
  TemplateImage t = cutTemplate(img, 7, 3, c.tplW, c.tplH, "masked");
  if (c.mask != MaskShape::Full) t.mask = makeMask(c.tplW, c.tplH, c.mask);
  // The template pasted (with noise around it) inside the region, so it holds a clear peak.
  if (c.regionW >= c.tplW && c.regionH >= c.tplH) paste(&img, t, c.x + (c.regionW - c.tplW) / 2, c.y + (c.regionH - c.tplH) / 2);
  std::vector<TemplateImage> bank{makeTemplate(9, 9, Fill::Random, "other"), t};
  const RegionQuery r{c.x, c.y, c.regionW, c.regionH, c.own ? 7u : 1u, c.own ? &t : nullptr};
  std::ostringstream what;
  what << c;
  checkAllMethods(img, bank, {r}, what.str());
}

INSTANTIATE_TEST_SUITE_P(Shapes, CudaMaskedRegions, ::testing::Values(
    //               template   mask                   region     at         own
    MaskedRegionCase{1, 1,      MaskShape::OnePixel,   1, 1,      0, 0,      false},  // one position
    MaskedRegionCase{1, 1,      MaskShape::Empty,      5, 3,      10, 10,    true},
    MaskedRegionCase{3, 3,      MaskShape::OnePixel,   17, 9,     398 - 17, 291, false},  // bottom-right corner
    MaskedRegionCase{7, 5,      MaskShape::Random,     33, 21,    50, 40,    true},
    MaskedRegionCase{17, 17,    MaskShape::Ring,       41, 39,    100, 80,   false},
    MaskedRegionCase{21, 19,    MaskShape::Empty,      40, 30,    60, 200,   false},  // all-zero mask
    MaskedRegionCase{31, 33,    MaskShape::Disc,       300, 100,  30, 150,   false},  // wider than a tile
    MaskedRegionCase{64, 64,    MaskShape::Random,     90, 80,    200, 100,  true},
    MaskedRegionCase{65, 20,    MaskShape::Full,       100, 60,   10, 10,    false},  // unmasked, past 64
    MaskedRegionCase{65, 65,    MaskShape::FullNonBinary, 70, 66, 0, 0,      true},   // ignores nothing
    MaskedRegionCase{100, 100,  MaskShape::Disc,       107, 105,  150, 120,  false},
    MaskedRegionCase{101, 99,   MaskShape::Full,       135, 101,  250, 190,  true},
    MaskedRegionCase{127, 128,  MaskShape::Ring,       140, 140,  260, 160,  false},
    MaskedRegionCase{128, 128,  MaskShape::Random,     133, 300,  0, 0,      true},   // taller than 8 tiles
    MaskedRegionCase{128, 128,  MaskShape::Full,       129, 129,  271, 171,  false},
    MaskedRegionCase{90, 60,    MaskShape::Disc,       60, 90,    5, 5,      false},  // smaller: nothing
    MaskedRegionCase{300, 250,  MaskShape::Random,     310, 260,  45, 20,    true}));  // rows in chunks

// A full mask matches as no mask: the same results on the GPU, fused or masked kernel alike.
TEST(CudaMaskedRegionsFull, AFullMaskMatchesAsNoMask) {
  SKIP_WITHOUT_GPU();
  Image img = makeImage(300, 200, Fill::Smooth, 0);
  for (int side : {32, 80}) {
    const TemplateImage plain = cutTemplate(img, 120, 60, side, side, "plain");
    TemplateImage full = plain;
    full.mask = makeMask(side, side, MaskShape::FullNonBinary);
    auto gpu = makeEngine(Backend::Cuda);
    ASSERT_TRUE(gpu->setTemplates({plain, full}).ok());
    const std::vector<RegionQuery> regions{{100, 40, side + 40, side + 40, 0, nullptr},
                                           {100, 40, side + 40, side + 40, 1, nullptr}};
    for (int m = 0; m <= 5; ++m) {
      std::vector<RegionResult> got;
      ASSERT_TRUE(gpu->matchRegions(img.view(), regions, everyRegionPeak(Method(m)), &got).ok());
      ASSERT_EQ(got.size(), 2u);
      ASSERT_EQ(got[0].matches.size(), got[1].matches.size()) << side << " " << methodName(Method(m));
      for (std::size_t k = 0; k < got[0].matches.size(); ++k) {
        EXPECT_EQ(got[0].matches[k].x, got[1].matches[k].x);
        EXPECT_EQ(got[0].matches[k].y, got[1].matches[k].y);
        EXPECT_EQ(got[0].matches[k].score, got[1].matches[k].score);
      }
      ASSERT_TRUE(got[0].best && got[1].best);
      EXPECT_EQ(got[0].best->score, got[1].best->score);
    }
  }
}

// Many regions in one call as the coarse-to-fine refinement makes them: rotated masked variants
// (own images, several regions naming the same one), unmasked large ones, fused ones, random
// places and sizes around 1080p, on host and device frames.
TEST(CudaMaskedRegionsMany, MixedKernelsInOneCall) {
  SKIP_WITHOUT_GPU();
  Image img = makeImage(1920, 1080, Fill::Smooth, 3);
  std::mt19937_64& g = rng();
  std::vector<TemplateImage> own;
  for (int k = 0; k < 12; ++k) {
    const int w = 1 + int(g() % 128), h = 1 + int(g() % 128);
    TemplateImage t = cutTemplate(img, int(g() % (1920 - w)), int(g() % (1080 - h)), w, h, "own" + std::to_string(k));
    const MaskShape shapes[] = {MaskShape::Disc, MaskShape::Ring, MaskShape::Random, MaskShape::Full,
                                MaskShape::OnePixel, MaskShape::Empty};
    const MaskShape shape = shapes[k % 6];
    if (shape != MaskShape::Full) t.mask = makeMask(w, h, shape);
    own.push_back(t);
  }
  std::vector<TemplateImage> bank{makeTemplate(32, 32, Fill::Random, "fused"), makeTemplate(90, 70, Fill::Random, "large")};
  bank.push_back(makeTemplate(40, 40, Fill::Random, "masked"));
  bank.back().mask = makeMask(40, 40, MaskShape::Disc);
  std::vector<RegionQuery> regions;
  for (int k = 0; k < 200; ++k) {
    const int which = int(g() % (own.size() + bank.size()));
    const TemplateImage& t = which < int(own.size()) ? own[std::size_t(which)] : bank[std::size_t(which) - own.size()];
    const int w = std::max(1, t.width + int(g() % 12) - 2), h = std::max(1, t.height + int(g() % 12) - 2);
    const int x = int(g() % std::size_t(1920 - w + 1)), y = int(g() % std::size_t(1080 - h + 1));
    regions.push_back(RegionQuery{x, y, w, h, which < int(own.size()) ? 99u : uint32_t(which - int(own.size())),
                                  which < int(own.size()) ? &own[std::size_t(which)] : nullptr});
  }
  checkAllMethods(img, bank, regions, "200 mixed regions");
}

// Hundreds of overlapping regions around a few places, as a coarse-to-fine level makes them:
// their rectangle is smaller than their packed rows, so a host frame's rectangle is uploaded
// once and every region reads it at its offset (odd offsets and sizes, masked and fused alike).
TEST(CudaMaskedRegionsMany, OverlappingRegionsReadTheirRectangle) {
  SKIP_WITHOUT_GPU();
  Image img = makeImage(640, 480, Fill::Smooth, 1);
  std::mt19937_64& g = rng();
  TemplateImage disc = cutTemplate(img, 200, 150, 47, 45, "disc");
  disc.mask = makeMask(47, 45, MaskShape::Disc);
  TemplateImage large = cutTemplate(img, 300, 200, 70, 66, "large");
  const std::vector<TemplateImage> bank{makeTemplate(24, 24, Fill::Random, "fused"), large};
  std::vector<RegionQuery> regions;
  for (int k = 0; k < 300; ++k) {
    const int place = k % 3, which = int(g() % 3);
    const int tw = which == 0 ? 24 : which == 1 ? 70 : 47, th = which == 0 ? 24 : which == 1 ? 66 : 45;
    const int w = tw + int(g() % 9), h = th + int(g() % 9);
    const int x = 100 + 150 * place + int(g() % 11), y = 120 + 40 * place + int(g() % 13);
    regions.push_back(RegionQuery{x, y, w, h, which == 2 ? 5u : uint32_t(which), which == 2 ? &disc : nullptr});
  }
  checkAllMethods(img, bank, regions, "300 overlapping regions");
}

}  // namespace
}  // namespace nccmatch::test
