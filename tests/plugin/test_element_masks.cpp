// The element with masks and angles: a transparent PNG template found on a cluttered background
// where the same template without its alpha fails, `masks` files parallel to `templates`, bad
// masks refused naming the file, `angles` finding a turned object and reporting its angle in the
// message and the ROI meta. Every test runs on the CPU backend and again on the CUDA backend
// (skipped where no GPU is usable).
#include <gst/check/gstharness.h>
#include <gst/video/video.h>
#include <gtest/gtest.h>

#include <cmath>

#include "element_fixture.hpp"
#include "nccmatch/rotations.hpp"
#include "plugin_test_support.hpp"

namespace nccmatch::test {
namespace {

constexpr int kSide = 25;

// A round object: its template holds a background of its own in the corners (alpha 0 there).
struct RoundObject {
  TemplateImage withBackground;  // the whole square, corners from some other background
  std::vector<uint8_t> alpha;    // 255 on the disc, 0 in the corners
};

RoundObject roundObject() {
  RoundObject o;
  o.withBackground = makeTemplate(kSide, kSide, Fill::Smooth, "coin");
  const std::vector<uint8_t> disc = makeMask(kSide, kSide, MaskShape::Disc);
  o.alpha = disc;
  for (std::size_t k = 0; k < disc.size(); ++k)
    if (disc[k] == 0) o.withBackground.pixels[k] = uint8_t(rng()() & 0xFF);
  return o;
}

// A random scene with the object's disc pixels drawn at `at` (its corners show the scene).
Image sceneWith(const RoundObject& o, Placed at, int width, int height) {
  Image img = makeImage(width, height, Fill::Random);
  for (int y = 0; y < kSide; ++y)
    for (int x = 0; x < kSide; ++x)
      if (o.alpha[std::size_t(y) * kSide + x]) img.at(at.x + x, at.y + y) = o.withBackground.pixels[std::size_t(y) * kSide + x];
  return img;
}

// Matches of the one buffer pushed: the ROI metas (best first).
std::vector<GstVideoRegionOfInterestMeta*> matchesOf(GstBuffer* out) { return out ? roiMetas(out) : decltype(roiMetas(out)){}; }

TEST_P(Element, TransparentTemplateFoundWhereTheOpaqueOneFails) {
  const RoundObject o = roundObject();
  const std::string transparent = dir_.path("coin.png"), opaque = dir_.path("coin_opaque.png");
  writePngWithAlpha(transparent, o.withBackground, o.alpha);
  writePng(opaque, o.withBackground);
  TemplateImage maskImage = o.withBackground;
  maskImage.pixels = o.alpha;
  const std::string maskFile = dir_.path("coin_mask.pgm");
  writePgm(maskFile, maskImage);

  const FrameLayout layout = makeLayout(GST_VIDEO_FORMAT_GRAY8, 120, 90, 0);
  const Image frame = sceneWith(o, {61, 27}, 120, 90);
  struct Case {
    const char* label;
    std::string templates, masks;
    bool found;
  };
  const Case cases[] = {
      {"alpha channel", transparent, "", true},
      {"no alpha", opaque, "", false},
      {"mask file", opaque, maskFile, true},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.label);
    makeElement();
    g_object_set(element_, "template", c.templates.c_str(), "threshold", 0.95, nullptr);
    if (!c.masks.empty()) g_object_set(element_, "masks", c.masks.c_str(), nullptr);
    start(layout);
    GstBuffer* out = pushPull(makeFrame(layout, frame));
    ASSERT_NE(out, nullptr);
    auto rois = matchesOf(out);
    if (c.found) {
      ASSERT_EQ(rois.size(), 1u);
      EXPECT_EQ(rois[0]->x, 61u);
      EXPECT_EQ(rois[0]->y, 27u);
      EXPECT_NEAR(doubleField(gst_video_region_of_interest_meta_get_param(rois[0], "nccmatch"), "score"), 1.0,
                  tolerance());
    } else {
      EXPECT_TRUE(rois.empty()) << "the opaque template's corners disagree with the scene";
    }
    gst_buffer_unref(out);
    gst_harness_teardown(harness_);
    harness_ = nullptr;
    gst_object_unref(element_);
    element_ = nullptr;
    std::vector<GstMessage*> rest = popMessages(bus_, GST_MESSAGE_ANY);
    unrefMessages(&rest);
  }
}

TEST_P(Element, BadMaskAtStartFailsNamingTheFile) {
  const RoundObject o = roundObject();
  const std::string tpl = dir_.path("coin.png");
  writePng(tpl, o.withBackground);
  const std::string small = dir_.path("small_mask.pgm"), junk = dir_.path("junk_mask.png");
  writePgm(small, makeTemplate(5, 5, Fill::Random));
  writeBytes(junk, {'n', 'o', 'p', 'e'});
  struct Case {
    std::string masks;
    std::vector<std::string> named;
  };
  const Case cases[] = {
      {small, {small, "entry 0", "template 'coin'", "5x5", "25x25"}},
      {junk, {junk, "entry 0"}},
      {"," + small, {"2 entries", "1 template"}},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.masks);
    makeElement();
    g_object_set(element_, "template", tpl.c_str(), "masks", c.masks.c_str(), nullptr);
    EXPECT_EQ(gst_element_set_state(element_, GST_STATE_PAUSED), GST_STATE_CHANGE_FAILURE);
    std::vector<GstMessage*> errors = popMessages(bus_, GST_MESSAGE_ERROR);
    ASSERT_EQ(errors.size(), 1u);
    for (const std::string& n : c.named) EXPECT_NE(messageText(errors[0]).find(n), std::string::npos) << messageText(errors[0]);
    unrefMessages(&errors);
    gst_element_set_state(element_, GST_STATE_NULL);
    gst_object_unref(element_);
    element_ = nullptr;
  }
}

