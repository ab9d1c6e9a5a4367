// Rotated template banks: rotateTemplate (exact quarter turns, the rotated support as the mask),
// angle lists, masked resizing, and scenes with objects drawn at known angles and scales (rendered
// from a smooth function by area sampling, not the matcher's bilinear rotation) on noisy textured
// backgrounds: found at the right place, angle and scale, one match per object across all variants.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>

#include "nccmatch/engine.hpp"
#include "nccmatch/rotations.hpp"
#include "rotation_scene.hpp"
#include "test_support.hpp"

namespace nccmatch::test {
namespace {

TEST(RotateTemplate, QuarterTurnsArePixelPermutations) {
  for (auto size : {std::pair<int, int>{1, 1}, {4, 3}, {7, 10}, {16, 16}}) {
    const int w = size.first, h = size.second;
    TemplateImage t = makeTemplate(w, h, Fill::Random);
    auto px = [&](int x, int y) { return t.pixels[std::size_t(y) * w + x]; };
    EXPECT_EQ(rotateTemplate(t, 0).pixels, t.pixels);
    EXPECT_EQ(rotateTemplate(t, 360).pixels, t.pixels);
    EXPECT_EQ(rotateTemplate(t, -720).pixels, t.pixels);
    for (int quarter : {1, 2, 3, -1}) {
      TemplateImage r = rotateTemplate(t, 90.0 * quarter);
      const int q = (quarter + 4) % 4;
      ASSERT_EQ(r.width, q % 2 ? h : w) << w << "x" << h << " " << quarter;
      ASSERT_EQ(r.height, q % 2 ? w : h);
      EXPECT_TRUE(r.mask.empty()) << "a quarter turn ignores nothing";
      for (int v = 0; v < r.height; ++v) {
        for (int u = 0; u < r.width; ++u) {
          // Counter-clockwise on screen: a quarter turn takes the top-right corner to the top-left.
          const uint8_t want = q == 1 ? px(w - 1 - v, u) : q == 2 ? px(w - 1 - u, h - 1 - v) : px(v, h - 1 - u);
          ASSERT_EQ(r.pixels[std::size_t(v) * r.width + u], want) << w << "x" << h << " q" << q << " at " << u << "," << v;
        }
      }
    }
  }
}

TEST(RotateTemplate, OtherAnglesMaskTheCornersTheRotationBringsIn) {
  TemplateImage t = makeTemplate(64, 64, Fill::Smooth);
  TemplateImage r = rotateTemplate(t, 45);
  EXPECT_EQ(r.width, 91);
  EXPECT_EQ(r.height, 91);
  ASSERT_EQ(r.mask.size(), r.pixels.size());
  EXPECT_EQ(r.mask[0], 0);                                        // a corner: outside the template
  EXPECT_NE(r.mask[std::size_t(45) * 91 + 45], 0);                 // the centre
  EXPECT_NE(r.mask[std::size_t(45) * 91 + 1], 0);                  // the rotated square's left corner
  std::size_t compared = 0;
  for (uint8_t m : r.mask) compared += m != 0;
  // The rotated square covers 64^2 pixels of the 91^2 box, less a rim of about its perimeter.
  EXPECT_GT(compared, 3700u);
  EXPECT_LT(compared, 4200u);
  // Small angles: the same size, a thin rim ignored.
  TemplateImage small = rotateTemplate(t, 1);
  EXPECT_EQ(small.width, 66);
}

TEST(RotateTemplate, IgnoredPixelsStayIgnoredAndNeverBleed) {
  TemplateImage t = makeTemplate(21, 21, Fill::Smooth);
  t.mask = makeMask(21, 21, MaskShape::Ring);
  TemplateImage other = t;
  for (std::size_t k = 0; k < t.pixels.size(); ++k)
    if (!t.mask[k]) other.pixels[k] = uint8_t(255 - t.pixels[k]);
  for (double angle : {90.0, 30.0, -17.5}) {
    TemplateImage a = rotateTemplate(t, angle), b = rotateTemplate(other, angle);
    ASSERT_EQ(a.mask, b.mask) << angle;
    for (std::size_t k = 0; k < a.pixels.size(); ++k)
      if (a.mask[k]) {
        ASSERT_EQ(a.pixels[k], b.pixels[k]) << angle << " pixel " << k;
      }
    // The ring's hole stays a hole: the centre is ignored.
    EXPECT_EQ(a.mask[std::size_t(a.height / 2) * a.width + a.width / 2], 0) << angle;
  }
  // Resizing a masked template: the same, ignored pixels never weigh in.
  for (int side : {10, 9, 35}) {
    TemplateImage a = resizeTemplate(t, side, side), b = resizeTemplate(other, side, side);
    ASSERT_EQ(a.mask, b.mask) << side;
    for (std::size_t k = 0; k < a.pixels.size(); ++k)
      if (a.mask[k]) {
        ASSERT_EQ(a.pixels[k], b.pixels[k]) << side << " pixel " << k;
      }
  }
}

// On the disc: one size and one mask for every angle of an unmasked template; 0 degrees is the
// centred square, a quarter turn its exact permutation.
TEST(RotateTemplateOnDisc, EveryAngleHasTheSameSizeAndMask) {
  for (auto size : {std::pair<int, int>{1, 1}, {2, 2}, {9, 9}, {16, 16}, {21, 13}}) {
    const int w = size.first, h = size.second, side = std::min(w, h);
    TemplateImage t = makeTemplate(w, h, Fill::Smooth);
    const TemplateImage zero = rotateTemplateOnDisc(t, 0);
    ASSERT_EQ(zero.width, side);
    ASSERT_EQ(zero.height, side);
    ASSERT_EQ(zero.mask.size(), zero.pixels.size());
    std::size_t compared = 0;
    for (uint8_t m : zero.mask) compared += m != 0;
    EXPECT_GT(compared, 0u);
    if (side >= 9) {
      EXPECT_LT(compared, zero.pixels.size()) << "the corners are outside the disc";
    }
    for (double angle : {0.0, 5.0, 33.3, 90.0, 180.0, 271.5, -45.0}) {
      const TemplateImage r = rotateTemplateOnDisc(t, angle);
      ASSERT_EQ(r.width, side) << angle;
      ASSERT_EQ(r.height, side) << angle;
      EXPECT_EQ(r.mask, zero.mask) << w << "x" << h << " at " << angle;
    }
    if (w == h) {
      for (int y = 0; y < side; ++y)
        for (int x = 0; x < side; ++x)
          if (zero.mask[std::size_t(y) * side + x]) {
            ASSERT_EQ(zero.pixels[std::size_t(y) * side + x], t.pixels[std::size_t(y) * w + x]);
          }
      const TemplateImage quarter = rotateTemplateOnDisc(t, 90);
      for (int v = 0; v < side; ++v)
        for (int u = 0; u < side; ++u)
          if (quarter.mask[std::size_t(v) * side + u]) {
            ASSERT_EQ(quarter.pixels[std::size_t(v) * side + u], t.pixels[std::size_t(u) * w + (w - 1 - v)]);
          }
    }
  }
}

TEST(AngleRange, ListsInclusiveRangesWithoutRepeatsModulo360) {
  EXPECT_EQ(angleRange(0, 360, 5).size(), 72u);
  EXPECT_EQ(angleRange(0, 360, 5).back(), 355.0);
  EXPECT_EQ(angleRange(-10, 10, 5), (std::vector<double>{-10, -5, 0, 5, 10}));
  EXPECT_EQ(angleRange(0, 1, 0.3), (std::vector<double>{0, 0.3, 0.6, 0.8999999999999999}));
  EXPECT_EQ(angleRange(7, 7, 1), (std::vector<double>{7}));
  EXPECT_EQ(angleRange(-180, 540, 90).size(), 4u);
  EXPECT_TRUE(angleRange(0, 10, 0).empty());
  EXPECT_TRUE(angleRange(0, 10, -1).empty());
  EXPECT_TRUE(angleRange(10, 0, 1).empty());
  EXPECT_TRUE(angleRange(0, NAN, 1).empty());
  EXPECT_TRUE(angleRange(0, 360, 0.01).empty());  // 36000 angles: past kMaxTemplateAngles
}

TEST(DistinctAngles, DropsRepeatsModulo360KeepingTheFirst) {
  EXPECT_EQ(distinctAngles({0, 360, -360, 720.0000000001, 10, 370, 5}), (std::vector<double>{0, 10, 5}));
  EXPECT_EQ(distinctAngles({359.9999999999, 0}), (std::vector<double>{359.9999999999}));
  EXPECT_EQ(distinctAngles({-90, 270, 90}), (std::vector<double>{-90, 90}));
  EXPECT_EQ(distinctAngles({}), std::vector<double>{});
  // 1.43 million steps of 0.1 degree: 3600 distinct angles, the rest repeats (looked up in a set,
  // not compared with every earlier angle, so this takes milliseconds).
  const std::vector<double> tenths = angleRange(0, 143000, 0.1);
  ASSERT_EQ(tenths.size(), 3600u);
  EXPECT_EQ(tenths[1], 0.1);
  EXPECT_EQ(angleRange(0, 3600 * 399, 25).size(), 72u);
}

TEST(RotateAndScale, RefusesBadAnglesAndNamesTheVariantTooLarge) {
  TemplateImage t = makeTemplate(8, 8, Fill::Random, "key");
  ScaledBank bank;
  EXPECT_FALSE(rotateAndScaleTemplates({t}, {1.0}, {}, &bank).ok());
  Status s = rotateAndScaleTemplates({t}, {1.0}, {0, NAN}, &bank);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("angle"), std::string::npos) << s.message();
  EXPECT_FALSE(rotateAndScaleTemplates({t}, {1.0}, {4000}, &bank).ok());
  // 16384 x 300 turned by atan(300 / 16384) spans sqrt(16384^2 + 300^2) > 16384 pixels.
  TemplateImage wide = makeTemplate(16384, 300, Fill::Flat, "wide");
  s = rotateAndScaleTemplates({t, wide}, {1.0}, {0, 1.05}, &bank);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("template 1 ('wide')"), std::string::npos) << s.message();
  EXPECT_NE(s.message().find("angle 1.05"), std::string::npos) << s.message();
  // Entries: original-major, then scale, then angle; 360 repeats 0 and is skipped.
  ASSERT_TRUE(rotateAndScaleTemplates({t, t}, {1.0, 2.0}, {0, 30, 360}, &bank).ok());
  ASSERT_EQ(bank.templates.size(), 8u);
  EXPECT_EQ(bank.original, (std::vector<uint32_t>{0, 0, 0, 0, 1, 1, 1, 1}));
  EXPECT_EQ(bank.scale, (std::vector<double>{1, 1, 2, 2, 1, 1, 2, 2}));
  EXPECT_EQ(bank.angle, (std::vector<double>{0, 30, 0, 30, 0, 30, 0, 30}));
}

