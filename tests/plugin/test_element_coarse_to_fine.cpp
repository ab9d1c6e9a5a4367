// The element's `pyramid-levels` (the coarse-to-fine search of the scales x angles variants): a
// turned object found at the same place, box, angle and score as with every variant searched at
// full size, switching while PLAYING (and in mode=track, which searches at full size); variants too small for the levels refused naming them (an
// error at start, a warning keeping the previous templates while PLAYING); an unnormalised method
// stops the stream with an error saying why. CPU backend, and CUDA where a GPU is usable.
#include <gst/check/gstharness.h>
#include <gst/video/video.h>
#include <gtest/gtest.h>

#include "element_fixture.hpp"
#include "nccmatch/rotations.hpp"
#include "plugin_test_support.hpp"

namespace nccmatch::test {
namespace {

// A random frame with the template turned by `angle` drawn on it (its compared pixels only) with
// its bounding box's corner at (x, y).
Image turnedScene(const TemplateImage& t, double angle, int x, int y, int width, int height) {
  const TemplateImage turned = rotateTemplate(t, angle);
  Image img = makeImage(width, height, Fill::Random);
  for (int v = 0; v < turned.height; ++v)
    for (int u = 0; u < turned.width; ++u) {
      const std::size_t k = std::size_t(v) * turned.width + u;
      if (turned.mask.empty() || turned.mask[k]) img.at(x + u, y + v) = turned.pixels[k];
    }
  return img;
}

struct Found {
  guint x, y, w, h;
  double angle, score;
};

// The one match of the buffer pushed (a test failure when there is not exactly one).
std::optional<Found> onlyMatch(GstBuffer* out) {
  if (out == nullptr) return std::nullopt;
  auto rois = roiMetas(out);
  EXPECT_EQ(rois.size(), 1u);
  std::optional<Found> found;
  if (rois.size() == 1) {
    GstStructure* param = gst_video_region_of_interest_meta_get_param(rois[0], "nccmatch");
    EXPECT_NE(param, nullptr);
    if (param != nullptr)
      found = Found{rois[0]->x, rois[0]->y, rois[0]->w, rois[0]->h, doubleField(param, "angle"), doubleField(param, "score")};
  }
  gst_buffer_unref(out);
  return found;
}

TEST_P(Element, PyramidLevelsFindTheTurnedObjectAsTheFullSearchDoes) {
  const TemplateImage t = makeTemplate(32, 32, Fill::Smooth, "plate");
  const TemplateImage turned = rotateTemplate(t, 60);
  makeElement();
  g_object_set(element_, "template", writeTemplate("plate.pgm", t).c_str(), "threshold", 0.9, "angles", "0:360:15",
               "scales", "0.9,1,1.1", "pyramid-levels", 1u, nullptr);
  guint levels = 99;
  g_object_get(element_, "pyramid-levels", &levels, nullptr);
  EXPECT_EQ(levels, 1u);
  const FrameLayout layout = makeLayout(GST_VIDEO_FORMAT_I420, 200, 150, 0);
  start(layout);
  const Image frame = turnedScene(t, 60, 77, 41, 200, 150);
  std::optional<Found> first;
  for (guint l : {1u, 0u, 2u}) {  // set while PLAYING: the bank is made again for the next frame
    SCOPED_TRACE("pyramid-levels " + std::to_string(l));
    g_object_set(element_, "pyramid-levels", l, nullptr);
    const std::optional<Found> found = onlyMatch(pushPull(makeFrame(layout, frame)));
    ASSERT_TRUE(found.has_value());
    EXPECT_EQ(found->x, 77u);
    EXPECT_EQ(found->y, 41u);
    EXPECT_EQ(found->w, guint(turned.width));
    EXPECT_EQ(found->h, guint(turned.height));
    EXPECT_NEAR(found->angle, 60.0, 7.5);
    EXPECT_NEAR(found->score, 1.0, tolerance());
    // The same match at every level; the angle alike at levels 1 and 2 (at level 0 it may stay at
    // its step where a neighbouring angle's best lies elsewhere in the frame; the coarse-to-fine
    // search scores the neighbours at this place and refines it).
    if (!first) first = found;
    EXPECT_EQ(found->score, first->score);
    if (l != 0) {
      EXPECT_EQ(found->angle, first->angle);
    }
  }
  // mode=track searches every variant at full size (the tracker's bank) whatever pyramid-levels
  // says, and back in detect mode the coarse-to-fine search is made again.
  for (int mode : {1, 0}) {
    SCOPED_TRACE("mode " + std::to_string(mode));
    g_object_set(element_, "pyramid-levels", 1u, "mode", mode, nullptr);
    const std::optional<Found> found = onlyMatch(pushPull(makeFrame(layout, frame)));
    ASSERT_TRUE(found.has_value());
    EXPECT_EQ(found->x, 77u);
    EXPECT_EQ(found->y, 41u);
    EXPECT_EQ(found->w, guint(turned.width));
    EXPECT_NEAR(found->angle, 60.0, 7.5);
    if (mode == 0) {
      EXPECT_EQ(found->angle, first->angle);
    }
  }
  std::vector<GstMessage*> warnings = popMessages(bus_, GST_MESSAGE_WARNING);
  EXPECT_TRUE(warnings.empty());
  unrefMessages(&warnings);
}

TEST_P(Element, PyramidLevelsTooDeepForTheTemplatesAreRefusedNamingThem) {
  const TemplateImage t = makeTemplate(14, 14, Fill::Smooth, "stamp");
  // At start: an error naming the variant and the level.
  makeElement();
  g_object_set(element_, "template", writeTemplate("stamp.pgm", t).c_str(), "pyramid-levels", 2u, nullptr);
  EXPECT_EQ(gst_element_set_state(element_, GST_STATE_PAUSED), GST_STATE_CHANGE_FAILURE);
  std::vector<GstMessage*> errors = popMessages(bus_, GST_MESSAGE_ERROR);
  ASSERT_EQ(errors.size(), 1u);
  EXPECT_NE(messageText(errors[0]).find("template 0 ('stamp')"), std::string::npos) << messageText(errors[0]);
  EXPECT_NE(messageText(errors[0]).find("pyramid level 2"), std::string::npos) << messageText(errors[0]);
  unrefMessages(&errors);
  gst_element_set_state(element_, GST_STATE_NULL);
  gst_object_unref(element_);
  element_ = nullptr;

  // While PLAYING: a warning, and the search goes on with the levels it had.
  makeElement();
  g_object_set(element_, "template", writeTemplate("stamp.pgm", t).c_str(), "threshold", 0.9, "pyramid-levels", 1u,
               nullptr);
  const FrameLayout layout = makeLayout(GST_VIDEO_FORMAT_GRAY8, 96, 64, 0);
  start(layout);
  Image frame = makeImage(96, 64, Fill::Random);
  paste(&frame, t, 40, 20);
  g_object_set(element_, "pyramid-levels", 2u, nullptr);
  std::optional<Found> found = onlyMatch(pushPull(makeFrame(layout, frame)));
  expectOneWarningContaining("pyramid level 2");
  ASSERT_TRUE(found.has_value());
  EXPECT_EQ(found->x, 40u);
  EXPECT_EQ(found->y, 20u);
  found = onlyMatch(pushPull(makeFrame(layout, frame)));
  ASSERT_TRUE(found.has_value());
  std::vector<GstMessage*> again = popMessages(bus_, GST_MESSAGE_WARNING);
  EXPECT_TRUE(again.empty()) << "warned once, not per frame";
  unrefMessages(&again);
}

TEST_P(Element, PyramidLevelsWithAnUnnormalisedMethodStopWithAnErrorSayingWhy) {
  const TemplateImage t = makeTemplate(16, 16, Fill::Smooth, "tag");
  makeElement();
  g_object_set(element_, "template", writeTemplate("tag.pgm", t).c_str(), "method", 2 /* ccorr */, "pyramid-levels", 1u,
               nullptr);
  const FrameLayout layout = makeLayout(GST_VIDEO_FORMAT_GRAY8, 64, 48, 0);
  start(layout);
  EXPECT_EQ(pushForFlow(harness_, makeFrame(layout, makeImage(64, 48, Fill::Random))), GST_FLOW_ERROR);
  std::vector<GstMessage*> errors = popMessages(bus_, GST_MESSAGE_ERROR);
  ASSERT_EQ(errors.size(), 1u);
  EXPECT_NE(messageText(errors[0]).find("normalised method"), std::string::npos) << messageText(errors[0]);
  EXPECT_NE(messageText(errors[0]).find("ccorr"), std::string::npos) << messageText(errors[0]);
  unrefMessages(&errors);
}

NCCMATCH_INSTANTIATE_ELEMENT_TESTS();

}  // namespace
}  // namespace nccmatch::test