TEST_P(Element, BadMaskWhilePlayingWarnsAndKeepsTheTemplates) {
  const RoundObject o = roundObject();
  const std::string transparent = dir_.path("coin.png"), junk = dir_.path("junk_mask.png");
  writePngWithAlpha(transparent, o.withBackground, o.alpha);
  writeBytes(junk, {'n', 'o', 'p', 'e'});
  makeElement();
  g_object_set(element_, "template", transparent.c_str(), "threshold", 0.95, nullptr);
  const FrameLayout layout = makeLayout(GST_VIDEO_FORMAT_I420, 96, 80, 0);
  start(layout);
  const Image frame = sceneWith(o, {40, 33}, 96, 80);
  g_object_set(element_, "masks", junk.c_str(), nullptr);
  GstBuffer* out = pushPull(makeFrame(layout, frame));
  ASSERT_NE(out, nullptr);
  expectOneWarningContaining(junk);
  auto rois = matchesOf(out);
  ASSERT_EQ(rois.size(), 1u) << "the previous (transparent) template stays";
  EXPECT_EQ(rois[0]->x, 40u);
  gst_buffer_unref(out);
  EXPECT_EQ(stringProperty("masks"), junk);
}

// A template turned by a quarter turn is found with angles 0:360:30 at angle 90 (refined between
// 60 and 120 by their scores), its box the turned template's; the ROI meta and the message say so.
TEST_P(Element, AnglesFindATurnedTemplateAndSayAtWhichAngle) {
  const TemplateImage t = makeTemplate(16, 10, Fill::Smooth, "bar");
  const TemplateImage turned = rotateTemplate(t, 90);
  makeElement();
  g_object_set(element_, "template", writeTemplate("bar.pgm", t).c_str(), "threshold", 0.9, nullptr);
  const FrameLayout layout = makeLayout(GST_VIDEO_FORMAT_NV12, 128, 96, 0);
  start(layout);
  Image frame = makeImage(128, 96, Fill::Random);
  paste(&frame, turned, 50, 30);
  GstBuffer* out = pushPull(makeFrame(layout, frame));
  ASSERT_NE(out, nullptr);
  EXPECT_TRUE(matchesOf(out).empty()) << "at angle 0 alone the turned copy should stay below 0.9";
  gst_buffer_unref(out);

  g_object_set(element_, "angles", "0:360:30", nullptr);
  EXPECT_EQ(stringProperty("angles"), "0,30,60,90,120,150,180,210,240,270,300,330");
  std::vector<GstMessage*> stale = popMessages(bus_, GST_MESSAGE_ELEMENT);
  unrefMessages(&stale);
  for (const char* angles : {"0:360:30", "0:x:30"}) {  // the second is refused: nothing changes
    if (std::string(angles) == "0:x:30") {
      g_object_set(element_, "angles", angles, nullptr);
      expectOneWarningContaining("'0:x:30'");
    }
    out = pushPull(makeFrame(layout, frame));
    ASSERT_NE(out, nullptr);
    auto rois = matchesOf(out);
    ASSERT_EQ(rois.size(), 1u) << angles;
    EXPECT_EQ(rois[0]->x, 50u);
    EXPECT_EQ(rois[0]->y, 30u);
    EXPECT_EQ(rois[0]->w, 10u);
    EXPECT_EQ(rois[0]->h, 16u);
    GstStructure* param = gst_video_region_of_interest_meta_get_param(rois[0], "nccmatch");
    ASSERT_NE(param, nullptr);
    const double metaAngle = doubleField(param, "angle");
    EXPECT_NEAR(metaAngle, 90.0, 15.0);
    EXPECT_NEAR(doubleField(param, "score"), 1.0, tolerance());
    gst_buffer_unref(out);
    std::vector<GstMessage*> messages = popMessages(bus_, GST_MESSAGE_ELEMENT);
    std::vector<const GstStructure*> reports = structuresNamed(messages, "nccmatch");
    ASSERT_EQ(reports.size(), 1u);
    std::vector<const GstStructure*> matches = matchList(reports[0]);
    ASSERT_EQ(matches.size(), 1u);
    EXPECT_EQ(doubleField(matches[0], "angle"), metaAngle);
    EXPECT_EQ(doubleField(matches[0], "scale"), 1.0);
    unrefMessages(&messages);
  }
  EXPECT_EQ(stringProperty("angles"), "0,30,60,90,120,150,180,210,240,270,300,330");
}

