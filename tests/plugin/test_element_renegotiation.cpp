// Caps changes mid-stream: one element sees its format and size change while PLAYING
// (GRAY8 -> NV12 -> I420 -> GRAY8, and sizes in the ratios of 1080p -> 720p -> 4K -> 1x1 at a
// tenth of the size for speed, then a frame smaller than one template and back). Each frame's
// output (its matches with scores and scales, and its pixels with the boxes drawn) must equal what
// a fresh element started on those caps gives for the same frame: nothing from an earlier size or
// format (plans, window sums, oversize flags, a search region placed for another size) may leak
// into a later frame. Templates larger than the new frame are skipped there and found again once
// the frames are large enough. CPU backend.
#include <gst/check/gstharness.h>
#include <gst/video/video.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <sstream>
#include <string>
#include <vector>

#include "element_fixture.hpp"
#include "nccmatch/engine.hpp"
#include "plugin_test_support.hpp"

namespace nccmatch::test {
namespace {

struct Phase {
  GstVideoFormat format;
  int width, height;
};

// 1080p, 720p, 4K (each / 10), 1x1, a frame smaller than the 24x24 template, 720p / 10 again.
const Phase kPhases[] = {{GST_VIDEO_FORMAT_GRAY8, 192, 108}, {GST_VIDEO_FORMAT_NV12, 128, 72},
                         {GST_VIDEO_FORMAT_I420, 384, 216},  {GST_VIDEO_FORMAT_GRAY8, 1, 1},
                         {GST_VIDEO_FORMAT_NV12, 20, 16},    {GST_VIDEO_FORMAT_I420, 128, 72}};
constexpr int kFramesPerPhase = 3;

// The settings both elements run with.
struct Case {
  const char* name;
  const char* scales;
  const char* searchRegion;
};
const Case kCases[] = {
    {"whole frame", "1", ""},
    {"scales and a search region", "0.75,1", "8,4,100,60"},
};
// Where the templates are pasted when they fit there: the second case's search region.
struct PasteArea {
  int x, y, width, height;
};
constexpr PasteArea kPasteArea{8, 4, 100, 60};

// What a frame came out as: its nccmatch message's matches, in order, and its bytes.
struct FrameOut {
  std::string matches;
  std::vector<uint8_t> bytes;
  int count = 0;
};

std::string describeMatches(GstBus* bus, int* count) {
  std::vector<GstMessage*> messages = popMessages(bus, GST_MESSAGE_ELEMENT);
  std::vector<const GstStructure*> ncc = structuresNamed(messages, "nccmatch");
  std::ostringstream os;
  EXPECT_EQ(ncc.size(), 1u);
  *count = 0;
  for (const GstStructure* s : ncc)
    for (const GstStructure* m : matchList(s)) {
      os << "[" << gst_structure_get_string(m, "name") << " " << uintField(m, "x") << "," << uintField(m, "y") << " "
         << uintField(m, "width") << "x" << uintField(m, "height") << " score " << doubleField(m, "score")
         << " scale " << doubleField(m, "scale") << "] ";
      ++*count;
    }
  unrefMessages(&messages);
  return os.str();
}

class Renegotiation : public ::testing::TestWithParam<Case> {
 protected:
  static void SetUpTestSuite() { initGstreamer(); }

  GstElement* makeElement(GstBus* bus) {
    GstElement* e = gst_element_factory_make("nccmatch", nullptr);
    gst_object_ref_sink(e);
    const std::string templates = dir_.path("small.pgm") + "," + dir_.path("large.pgm");
    g_object_set(e, "device", int(Backend::Cpu), "templates", templates.c_str(), "threshold", 0.9, "max-matches", 2u,
                 "scales", GetParam().scales, "search-region", GetParam().searchRegion, nullptr);
    gst_element_set_bus(e, bus);
    return e;
  }

  // The frame through a fresh element started on its caps.
  FrameOut fresh(const FrameLayout& layout, const Image& luma) {
    GstBus* bus = gst_bus_new();
    GstElement* e = makeElement(bus);
    GstHarness* h = gst_harness_new_with_element(e, "sink", "src");
    gst_harness_set_src_caps(h, capsFor(layout));
    FrameOut out;
    EXPECT_EQ(gst_harness_push(h, makeFrame(layout, luma)), GST_FLOW_OK);
    if (GstBuffer* b = gst_harness_pull(h)) {
      out.bytes = bufferBytes(b);
      gst_buffer_unref(b);
    }
    out.matches = describeMatches(bus, &out.count);
    gst_harness_teardown(h);
    gst_object_unref(e);
    std::vector<GstMessage*> rest = popMessages(bus, GST_MESSAGE_ANY);
    unrefMessages(&rest);
    gst_object_unref(bus);
    return out;
  }

