// Masked templates on the CUDA backend against the CPU Reference engine (the oracle): score maps
// bit-identical for every method and mask shape (exact integer sums under the mask, the same
// score rule), whatever numerator is forced (a mask is never ignored); banks mixing masked and
// unmasked templates; rotated banks giving the same merged matches (position, scale, angle).
// Skipped without a GPU.
#include <gtest/gtest.h>

#include <tuple>

#include "cuda/engine/template_bank.hpp"
#include "cuda/numerator/masked_scores.hpp"
#include "gpu_test_support.hpp"
#include "nccmatch/rotations.hpp"
#include "rules/masked_score_rules.hpp"
#include "test_support.hpp"

namespace nccmatch::test {
namespace {

struct MaskedGpuCase {
  int frameW, frameH;
  int tplW, tplH;
  std::size_t padding;
  MaskShape mask;
  Fill frameFill, tplFill;
};

std::ostream& operator<<(std::ostream& os, const MaskedGpuCase& c) {
  return os << describe(c.frameW, c.frameH, c.padding) << " template " << c.tplW << "x" << c.tplH << " mask "
            << maskShapeName(c.mask);
}

class CudaMaskedScoreMap : public ::testing::TestWithParam<std::tuple<CudaNumerator, MaskedGpuCase>> {};

TEST_P(CudaMaskedScoreMap, EqualsTheCpuReferenceBitForBit) {
  SKIP_WITHOUT_GPU();
  const CudaNumerator numerator = std::get<0>(GetParam());
  const MaskedGpuCase c = std::get<1>(GetParam());
  Image img = makeImage(c.frameW, c.frameH, c.frameFill, c.padding);
  TemplateImage t = makeTemplate(c.tplW, c.tplH, c.tplFill);
  t.mask = makeMask(c.tplW, c.tplH, c.mask);
  auto gpu = makeEngine(Backend::Cuda, numerator), cpu = makeEngine(Backend::Cpu);
  ASSERT_TRUE(gpu->setTemplates({t}).ok());
  ASSERT_TRUE(cpu->setTemplates({t}).ok());
  for (int m = 0; m <= 5; ++m) {
    std::vector<double> want, got;
    ASSERT_TRUE(cpu->scoreMap(img.view(), Method(m), 0, &want).ok());
    Status s = gpu->scoreMap(img.view(), Method(m), 0, &got);
    ASSERT_TRUE(s.ok()) << s.message();
    ASSERT_EQ(got.size(), want.size());
    for (std::size_t k = 0; k < got.size(); ++k)
      ASSERT_EQ(got[k], want[k]) << methodName(Method(m)) << " at " << k << " " << c << " numerator "
                                 << cudaNumeratorName(numerator);
  }
}

INSTANTIATE_TEST_SUITE_P(Masks, CudaMaskedScoreMap, ::testing::Combine(
    ::testing::Values(CudaNumerator::Auto, CudaNumerator::Spatial, CudaNumerator::Fft),
    ::testing::Values(
        //            frame      template  pad  mask                 frame fill    template fill
        MaskedGpuCase{1, 1,      1, 1,     0,   MaskShape::Empty,    Fill::Random, Fill::Random},
        MaskedGpuCase{9, 7,      3, 3,     3,   MaskShape::OnePixel, Fill::Random, Fill::Random},
        MaskedGpuCase{45, 33,    7, 5,     1,   MaskShape::Random,   Fill::Random, Fill::Random},
        MaskedGpuCase{64, 48,    17, 17,   0,   MaskShape::Ring,     Fill::Binary, Fill::Random},
        MaskedGpuCase{40, 40,    9, 9,     2,   MaskShape::Disc,     Fill::Flat,   Fill::Random},
        MaskedGpuCase{40, 30,    8, 6,     0,   MaskShape::Random,   Fill::Random, Fill::Flat},
        MaskedGpuCase{160, 120,  91, 91,   5,   MaskShape::Disc,     Fill::Smooth, Fill::Smooth},
        MaskedGpuCase{333, 77,   64, 64,   0,   MaskShape::Random,   Fill::Random, Fill::Random},
        MaskedGpuCase{20, 15,    7, 4,     0,   MaskShape::Empty,    Fill::Random, Fill::Random},
        // the tiled kernel: tile edges (128 x 8 positions), 128x128, rows in several chunks
        MaskedGpuCase{130, 12,   3, 5,     0,   MaskShape::Random,   Fill::Random, Fill::Random},
        MaskedGpuCase{129, 9,    1, 1,     1,   MaskShape::OnePixel, Fill::Random, Fill::Random},
        MaskedGpuCase{200, 150,  128, 128, 0,   MaskShape::Disc,     Fill::Random, Fill::Random},
        MaskedGpuCase{150, 140,  127, 101, 3,   MaskShape::Ring,     Fill::Random, Fill::Random},
        MaskedGpuCase{300, 230,  260, 200, 0,   MaskShape::Random,   Fill::Random, Fill::Random},
        MaskedGpuCase{71, 300,   5, 250,   0,   MaskShape::Random,   Fill::Random, Fill::Random})));

// A bank of masked and unmasked templates (fused, dp4a, fft sizes) matches as on the CPU: the
// masked ones through the masked kernel, the others unchanged; full masks as no mask.
TEST(CudaMasks, MixedBankMatchesTheCpu) {
  SKIP_WITHOUT_GPU();
  Image img = makeImage(640, 360, Fill::Random, 16);
  std::vector<TemplateImage> bank;
  struct Entry {
    int side;
    bool masked;
    MaskShape shape;
  };
  const Entry entries[] = {
      {16, true, MaskShape::Disc},   {32, false, MaskShape::Full},           {64, true, MaskShape::Ring},
      {33, true, MaskShape::FullNonBinary},  // ignores nothing: matched as unmasked (fused)
      {100, false, MaskShape::Full},  // unmasked, past the fused size: dp4a or fft
      {7, true, MaskShape::Empty},
  };
  for (int k = 0; k < 6; ++k) {
    const Entry& e = entries[k];
    TemplateImage t = makeTemplate(e.side, e.side, Fill::Random, "t" + std::to_string(k));
    if (e.masked) t.mask = makeMask(e.side, e.side, e.shape);
    paste(&img, t, 20 + 100 * k, 40 + 30 * (k % 3));
    bank.push_back(t);
  }
  auto gpu = makeEngine(Backend::Cuda), cpu = makeEngine(Backend::Cpu);
  ASSERT_TRUE(gpu->setTemplates(bank).ok());
  ASSERT_TRUE(cpu->setTemplates(bank).ok());
  for (int m : {1, 3, 5}) {
    MatchParams p;
    p.method = Method(m);
    p.threshold = m == 1 ? 0.05 : 0.9;
    p.maxMatches = 3;
    FrameResult a, b;
    ASSERT_TRUE(cpu->match(img.view(), p, &a).ok());
    Status s = gpu->match(img.view(), p, &b);
    ASSERT_TRUE(s.ok()) << s.message();
    ASSERT_EQ(a.matches.size(), b.matches.size()) << methodName(p.method);
    for (std::size_t k = 0; k < a.matches.size(); ++k) {
      EXPECT_EQ(a.matches[k].templateIndex, b.matches[k].templateIndex);
      EXPECT_EQ(a.matches[k].x, b.matches[k].x);
      EXPECT_EQ(a.matches[k].y, b.matches[k].y);
      // Unmasked fft templates (the 100x100) carry the fft path's rounding; the others are exact.
      EXPECT_NEAR(a.matches[k].score, b.matches[k].score, 1e-4);
    }
  }
}

// A rotated, scaled bank on both backends: the same merged matches (place, scale, angle).
TEST(CudaMasks, RotatedBankGivesTheCpuMatches) {
  SKIP_WITHOUT_GPU();
  Image img = makeImage(320, 240, Fill::Smooth, 0);
  TemplateImage t = makeTemplate(32, 32, Fill::Random, "object");
  const TemplateImage turned = rotateTemplate(rotateTemplate(t, 90), 30);
  for (int y = 0; y < turned.height; ++y)
    for (int x = 0; x < turned.width; ++x)
      if (turned.mask.empty() || turned.mask[std::size_t(y) * turned.width + x])
        img.at(100 + x, 80 + y) = turned.pixels[std::size_t(y) * turned.width + x];
  ScaledBank bank;
  ASSERT_TRUE(rotateAndScaleTemplates({t}, {0.9, 1.0}, angleRange(0, 360, 15), &bank).ok());
  auto gpu = makeEngine(Backend::Cuda), cpu = makeEngine(Backend::Cpu);
  ASSERT_TRUE(gpu->setTemplates(bank.templates).ok());
  ASSERT_TRUE(cpu->setTemplates(bank.templates).ok());
  MatchParams p;
  p.threshold = 0.7;
  p.maxMatches = 3;
  FrameResult a, b;
  ASSERT_TRUE(cpu->match(img.view(), p, &a).ok());
  ASSERT_TRUE(gpu->match(img.view(), p, &b).ok());
  const FrameResult ma = mergeScaledResult(bank, a, p), mb = mergeScaledResult(bank, b, p);
  ASSERT_EQ(ma.matches.size(), mb.matches.size());
  ASSERT_FALSE(ma.matches.empty());
  for (std::size_t k = 0; k < ma.matches.size(); ++k) {
    EXPECT_EQ(ma.matches[k].x, mb.matches[k].x);
    EXPECT_EQ(ma.matches[k].y, mb.matches[k].y);
    EXPECT_EQ(ma.matches[k].scale, mb.matches[k].scale);
    EXPECT_EQ(ma.matches[k].angle, mb.matches[k].angle);
    EXPECT_EQ(ma.matches[k].score, mb.matches[k].score);
  }
  EXPECT_NEAR(ma.matches[0].angle, 120.0, 7.5);
}

// A disc support's rotations of one scale share one mask: one group per scale, every angle in it
// (their window sums are computed once a frame); unmasked templates and a mask of its own are in
// none.
TEST(CudaMasks, DiscRotationsOfOneScaleShareAMaskGroup) {
  const TemplateImage t = makeTemplate(24, 24, Fill::Random, "object");
  ScaledBank bank;
  ASSERT_TRUE(rotateAndScaleTemplates({t}, {0.9, 1.0, 1.2}, angleRange(0, 360, 30), &bank, RotationSupport::Disc).ok());
  std::vector<TemplateImage> images = bank.templates;
  images.push_back(makeTemplate(24, 24, Fill::Random, "plain"));
  images.push_back(makeTemplate(24, 24, Fill::Random, "own mask"));
  images.back().mask = makeMask(24, 24, MaskShape::Random);
  const std::vector<int> groups = cuda::sharedMaskGroups(images);
  ASSERT_EQ(groups.size(), images.size());
  for (std::size_t i = 0; i < bank.templates.size(); ++i)
    for (std::size_t j = 0; j < bank.templates.size(); ++j) {
      ASSERT_GE(groups[i], 0) << i;
      EXPECT_EQ(groups[i] == groups[j], bank.scale[i] == bank.scale[j]) << i << " " << j;
    }
  EXPECT_EQ(groups[images.size() - 2], -1);
  EXPECT_EQ(groups[images.size() - 1], -1);
}

// A bank of disc rotations (mask groups: window sums once a scale, each variant's cross term),
// rectangle rotations (a mask each) and an unmasked template: every template's best and matches
// as the CPU's, bit for bit, for every method.
TEST(CudaMasks, SharedWindowSumsGiveTheCpuResults) {
  SKIP_WITHOUT_GPU();
  Image img = makeImage(400, 300, Fill::Smooth, 3);
  const TemplateImage t = cutTemplate(img, 100, 80, 40, 40, "object");
  ScaledBank disc, rect;
  ASSERT_TRUE(rotateAndScaleTemplates({t}, {0.8, 1.0}, angleRange(0, 360, 45), &disc, RotationSupport::Disc).ok());
  ASSERT_TRUE(rotateAndScaleTemplates({t}, {1.0}, angleRange(0, 90, 30), &rect, RotationSupport::Rectangle).ok());
  std::vector<TemplateImage> images = disc.templates;
  images.insert(images.end(), rect.templates.begin(), rect.templates.end());
  images.push_back(makeTemplate(33, 21, Fill::Random, "plain"));
  auto gpu = makeEngine(Backend::Cuda), cpu = makeEngine(Backend::Cpu);
  ASSERT_TRUE(gpu->setTemplates(images).ok());
  ASSERT_TRUE(cpu->setTemplates(images).ok());
  for (int m = 0; m <= 5; ++m) {
    MatchParams p;
    p.method = Method(m);
    p.threshold = lowerIsBetter(p.method) ? 1e12 : -1e12;
    p.maxMatches = 3;
    FrameResult a, b;
    ASSERT_TRUE(cpu->match(img.view(), p, &a).ok());
    const Status s = gpu->match(img.view(), p, &b);
    ASSERT_TRUE(s.ok()) << s.message();
    ASSERT_EQ(a.best.size(), b.best.size());
    for (std::size_t i = 0; i < a.best.size(); ++i) {
      ASSERT_EQ(a.best[i].has_value(), b.best[i].has_value()) << i;
      if (!a.best[i]) continue;
      EXPECT_EQ(a.best[i]->x, b.best[i]->x) << methodName(p.method) << " template " << i;
      EXPECT_EQ(a.best[i]->y, b.best[i]->y) << methodName(p.method) << " template " << i;
      EXPECT_EQ(a.best[i]->score, b.best[i]->score) << methodName(p.method) << " template " << i;
    }
    ASSERT_EQ(a.matches.size(), b.matches.size()) << methodName(p.method);
    for (std::size_t k = 0; k < a.matches.size(); ++k) {
      EXPECT_EQ(a.matches[k].templateIndex, b.matches[k].templateIndex) << methodName(p.method) << " match " << k;
      EXPECT_EQ(a.matches[k].x, b.matches[k].x) << methodName(p.method) << " match " << k;
      EXPECT_EQ(a.matches[k].y, b.matches[k].y) << methodName(p.method) << " match " << k;
      EXPECT_EQ(a.matches[k].score, b.matches[k].score) << methodName(p.method) << " match " << k;
    }
  }
}

// The layout: rows of whole words, taps zero and weights 0 where ignored (0xFF where compared),
// zero padding, word spans around each row's compared pixels, the statistics over them.
TEST(CudaMasks, LayoutSpansTheComparedPixels) {
  TemplateImage t = makeTemplate(6, 3, Fill::Random);
  t.mask = {0, 1, 0, 0, 0, 0,  0, 0, 0, 0, 0, 0,  9, 9, 9, 9, 9, 9};
  ASSERT_EQ(cuda::maskedLayoutBytes(6, 3), 2u * 8 * 3 + 2 * 4 * 3);
  std::vector<uint8_t> block(cuda::maskedLayoutBytes(6, 3), 0xEE);
  const TemplateStats stats = cuda::packMaskedTemplate(t, block.data());
  const TemplateStats want = maskedTemplateStats(t);
  EXPECT_EQ(stats.n, want.n);
  EXPECT_EQ(stats.sum, want.sum);
  EXPECT_EQ(stats.sumSq, want.sumSq);
  const cuda::MaskedTemplateDevice l = cuda::MaskedTemplateDevice::at(block.data(), 6, 3, stats);
  EXPECT_EQ(std::vector<int32_t>(l.spans, l.spans + 6), (std::vector<int32_t>{0, 1, 0, 0, 0, 2}));
  for (int y = 0; y < 3; ++y)
    for (int x = 0; x < 8; ++x) {
      const std::size_t k = std::size_t(y) * 6 + x, at = std::size_t(y) * 8 + x;
      const bool compared = x < 6 && t.mask[k] != 0;
      EXPECT_EQ(l.taps[at], compared ? t.pixels[k] : 0) << x << "," << y;
      EXPECT_EQ(l.weights[at], compared ? 0xFF : 0) << x << "," << y;
    }
  // No mask: every pixel compared, full spans.
  const TemplateImage plain = makeTemplate(5, 2, Fill::Random);
  std::vector<uint8_t> plainBlock(cuda::maskedLayoutBytes(5, 2));
  const TemplateStats plainStats = cuda::packMaskedTemplate(plain, plainBlock.data());
  EXPECT_EQ(plainStats.n, 10);
  const cuda::MaskedTemplateDevice p = cuda::MaskedTemplateDevice::at(plainBlock.data(), 5, 2, plainStats);
  EXPECT_EQ(std::vector<int32_t>(p.spans, p.spans + 4), (std::vector<int32_t>{0, 2, 0, 2}));
  for (int y = 0; y < 2; ++y)
    for (int x = 0; x < 8; ++x) EXPECT_EQ(p.weights[std::size_t(y) * 8 + x], x < 5 ? 0xFF : 0) << x << "," << y;
}

}  // namespace
}  // namespace nccmatch::test
