// Masked templates on the CPU backend: every path's score maps against the masked definition
// (bruteForceScore: sums over the compared pixels only), full masks equal to no mask, ignored
// pixels that change nothing, a transparent template found where the unmasked one fails, and
// masks refused with the template named.
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "cpu/cpu_cost_model.hpp"
#include "cpu/cpu_masked_window_sums.hpp"
#include "nccmatch/engine.hpp"
#include "nccmatch/rotations.hpp"
#include "test_support.hpp"

namespace nccmatch::test {
namespace {

struct MaskedCase {
  int frameW, frameH;
  int tplW, tplH;
  std::size_t padding;
  MaskShape mask;
  Fill frameFill, tplFill;
};

std::ostream& operator<<(std::ostream& os, const MaskedCase& c) {
  return os << describe(c.frameW, c.frameH, c.padding) << " template " << c.tplW << "x" << c.tplH << " mask "
            << maskShapeName(c.mask) << " fills " << int(c.frameFill) << "/" << int(c.tplFill);
}

std::vector<CpuPath> cpuPaths() {
  std::vector<CpuPath> paths{CpuPath::Reference, CpuPath::Direct};
  if (cpuFftAvailable()) paths.push_back(CpuPath::Fft);
  return paths;
}

class CpuMaskedScoreMap : public ::testing::TestWithParam<MaskedCase> {};

TEST_P(CpuMaskedScoreMap, EveryPathAndMethodMatchesTheMaskedDefinition) {
  const MaskedCase c = GetParam();
  Image img = makeImage(c.frameW, c.frameH, c.frameFill, c.padding);
  TemplateImage t = makeTemplate(c.tplW, c.tplH, c.tplFill);
  t.mask = makeMask(c.tplW, c.tplH, c.mask);
  const int mapW = c.frameW - c.tplW + 1, mapH = c.frameH - c.tplH + 1;
  for (CpuPath path : cpuPaths()) {
    auto engine = makeCpuEngine(path, 2);
    ASSERT_TRUE(engine->setTemplates({t}).ok());
    for (int m = 0; m <= 5; ++m) {
      const Method method = static_cast<Method>(m);
      std::vector<double> map;
      Status s = engine->scoreMap(img.view(), method, 0, &map);
      ASSERT_TRUE(s.ok()) << s.message();
      ASSERT_EQ(map.size(), std::size_t(mapW) * mapH);
      const bool fft = path == CpuPath::Fft;
      const bool normed = method == Method::SqDiffNormed || method == Method::CCorrNormed ||
                          method == Method::CCoeffNormed;
      for (int y = 0; y < mapH; ++y) {
        for (int x = 0; x < mapW; ++x) {
          const double got = map[std::size_t(y) * mapW + x];
          const double want = bruteForceScore(img, t, method, x, y);
          ASSERT_TRUE(std::isfinite(got)) << cpuPathName(path) << " " << methodName(method) << " at " << x << "," << y;
          // Integer methods exact on the integer paths; the FFT path within 1e-4 (normalised) or a
          // float rounding of the largest possible sum (unnormalised).
          double tol = normed ? 1e-9 : 0.0;
          if (!normed && method != Method::SqDiff && method != Method::CCorr) tol = 1e-9 * std::max(1.0, std::fabs(want));
          if (fft) tol = normed ? 1e-4 : 1e-5 * double(c.tplW) * c.tplH * 255.0 * 255.0;
          ASSERT_NEAR(got, want, tol) << cpuPathName(path) << " " << methodName(method) << " at " << x << "," << y
                                      << " " << c;
        }
      }
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Masks, CpuMaskedScoreMap, ::testing::Values(
    //         frame    template  pad  mask                      frame fill     template fill
    MaskedCase{1, 1,    1, 1,     0,   MaskShape::Full,          Fill::Random, Fill::Random},
    MaskedCase{1, 1,    1, 1,     0,   MaskShape::Empty,         Fill::Random, Fill::Random},
    MaskedCase{9, 7,    3, 3,     3,   MaskShape::OnePixel,      Fill::Random, Fill::Random},
    MaskedCase{31, 17,  5, 3,     1,   MaskShape::Random,        Fill::Random, Fill::Random},
    MaskedCase{33, 29,  9, 9,     7,   MaskShape::Disc,          Fill::Smooth, Fill::Smooth},
    MaskedCase{40, 23,  11, 9,    0,   MaskShape::Ring,          Fill::Binary, Fill::Random},
    MaskedCase{24, 24,  6, 6,     2,   MaskShape::Disc,          Fill::Flat,   Fill::Random},  // flat windows
    MaskedCase{24, 20,  6, 5,     0,   MaskShape::Random,        Fill::Random, Fill::Flat},    // flat template
    MaskedCase{70, 50,  17, 13,   0,   MaskShape::Ring,          Fill::Random, Fill::Random},
    MaskedCase{90, 70,  33, 31,   5,   MaskShape::Random,        Fill::Random, Fill::Random},  // VNNI blocks
    MaskedCase{13, 11,  13, 11,   0,   MaskShape::FullNonBinary, Fill::Random, Fill::Random},  // template == frame
    MaskedCase{20, 15,  7, 4,     0,   MaskShape::Empty,         Fill::Random, Fill::Random},
    MaskedCase{1, 37,   1, 5,     0,   MaskShape::Random,        Fill::Random, Fill::Random},
    MaskedCase{37, 1,   4, 1,     5,   MaskShape::OnePixel,      Fill::Random, Fill::Random}));

// A mask that ignores nothing (any nonzero values) gives exactly the unmasked maps.
TEST(CpuMasks, FullMaskEqualsNoMask) {
  Image img = makeImage(57, 41, Fill::Random, 3);
  TemplateImage plain = makeTemplate(12, 9, Fill::Random);
  for (MaskShape shape : {MaskShape::Full, MaskShape::FullNonBinary}) {
    TemplateImage masked = plain;
    masked.mask = makeMask(12, 9, shape);
    for (CpuPath path : cpuPaths()) {
      auto a = makeCpuEngine(path, 2), b = makeCpuEngine(path, 2);
      ASSERT_TRUE(a->setTemplates({plain}).ok());
      ASSERT_TRUE(b->setTemplates({masked}).ok());
      for (int m = 0; m <= 5; ++m) {
        std::vector<double> want, got;
        ASSERT_TRUE(a->scoreMap(img.view(), Method(m), 0, &want).ok());
        ASSERT_TRUE(b->scoreMap(img.view(), Method(m), 0, &got).ok());
        EXPECT_EQ(got, want) << cpuPathName(path) << " " << methodName(Method(m)) << " " << maskShapeName(shape);
      }
    }
  }
}

// What lies under ignored pixels never changes a score.
TEST(CpuMasks, IgnoredTemplatePixelsChangeNothing) {
  Image img = makeImage(64, 48, Fill::Random, 0);
  TemplateImage a = makeTemplate(15, 15, Fill::Random);
  a.mask = makeMask(15, 15, MaskShape::Disc);
  TemplateImage b = a;
  for (std::size_t k = 0; k < b.pixels.size(); ++k)
    if (b.mask[k] == 0) b.pixels[k] = uint8_t(255 - b.pixels[k]);
  for (CpuPath path : cpuPaths()) {
    auto engine = makeCpuEngine(path, 2);
    ASSERT_TRUE(engine->setTemplates({a, b}).ok());
    for (int m = 0; m <= 5; ++m) {
      std::vector<double> ma, mb;
      ASSERT_TRUE(engine->scoreMap(img.view(), Method(m), 0, &ma).ok());
      ASSERT_TRUE(engine->scoreMap(img.view(), Method(m), 1, &mb).ok());
      if (path == CpuPath::Fft) {
        for (std::size_t k = 0; k < ma.size(); ++k) ASSERT_NEAR(ma[k], mb[k], 1e-6 * std::max(1.0, std::fabs(ma[k])));
      } else {
        EXPECT_EQ(ma, mb) << cpuPathName(path) << " " << methodName(Method(m));
      }
    }
  }
}

// A round object on a cluttered background: its square template carries the background it was
// cut from in its corners, which differ at every place the object appears. The disc mask finds
// every copy; the unmasked template, whose corners disagree, scores them below the threshold.
TEST(CpuMasks, TransparentTemplateFoundWhereTheUnmaskedFails) {
  Image img = makeImage(200, 150, Fill::Random, 0);
  TemplateImage object = makeTemplate(31, 31, Fill::Smooth, "coin");
  object.mask = makeMask(31, 31, MaskShape::Disc);
  const int places[3][2] = {{10, 12}, {120, 30}, {60, 100}};
  for (const auto& p : places)
    for (int y = 0; y < 31; ++y)
      for (int x = 0; x < 31; ++x)
        if (object.mask[std::size_t(y) * 31 + x]) img.at(p[0] + x, p[1] + y) = object.pixels[std::size_t(y) * 31 + x];
  TemplateImage unmasked = object;
  unmasked.mask.clear();
  for (std::size_t k = 0; k < unmasked.pixels.size(); ++k)
    if (object.mask[k] == 0) unmasked.pixels[k] = uint8_t(rng()() & 0xFF);  // its own background
  TemplateImage masked = unmasked;
  masked.mask = object.mask;
  for (CpuPath path : cpuPaths()) {
    auto engine = makeCpuEngine(path, 2);
    ASSERT_TRUE(engine->setTemplates({masked, unmasked}).ok());
    MatchParams params;
    params.threshold = 0.95;
    params.maxMatches = 5;
    FrameResult r;
    ASSERT_TRUE(engine->match(img.view(), params, &r).ok());
    std::vector<std::pair<int, int>> found;
    for (const Match& m : r.matches) {
      if (m.templateIndex == 0) found.emplace_back(m.x, m.y);
      EXPECT_NE(m.templateIndex, 1u) << cpuPathName(path) << ": the unmasked template passed at " << m.x << "," << m.y;
    }
    ASSERT_EQ(found.size(), 3u) << cpuPathName(path);
    for (const auto& p : places)
      EXPECT_NE(std::find(found.begin(), found.end(), std::make_pair(p[0], p[1])), found.end())
          << cpuPathName(path) << " missed " << p[0] << "," << p[1];
    ASSERT_TRUE(r.best[0].has_value());
    EXPECT_NEAR(r.best[0]->score, 1.0, 1e-9);
  }
}

TEST(CpuMasks, MaskOfTheWrongSizeIsRefusedNamingTheTemplate) {
  auto engine = makeCpuEngine(CpuPath::Auto);
  TemplateImage good = makeTemplate(4, 4, Fill::Random, "good");
  ASSERT_TRUE(engine->setTemplates({good}).ok());
  for (std::size_t size : {std::size_t(1), std::size_t(15), std::size_t(17), std::size_t(64)}) {
    TemplateImage bad = makeTemplate(4, 4, Fill::Random, "star");
    bad.mask.assign(size, 255);
    Status s = engine->setTemplates({good, bad});
    ASSERT_FALSE(s.ok()) << size;
    EXPECT_NE(s.message().find("template 1 ('star')"), std::string::npos) << s.message();
    EXPECT_NE(s.message().find("mask"), std::string::npos) << s.message();
    ASSERT_EQ(engine->templates().size(), 1u);  // the previous bank stays
  }
}

// Templates with one mask (every angle of a scale on the disc) share their window sums per frame on
// the fast paths: their maps still equal the Reference path's, template by template, frame after
// frame (the shared sums belong to one frame) and for banks where only some templates share.
TEST(CpuMasks, TemplatesSharingAMaskScoreAsAlone) {
  ScaledBank bank;
  TemplateImage other = makeTemplate(11, 11, Fill::Random, "other");
  other.mask = makeMask(11, 11, MaskShape::Ring);  // a mask of its own: not shared
  ASSERT_TRUE(rotateAndScaleTemplates({makeTemplate(12, 12, Fill::Smooth)}, {1.0, 0.75}, angleRange(0, 90, 30), &bank,
                                      RotationSupport::Disc).ok());
  bank.templates.push_back(other);
  std::vector<CpuPath> fast{CpuPath::Direct};
  if (cpuFftAvailable()) fast.push_back(CpuPath::Fft);
  auto reference = makeCpuEngine(CpuPath::Reference, 2);
  ASSERT_TRUE(reference->setTemplates(bank.templates).ok());
  for (CpuPath path : fast) {
    auto engine = makeCpuEngine(path, 2);
    ASSERT_TRUE(engine->setTemplates(bank.templates).ok());
    for (int frame = 0; frame < 2; ++frame) {
      Image img = makeImage(47 + frame * 10, 39, Fill::Random, 3);
      for (uint32_t i = 0; i < bank.templates.size(); ++i) {
        for (Method method : {Method::SqDiff, Method::CCoeffNormed}) {
          std::vector<double> want, got;
          ASSERT_TRUE(reference->scoreMap(img.view(), method, i, &want).ok());
          ASSERT_TRUE(engine->scoreMap(img.view(), method, i, &got).ok());
          ASSERT_EQ(got.size(), want.size());
          for (std::size_t k = 0; k < got.size(); ++k) {
            const double tol = path == CpuPath::Direct ? 0.0 : (method == Method::SqDiff ? 1e-5 * 144 * 65025 : 1e-4);
            ASSERT_NEAR(got[k], want[k], tol) << cpuPathName(path) << " template " << i << " frame " << frame;
          }
        }
      }
      // match() scores every template against one frame's shared sums.
      MatchParams params;
      params.threshold = -1;
      params.maxMatches = 2;
      FrameResult a, b;
      ASSERT_TRUE(reference->match(img.view(), params, &a).ok());
      ASSERT_TRUE(engine->match(img.view(), params, &b).ok());
      ASSERT_EQ(a.matches.size(), b.matches.size());
      for (std::size_t k = 0; k < a.matches.size(); ++k) {
        EXPECT_EQ(a.matches[k].x, b.matches[k].x) << cpuPathName(path) << " match " << k;
        EXPECT_EQ(a.matches[k].y, b.matches[k].y) << cpuPathName(path) << " match " << k;
        EXPECT_NEAR(a.matches[k].score, b.matches[k].score, 1e-9);
      }
    }
  }
}

// The rectangles cover exactly the compared pixels, each once.
TEST(CpuMasks, MaskRectanglesCoverTheComparedPixelsOnce) {
  for (MaskShape shape : {MaskShape::Full, MaskShape::OnePixel, MaskShape::Disc, MaskShape::Ring, MaskShape::Random,
                          MaskShape::Empty}) {
    for (auto size : {std::pair<int, int>{1, 1}, {7, 5}, {16, 16}, {33, 20}}) {
      TemplateImage t = makeTemplate(size.first, size.second, Fill::Random);
      t.mask = makeMask(size.first, size.second, shape);
      std::vector<int> cover(t.pixels.size(), 0);
      for (const MaskRectangle& r : maskRectangles(t))
        for (int y = r.y0; y < r.y1; ++y)
          for (int x = r.x0; x < r.x1; ++x) ++cover[std::size_t(y) * t.width + x];
      for (std::size_t k = 0; k < cover.size(); ++k)
        ASSERT_EQ(cover[k], t.mask[k] ? 1 : 0) << maskShapeName(shape) << " " << size.first << "x" << size.second;
    }
  }
}

}  // namespace
}  // namespace nccmatch::test
