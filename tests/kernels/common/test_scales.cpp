// Scaled template banks (scales.hpp): resampling against 2-D brute-force definitions, the bank's
// sizes and errors, the merge of scaled matches against a plain greedy NMS, and the CPU engine
// finding a template pasted at another size.
#include <gtest/gtest.h>

#include <algorithm>
#include <climits>
#include <cmath>
#include <limits>
#include <random>

#include "nccmatch/engine.hpp"
#include "nccmatch/scales.hpp"
#include "common/peaks.hpp"
#include "test_support.hpp"

namespace nccmatch::test {
namespace {

// Area average over the output pixel's footprint, computed in 2-D from every source pixel.
double areaAverage(const TemplateImage& s, int width, int height, int x, int y) {
  const double rx = double(s.width) / width, ry = double(s.height) / height;
  const double x0 = x * rx, x1 = (x + 1) * rx, y0 = y * ry, y1 = (y + 1) * ry;
  double sum = 0.0;
  for (int j = 0; j < s.height; ++j)
    for (int i = 0; i < s.width; ++i) {
      const double ox = std::max(0.0, std::min(x1, i + 1.0) - std::max(x0, double(i)));
      const double oy = std::max(0.0, std::min(y1, j + 1.0) - std::max(y0, double(j)));
      sum += ox * oy * s.pixels[std::size_t(j) * s.width + i];
    }
  return sum / (rx * ry);
}

// Bilinear between pixel centres, edge samples repeated.
double bilinear(const TemplateImage& s, int width, int height, int x, int y) {
  const double cx = std::clamp((x + 0.5) * s.width / width - 0.5, 0.0, double(s.width - 1));
  const double cy = std::clamp((y + 0.5) * s.height / height - 0.5, 0.0, double(s.height - 1));
  const int i = int(cx), j = int(cy);
  const int i1 = std::min(i + 1, s.width - 1), j1 = std::min(j + 1, s.height - 1);
  const double fx = cx - i, fy = cy - j;
  auto p = [&](int a, int b) { return double(s.pixels[std::size_t(b) * s.width + a]); };
  return (1 - fy) * ((1 - fx) * p(i, j) + fx * p(i1, j)) + fy * ((1 - fx) * p(i, j1) + fx * p(i1, j1));
}

struct ResizeCase {
  int fromW, fromH, toW, toH;
};
std::ostream& operator<<(std::ostream& os, const ResizeCase& c) {
  return os << c.fromW << "x" << c.fromH << " -> " << c.toW << "x" << c.toH;
}

class ResizeTemplate : public ::testing::TestWithParam<ResizeCase> {};

// Each axis that shrinks averages by area, each that grows interpolates: for one axis at a time the
// two brute-force definitions apply; both axes shrinking is the 2-D area average.
TEST_P(ResizeTemplate, FollowsTheDefinitionWithinRounding) {
  const ResizeCase c = GetParam();
  const TemplateImage src = makeTemplate(c.fromW, c.fromH, Fill::Random);
  const TemplateImage out = resizeTemplate(src, c.toW, c.toH);
  ASSERT_EQ(out.width, c.toW);
  ASSERT_EQ(out.height, c.toH);
  ASSERT_EQ(out.pixels.size(), std::size_t(c.toW) * c.toH);
  EXPECT_EQ(out.name, src.name);
  const bool shrinkX = c.toW <= c.fromW, shrinkY = c.toH <= c.fromH;
  for (int y = 0; y < c.toH; ++y)
    for (int x = 0; x < c.toW; ++x) {
      double want;
      if (shrinkX && shrinkY) {
        want = areaAverage(src, c.toW, c.toH, x, y);
      } else if (!shrinkX && !shrinkY) {
        want = bilinear(src, c.toW, c.toH, x, y);
      } else {
        continue;  // mixed: covered by the constant and separable cases below
      }
      ASSERT_NEAR(out.pixels[std::size_t(y) * c.toW + x], want, 0.5 + 1e-9) << c << " at " << x << "," << y;
    }
}

TEST_P(ResizeTemplate, KeepsAConstantImageConstant) {
  const ResizeCase c = GetParam();
  const TemplateImage src = makeTemplate(c.fromW, c.fromH, Fill::Flat, "flat", 201);
  const TemplateImage out = resizeTemplate(src, c.toW, c.toH);
  for (uint8_t v : out.pixels) ASSERT_EQ(v, 201) << c;
}

INSTANTIATE_TEST_SUITE_P(Sizes, ResizeTemplate, ::testing::Values(
    ResizeCase{1, 1, 1, 1}, ResizeCase{1, 1, 5, 3}, ResizeCase{7, 5, 1, 1}, ResizeCase{16, 12, 8, 6},
    ResizeCase{17, 13, 9, 7}, ResizeCase{30, 20, 13, 11}, ResizeCase{9, 7, 13, 11}, ResizeCase{8, 8, 16, 16},
    ResizeCase{5, 9, 12, 4}, ResizeCase{12, 4, 5, 9}, ResizeCase{1, 9, 4, 3}, ResizeCase{64, 1, 33, 1}));

TEST(ResizeTemplate, SameSizeIsACopy) {
  const TemplateImage src = makeTemplate(13, 7, Fill::Random);
  EXPECT_EQ(resizeTemplate(src, 13, 7).pixels, src.pixels);
}

TEST(ResizeTemplate, HalvingAveragesTwoByTwoBlocks) {
  const TemplateImage src = makeTemplate(22, 14, Fill::Random);
  const TemplateImage out = resizeTemplate(src, 11, 7);
  for (int y = 0; y < 7; ++y)
    for (int x = 0; x < 11; ++x) {
      auto p = [&](int i, int j) { return int(src.pixels[std::size_t(j) * 22 + i]); };
      const int sum = p(2 * x, 2 * y) + p(2 * x + 1, 2 * y) + p(2 * x, 2 * y + 1) + p(2 * x + 1, 2 * y + 1);
      ASSERT_EQ(out.pixels[std::size_t(y) * 11 + x], (sum + 2) / 4) << x << "," << y;  // .5 rounds up
    }
}

// One axis grows and the other shrinks: resampling is separable, so a template varying along one
// axis only follows that axis's 1-D rule.
TEST(ResizeTemplate, MixedAxesAreSeparable) {
  TemplateImage src = makeTemplate(6, 10, Fill::Flat);
  std::uniform_int_distribution<int> byte(0, 255);
  std::vector<uint8_t> column(10);
  for (uint8_t& v : column) v = uint8_t(byte(rng()));
  for (int y = 0; y < 10; ++y)
    for (int x = 0; x < 6; ++x) src.pixels[std::size_t(y) * 6 + x] = column[std::size_t(y)];
  const TemplateImage out = resizeTemplate(src, 15, 4);  // x grows 2.5x, y shrinks 2.5x
  for (int y = 0; y < 4; ++y) {
    double want = 0.0;  // the area average of rows [2.5y, 2.5y + 2.5)
    for (int j = 0; j < 10; ++j)
      want += std::max(0.0, std::min(2.5 * (y + 1), j + 1.0) - std::max(2.5 * y, double(j))) * column[std::size_t(j)];
    want /= 2.5;
    for (int x = 0; x < 15; ++x) ASSERT_NEAR(out.pixels[std::size_t(y) * 15 + x], want, 0.5 + 1e-9) << x << "," << y;
  }
}

TEST(ScaleTemplates, OneEntryPerDistinctSizeInTheGivenOrder) {
  const std::vector<TemplateImage> originals = {makeTemplate(20, 10, Fill::Random, "a"),
                                                makeTemplate(3, 3, Fill::Random, "b")};
  ScaledBank bank;
  Status s = scaleTemplates(originals, {1.0, 0.5, 1.26, 0.1}, &bank);
  ASSERT_TRUE(s.ok()) << s.message();
  // a: 20x10, 10x5, 25x13, 2x1. b: 3x3, 2x2 (0.5 -> 1.5 rounds to 2), 4x4, 1x1 (0.3 -> at least 1).
  const std::vector<std::pair<int, int>> sizes = {{20, 10}, {10, 5}, {25, 13}, {2, 1}, {3, 3}, {2, 2}, {4, 4}, {1, 1}};
  ASSERT_EQ(bank.templates.size(), sizes.size());
  ASSERT_EQ(bank.original.size(), sizes.size());
  ASSERT_EQ(bank.scale.size(), sizes.size());
  EXPECT_EQ(bank.originals, 2u);
  for (std::size_t e = 0; e < sizes.size(); ++e) {
    EXPECT_EQ(bank.templates[e].width, sizes[e].first) << e;
    EXPECT_EQ(bank.templates[e].height, sizes[e].second) << e;
    EXPECT_EQ(bank.original[e], e < 4 ? 0u : 1u) << e;
    EXPECT_EQ(bank.templates[e].name, e < 4 ? "a" : "b") << e;
  }
  EXPECT_EQ(bank.scale, (std::vector<double>{1.0, 0.5, 1.26, 0.1, 1.0, 0.5, 1.26, 0.1}));
  EXPECT_EQ(bank.templates[0].pixels, originals[0].pixels);

  // 1.02 gives 3x3 for b again: skipped for b (the earlier factor stands), kept for a (20x10 -> 20x10 too).
  ASSERT_TRUE(scaleTemplates(originals, {1.0, 1.02, 2.0}, &bank).ok());
  ASSERT_EQ(bank.templates.size(), 4u);  // a: 20x10, 40x20 (1.02 -> 20x10 skipped); b: 3x3, 6x6
  EXPECT_EQ(bank.scale, (std::vector<double>{1.0, 2.0, 1.0, 2.0}));
}

TEST(ScaleTemplates, RefusesBadFactorsNamingThem) {
  const std::vector<TemplateImage> originals = {makeTemplate(2000, 10, Fill::Random, "wide")};
  ScaledBank bank;
  const double nan = std::numeric_limits<double>::quiet_NaN();
  for (const std::vector<double>& scales : std::vector<std::vector<double>>{
           {}, {0.0}, {-1.0}, {nan}, {std::numeric_limits<double>::infinity()}, {1.0, 16.5}, {0.005}}) {
    Status s = scaleTemplates(originals, scales, &bank);
    EXPECT_FALSE(s.ok());
    EXPECT_FALSE(s.message().empty());
  }
  EXPECT_NE(scaleTemplates(originals, {0.0}, &bank).message().find("scale factor 0"), std::string::npos);
  Status s = scaleTemplates(originals, {1.0, 9.0}, &bank);  // 18000 pixels wide
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("'wide'"), std::string::npos) << s.message();
  EXPECT_NE(s.message().find("18000x90"), std::string::npos) << s.message();
  EXPECT_TRUE(validateTemplateScales({0.01, 16.0}).ok());
}

// Found by tests/fuzz/fuzz_engine (corpus/fuzz_engine/crash-ae55b865...): a template the engine
// would refuse reached the resampler, which threw std::length_error (a negative size) or read
// past the pixels. Each bad template is refused with the engine's message, at any factor.
TEST(ScaleTemplates, RefusesTemplatesTheEngineRefuses) {
  struct Case {
    const char* what;
    int width, height;
    std::size_t pixels;
  };
  const Case cases[] = {
      {"0x0", 0, 0, 0},           {"negative width", -5, 3, 0},         {"INT_MIN height", 2, INT_MIN, 4},
      {"too few pixels", 4, 4, 15}, {"too many pixels", 4, 4, 17},      {"past 16384", 16385, 1, 16385},
      {"empty 3x3", 3, 3, 0},
  };
  for (const Case& c : cases) {
    for (double scale : {0.5, 1.0, 2.0}) {
      TemplateImage bad;
      bad.name = "bad";
      bad.width = c.width;
      bad.height = c.height;
      bad.pixels.assign(c.pixels, 7);
      ScaledBank bank;
      bank.originals = 99;  // untouched on failure
      Status s = scaleTemplates({makeTemplate(3, 3, Fill::Random, "good"), bad}, {scale}, &bank);
      ASSERT_FALSE(s.ok()) << c.what << " at " << scale;
      EXPECT_NE(s.message().find("template 1 ('bad')"), std::string::npos) << c.what << ": " << s.message();
      EXPECT_EQ(bank.originals, 99u) << c.what;
    }
  }
}

Match box(uint32_t entry, int x, int y, int w, int h, double score) {
  Match m;
  m.templateIndex = entry;
  m.x = x;
  m.y = y;
  m.width = w;
  m.height = h;
  m.score = score;
  m.subX = x + 0.25;
  m.subY = y - 0.25;
  return m;
}

// Two originals at scales 1 and 2 (entries 0, 1 for "a"; 2, 3 for "b").
ScaledBank twoByTwoBank() {
  ScaledBank bank;
  bank.originals = 2;
  bank.original = {0, 0, 1, 1};
  bank.scale = {1.0, 2.0, 1.0, 2.0};
  bank.templates.resize(4);
  return bank;
}

TEST(MergeScaledResult, SuppressesAcrossScalesBestFirst) {
  const ScaledBank bank = twoByTwoBank();
  FrameResult raw;
  raw.matches = {box(0, 10, 10, 10, 10, 0.90), box(0, 60, 10, 10, 10, 0.85),  // a at scale 1
                 box(1, 8, 8, 20, 20, 0.95),                                  // a at scale 2, over (10,10)
                 box(3, 100, 100, 8, 8, 0.81)};                               // b at scale 2
  raw.best = {box(0, 10, 10, 10, 10, 0.90), box(1, 8, 8, 20, 20, 0.95), std::nullopt, box(3, 100, 100, 8, 8, 0.81)};
  MatchParams params;
  params.maxMatches = 5;
  params.nmsIou = 0.2;
  const FrameResult merged = mergeScaledResult(bank, raw, params);
  ASSERT_EQ(merged.matches.size(), 3u);
  EXPECT_EQ(merged.matches[0].templateIndex, 0u);
  EXPECT_EQ(merged.matches[0].x, 8);  // the scale-2 box (IoU 100/400 = 0.25 with (10,10)) wins
  EXPECT_EQ(merged.matches[0].width, 20);
  EXPECT_EQ(merged.matches[0].scale, 2.0);
  EXPECT_EQ(merged.matches[0].subX, 8.25);
  EXPECT_EQ(merged.matches[1].x, 60);
  EXPECT_EQ(merged.matches[1].scale, 1.0);
  EXPECT_EQ(merged.matches[2].templateIndex, 1u);
  EXPECT_EQ(merged.matches[2].scale, 2.0);
  ASSERT_EQ(merged.best.size(), 2u);
  ASSERT_TRUE(merged.best[0].has_value());
  EXPECT_EQ(merged.best[0]->scale, 2.0);
  EXPECT_EQ(merged.best[0]->templateIndex, 0u);
  ASSERT_TRUE(merged.best[1].has_value());
  EXPECT_EQ(merged.best[1]->x, 100);

  params.nmsIou = 0.3;  // IoU 0.25 no longer suppresses
  EXPECT_EQ(mergeScaledResult(bank, raw, params).matches.size(), 4u);
  params.maxMatches = 1;
  const FrameResult one = mergeScaledResult(bank, raw, params);
  ASSERT_EQ(one.matches.size(), 2u);
  EXPECT_EQ(one.matches[0].score, 0.95);
  EXPECT_EQ(one.matches[1].templateIndex, 1u);
  params.maxMatches = 0;
  const FrameResult none = mergeScaledResult(bank, raw, params);
  EXPECT_TRUE(none.matches.empty());
  EXPECT_TRUE(none.best[0].has_value());
}

TEST(MergeScaledResult, LowerIsBetterForSqDiffAndTiesGoToTheEarlierScale) {
  const ScaledBank bank = twoByTwoBank();
  FrameResult raw;
  raw.matches = {box(0, 10, 10, 10, 10, 50.0), box(1, 10, 10, 20, 20, 20.0)};
  raw.best = {box(0, 10, 10, 10, 10, 50.0), box(1, 10, 10, 20, 20, 20.0), std::nullopt, std::nullopt};
  MatchParams params;
  params.method = Method::SqDiff;
  params.maxMatches = 1;
  FrameResult merged = mergeScaledResult(bank, raw, params);
  ASSERT_EQ(merged.matches.size(), 1u);
  EXPECT_EQ(merged.matches[0].score, 20.0);
  EXPECT_EQ(merged.best[0]->score, 20.0);
  EXPECT_FALSE(merged.best[1].has_value());  // no scale of b fits the frame

  raw.matches[1].score = 50.0;
  raw.best[1]->score = 50.0;
  merged = mergeScaledResult(bank, raw, params);
  EXPECT_EQ(merged.matches[0].scale, 1.0);
  EXPECT_EQ(merged.best[0]->scale, 1.0);
}

// Many kept boxes of mixed sizes (KeptBoxes' grid path) against the plain greedy NMS.
TEST(MergeScaledResult, ManyBoxesOfMixedSizesAsPlainGreedyNms) {
  ScaledBank bank;
  bank.originals = 1;
  bank.original = {0, 0, 0};
  bank.scale = {0.5, 1.0, 1.5};
  bank.templates.resize(3);
  const int sizes[3] = {6, 12, 18};
  std::uniform_int_distribution<int> pos(0, 300), entry(0, 2);
  std::uniform_real_distribution<double> score(0.8, 1.0);
  for (double iou : {0.0, 0.1, 0.3, 0.7, 1.0}) {
    FrameResult raw;
    raw.best.assign(3, std::nullopt);
    std::vector<Match> all;
    for (int k = 0; k < 3000; ++k) {
      const int e = entry(rng());
      raw.matches.push_back(box(uint32_t(e), pos(rng()), pos(rng()), sizes[e], sizes[e], score(rng())));
    }
    MatchParams params;
    params.maxMatches = 400;
    params.nmsIou = iou;
    const FrameResult merged = mergeScaledResult(bank, raw, params);

    std::vector<Match> ranked = raw.matches;
    std::stable_sort(ranked.begin(), ranked.end(), [](const Match& a, const Match& b) {
      if (a.score != b.score) return a.score > b.score;
      if (a.templateIndex != b.templateIndex) return a.templateIndex < b.templateIndex;
      if (a.y != b.y) return a.y < b.y;
      return a.x < b.x;
    });
    std::vector<Match> kept;
    for (const Match& m : ranked) {
      if (int(kept.size()) == params.maxMatches) break;
      if (!suppressedByAny(m, kept, iou)) kept.push_back(m);
    }
    ASSERT_EQ(merged.matches.size(), kept.size()) << "iou " << iou;
    for (std::size_t k = 0; k < kept.size(); ++k) {
      ASSERT_EQ(merged.matches[k].x, kept[k].x) << "iou " << iou << " #" << k;
      ASSERT_EQ(merged.matches[k].y, kept[k].y) << "iou " << iou << " #" << k;
      ASSERT_EQ(merged.matches[k].width, kept[k].width) << "iou " << iou << " #" << k;
      ASSERT_EQ(merged.matches[k].scale, bank.scale[kept[k].templateIndex]);
      ASSERT_EQ(merged.matches[k].templateIndex, 0u);
    }
  }
}

// With one scale (1) the merge gives back the engine's own result.
TEST(MergeScaledResult, ScaleOneLeavesTheEnginesResult) {
  Image img = makeImage(120, 90, Fill::Smooth);
  const std::vector<TemplateImage> originals = {cutTemplate(img, 10, 10, 9, 7, "a"), cutTemplate(img, 50, 40, 5, 5, "b")};
  ScaledBank bank;
  ASSERT_TRUE(scaleTemplates(originals, {1.0}, &bank).ok());
  auto engine = makeCpuEngine(CpuPath::Auto);
  ASSERT_TRUE(engine->setTemplates(bank.templates).ok());
  MatchParams params;
  params.threshold = 0.5;
  params.maxMatches = 50;
  FrameResult raw;
  ASSERT_TRUE(engine->match(img.view(), params, &raw).ok());
  ASSERT_GT(raw.matches.size(), 4u);
  const FrameResult merged = mergeScaledResult(bank, raw, params);
  ASSERT_EQ(merged.matches.size(), raw.matches.size());
  for (std::size_t k = 0; k < raw.matches.size(); ++k) {
    EXPECT_EQ(merged.matches[k].templateIndex, raw.matches[k].templateIndex);
    EXPECT_EQ(merged.matches[k].x, raw.matches[k].x);
    EXPECT_EQ(merged.matches[k].y, raw.matches[k].y);
    EXPECT_EQ(merged.matches[k].score, raw.matches[k].score);
    EXPECT_EQ(merged.matches[k].scale, 1.0);
  }
  ASSERT_EQ(merged.best.size(), 2u);
  EXPECT_EQ(merged.best[1]->x, raw.best[1]->x);
}

// A template shown 1.5x larger than it was cut: found only through the scaled bank, at its place.
TEST(ScaledBankOnTheCpuEngine, FindsATemplateShownAtAnotherSize) {
  Image img = makeImage(160, 120, Fill::Random, 5);
  const TemplateImage original = makeTemplate(16, 12, Fill::Random, "logo");
  const TemplateImage shown = resizeTemplate(original, 24, 18);
  paste(&img, shown, 97, 41);
  ScaledBank bank;
  ASSERT_TRUE(scaleTemplates({original}, {0.75, 1.0, 1.5}, &bank).ok());
  auto engine = makeCpuEngine(CpuPath::Auto);
  ASSERT_TRUE(engine->setTemplates(bank.templates).ok());
  MatchParams params;
  params.threshold = 0.9;
  params.maxMatches = 3;
  FrameResult raw;
  ASSERT_TRUE(engine->match(img.view(), params, &raw).ok());
  const FrameResult result = mergeScaledResult(bank, raw, params);
  ASSERT_EQ(result.matches.size(), 1u);
  EXPECT_EQ(result.matches[0].templateIndex, 0u);
  EXPECT_EQ(result.matches[0].scale, 1.5);
  EXPECT_EQ(result.matches[0].x, 97);
  EXPECT_EQ(result.matches[0].y, 41);
  EXPECT_EQ(result.matches[0].width, 24);
  EXPECT_EQ(result.matches[0].height, 18);
  EXPECT_NEAR(result.matches[0].score, 1.0, 1e-9);

  // The unscaled template alone does not reach the threshold there.
  ASSERT_TRUE(engine->setTemplates({original}).ok());
  ASSERT_TRUE(engine->match(img.view(), params, &raw).ok());
  for (const Match& m : raw.matches) EXPECT_GT(std::abs(m.x - 97) + std::abs(m.y - 41), 8) << m.score;
}

}  // namespace
}  // namespace nccmatch::test