// rotation-support=disc: the same turned template found on the inscribed disc, its box the disc's
// square (the template's shorter side) centred on the object; switching back while PLAYING
// restores the rotated template's bounding box.
TEST_P(Element, RotationOnTheDiscFindsTheTurnedTemplate) {
  const TemplateImage t = makeTemplate(16, 10, Fill::Smooth, "bar");
  const TemplateImage turned = rotateTemplate(t, 90);  // 10 wide, 16 high
  makeElement();
  g_object_set(element_, "template", writeTemplate("bar.pgm", t).c_str(), "threshold", 0.9, "angles", "0:360:30",
               "rotation-support", int(RotationSupport::Disc), nullptr);
  const FrameLayout layout = makeLayout(GST_VIDEO_FORMAT_GRAY8, 128, 96, 0);
  start(layout);
  Image frame = makeImage(128, 96, Fill::Random);
  paste(&frame, turned, 50, 30);
  struct Step {
    RotationSupport support;
    guint x, y, w, h;
  };
  const Step steps[] = {{RotationSupport::Disc, 50, 33, 10, 10}, {RotationSupport::Rectangle, 50, 30, 10, 16}};
  for (const Step& s : steps) {
    g_object_set(element_, "rotation-support", int(s.support), nullptr);
    GstBuffer* out = pushPull(makeFrame(layout, frame));
    ASSERT_NE(out, nullptr);
    auto rois = matchesOf(out);
    ASSERT_EQ(rois.size(), 1u);
    EXPECT_EQ(rois[0]->x, s.x);
    EXPECT_EQ(rois[0]->y, s.y);
    EXPECT_EQ(rois[0]->w, s.w);
    EXPECT_EQ(rois[0]->h, s.h);
    GstStructure* param = gst_video_region_of_interest_meta_get_param(rois[0], "nccmatch");
    ASSERT_NE(param, nullptr);
    EXPECT_NEAR(doubleField(param, "angle"), 90.0, 15.0);
    EXPECT_NEAR(doubleField(param, "score"), 1.0, tolerance());
    gst_buffer_unref(out);
  }
  int support = -1;
  g_object_get(element_, "rotation-support", &support, nullptr);
  EXPECT_EQ(support, int(RotationSupport::Rectangle));
}

NCCMATCH_INSTANTIATE_ELEMENT_TESTS();

}  // namespace
}  // namespace nccmatch::test