  TempDir dir_;
};

TEST_P(Renegotiation, EveryFrameAfterACapsChangeMatchesAsOnAFreshElement) {
  const TemplateImage small = makeTemplate(12, 10, Fill::Random, "small");
  const TemplateImage large = makeTemplate(24, 24, Fill::Random, "large");
  writePgm(dir_.path("small.pgm"), small);
  writePgm(dir_.path("large.pgm"), large);

  GstBus* bus = gst_bus_new();
  GstElement* element = makeElement(bus);
  GstHarness* harness = gst_harness_new_with_element(element, "sink", "src");
  int framesWithMatches = 0;
  for (const Phase& phase : kPhases) {
    const FrameLayout layout = makeLayout(phase.format, phase.width, phase.height, 0);
    gst_harness_set_src_caps(harness, capsFor(layout));
    for (int k = 0; k < kFramesPerPhase; ++k) {
      SCOPED_TRACE(std::string(gst_video_format_to_string(phase.format)) + " " + std::to_string(phase.width) + "x" +
                   std::to_string(phase.height) + " frame " + std::to_string(k));
      // Each template pasted at a random place where it fits, inside kPasteArea where it fits there
      // (the search region of the case that has one), so that most frames have a match to compare.
      Image luma = makeImage(phase.width, phase.height, Fill::Random);
      for (const TemplateImage* t : {&small, &large}) {
        if (t->width > phase.width || t->height > phase.height) continue;
        int x0 = 0, y0 = 0, x1 = phase.width, y1 = phase.height;  // the area the template's box may take
        if (std::min(phase.width, kPasteArea.x + kPasteArea.width) - kPasteArea.x >= t->width &&
            std::min(phase.height, kPasteArea.y + kPasteArea.height) - kPasteArea.y >= t->height) {
          x0 = kPasteArea.x, y0 = kPasteArea.y;
          x1 = std::min(phase.width, kPasteArea.x + kPasteArea.width);
          y1 = std::min(phase.height, kPasteArea.y + kPasteArea.height);
        }
        paste(&luma, *t, x0 + int(rng()() % unsigned(x1 - x0 - t->width + 1)),
              y0 + int(rng()() % unsigned(y1 - y0 - t->height + 1)));
      }
      FrameOut live;
      ASSERT_EQ(gst_harness_push(harness, makeFrame(layout, luma)), GST_FLOW_OK);
      GstBuffer* b = gst_harness_pull(harness);
      ASSERT_NE(b, nullptr);
      live.bytes = bufferBytes(b);
      gst_buffer_unref(b);
      live.matches = describeMatches(bus, &live.count);
      const FrameOut want = fresh(layout, luma);
      EXPECT_EQ(live.matches, want.matches);
      EXPECT_TRUE(live.bytes == want.bytes) << "the drawn frame differs from a fresh element's";
      if (live.count > 0) ++framesWithMatches;
    }
  }
  std::printf("[ reneg    ] %s: %zu caps, %d frames, %d with matches\n", GetParam().name,
              sizeof(kPhases) / sizeof(kPhases[0]), int(sizeof(kPhases) / sizeof(kPhases[0])) * kFramesPerPhase,
              framesWithMatches);
  // Every frame a template fits in has a match (the template pasted last is whole): the comparison
  // is not of empty lists. Five of the six phases fit one (not 1x1).
  EXPECT_GE(framesWithMatches, 5 * kFramesPerPhase);
  gst_harness_teardown(harness);
  gst_object_unref(element);
  std::vector<GstMessage*> rest = popMessages(bus, GST_MESSAGE_ANY);
  unrefMessages(&rest);
  gst_object_unref(bus);
}

INSTANTIATE_TEST_SUITE_P(Settings, Renegotiation, ::testing::ValuesIn(kCases),
                         [](const ::testing::TestParamInfo<Case>& info) { return info.index == 0 ? "WholeFrame" : "ScalesAndRegion"; });

}  // namespace
}  // namespace nccmatch::test