// A hand-made engine result: the angle is the vertex of the parabola through the best scores of
// the neighbouring angles at the same place; it wraps around a full circle; it stays unrefined
// where a neighbour reported nothing near.
TEST(MergeAngles, RefinesBetweenNeighbouringAnglesAtTheSamePlace) {
  ScaledBank bank;
  bank.originals = 1;
  const std::vector<double> angles = angleRange(0, 360, 10);
  for (double a : angles) {
    bank.templates.push_back(makeTemplate(10, 10, Fill::Random));
    bank.original.push_back(0), bank.scale.push_back(1.0), bank.angle.push_back(a);
  }
  auto match = [](uint32_t entry, int x, int y, double score) {
    Match m;
    m.templateIndex = entry, m.x = x, m.y = y, m.subX = x, m.subY = y, m.width = m.height = 10, m.score = score;
    return m;
  };
  MatchParams params;
  params.maxMatches = 5;
  params.threshold = 0.5;
  struct Case {
    uint32_t peak, left, right;
    double leftScore, rightScore;
    int rightDx;  // where the right neighbour's match lies, relative to the peak
    double want;
  };
  const Case cases[] = {
      {2, 1, 3, 0.8, 0.8, 0, 20.0},          // symmetric: the step's angle
      {2, 1, 3, 0.7, 0.8, 1, 20 + 5 * (0.8 - 0.7) / (2 * 0.9 - 0.7 - 0.8)},  // towards the better side
      {0, 35, 1, 0.85, 0.7, 0, 360 - 5 * (0.85 - 0.7) / (2 * 0.9 - 0.85 - 0.7)},  // wraps below 0
      {2, 1, 3, 0.7, 0.8, 3, 20.0},          // the right neighbour's match is 3 px away: unrefined
  };
  for (const Case& c : cases) {
    FrameResult raw;
    raw.best.assign(bank.templates.size(), std::nullopt);
    raw.matches = {match(c.peak, 40, 30, 0.9), match(c.left, 40, 30, c.leftScore),
                   match(c.right, 40 + c.rightDx, 30, c.rightScore)};
    std::sort(raw.matches.begin(), raw.matches.end(),
              [](const Match& a, const Match& b) { return a.templateIndex < b.templateIndex; });
    const FrameResult merged = mergeScaledResult(bank, raw, params);
    ASSERT_EQ(merged.matches.size(), 1u) << "one match across the variants (NMS)";
    EXPECT_NEAR(merged.matches[0].angle, c.want, 1e-9) << "peak at entry " << c.peak;
  }
}

