// The nccmatch element through GstHarness (libgstnccmatch.so as built): matches of templates pasted
// at known places in GRAY8/I420/NV12 frames (default and padded strides), ROI meta, both bus
// messages, drawn boxes, template changes and scales while PLAYING, every bad-input case, property
// introspection (frames in flight: test_element_in_flight.cpp). Every test runs on the CPU backend
// and again on the CUDA backend (skipped where no GPU is usable), with the same expectations:
// identical matches, scores within each backend's tolerance (the CUDA FFT numerator is float).
#include <gst/check/gstharness.h>
#include <gst/video/video.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>

#include "element_fixture.hpp"
#include "nccmatch/coarse_to_fine.hpp"
#include "nccmatch/engine.hpp"
#include "nccmatch/scales.hpp"
#include "plugin_test_support.hpp"

namespace nccmatch::test {
namespace {

// ---- matches in every format and layout ----

struct FrameCase {
  GstVideoFormat format;
  int width, height, padding;  // padding > 0: strides widened and carried by GstVideoMeta
  int tw, th;                  // template size
  Placed at;                   // where it is pasted
};

TEST_P(Element, FindsPastedTemplateInEveryFormatAndLayout) {
  const FrameCase cases[] = {
      {GST_VIDEO_FORMAT_GRAY8, 320, 240, 0, 16, 16, {37, 81}},
      {GST_VIDEO_FORMAT_GRAY8, 321, 239, 0, 12, 9, {0, 0}},       // default stride 324 > width
      {GST_VIDEO_FORMAT_GRAY8, 64, 48, 9, 20, 20, {44, 28}},      // bottom-right corner, padded
      {GST_VIDEO_FORMAT_GRAY8, 16, 16, 0, 16, 16, {0, 0}},        // template as large as the frame
      {GST_VIDEO_FORMAT_I420, 319, 241, 0, 16, 16, {150, 100}},   // odd sizes
      {GST_VIDEO_FORMAT_I420, 200, 120, 13, 31, 17, {5, 103}},    // bottom edge, padded
      {GST_VIDEO_FORMAT_NV12, 320, 240, 64, 32, 32, {288, 0}},    // top-right corner, padded
      {GST_VIDEO_FORMAT_NV12, 97, 33, 0, 8, 8, {50, 12}},
      {GST_VIDEO_FORMAT_NV12, 40, 30, 3, 1, 1, {17, 11}},         // 1x1 template: matched anywhere it scores 1
  };
  for (const FrameCase& c : cases) {
    SCOPED_TRACE(::testing::Message() << gst_video_format_to_string(c.format) << " " << c.width << "x" << c.height
                                      << " padding " << c.padding << ", template " << c.tw << "x" << c.th << " at "
                                      << c.at.x << "," << c.at.y);
    TemplateImage t = makeTemplate(c.tw, c.th, Fill::Random);
    std::string path = writeTemplate("needle.png", t);
    makeElement();
    g_object_set(element_, "template", path.c_str(), nullptr);
    FrameLayout layout = makeLayout(c.format, c.width, c.height, c.padding);
    start(layout);

    Image luma = scene(c.width, c.height, {{&t, c.at}});
    GstBuffer* in = makeFrame(layout, luma);
    std::vector<uint8_t> before = bufferBytes(in);
    GstBuffer* out = pushPull(in);
    ASSERT_NE(out, nullptr);

    std::vector<GstMessage*> messages = popMessages(bus_, GST_MESSAGE_ELEMENT);
    auto templateMatch = structuresNamed(messages, "template_match");
    auto ncc = structuresNamed(messages, "nccmatch");
    ASSERT_EQ(templateMatch.size(), 1u);
    ASSERT_EQ(ncc.size(), 1u);
    if (c.tw * c.th > 1) {  // a 1x1 template scores 0 or 1 anywhere: its position is not unique
      EXPECT_EQ(uintField(templateMatch[0], "x"), guint(c.at.x));
      EXPECT_EQ(uintField(templateMatch[0], "y"), guint(c.at.y));
      EXPECT_NEAR(doubleField(templateMatch[0], "result"), 1.0, tolerance());
    }
    EXPECT_EQ(uintField(templateMatch[0], "width"), guint(c.tw));
    EXPECT_EQ(uintField(templateMatch[0], "height"), guint(c.th));

    auto matches = matchList(ncc[0]);
    ASSERT_EQ(matches.size(), 1u);
    const GstStructure* m = matches[0];
    EXPECT_STREQ(gst_structure_get_string(m, "name"), "needle");
    EXPECT_EQ(uintField(m, "template"), 0u);
    int mx = int(uintField(m, "x")), my = int(uintField(m, "y"));
    if (c.tw * c.th > 1) {
      EXPECT_EQ(mx, c.at.x);
      EXPECT_EQ(my, c.at.y);
      EXPECT_NEAR(doubleField(m, "score"), 1.0, tolerance());
    }
    EXPECT_EQ(uintField(m, "width"), guint(c.tw));
    EXPECT_EQ(uintField(m, "height"), guint(c.th));
    EXPECT_LE(std::abs(doubleField(m, "sub-x") - mx), 1.0);
    EXPECT_LE(std::abs(doubleField(m, "sub-y") - my), 1.0);

    auto rois = roiMetas(out);
    ASSERT_EQ(rois.size(), 1u);
    EXPECT_STREQ(g_quark_to_string(rois[0]->roi_type), "needle");
    EXPECT_EQ(int(rois[0]->x), mx);
    EXPECT_EQ(int(rois[0]->y), my);
    EXPECT_EQ(int(rois[0]->w), c.tw);
    EXPECT_EQ(int(rois[0]->h), c.th);
    GstStructure* param = gst_video_region_of_interest_meta_get_param(rois[0], "nccmatch");
    ASSERT_NE(param, nullptr);
    EXPECT_DOUBLE_EQ(doubleField(param, "score"), doubleField(m, "score"));
    EXPECT_EQ(uintField(param, "template"), 0u);
    EXPECT_DOUBLE_EQ(doubleField(param, "sub-x"), doubleField(m, "sub-x"));
    EXPECT_DOUBLE_EQ(doubleField(param, "sub-y"), doubleField(m, "sub-y"));

    // The box: white on its 2-pixel edge, black just inside; every other byte (luma outside the
    // box, chroma, padding) unchanged.
    std::vector<uint8_t> after = bufferBytes(out);
    ASSERT_EQ(after.size(), before.size());
    auto lumaIndex = [&](int x, int y) { return layout.offset[0] + gsize(y) * layout.stride[0] + x; };
    for (int y = my; y < my + c.th; ++y) {
      for (int x = mx; x < mx + c.tw; ++x) {
        int ring = std::min(std::min(x - mx, mx + c.tw - 1 - x), std::min(y - my, my + c.th - 1 - y));
        if (ring < 2) {
          ASSERT_EQ(after[lumaIndex(x, y)], 255) << "edge at " << x << "," << y;
        }
        if (ring == 2 && c.tw > 4 && c.th > 4) {
          ASSERT_EQ(after[lumaIndex(x, y)], 0) << "inner ring at " << x << "," << y;
        }
        if (ring <= 2) before[lumaIndex(x, y)] = after[lumaIndex(x, y)];  // drawn: excluded below
      }
    }
    EXPECT_TRUE(before == after) << "bytes outside the drawn box changed";

    gst_buffer_unref(out);
    unrefMessages(&messages);
    gst_harness_teardown(harness_);
    harness_ = nullptr;
    gst_object_unref(element_);
    element_ = nullptr;
  }
}

TEST_P(Element, DisplayFalseLeavesEveryPixel) {
  TemplateImage t = makeTemplate(16, 12, Fill::Random);
  makeElement();
  g_object_set(element_, "template", writeTemplate("t.pgm", t).c_str(), "display", FALSE, nullptr);
  FrameLayout layout = makeLayout(GST_VIDEO_FORMAT_I420, 160, 90, 6);
  start(layout);
  GstBuffer* in = makeFrame(layout, scene(160, 90, {{&t, {70, 40}}}));
  std::vector<uint8_t> before = bufferBytes(in);
  GstBuffer* out = pushPull(in);
  ASSERT_NE(out, nullptr);
  EXPECT_TRUE(bufferBytes(out) == before);
  EXPECT_EQ(roiMetas(out).size(), 1u) << "meta is attached whether or not boxes are drawn";
  gst_buffer_unref(out);
}

TEST_P(Element, SeveralTemplatesAndSeveralMatchesEach) {
  TemplateImage a = makeTemplate(16, 16, Fill::Random), b = makeTemplate(24, 10, Fill::Random);
  std::string pa = writeTemplate("alpha.png", a), pb = writeTemplate("beta.pgm", b);
  makeElement();
  std::string list = pa + " , " + pb;
  g_object_set(element_, "templates", list.c_str(), "max-matches", 3u, nullptr);
  FrameLayout layout = makeLayout(GST_VIDEO_FORMAT_GRAY8, 200, 150, 0);
  start(layout);
  // alpha twice, beta once: with max-matches 3 the noise positions stay below the 0.8 threshold.
  GstBuffer* out = pushPull(makeFrame(layout, scene(200, 150, {{&a, {10, 10}}, {&a, {150, 100}}, {&b, {80, 60}}})));
  ASSERT_NE(out, nullptr);

  std::vector<GstMessage*> messages = popMessages(bus_, GST_MESSAGE_ELEMENT);
  auto ncc = structuresNamed(messages, "nccmatch");
  ASSERT_EQ(ncc.size(), 1u);
  auto matches = matchList(ncc[0]);
  ASSERT_EQ(matches.size(), 3u);
  std::vector<std::tuple<std::string, guint, guint>> found;
  for (const GstStructure* m : matches) {
    found.emplace_back(gst_structure_get_string(m, "name"), uintField(m, "x"), uintField(m, "y"));
    EXPECT_NEAR(doubleField(m, "score"), 1.0, tolerance());
  }
  // Ordered by template index; alpha's two exact matches tie at 1, so compare them as a set.
  EXPECT_EQ(std::get<0>(found[0]), "alpha");
  EXPECT_EQ(std::get<0>(found[1]), "alpha");
  EXPECT_EQ(found[2], std::make_tuple(std::string("beta"), 80u, 60u));
  std::vector<std::pair<guint, guint>> alphaAt = {{std::get<1>(found[0]), std::get<2>(found[0])},
                                                  {std::get<1>(found[1]), std::get<2>(found[1])}};
  std::sort(alphaAt.begin(), alphaAt.end());
  EXPECT_EQ(alphaAt, (std::vector<std::pair<guint, guint>>{{10, 10}, {150, 100}}));
  EXPECT_EQ(uintField(matches[2], "template"), 1u);

  auto rois = roiMetas(out);
  ASSERT_EQ(rois.size(), 3u);
  EXPECT_STREQ(g_quark_to_string(rois[2]->roi_type), "beta");
  EXPECT_EQ(uintField(gst_video_region_of_interest_meta_get_param(rois[2], "nccmatch"), "template"), 1u);

  // template_match is about the first template only.
  auto templateMatch = structuresNamed(messages, "template_match");
  ASSERT_EQ(templateMatch.size(), 1u);
  EXPECT_EQ(uintField(templateMatch[0], "width"), 16u);
  unrefMessages(&messages);
  gst_buffer_unref(out);

  // max-matches 1 while PLAYING: one match per template.
  g_object_set(element_, "max-matches", 1u, nullptr);
  out = pushPull(makeFrame(layout, scene(200, 150, {{&a, {10, 10}}, {&a, {150, 100}}, {&b, {80, 60}}})));
  EXPECT_EQ(roiMetas(out).size(), 2u);
  gst_buffer_unref(out);
}

TEST_P(Element, ThresholdAboveTheBestScoreReportsNoMatch) {
  TemplateImage t = makeTemplate(12, 12, Fill::Random);
  makeElement();
  g_object_set(element_, "template", writeTemplate("t.pgm", t).c_str(), "threshold", 1.01, nullptr);
  FrameLayout layout = makeLayout(GST_VIDEO_FORMAT_GRAY8, 100, 80, 0);
  start(layout);
  GstBuffer* in = makeFrame(layout, scene(100, 80, {{&t, {30, 40}}}));
  std::vector<uint8_t> before = bufferBytes(in);
  GstBuffer* out = pushPull(in);
  EXPECT_TRUE(roiMetas(out).empty());
  EXPECT_TRUE(bufferBytes(out) == before) << "no match, nothing drawn";
  std::vector<GstMessage*> messages = popMessages(bus_, GST_MESSAGE_ELEMENT);
  auto ncc = structuresNamed(messages, "nccmatch");
  ASSERT_EQ(ncc.size(), 1u);
  EXPECT_TRUE(matchList(ncc[0]).empty());
  auto templateMatch = structuresNamed(messages, "template_match");
  ASSERT_EQ(templateMatch.size(), 1u) << "templatematch reports the best position regardless of threshold";
  EXPECT_EQ(uintField(templateMatch[0], "x"), 30u);
  unrefMessages(&messages);
  gst_buffer_unref(out);
}

// template_match's result follows templatematch for each method: checked against the engine's
// exact CPU reference score map (the oracle), so methods whose best is not the pasted place count too.
TEST_P(Element, TemplateMatchResultFollowsTemplatematchForEveryMethod) {
  TemplateImage t = makeTemplate(10, 8, Fill::Random, "t");
  makeElement();
  g_object_set(element_, "template", writeTemplate("t.pgm", t).c_str(), nullptr);
  FrameLayout layout = makeLayout(GST_VIDEO_FORMAT_GRAY8, 90, 70, 5);
  start(layout);

  std::unique_ptr<Engine> oracle;
  EngineOptions options;
  options.backend = Backend::Cpu;
  options.cpuPath = CpuPath::Reference;
  ASSERT_TRUE(Engine::create(options, &oracle).ok());
  ASSERT_TRUE(oracle->setTemplates({t}).ok());

  for (int method = 0; method <= 5; ++method) {
    SCOPED_TRACE(methodName(Method(method)));
    g_object_set(element_, "method", method, nullptr);
    Image luma = scene(90, 70, {{&t, {41, 23}}});
    std::vector<double> map;
    ASSERT_TRUE(oracle->scoreMap(luma.view(), Method(method), 0, &map).ok());
    bool lower = lowerIsBetter(Method(method));
    double best = lower ? *std::min_element(map.begin(), map.end()) : *std::max_element(map.begin(), map.end());
    double expected = Method(method) == Method::SqDiffNormed ? 1.0 - best : best;

    GstBuffer* out = pushPull(makeFrame(layout, luma));
    gst_buffer_unref(out);
    std::vector<GstMessage*> messages = popMessages(bus_, GST_MESSAGE_ELEMENT);
    auto templateMatch = structuresNamed(messages, "template_match");
    ASSERT_EQ(templateMatch.size(), 1u);
    double result = doubleField(templateMatch[0], "result");
    double tolerance = this->tolerance() * std::max(1.0, std::abs(expected));
    EXPECT_NEAR(result, expected, tolerance);
    // The reported position scores the best (within tolerance, in case of near-ties).
    int mapWidth = 90 - 10 + 1;
    double atReported = map[uintField(templateMatch[0], "y") * mapWidth + uintField(templateMatch[0], "x")];
    EXPECT_NEAR(atReported, best, tolerance);
    unrefMessages(&messages);
  }
}

TEST_P(Element, TemplateChangeWhilePlayingTakesEffectOnTheNextFrame) {
  TemplateImage first = makeTemplate(14, 14, Fill::Random), second = makeTemplate(20, 9, Fill::Random);
  std::string p1 = writeTemplate("first.png", first), p2 = writeTemplate("second.png", second);
  makeElement();
  g_object_set(element_, "template", p1.c_str(), nullptr);
  FrameLayout layout = makeLayout(GST_VIDEO_FORMAT_NV12, 160, 120, 0);
  start(layout);

  GstBuffer* out = pushPull(makeFrame(layout, scene(160, 120, {{&first, {20, 30}}, {&second, {100, 80}}})));
  auto rois = roiMetas(out);
  ASSERT_EQ(rois.size(), 1u);
  EXPECT_STREQ(g_quark_to_string(rois[0]->roi_type), "first");
  EXPECT_EQ(rois[0]->x, 20u);
  gst_buffer_unref(out);

  g_object_set(element_, "template", p2.c_str(), nullptr);
  EXPECT_EQ(stringProperty("template"), p2);
  out = pushPull(makeFrame(layout, scene(160, 120, {{&first, {20, 30}}, {&second, {100, 80}}})));
  rois = roiMetas(out);
  ASSERT_EQ(rois.size(), 1u);
  EXPECT_STREQ(g_quark_to_string(rois[0]->roi_type), "second");
  EXPECT_EQ(rois[0]->x, 100u);
  EXPECT_EQ(rois[0]->y, 80u);
  EXPECT_EQ(rois[0]->w, 20u);
  gst_buffer_unref(out);
  std::vector<GstMessage*> warnings = popMessages(bus_, GST_MESSAGE_WARNING);
  EXPECT_TRUE(warnings.empty());
  unrefMessages(&warnings);
}

// Properties read at start (device, cuda-device-id, cpu-threads, cuda-lanes, worker-thread) set to another
// value while the element runs: a warning names the property and says when it applies; the frames
// go on as before. The same value set again warns of nothing.
TEST_P(Element, PropertiesReadAtStartWarnWhenChangedWhileRunning) {
  TemplateImage t = makeTemplate(10, 8, Fill::Random);
  makeElement();
  g_object_set(element_, "template", writeTemplate("t.pgm", t).c_str(), nullptr);
  const FrameLayout layout = makeLayout(GST_VIDEO_FORMAT_GRAY8, 64, 48, 0);
  start(layout);
  gst_buffer_unref(pushPull(makeFrame(layout, scene(64, 48, {{&t, {5, 6}}}))));
  std::vector<GstMessage*> before = popMessages(bus_, GST_MESSAGE_WARNING);
  unrefMessages(&before);
  g_object_set(element_, "worker-thread", TRUE, "cpu-threads", 0u, "cuda-lanes", 2u, nullptr);  // the values it has
  std::vector<GstMessage*> none = popMessages(bus_, GST_MESSAGE_WARNING);
  EXPECT_TRUE(none.empty()) << messageText(none.front());
  unrefMessages(&none);
  g_object_set(element_, "worker-thread", FALSE, "cpu-threads", 3u, "cuda-lanes", 1u, nullptr);
  std::vector<GstMessage*> warnings = popMessages(bus_, GST_MESSAGE_WARNING);
  ASSERT_EQ(warnings.size(), 3u);
  EXPECT_NE(messageText(warnings[0]).find("'worker-thread' is read when the element starts"), std::string::npos)
      << messageText(warnings[0]);
  EXPECT_NE(messageText(warnings[1]).find("'cpu-threads'"), std::string::npos) << messageText(warnings[1]);
  EXPECT_NE(messageText(warnings[2]).find("'cuda-lanes'"), std::string::npos) << messageText(warnings[2]);
  unrefMessages(&warnings);
  GstBuffer* out = pushPull(makeFrame(layout, scene(64, 48, {{&t, {30, 20}}})));
  ASSERT_NE(out, nullptr);
  auto rois = roiMetas(out);
  ASSERT_EQ(rois.size(), 1u);
  EXPECT_EQ(rois[0]->x, 30u);
  gst_buffer_unref(out);
}

// `scales`: a template shown 1.5x larger is found only once its 1.5x copy is in the bank; the
// match, its meta and its message carry the scale and the scaled box. A bad list warns and keeps.
TEST_P(Element, ScalesFindATemplateShownLargerAndSayAtWhichScale) {
  const TemplateImage t = makeTemplate(12, 10, Fill::Random);
  const TemplateImage shown = resizeTemplate(t, 18, 15);
  makeElement();
  g_object_set(element_, "template", writeTemplate("logo.png", t).c_str(), "threshold", 0.9, nullptr);
  FrameLayout layout = makeLayout(GST_VIDEO_FORMAT_I420, 160, 120, 0);
  start(layout);
  const Image frame = scene(160, 120, {{&shown, {70, 40}}});
  GstBuffer* out = pushPull(makeFrame(layout, frame));
  ASSERT_NE(out, nullptr);
  EXPECT_TRUE(roiMetas(out).empty()) << "scale 1 alone should not reach 0.9 on the enlarged copy";
  gst_buffer_unref(out);

  g_object_set(element_, "scales", " 1, 1.5 ,,0.75", nullptr);
  EXPECT_EQ(stringProperty("scales"), "1,1.5,0.75");
  std::vector<GstMessage*> stale = popMessages(bus_, GST_MESSAGE_ELEMENT);
  unrefMessages(&stale);
  for (const char* scales : {"1,1.5,0.75", "1,abc"}) {  // the second is refused: nothing changes
    if (std::strcmp(scales, "1,abc") == 0) {
      g_object_set(element_, "scales", scales, nullptr);
      expectOneWarningContaining("'abc'");
    }
    out = pushPull(makeFrame(layout, frame));
    ASSERT_NE(out, nullptr);
    auto rois = roiMetas(out);
    ASSERT_EQ(rois.size(), 1u) << scales;
    EXPECT_EQ(rois[0]->x, 70u);
    EXPECT_EQ(rois[0]->y, 40u);
    EXPECT_EQ(rois[0]->w, 18u);
    EXPECT_EQ(rois[0]->h, 15u);
    GstStructure* param = gst_video_region_of_interest_meta_get_param(rois[0], "nccmatch");
    ASSERT_NE(param, nullptr);
    EXPECT_EQ(doubleField(param, "scale"), 1.5);
    EXPECT_NEAR(doubleField(param, "score"), 1.0, tolerance());
    gst_buffer_unref(out);
    std::vector<GstMessage*> messages = popMessages(bus_, GST_MESSAGE_ELEMENT);
    std::vector<const GstStructure*> reports = structuresNamed(messages, "nccmatch");
    ASSERT_EQ(reports.size(), 1u);
    std::vector<const GstStructure*> matches = matchList(reports[0]);
    ASSERT_EQ(matches.size(), 1u);
    EXPECT_EQ(doubleField(matches[0], "scale"), 1.5);
    EXPECT_EQ(uintField(matches[0], "template"), 0u);
    EXPECT_STREQ(gst_structure_get_string(matches[0], "name"), "logo");
    EXPECT_EQ(uintField(matches[0], "width"), 18u);
    std::vector<const GstStructure*> best = structuresNamed(messages, "template_match");
    ASSERT_EQ(best.size(), 1u);
    EXPECT_EQ(uintField(best[0], "width"), 18u);
    unrefMessages(&messages);
  }
  EXPECT_EQ(stringProperty("scales"), "1,1.5,0.75");
}

// `search-region`: only the region is searched; matches, meta, messages and drawn boxes are in
// frame coordinates; a region past the edge is moved inside; too small and invalid regions warn;
// the region can move while PLAYING.
TEST_P(Element, SearchRegionLimitsTheSearchAndReportsFrameCoordinates) {
  const TemplateImage t = makeTemplate(14, 14, Fill::Random);
  makeElement();
  g_object_set(element_, "template", writeTemplate("t.png", t).c_str(), "max-matches", 2u, "threshold", 0.95,
               nullptr);
  const FrameLayout layout = makeLayout(GST_VIDEO_FORMAT_NV12, 160, 120, 4);
  start(layout);
  const Image frame = scene(160, 120, {{&t, {20, 30}}, {&t, {101, 81}}});
  auto matchesIn = [&](GstBuffer* out) {
    std::vector<std::pair<guint, guint>> at;
    for (GstVideoRegionOfInterestMeta* roi : roiMetas(out)) at.emplace_back(roi->x, roi->y);
    std::sort(at.begin(), at.end());
    return at;
  };
  GstBuffer* out = pushPull(makeFrame(layout, frame));
  ASSERT_NE(out, nullptr);
  EXPECT_EQ(matchesIn(out), (std::vector<std::pair<guint, guint>>{{20, 30}, {101, 81}}));
  gst_buffer_unref(out);

  // A region around the second copy only (and an odd origin, so nothing is aligned).
  g_object_set(element_, "search-region", " 91,77, 40,25", nullptr);
  EXPECT_EQ(stringProperty("search-region"), "91,77,40,25");
  std::vector<GstMessage*> stale = popMessages(bus_, GST_MESSAGE_ELEMENT);
  unrefMessages(&stale);
  out = pushPull(makeFrame(layout, frame));
  ASSERT_NE(out, nullptr);
  EXPECT_EQ(matchesIn(out), (std::vector<std::pair<guint, guint>>{{101, 81}}));
  {
    const Image luma = readLuma(out, layout);
    EXPECT_EQ(luma.at(101, 81), 255) << "the box is drawn at the frame position";
    EXPECT_EQ(luma.at(114, 94), 255);
  }
  gst_buffer_unref(out);
  std::vector<GstMessage*> messages = popMessages(bus_, GST_MESSAGE_ELEMENT);
  std::vector<const GstStructure*> reports = structuresNamed(messages, "nccmatch");
  ASSERT_EQ(reports.size(), 1u);
  std::vector<const GstStructure*> matches = matchList(reports[0]);
  ASSERT_EQ(matches.size(), 1u);
  EXPECT_EQ(uintField(matches[0], "x"), 101u);
  EXPECT_EQ(uintField(matches[0], "y"), 81u);
  EXPECT_LE(std::abs(doubleField(matches[0], "sub-x") - 101.0), 0.5);
  EXPECT_LE(std::abs(doubleField(matches[0], "sub-y") - 81.0), 0.5);
  std::vector<const GstStructure*> best = structuresNamed(messages, "template_match");
  ASSERT_EQ(best.size(), 1u);
  EXPECT_EQ(uintField(best[0], "x"), 101u);
  unrefMessages(&messages);

  // Moved onto the first copy while PLAYING.
  g_object_set(element_, "search-region", "0,0,40,50", nullptr);
  out = pushPull(makeFrame(layout, frame));
  EXPECT_EQ(matchesIn(out), (std::vector<std::pair<guint, guint>>{{20, 30}}));
  gst_buffer_unref(out);
  // Past the bottom-right corner: moved inside with its size (120,90,40,30), the second copy in it.
  g_object_set(element_, "search-region", "150,110,40,30", nullptr);
  out = pushPull(makeFrame(layout, frame));
  EXPECT_EQ(matchesIn(out), (std::vector<std::pair<guint, guint>>{}));  // (101,81) starts left of 120
  gst_buffer_unref(out);
  g_object_set(element_, "search-region", "150,110,60,40", nullptr);  // placed at 100,80,60,40
  out = pushPull(makeFrame(layout, frame));
  EXPECT_EQ(matchesIn(out), (std::vector<std::pair<guint, guint>>{{101, 81}}));
  gst_buffer_unref(out);
  // Smaller than the template: skipped with one warning naming the region.
  g_object_set(element_, "search-region", "10,10,10,20", nullptr);
  for (int i = 0; i < 2; ++i) {
    out = pushPull(makeFrame(layout, frame));
    ASSERT_NE(out, nullptr);
    EXPECT_TRUE(matchesIn(out).empty());
    gst_buffer_unref(out);
  }
  expectOneWarningContaining("larger than the 10x20 search region");

  // Invalid: refused with a warning, the region stays; empty: the whole frame again.
  g_object_set(element_, "search-region", "1,2,3", nullptr);
  expectOneWarningContaining("x,y,width,height");
  EXPECT_EQ(stringProperty("search-region"), "10,10,10,20");
  g_object_set(element_, "search-region", "", nullptr);
  out = pushPull(makeFrame(layout, frame));
  EXPECT_EQ(matchesIn(out).size(), 2u);
  gst_buffer_unref(out);
}

// `grab-template`: the box of the next frame becomes the bank (cut before that frame is matched, so
// it matches there at once); bad boxes are refused or warned about; `template` replaces it again.
TEST_P(Element, GrabTemplateCutsTheBankFromTheNextFrame) {
  const TemplateImage file = makeTemplate(10, 10, Fill::Random);
  makeElement();
  g_object_set(element_, "template", writeTemplate("file.pgm", file).c_str(), "threshold", 0.95, nullptr);
  const FrameLayout layout = makeLayout(GST_VIDEO_FORMAT_I420, 160, 120, 2);
  start(layout);
  auto grab = [&](const char* name, int x, int y, int w, int h) {
    gboolean accepted = FALSE;
    g_signal_emit_by_name(element_, "grab-template", name, x, y, w, h, &accepted);
    return accepted == TRUE;
  };
  auto only = [&](GstBuffer* out, const char* name, guint x, guint y, guint w, guint h) {
    auto rois = roiMetas(out);
    ASSERT_EQ(rois.size(), 1u);
    EXPECT_STREQ(g_quark_to_string(rois[0]->roi_type), name);
    EXPECT_EQ(rois[0]->x, x);
    EXPECT_EQ(rois[0]->y, y);
    EXPECT_EQ(rois[0]->w, w);
    EXPECT_EQ(rois[0]->h, h);
  };

  EXPECT_FALSE(grab("bad", 0, 0, 0, 5));
  EXPECT_FALSE(grab("bad", -1, 0, 5, 5));
  ASSERT_TRUE(grab("patch", 53, 41, 17, 13));
  EXPECT_EQ(stringProperty("template"), "") << "grabbing replaces the file list";
  const Image first = scene(160, 120, {});
  GstBuffer* out = pushPull(makeFrame(layout, first));
  ASSERT_NE(out, nullptr);
  only(out, "patch", 53, 41, 17, 13);
  EXPECT_NEAR(doubleField(gst_video_region_of_interest_meta_get_param(roiMetas(out)[0], "nccmatch"), "score"), 1.0,
              tolerance());
  gst_buffer_unref(out);
  // The patch elsewhere in a later frame is found there.
  const TemplateImage patch = cutTemplate(first, 53, 41, 17, 13);
  out = pushPull(makeFrame(layout, scene(160, 120, {{&patch, {7, 90}}})));
  only(out, "patch", 7, 90, 17, 13);
  gst_buffer_unref(out);

  // A box not inside the frame: one warning, the patch stays.
  ASSERT_TRUE(grab("too-far", 150, 100, 20, 20));
  out = pushPull(makeFrame(layout, scene(160, 120, {{&patch, {120, 5}}})));
  only(out, "patch", 120, 5, 17, 13);
  gst_buffer_unref(out);
  expectOneWarningContaining("150,100,20,20 is not inside the 160x120 frame");

  // `template` replaces the grabbed bank.
  g_object_set(element_, "template", dir_.path("file.pgm").c_str(), nullptr);
  out = pushPull(makeFrame(layout, scene(160, 120, {{&file, {30, 60}}, {&patch, {100, 20}}})));
  only(out, "file", 30, 60, 10, 10);
  gst_buffer_unref(out);
}

// Requested before the element starts, the grab takes the first frame.
TEST_P(Element, GrabTemplateBeforeStartTakesTheFirstFrame) {
  makeElement();
  gboolean accepted = FALSE;
  g_signal_emit_by_name(element_, "grab-template", nullptr, 20, 30, 24, 16, &accepted);
  ASSERT_TRUE(accepted);
  const FrameLayout layout = makeLayout(GST_VIDEO_FORMAT_GRAY8, 96, 72, 0);
  start(layout);
  GstBuffer* out = pushPull(makeFrame(layout, scene(96, 72, {})));
  ASSERT_NE(out, nullptr);
  auto rois = roiMetas(out);
  ASSERT_EQ(rois.size(), 1u);
  EXPECT_STREQ(g_quark_to_string(rois[0]->roi_type), "grabbed");
  EXPECT_EQ(rois[0]->x, 20u);
  EXPECT_EQ(rois[0]->y, 30u);
  gst_buffer_unref(out);
  std::vector<GstMessage*> warnings = popMessages(bus_, GST_MESSAGE_WARNING);
  EXPECT_TRUE(warnings.empty());
  unrefMessages(&warnings);
}

TEST_P(Element, MessagesCarryTheFrameTimes) {
  TemplateImage t = makeTemplate(8, 8, Fill::Random);
  makeElement();
  g_object_set(element_, "template", writeTemplate("t.pgm", t).c_str(), nullptr);
  FrameLayout layout = makeLayout(GST_VIDEO_FORMAT_GRAY8, 64, 48, 0);
  start(layout);
  GstBuffer* in = makeFrame(layout, scene(64, 48, {{&t, {3, 4}}}));
  GST_BUFFER_PTS(in) = 2 * GST_SECOND;
  GST_BUFFER_DURATION(in) = GST_SECOND / 30;
  gst_buffer_unref(pushPull(in));
  std::vector<GstMessage*> messages = popMessages(bus_, GST_MESSAGE_ELEMENT);
  auto ncc = structuresNamed(messages, "nccmatch");
  ASSERT_EQ(ncc.size(), 1u);
  guint64 v = 0;
  ASSERT_TRUE(gst_structure_get_uint64(ncc[0], "timestamp", &v));
  EXPECT_EQ(v, 2 * GST_SECOND);
  ASSERT_TRUE(gst_structure_get_uint64(ncc[0], "duration", &v));
  EXPECT_EQ(v, GST_SECOND / 30);
  // The harness's segment starts at 0: running and stream time equal the timestamp.
  ASSERT_TRUE(gst_structure_get_uint64(ncc[0], "running-time", &v));
  EXPECT_EQ(v, 2 * GST_SECOND);
  ASSERT_TRUE(gst_structure_get_uint64(ncc[0], "stream-time", &v));
  EXPECT_EQ(v, 2 * GST_SECOND);
  unrefMessages(&messages);
}

// settings-generation counts every property set (a refused value too) and grab-template request;
// each frame's nccmatch message carries the count of the settings it was matched with.
TEST_P(Element, SettingsGenerationCountsEverySetAndStampsEachFrame) {
  TemplateImage t = makeTemplate(8, 8, Fill::Random);
  makeElement();
  auto generation = [&] {
    guint64 g = 0;
    g_object_get(element_, "settings-generation", &g, nullptr);
    return g;
  };
  auto frameGeneration = [&](const FrameLayout& layout) {
    gst_buffer_unref(pushPull(makeFrame(layout, scene(64, 48, {{&t, {3, 4}}}))));
    std::vector<GstMessage*> messages = popMessages(bus_, GST_MESSAGE_ELEMENT);
    auto ncc = structuresNamed(messages, "nccmatch");
    guint64 g = 0;
    EXPECT_EQ(ncc.size(), 1u);
    if (!ncc.empty()) {
      EXPECT_TRUE(gst_structure_get_uint64(ncc[0], "settings-generation", &g));
    }
    unrefMessages(&messages);
    return g;
  };
  GParamSpec* spec = g_object_class_find_property(G_OBJECT_GET_CLASS(element_), "settings-generation");
  ASSERT_NE(spec, nullptr);
  EXPECT_FALSE(spec->flags & G_PARAM_WRITABLE);
  const guint64 created = generation();  // the device set by makeElement()
  g_object_set(element_, "template", writeTemplate("t.pgm", t).c_str(), "threshold", 0.9, nullptr);
  EXPECT_EQ(generation(), created + 2);
  const FrameLayout layout = makeLayout(GST_VIDEO_FORMAT_GRAY8, 64, 48, 0);
  start(layout);
  EXPECT_EQ(frameGeneration(layout), created + 2);
  g_object_set(element_, "max-matches", 2u, nullptr);
  g_object_set(element_, "scales", "not-a-number", nullptr);  // refused (a warning), still counted
  EXPECT_EQ(generation(), created + 4);
  EXPECT_EQ(frameGeneration(layout), created + 4);
  gboolean grabbed = FALSE;
  g_signal_emit_by_name(element_, "grab-template", "patch", 3, 4, 8, 8, &grabbed);
  EXPECT_TRUE(grabbed);
  EXPECT_EQ(frameGeneration(layout), created + 5);
}

TEST_P(Element, PostMessagesFalsePostsNothingButKeepsMeta) {
  TemplateImage t = makeTemplate(8, 8, Fill::Random);
  makeElement();
  g_object_set(element_, "template", writeTemplate("t.pgm", t).c_str(), "post-messages", FALSE, nullptr);
  FrameLayout layout = makeLayout(GST_VIDEO_FORMAT_GRAY8, 64, 48, 0);
  start(layout);
  GstBuffer* out = pushPull(makeFrame(layout, scene(64, 48, {{&t, {3, 4}}})));
  EXPECT_EQ(roiMetas(out).size(), 1u);
  gst_buffer_unref(out);
  std::vector<GstMessage*> messages = popMessages(bus_, GST_MESSAGE_ELEMENT);
  EXPECT_TRUE(messages.empty());
  unrefMessages(&messages);
}

TEST_P(Element, WithoutTemplatesFramesPassUnchanged) {
  makeElement();
  FrameLayout layout = makeLayout(GST_VIDEO_FORMAT_I420, 50, 40, 0);
  start(layout);
  GstBuffer* in = makeFrame(layout, makeImage(50, 40, Fill::Random));
  std::vector<uint8_t> before = bufferBytes(in);
  GstBuffer* out = pushPull(in);
  EXPECT_TRUE(bufferBytes(out) == before);
  EXPECT_TRUE(roiMetas(out).empty());
  gst_buffer_unref(out);
  std::vector<GstMessage*> messages = popMessages(bus_, GST_MESSAGE_ELEMENT);
  EXPECT_TRUE(structuresNamed(messages, "template_match").empty());
  auto ncc = structuresNamed(messages, "nccmatch");
  ASSERT_EQ(ncc.size(), 1u);
  EXPECT_TRUE(matchList(ncc[0]).empty());
  unrefMessages(&messages);
}

// ---- bad input ----

// Starting with a bad template file fails the state change with an error naming the file.
TEST_P(Element, BadTemplateFileAtStartStopsWithAnErrorNamingTheFile) {
  std::vector<uint8_t> noise(3000);
  for (auto& b : noise) b = uint8_t(rng()());
  std::string good = writeTemplate("good.pgm", makeTemplate(8, 8, Fill::Random));
  std::string undecodable = dir_.path("noise.png");
  writeBytes(undecodable, noise);
  std::string empty = dir_.path("empty.jpg");
  writeBytes(empty, {});
  std::string missing = dir_.path("missing.png");
  std::string folder = dir_.path("");

  struct Case {
    const char* property;
    std::string value;
    std::string culprit;
  };
  const Case cases[] = {
      {"template", missing, missing},
      {"template", undecodable, undecodable},
      {"template", empty, empty},
      {"template", folder, folder},
      {"templates", good + "," + missing, missing},  // a later file of the list
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.value);
    makeElement();
    g_object_set(element_, c.property, c.value.c_str(), nullptr);
    EXPECT_EQ(gst_element_set_state(element_, GST_STATE_PAUSED), GST_STATE_CHANGE_FAILURE);
    std::vector<GstMessage*> errors = popMessages(bus_, GST_MESSAGE_ERROR);
    ASSERT_EQ(errors.size(), 1u);
    EXPECT_NE(messageText(errors[0]).find(c.culprit), std::string::npos) << messageText(errors[0]);
    unrefMessages(&errors);
    gst_element_set_state(element_, GST_STATE_NULL);
    gst_object_unref(element_);
    element_ = nullptr;
  }
}

// A string property value that does not parse, set before start (a gst-launch line sets properties
// before the element has a bus), stops the pipeline at start with an error naming the property and
// the bad entry, as gst-launch refuses a typed property value that does not parse.
TEST_P(Element, InvalidStringPropertyInALaunchLineStopsItWithAnErrorNamingIt) {
  struct Case {
    const char* setting;
    const char* property;
    const char* culprit;
  };
  const Case cases[] = {
      {"scales=a,b", "'scales'", "'a'"},
      {"scales=1,40", "'scales'", "40"},
      {"search-region=1,2", "'search-region'", "'1,2'"},
      {"search-region=1,2,-3,4", "'search-region'", "'-3'"},
      {"angles=0:10", "'angles'", "'0:10'"},
      {"angles=5,x", "'angles'", "'x'"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.setting);
    std::string description = "videotestsrc num-buffers=3 ! video/x-raw,format=GRAY8,width=64,height=48 ! nccmatch "
                              "device=" + std::string(backendName(GetParam())) + " " + c.setting + " ! fakesink";
    GError* error = nullptr;
    GstElement* pipeline = gst_parse_launch(description.c_str(), &error);
    ASSERT_NE(pipeline, nullptr) << (error ? error->message : "");
    gst_element_set_state(pipeline, GST_STATE_PLAYING);
    GstBus* bus = gst_element_get_bus(pipeline);
    GstMessage* end = gst_bus_timed_pop_filtered(bus, 30 * GST_SECOND,
                                                 static_cast<GstMessageType>(GST_MESSAGE_EOS | GST_MESSAGE_ERROR));
    ASSERT_NE(end, nullptr);
    EXPECT_EQ(GST_MESSAGE_TYPE(end), GST_MESSAGE_ERROR) << "the pipeline ran with the value ignored";
    if (GST_MESSAGE_TYPE(end) == GST_MESSAGE_ERROR) {
      EXPECT_NE(messageText(end).find(c.property), std::string::npos) << messageText(end);
      EXPECT_NE(messageText(end).find(c.culprit), std::string::npos) << messageText(end);
    }
    gst_message_unref(end);
    gst_object_unref(bus);
    gst_element_set_state(pipeline, GST_STATE_NULL);
    gst_object_unref(pipeline);
  }
}

// Before start, a refused value stays refused until a valid one is set: start fails again, then
// succeeds once the property holds a value it can use; the value read back is the last valid one.
TEST_P(Element, InvalidValueBeforeStartFailsStartUntilAValidOneIsSet) {
  makeElement();
  g_object_set(element_, "search-region", "5,5,20,20", "scales", "abc", nullptr);
  EXPECT_EQ(stringProperty("scales"), "1");
  for (int attempt = 0; attempt < 2; ++attempt) {
    EXPECT_EQ(gst_element_set_state(element_, GST_STATE_PAUSED), GST_STATE_CHANGE_FAILURE);
    std::vector<GstMessage*> errors = popMessages(bus_, GST_MESSAGE_ERROR);
    ASSERT_EQ(errors.size(), 1u);
    EXPECT_NE(messageText(errors[0]).find("'scales': scale factor 'abc'"), std::string::npos) << messageText(errors[0]);
    unrefMessages(&errors);
    gst_element_set_state(element_, GST_STATE_NULL);
  }
  std::vector<GstMessage*> warnings = popMessages(bus_, GST_MESSAGE_WARNING);
  EXPECT_TRUE(warnings.empty()) << "reported once, by the error at start";
  unrefMessages(&warnings);
  g_object_set(element_, "scales", "1,2", nullptr);
  start(makeLayout(GST_VIDEO_FORMAT_GRAY8, 64, 48, 0));
  GstBuffer* out = pushPull(makeFrame(makeLayout(GST_VIDEO_FORMAT_GRAY8, 64, 48, 0), makeImage(64, 48, Fill::Random)));
  EXPECT_NE(out, nullptr);
  if (out != nullptr) gst_buffer_unref(out);
  EXPECT_EQ(stringProperty("search-region"), "5,5,20,20");
  std::vector<GstMessage*> errors = popMessages(bus_, GST_MESSAGE_ERROR);
  EXPECT_TRUE(errors.empty());
  unrefMessages(&errors);
}

// A buffer without GstVideoMeta must hold GStreamer's default layout for its caps; one that is too
// small (rows packed tightly at a width that is not a multiple of 4) fails with an error naming its
// size, the size the caps need and the strides GStreamer expects.
TEST_P(Element, ShortBufferFailsWithAnErrorNamingTheSizesAndTheStride) {
  struct Case {
    GstVideoFormat format;
    gsize bytes;       // 50x30 packed tightly
    const char* text;  // what the error says
  };
  const Case cases[] = {
      {GST_VIDEO_FORMAT_GRAY8, 50 * 30, "buffer of 1500 bytes, caps GRAY8 50x30 need 1560 (rows of stride 52)"},
      {GST_VIDEO_FORMAT_I420, 50 * 30 * 3 / 2,
       "buffer of 2250 bytes, caps I420 50x30 need 2400 (plane strides 52,28,28)"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.text);
    makeElement();
    g_object_set(element_, "template", writeTemplate("t.pgm", makeTemplate(8, 8, Fill::Random)).c_str(), nullptr);
    start(makeLayout(c.format, 50, 30, 0));
    EXPECT_EQ(pushForFlow(harness_, gst_buffer_new_and_alloc(c.bytes)), GST_FLOW_ERROR);
    std::vector<GstMessage*> errors = popMessages(bus_, GST_MESSAGE_ERROR);
    ASSERT_EQ(errors.size(), 1u);
    EXPECT_NE(messageText(errors[0]).find(c.text), std::string::npos) << messageText(errors[0]);
    unrefMessages(&errors);
    gst_harness_teardown(harness_);
    harness_ = nullptr;
    gst_object_unref(element_);
    element_ = nullptr;
  }
}

TEST_P(Element, BadTemplateFileWhilePlayingWarnsAndKeepsThePreviousBank) {
  TemplateImage t = makeTemplate(12, 12, Fill::Random);
  makeElement();
  g_object_set(element_, "template", writeTemplate("kept.png", t).c_str(), nullptr);
  FrameLayout layout = makeLayout(GST_VIDEO_FORMAT_GRAY8, 80, 60, 0);
  start(layout);
  std::string missing = dir_.path("not-there.png");
  g_object_set(element_, "template", missing.c_str(), nullptr);
  for (int frame = 0; frame < 3; ++frame) {
    GstBuffer* out = pushPull(makeFrame(layout, scene(80, 60, {{&t, {33, 22}}})));
    ASSERT_NE(out, nullptr);
    auto rois = roiMetas(out);
    ASSERT_EQ(rois.size(), 1u);
    EXPECT_STREQ(g_quark_to_string(rois[0]->roi_type), "kept");
    EXPECT_EQ(rois[0]->x, 33u);
    gst_buffer_unref(out);
  }
  expectOneWarningContaining(missing);
  std::vector<GstMessage*> errors = popMessages(bus_, GST_MESSAGE_ERROR);
  EXPECT_TRUE(errors.empty());
  unrefMessages(&errors);
}

TEST_P(Element, ScaledCopyLargerThanTheFrameIsSkippedWithOneWarningNamingTheScale) {
  TemplateImage small = makeTemplate(8, 8, Fill::Random);
  makeElement();
  g_object_set(element_, "template", writeTemplate("small.pgm", small).c_str(), "scales", "1,6", nullptr);
  FrameLayout layout = makeLayout(GST_VIDEO_FORMAT_GRAY8, 48, 40, 0);  // 48x48 at scale 6 does not fit
  start(layout);
  for (int frame = 0; frame < 3; ++frame) {
    GstBuffer* out = pushPull(makeFrame(layout, scene(48, 40, {{&small, {20, 25}}})));
    ASSERT_NE(out, nullptr);
    auto rois = roiMetas(out);
    ASSERT_EQ(rois.size(), 1u);
    EXPECT_EQ(rois[0]->x, 20u);
    EXPECT_EQ(doubleField(gst_video_region_of_interest_meta_get_param(rois[0], "nccmatch"), "scale"), 1.0);
    gst_buffer_unref(out);
  }
  expectOneWarningContaining("'small') at scale 6, 48x48");
}

TEST_P(Element, TemplateLargerThanTheFrameIsSkippedWithOneWarning) {
  TemplateImage small = makeTemplate(8, 8, Fill::Random), big = makeTemplate(50, 20, Fill::Random);
  std::string ps = writeTemplate("small.pgm", small), pb = writeTemplate("big.pgm", big);
  makeElement();
  std::string list = pb + "," + ps;  // the oversized one first: no template_match then
  g_object_set(element_, "templates", list.c_str(), nullptr);
  FrameLayout layout = makeLayout(GST_VIDEO_FORMAT_I420, 48, 40, 0);
  start(layout);
  for (int frame = 0; frame < 3; ++frame) {
    GstBuffer* out = pushPull(makeFrame(layout, scene(48, 40, {{&small, {20, 25}}})));
    ASSERT_NE(out, nullptr);
    auto rois = roiMetas(out);
    ASSERT_EQ(rois.size(), 1u);
    EXPECT_STREQ(g_quark_to_string(rois[0]->roi_type), "small");
    EXPECT_EQ(uintField(gst_video_region_of_interest_meta_get_param(rois[0], "nccmatch"), "template"), 1u);
    gst_buffer_unref(out);
  }
  std::vector<GstMessage*> messages = popMessages(bus_, GST_MESSAGE_ANY);
  std::vector<GstMessage*> warnings;
  for (GstMessage* m : messages)
    if (GST_MESSAGE_TYPE(m) == GST_MESSAGE_WARNING) warnings.push_back(m);
  ASSERT_EQ(warnings.size(), 1u);
  EXPECT_NE(messageText(warnings[0]).find("big"), std::string::npos) << messageText(warnings[0]);
  EXPECT_TRUE(structuresNamed(messages, "template_match").empty());
  EXPECT_EQ(structuresNamed(messages, "nccmatch").size(), 3u);
  unrefMessages(&messages);
}

TEST_P(Element, CudaDeviceWithoutAGpuFailsToStartWithAReason) {
  std::string why;
  if (cudaAvailable(&why)) GTEST_SKIP() << "a CUDA device is usable here; nothing to refuse";
  makeElement();
  g_object_set(element_, "device", 2 /* cuda */, nullptr);
  EXPECT_EQ(gst_element_set_state(element_, GST_STATE_PAUSED), GST_STATE_CHANGE_FAILURE);
  std::vector<GstMessage*> errors = popMessages(bus_, GST_MESSAGE_ERROR);
  ASSERT_EQ(errors.size(), 1u);
  EXPECT_NE(messageText(errors[0]).find("CUDA"), std::string::npos) << messageText(errors[0]);
  unrefMessages(&errors);
}

bool allFinite(const GstStructure* s) {
  for (int i = 0; i < gst_structure_n_fields(s); ++i) {
    const GValue* v = gst_structure_get_value(s, gst_structure_nth_field_name(s, i));
    if (G_VALUE_HOLDS_DOUBLE(v) && !std::isfinite(g_value_get_double(v))) return false;
  }
  return true;
}

// Extreme and odd property values, flat frames and flat templates: no crash, no error, no NaN/Inf.
TEST_P(Element, NoPropertyValueOrFlatDataBreaksIt) {
  TemplateImage textured = makeTemplate(6, 5, Fill::Random), flat = makeTemplate(6, 5, Fill::Flat);
  std::string list = writeTemplate("textured.pgm", textured) + "," + writeTemplate("flat.pgm", flat);
  makeElement();
  g_object_set(element_, "templates", list.c_str(), nullptr);
  FrameLayout layout = makeLayout(GST_VIDEO_FORMAT_GRAY8, 24, 18, 2);
  start(layout);

  const double inf = std::numeric_limits<double>::infinity();
  const double thresholds[] = {-inf, -G_MAXDOUBLE, -1.0, 0.0, 0.8, 1e300, inf};
  const guint maxMatches[] = {0u, 1u, guint(G_MAXINT)};
  const double ious[] = {0.0, 1.0};
  const Fill fills[] = {Fill::Random, Fill::Flat};
  // 0.01 makes 1x1 templates (flat: a match everywhere), 16 templates larger than the frame.
  const char* scaleLists[] = {"1", "0.01,1,16"};
  for (const char* scales : scaleLists)
  for (int method = 0; method <= 5; ++method)
    for (double threshold : thresholds)
      for (guint mm : maxMatches)
        for (double iou : ious)
          for (Fill fill : fills) {
            SCOPED_TRACE(::testing::Message() << "scales " << scales << " method " << method << " threshold "
                                              << threshold << " max " << mm << " iou " << iou << " flat "
                                              << (fill == Fill::Flat));
            g_object_set(element_, "scales", scales, "method", method, "threshold", threshold, "max-matches", mm,
                         "nms-iou", iou, nullptr);
            Image luma = makeImage(24, 18, fill);
            paste(&luma, textured, 2, 3);
            GstBuffer* out = pushPull(makeFrame(layout, luma));
            ASSERT_NE(out, nullptr);
            for (GstVideoRegionOfInterestMeta* roi : roiMetas(out))
              ASSERT_TRUE(allFinite(gst_video_region_of_interest_meta_get_param(roi, "nccmatch")));
            gst_buffer_unref(out);
            std::vector<GstMessage*> messages = popMessages(bus_, GST_MESSAGE_ELEMENT);
            for (const GstStructure* s : structuresNamed(messages, "template_match")) ASSERT_TRUE(allFinite(s));
            for (const GstStructure* s : structuresNamed(messages, "nccmatch"))
              for (const GstStructure* m : matchList(s)) ASSERT_TRUE(allFinite(m));
            unrefMessages(&messages);
          }

  // NaN is refused (the previous value stays); odd template lists load what they name.
  g_object_set(element_, "threshold", 0.5, "nms-iou", 0.25, nullptr);
  g_object_set(element_, "threshold", NAN, "nms-iou", NAN, nullptr);
  g_object_set(element_, "nms-iou", std::nextafter(1.0, 2.0), nullptr);  // GObject lets it through: refused here
  double threshold = 0, iou = 0;
  g_object_get(element_, "threshold", &threshold, "nms-iou", &iou, nullptr);
  EXPECT_EQ(threshold, 0.5);
  EXPECT_EQ(iou, 0.25);
  for (const char* odd : {"", " , ,, ", ","}) {
    g_object_set(element_, "templates", odd, nullptr);
    gst_buffer_unref(pushPull(makeFrame(layout, makeImage(24, 18, Fill::Random))));
  }
  g_object_set(element_, "template", nullptr, nullptr);
  gst_buffer_unref(pushPull(makeFrame(layout, makeImage(24, 18, Fill::Random))));
  std::vector<GstMessage*> errors = popMessages(bus_, GST_MESSAGE_ERROR);
  EXPECT_TRUE(errors.empty());
  unrefMessages(&errors);
}

// ---- what gst-inspect-1.0 shows ----

TEST_P(Element, PropertiesAreDocumentedWithTheirDefaultsAndFlags) {
  makeElement();
  GObjectClass* klass = G_OBJECT_GET_CLASS(element_);
  struct Expected {
    const char* name;
    GType type;
    bool mutablePlaying;
  };
  const Expected expected[] = {
      {"template", G_TYPE_STRING, true},       {"templates", G_TYPE_STRING, true},
      {"method", G_TYPE_ENUM, true},           {"display", G_TYPE_BOOLEAN, true},
      {"threshold", G_TYPE_DOUBLE, true},      {"max-matches", G_TYPE_UINT, true},
      {"nms-iou", G_TYPE_DOUBLE, true},        {"post-messages", G_TYPE_BOOLEAN, true},
      {"device", G_TYPE_ENUM, false},          {"frames-in-flight", G_TYPE_UINT, true},
      {"scales", G_TYPE_STRING, true},         {"search-region", G_TYPE_STRING, true},
      {"cpu-threads", G_TYPE_UINT, false},     {"masks", G_TYPE_STRING, true},
      {"angles", G_TYPE_STRING, true},        {"rotation-support", G_TYPE_ENUM, true},
      {"pyramid-levels", G_TYPE_UINT, true},   {"register-upstream", G_TYPE_BOOLEAN, true},
      {"worker-thread", G_TYPE_BOOLEAN, false}, {"cuda-lanes", G_TYPE_UINT, false},
  };
  for (const Expected& e : expected) {
    SCOPED_TRACE(e.name);
    GParamSpec* spec = g_object_class_find_property(klass, e.name);
    ASSERT_NE(spec, nullptr);
    EXPECT_TRUE(g_type_is_a(spec->value_type, e.type));
    EXPECT_TRUE(spec->flags & G_PARAM_READABLE);
    EXPECT_TRUE(spec->flags & G_PARAM_WRITABLE);
    EXPECT_EQ(bool(spec->flags & GST_PARAM_MUTABLE_PLAYING), e.mutablePlaying);
    EXPECT_GT(std::strlen(g_param_spec_get_blurb(spec)), 40u) << "the blurb is the user's documentation";
  }

  auto defaultOf = [&](const char* name) { return g_param_spec_get_default_value(g_object_class_find_property(klass, name)); };
  EXPECT_EQ(g_value_get_string(defaultOf("template")), nullptr);
  EXPECT_EQ(g_value_get_enum(defaultOf("method")), 5);
  EXPECT_TRUE(g_value_get_boolean(defaultOf("display")));
  EXPECT_DOUBLE_EQ(g_value_get_double(defaultOf("threshold")), 0.8);
  EXPECT_EQ(g_value_get_uint(defaultOf("max-matches")), 1u);
  EXPECT_DOUBLE_EQ(g_value_get_double(defaultOf("nms-iou")), 0.3);
  EXPECT_TRUE(g_value_get_boolean(defaultOf("post-messages")));
  EXPECT_FALSE(g_value_get_boolean(defaultOf("register-upstream")));  // off until measured on a GPU host
  EXPECT_EQ(g_value_get_enum(defaultOf("device")), 0);
  EXPECT_EQ(g_value_get_uint(defaultOf("frames-in-flight")), 0u);
  EXPECT_STREQ(g_value_get_string(defaultOf("scales")), "1");
  EXPECT_STREQ(g_value_get_string(defaultOf("search-region")), "");
  EXPECT_EQ(g_value_get_string(defaultOf("masks")), nullptr);
  EXPECT_STREQ(g_value_get_string(defaultOf("angles")), "0");
  EXPECT_EQ(g_value_get_enum(defaultOf("rotation-support")), 0);  // rectangle
  EXPECT_EQ(g_value_get_uint(defaultOf("pyramid-levels")), 0u);    // every variant at full size
  EXPECT_EQ(G_PARAM_SPEC_UINT(g_object_class_find_property(klass, "pyramid-levels"))->maximum,
            guint(kMaxPyramidLevels));
  EXPECT_EQ(g_value_get_uint(defaultOf("cpu-threads")), 0u);
  EXPECT_TRUE(g_value_get_boolean(defaultOf("worker-thread")));
  EXPECT_EQ(G_PARAM_SPEC_UINT(g_object_class_find_property(klass, "frames-in-flight"))->maximum,
            guint(Engine::kMaxFramesInFlight));
  EXPECT_EQ(g_value_get_uint(defaultOf("cuda-lanes")), guint(EngineOptions{}.cudaMatchingLanes));
  EXPECT_EQ(G_PARAM_SPEC_UINT(g_object_class_find_property(klass, "cuda-lanes"))->minimum, 1u);
  EXPECT_EQ(G_PARAM_SPEC_UINT(g_object_class_find_property(klass, "cuda-lanes"))->maximum,
            guint(Engine::kMaxFramesInFlight));

  auto* threshold = G_PARAM_SPEC_DOUBLE(g_object_class_find_property(klass, "threshold"));
  EXPECT_LE(threshold->minimum, -1e300);
  EXPECT_GE(threshold->maximum, 1e300);
  auto* iou = G_PARAM_SPEC_DOUBLE(g_object_class_find_property(klass, "nms-iou"));
  EXPECT_EQ(iou->minimum, 0.0);
  EXPECT_EQ(iou->maximum, 1.0);

  // The grab-template action signal: gboolean (gchararray name, gint x, gint y, gint width, gint height).
  GSignalQuery query;
  g_signal_query(g_signal_lookup("grab-template", G_OBJECT_TYPE(element_)), &query);
  ASSERT_NE(query.signal_id, 0u);
  EXPECT_TRUE(query.signal_flags & G_SIGNAL_ACTION);
  EXPECT_EQ(query.return_type, G_TYPE_BOOLEAN);
  ASSERT_EQ(query.n_params, 5u);
  EXPECT_EQ(query.param_types[0], G_TYPE_STRING);
  for (guint i = 1; i < 5; ++i) EXPECT_EQ(query.param_types[i], G_TYPE_INT) << i;

  // templatematch's method values and our nicks.
  GEnumClass* methods = G_ENUM_CLASS(g_type_class_ref(g_object_class_find_property(klass, "method")->value_type));
  const char* nicks[] = {"sqdiff", "sqdiff-normed", "ccorr", "ccorr-normed", "ccoeff", "ccoeff-normed"};
  EXPECT_EQ(methods->n_values, 6u);
  for (int v = 0; v < 6; ++v) {
    GEnumValue* value = g_enum_get_value(methods, v);
    ASSERT_NE(value, nullptr);
    EXPECT_STREQ(value->value_nick, nicks[v]);
  }
  g_type_class_unref(methods);
  GEnumClass* devices = G_ENUM_CLASS(g_type_class_ref(g_object_class_find_property(klass, "device")->value_type));
  EXPECT_STREQ(g_enum_get_value(devices, 0)->value_nick, "auto");
  EXPECT_STREQ(g_enum_get_value(devices, 1)->value_nick, "cpu");
  EXPECT_STREQ(g_enum_get_value(devices, 2)->value_nick, "cuda");
  g_type_class_unref(devices);

  // Pads accept GRAY8, I420 and NV12 and nothing else.
  GstPad* sink = gst_element_get_static_pad(element_, "sink");
  GstCaps* caps = gst_pad_query_caps(sink, nullptr);
  for (const char* format : {"GRAY8", "I420", "NV12"}) {
    GstCaps* one = gst_caps_new_simple("video/x-raw", "format", G_TYPE_STRING, format, nullptr);
    EXPECT_TRUE(gst_caps_can_intersect(caps, one)) << format;
    gst_caps_unref(one);
  }
  GstCaps* rgb = gst_caps_from_string("video/x-raw,format=RGB");
  EXPECT_FALSE(gst_caps_can_intersect(caps, rgb));
  gst_caps_unref(rgb);
  gst_caps_unref(caps);
  gst_object_unref(sink);
}

TEST_P(Element, RunsInAParsedPipeline) {
  std::string path = writeTemplate("ball.png", makeTemplate(16, 16, Fill::Random));
  std::string description = "videotestsrc num-buffers=10 ! video/x-raw,format=GRAY8,width=320,height=240 ! "
                            "nccmatch name=m device=" + std::string(backendName(GetParam())) + " method=ccoeff-normed template=\"" + path + "\" ! fakesink";
  GError* error = nullptr;
  GstElement* pipeline = gst_parse_launch(description.c_str(), &error);
  ASSERT_NE(pipeline, nullptr) << (error ? error->message : "");
  gst_element_set_state(pipeline, GST_STATE_PLAYING);
  GstBus* bus = gst_element_get_bus(pipeline);
  int nccmatchMessages = 0;
  bool eos = false;
  while (GstMessage* m = gst_bus_timed_pop_filtered(
             bus, 30 * GST_SECOND,
             static_cast<GstMessageType>(GST_MESSAGE_EOS | GST_MESSAGE_ERROR | GST_MESSAGE_ELEMENT))) {
    GstMessageType type = GST_MESSAGE_TYPE(m);
    if (type == GST_MESSAGE_ERROR) ADD_FAILURE() << messageText(m);
    if (type == GST_MESSAGE_ELEMENT && gst_structure_has_name(gst_message_get_structure(m), "nccmatch"))
      ++nccmatchMessages;
    eos = type == GST_MESSAGE_EOS;
    gst_message_unref(m);
    if (type != GST_MESSAGE_ELEMENT) break;
  }
  EXPECT_TRUE(eos);
  EXPECT_EQ(nccmatchMessages, 10);
  gst_object_unref(bus);
  gst_element_set_state(pipeline, GST_STATE_NULL);
  gst_object_unref(pipeline);
}

}  // namespace

NCCMATCH_INSTANTIATE_ELEMENT_TESTS();

}  // namespace nccmatch::test
