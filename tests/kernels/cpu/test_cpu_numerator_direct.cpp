// The Direct numerator: exact sums of I*T per map row against plain loops, and the Direct engine
// path against the Reference engine (identical maps for all six methods, identical matches).
#include <gtest/gtest.h>

#include "cpu/cpu_numerator_direct.hpp"
#include "cpu/cpu_window_sums.hpp"
#include "nccmatch/engine.hpp"
#include "test_support.hpp"

namespace nccmatch::test {
namespace {

class DirectNumerator : public ::testing::TestWithParam<ScoreMapCase> {};

TEST_P(DirectNumerator, RowSumsAreExact) {
  const ScoreMapCase c = GetParam();
  Image img = makeImage(c.frameW, c.frameH, c.frameFill, c.padding);
  TemplateImage t = makeTemplate(c.tplW, c.tplH, c.tplFill);
  const int mapW = c.frameW - c.tplW + 1, mapH = c.frameH - c.tplH + 1;
  std::vector<int32_t> scratch(mapW);
  std::vector<int64_t> cross(mapW);
  for (int y = 0; y < mapH; ++y) {
    directCrossRow(img.bytes.data(), img.stride, mapW, y, t, scratch.data(), cross.data());
    for (int x = 0; x < mapW; ++x) {
      int64_t want = 0;
      for (int ty = 0; ty < t.height; ++ty)
        for (int tx = 0; tx < t.width; ++tx)
          want += int64_t(img.at(x + tx, y + ty)) * t.pixels[std::size_t(ty) * t.width + tx];
      ASSERT_EQ(cross[x], want) << "at " << x << "," << y << " " << c;
      ASSERT_EQ(directCrossAt(img.bytes.data(), img.stride, x, y, t), want) << "at " << x << "," << y;
    }
  }
}

TEST_P(DirectNumerator, EngineMapsEqualReference) {
  const ScoreMapCase c = GetParam();
  Image img = makeImage(c.frameW, c.frameH, c.frameFill, c.padding);
  TemplateImage t = makeTemplate(c.tplW, c.tplH, c.tplFill);
  auto reference = makeCpuEngine(CpuPath::Reference);
  auto direct = makeCpuEngine(CpuPath::Direct);
  ASSERT_TRUE(reference->setTemplates({t}).ok());
  ASSERT_TRUE(direct->setTemplates({t}).ok());
  for (int m = 0; m <= 5; ++m) {
    std::vector<double> want, got;
    ASSERT_TRUE(reference->scoreMap(img.view(), Method(m), 0, &want).ok());
    Status s = direct->scoreMap(img.view(), Method(m), 0, &got);
    ASSERT_TRUE(s.ok()) << s.message();
    ASSERT_EQ(got, want) << methodName(Method(m)) << " " << c;
  }
  // A spot check against the definition itself, not only against the other engine.
  std::vector<double> got;
  ASSERT_TRUE(direct->scoreMap(img.view(), Method::CCoeffNormed, 0, &got).ok());
  const int mapW = c.frameW - c.tplW + 1, mapH = c.frameH - c.tplH + 1;
  EXPECT_NEAR(got.back(), bruteForceScore(img, t, Method::CCoeffNormed, mapW - 1, mapH - 1), 1e-9);
}

INSTANTIATE_TEST_SUITE_P(Sizes, DirectNumerator, ::testing::Values(
    //         frame      template  pad  frame fill     template fill
    ScoreMapCase{1, 1,      1, 1,     0,   Fill::Random, Fill::Random},
    ScoreMapCase{9, 7,      1, 1,     3,   Fill::Random, Fill::Random},
    ScoreMapCase{13, 11,    13, 11,   0,   Fill::Random, Fill::Random},   // template == frame
    ScoreMapCase{70, 9,     3, 5,     1,   Fill::Random, Fill::Random},   // width % 4 == 3 taps left over
    ScoreMapCase{67, 33,    33, 8,    7,   Fill::Binary, Fill::Binary},   // 255*255 products everywhere
    ScoreMapCase{97, 41,    17, 13,   5,   Fill::Smooth, Fill::Smooth},
    ScoreMapCase{40, 30,    8, 8,     0,   Fill::Flat,   Fill::Random},   // every window flat
    ScoreMapCase{40, 30,    6, 7,     2,   Fill::Random, Fill::Flat},     // flat template
    ScoreMapCase{1, 37,     1, 5,     0,   Fill::Random, Fill::Random},
    ScoreMapCase{300, 140,  260, 130, 0,   Fill::Binary, Fill::Binary})); // two int32 flushes (127 rows + 3)

// The VNNI kernel (full 64-window blocks, the masked block at the right edge) against the plain
// exact rows, on every row of frames whose widths put the edge anywhere in a block.
struct VnniCase {
  int frameW, frameH, tplW, tplH;
  std::size_t padding;
  Fill frameFill, tplFill;
  int frameValue, tplValue;  // for Fill::Flat: the extremes of I and of T - 128
};

class DirectVnni : public ::testing::TestWithParam<VnniCase> {};

TEST_P(DirectVnni, RowsEqualThePlainKernel) {
  const VnniCase c = GetParam();
  Image img = makeImage(c.frameW, c.frameH, c.frameFill, c.padding, uint8_t(c.frameValue));
  TemplateImage t = makeTemplate(c.tplW, c.tplH, c.tplFill, "t", uint8_t(c.tplValue));
  const DirectTemplate packed = packDirectTemplate(t);
  if (!directVnniUsable(packed)) GTEST_SKIP() << "this CPU has no AVX-512 VNNI (the plain kernel runs instead)";
  const int mapW = c.frameW - c.tplW + 1, mapH = c.frameH - c.tplH + 1;
  std::vector<int32_t> scratch(mapW);
  std::vector<int64_t> want(mapW), got(mapW), s1(mapW), s2(mapW);
  WindowSumRows windows;
  windows.start(img.bytes.data(), img.stride, c.tplW, c.tplH, 0, mapW, 0);
  for (int y = 0; y < mapH; ++y) {
    if (y > 0) windows.advance();
    windows.sums(s1.data(), s2.data());
    directCrossRow(img.bytes.data(), img.stride, mapW, y, t, scratch.data(), want.data());
    directCrossRowVnni(img.bytes.data(), img.stride, c.frameW, mapW, y, t, packed, s1.data(), scratch.data(),
                       got.data());
    ASSERT_EQ(got, want) << "row " << y << " of " << describe(c.frameW, c.frameH, c.padding) << " template "
                         << c.tplW << "x" << c.tplH;
  }
}

INSTANTIATE_TEST_SUITE_P(Sizes, DirectVnni, ::testing::Values(
    //       frame       template   pad  frame fill    template fill  flat values
    VnniCase{1, 1,       1, 1,      0,   Fill::Random, Fill::Random,  0, 0},
    VnniCase{64, 3,      1, 1,      0,   Fill::Random, Fill::Random,  0, 0},     // one block, no edge room
    VnniCase{130, 9,     3, 5,      5,   Fill::Random, Fill::Random,  0, 0},     // width % 4 == 3
    VnniCase{200, 20,    8, 8,      0,   Fill::Random, Fill::Random,  0, 0},
    VnniCase{261, 30,    17, 13,    3,   Fill::Smooth, Fill::Random,  0, 0},
    VnniCase{333, 40,    64, 33,    1,   Fill::Binary, Fill::Binary,  0, 0},
    VnniCase{190, 12,    9, 7,      0,   Fill::Flat,   Fill::Flat,    255, 0},   // I * (T - 128) = -32640
    VnniCase{190, 12,    9, 7,      0,   Fill::Flat,   Fill::Flat,    255, 255}, // I * (T - 128) = 32385
    // The largest template the kernel takes (65792 pixels), at the int32 limit: 255 * -128 each.
    VnniCase{300, 260,   257, 256,  0,   Fill::Flat,   Fill::Flat,    255, 0}));

TEST(DirectVnni, TooLargeTemplatesAreLeftToThePlainKernel) {
  EXPECT_FALSE(directVnniUsable(packDirectTemplate(makeTemplate(257, 257, Fill::Random))));
}

// Taller than one int32 flush (rows * width * 255^2 must stay below 2^31).
TEST(DirectNumerator, TallWideTemplatesFlushBeforeOverflow) {
  Image img = makeImage(300, 260, Fill::Binary, 4);
  TemplateImage t = makeTemplate(290, 250, Fill::Binary);
  for (auto& v : t.pixels) v = 255;
  for (auto& v : img.bytes) v = 255;
  const int mapW = 11;
  std::vector<int32_t> scratch(mapW);
  std::vector<int64_t> cross(mapW);
  directCrossRow(img.bytes.data(), img.stride, mapW, 3, t, scratch.data(), cross.data());
  for (int x = 0; x < mapW; ++x) ASSERT_EQ(cross[x], int64_t(290) * 250 * 255 * 255);
}

TEST(DirectEngine, MatchesEqualReference) {
  Image img = makeImage(203, 117, Fill::Random, 5);
  TemplateImage a = makeTemplate(16, 12, Fill::Random, "a");
  TemplateImage b = makeTemplate(9, 21, Fill::Random, "b");
  TemplateImage c = makeTemplate(1, 1, Fill::Random, "c");
  paste(&img, a, 17, 33);
  paste(&img, a, 150, 90);
  paste(&img, b, 70, 5);
  auto reference = makeCpuEngine(CpuPath::Reference);
  auto direct = makeCpuEngine(CpuPath::Direct, 3);
  ASSERT_TRUE(reference->setTemplates({a, b, c}).ok());
  ASSERT_TRUE(direct->setTemplates({a, b, c}).ok());
  for (int m = 0; m <= 5; ++m) {
    MatchParams p;
    p.method = Method(m);
    p.threshold = m == 0 ? 0.0 : (m == 1 ? 1e-9 : 0.99);
    p.maxMatches = 5;
    FrameResult want, got;
    ASSERT_TRUE(reference->match(img.view(), p, &want).ok());
    ASSERT_TRUE(direct->match(img.view(), p, &got).ok());
    ASSERT_EQ(got.matches.size(), want.matches.size()) << methodName(p.method);
    for (std::size_t k = 0; k < want.matches.size(); ++k) {
      EXPECT_EQ(got.matches[k].x, want.matches[k].x);
      EXPECT_EQ(got.matches[k].y, want.matches[k].y);
      EXPECT_EQ(got.matches[k].score, want.matches[k].score);
      EXPECT_EQ(got.matches[k].subX, want.matches[k].subX);
    }
    for (std::size_t i = 0; i < want.best.size(); ++i) {
      ASSERT_TRUE(got.best[i] && want.best[i]);
      EXPECT_EQ(got.best[i]->x, want.best[i]->x);
      EXPECT_EQ(got.best[i]->y, want.best[i]->y);
    }
  }
}

}  // namespace
}  // namespace nccmatch::test