class RotatedScene : public ::testing::TestWithParam<RotationSupport> {};

TEST_P(RotatedScene, ObjectsFoundAtTheirPlaceAngleAndScale) {
  const std::vector<Placed> objects{{70, 75, 23, 1.0}, {165, 125, 232, 1.1}, {60, 160, -97, 0.9}};
  const Image img = rotatedScene(240, 200, objects);

  const std::vector<double> angles = angleRange(0, 360, 10), scales{0.9, 1.0, 1.1};
  ScaledBank bank;
  ASSERT_TRUE(rotateAndScaleTemplates({objectTemplate()}, scales, angles, &bank, GetParam()).ok());
  ASSERT_EQ(bank.templates.size(), 108u);
  auto engine = makeCpuEngine(CpuPath::Auto, 2);
  ASSERT_TRUE(engine->setTemplates(bank.templates).ok());
  MatchParams params;
  // The objects score above 0.9; the clutter's peaks reach about 0.66 (at 0.6 a fourth, spurious
  // match came out for about one seed in ten).
  params.threshold = 0.7;
  params.maxMatches = 6;
  FrameResult raw;
  ASSERT_TRUE(engine->match(img.view(), params, &raw).ok());
  const FrameResult result = mergeScaledResult(bank, raw, params);
  // One match per object across all 108 variants (NMS across variants), each where it was drawn.
  ASSERT_EQ(result.matches.size(), objects.size());
  double refinedTotal = 0, stepTotal = 0;
  for (const Placed& o : objects) {
    const Match* found = nullptr;
    for (const Match& m : result.matches) {
      const double cx = m.subX + (m.width - 1) / 2.0, cy = m.subY + (m.height - 1) / 2.0;
      if (std::fabs(cx - o.cx) <= 1.0 && std::fabs(cy - o.cy) <= 1.0) found = &m;
    }
    ASSERT_NE(found, nullptr) << "no match centred within 1 px of " << o.cx << "," << o.cy;
    const double stepAngle = std::round(found->angle / 10) * 10;
    std::printf("object at %g,%g angle %g scale %g: score %.4f, angle %.2f (step %g), scale %g\n", o.cx, o.cy,
                o.angle, o.scale, found->score, found->angle, stepAngle, found->scale);
    EXPECT_EQ(found->scale, o.scale);
    EXPECT_LE(angleError(stepAngle, o.angle), 5.0);   // the nearest angle of the list
    EXPECT_LE(angleError(found->angle, o.angle), 3.0);  // refined between neighbours
    EXPECT_GE(found->angle, 0.0);
    EXPECT_LT(found->angle, 360.0);
    refinedTotal += angleError(found->angle, o.angle);
    stepTotal += angleError(stepAngle, o.angle);
  }
  EXPECT_LT(refinedTotal, stepTotal) << "refinement should bring the angles closer on the whole";
}

INSTANTIATE_TEST_SUITE_P(Supports, RotatedScene, ::testing::Values(RotationSupport::Rectangle, RotationSupport::Disc),
                         [](const ::testing::TestParamInfo<RotationSupport>& info) {
                           return info.param == RotationSupport::Disc ? "disc" : "rectangle";
                         });

}  // namespace
}  // namespace nccmatch::test
