// The nccmatch element under test through GstHarness: small readers of its messages and metas, and
// the fixture every element test runs with, once on the CPU backend and once on the CUDA backend
// (skipped where no GPU is usable).
#pragma once

#include <gst/check/gstharness.h>
#include <gst/video/video.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <utility>
#include <vector>

#include "nccmatch/engine.hpp"
#include "plugin_test_support.hpp"

namespace nccmatch::test {

// ---- small readers ----

inline guint uintField(const GstStructure* s, const char* field) {
  guint v = 0;
  EXPECT_TRUE(gst_structure_get_uint(s, field, &v)) << field << " in " << gst_structure_get_name(s);
  return v;
}
inline double doubleField(const GstStructure* s, const char* field) {
  double v = NAN;
  EXPECT_TRUE(gst_structure_get_double(s, field, &v)) << field << " in " << gst_structure_get_name(s);
  return v;
}

inline std::vector<const GstStructure*> matchList(const GstStructure* nccmatchMessage) {
  std::vector<const GstStructure*> out;
  const GValue* list = gst_structure_get_value(nccmatchMessage, "matches");
  EXPECT_TRUE(list != nullptr && GST_VALUE_HOLDS_LIST(list));
  if (list == nullptr || !GST_VALUE_HOLDS_LIST(list)) return out;
  for (guint i = 0; i < gst_value_list_get_size(list); ++i)
    out.push_back(gst_value_get_structure(gst_value_list_get_value(list, i)));
  return out;
}

inline std::vector<GstVideoRegionOfInterestMeta*> roiMetas(GstBuffer* buffer) {
  std::vector<GstVideoRegionOfInterestMeta*> rois;
  gpointer state = nullptr;
  while (GstMeta* meta = gst_buffer_iterate_meta_filtered(buffer, &state, GST_VIDEO_REGION_OF_INTEREST_META_API_TYPE))
    rois.push_back(reinterpret_cast<GstVideoRegionOfInterestMeta*>(meta));
  // Best first per template, as the engine reports them (the buffer keeps its own order).
  std::sort(rois.begin(), rois.end(), [](auto* a, auto* b) {
    guint ta = 0, tb = 0;
    double sa = 0, sb = 0;
    gst_structure_get_uint(gst_video_region_of_interest_meta_get_param(a, "nccmatch"), "template", &ta);
    gst_structure_get_uint(gst_video_region_of_interest_meta_get_param(b, "nccmatch"), "template", &tb);
    gst_structure_get_double(gst_video_region_of_interest_meta_get_param(a, "nccmatch"), "score", &sa);
    gst_structure_get_double(gst_video_region_of_interest_meta_get_param(b, "nccmatch"), "score", &sb);
    return ta != tb ? ta < tb : sa > sb;
  });
  return rois;
}

inline std::vector<uint8_t> bufferBytes(GstBuffer* buffer) {
  GstMapInfo map;
  gst_buffer_map(buffer, &map, GST_MAP_READ);
  std::vector<uint8_t> bytes(map.data, map.data + map.size);
  gst_buffer_unmap(buffer, &map);
  return bytes;
}

struct Placed {
  int x, y;
};

// ---- fixture ----

class Element : public ::testing::TestWithParam<Backend> {
 protected:
  static void SetUpTestSuite() { initGstreamer(); }

  void SetUp() override {
    std::string why;
    if (GetParam() == Backend::Cuda && !cudaAvailable(&why)) GTEST_SKIP() << "CUDA backend: " << why;
    GstElementFactory* factory = gst_element_factory_find("nccmatch");
    ASSERT_NE(factory, nullptr) << "nccmatch not found: GST_PLUGIN_PATH must hold the built plugin";
    gst_object_unref(factory);
    bus_ = gst_bus_new();
  }

  void TearDown() override {
    if (bus_ == nullptr) return;  // skipped in SetUp
    if (harness_ != nullptr) gst_harness_teardown(harness_);
    if (element_ != nullptr) {
      gst_element_set_state(element_, GST_STATE_NULL);
      gst_object_unref(element_);
    }
    std::vector<GstMessage*> rest = popMessages(bus_, GST_MESSAGE_ANY);
    unrefMessages(&rest);
    gst_object_unref(bus_);
  }

  // Score tolerance of the backend under test (absolute for scores near 1, else relative).
  double tolerance() const { return GetParam() == Backend::Cuda ? 1e-4 : 1e-9; }

  // An nccmatch on the backend under test, posting on bus_; further properties are set by the
  // caller before start().
  GstElement* makeElement() {
    element_ = gst_element_factory_make("nccmatch", nullptr);
    gst_object_ref_sink(element_);
    g_object_set(element_, "device", int(GetParam()), nullptr);
    gst_element_set_bus(element_, bus_);
    return element_;
  }

  // Plays the element in a harness (this runs start(): templates load here) with caps for layout.
  void start(const FrameLayout& layout) {
    harness_ = gst_harness_new_with_element(element_, "sink", "src");
    GstCaps* caps = capsFor(layout);
    gst_harness_set_src_caps(harness_, caps);
  }

  // A string property of the element as read back ("" for NULL).
  std::string stringProperty(const char* name) {
    gchar* value = nullptr;
    g_object_get(element_, name, &value, nullptr);
    std::string text = value != nullptr ? value : "";
    g_free(value);
    return text;
  }

  // The warnings posted since the last look (other message types are dropped): exactly one, whose
  // text contains `text`.
  void expectOneWarningContaining(const std::string& text) {
    std::vector<GstMessage*> warnings = popMessages(bus_, GST_MESSAGE_WARNING);
    EXPECT_EQ(warnings.size(), 1u) << "one warning per change, not per frame";
    for (GstMessage* w : warnings) EXPECT_NE(messageText(w).find(text), std::string::npos) << messageText(w);
    unrefMessages(&warnings);
  }

  GstBuffer* pushPull(GstBuffer* in) {
    GstFlowReturn flow = gst_harness_push(harness_, in);
    EXPECT_EQ(flow, GST_FLOW_OK);
    return flow == GST_FLOW_OK ? gst_harness_pull(harness_) : nullptr;
  }

  // Pulls one buffer per expected place (in order) and checks its one match is there; returns
  // the buffers' sizes.
  // The element searching for `t` (written as t.pgm) with `framesInFlight`, playing with caps for
  // `layout`.
  void startFinding(const TemplateImage& t, guint framesInFlight, const FrameLayout& layout) {
    g_object_set(element_, "template", writeTemplate("t.pgm", t).c_str(), "frames-in-flight", framesInFlight, nullptr);
    start(layout);
  }

  std::vector<gsize> pullMatchesAt(const std::vector<std::pair<guint, guint>>& places) {
    std::vector<gsize> sizes;
    for (std::size_t k = 0; k < places.size(); ++k) {
      GstBuffer* b = gst_harness_pull(harness_);
      if (b == nullptr) {
        ADD_FAILURE() << "no buffer " << k;
        break;
      }
      auto rois = roiMetas(b);
      EXPECT_EQ(rois.size(), 1u) << "buffer " << k;
      if (!rois.empty()) {
        EXPECT_EQ(rois[0]->x, places[k].first) << "buffer " << k;
        EXPECT_EQ(rois[0]->y, places[k].second) << "buffer " << k;
      }
      sizes.push_back(gst_buffer_get_size(b));
      gst_buffer_unref(b);
    }
    return sizes;
  }

  std::string writeTemplate(const std::string& fileName, const TemplateImage& t) {
    std::string path = dir_.path(fileName);
    if (fileName.size() > 4 && fileName.substr(fileName.size() - 4) == ".png")
      writePng(path, t);
    else
      writePgm(path, t);
    return path;
  }

  // Random background with the templates pasted at the given places.
  static Image scene(int width, int height, const std::vector<std::pair<const TemplateImage*, Placed>>& pasted) {
    Image img = makeImage(width, height, Fill::Random);
    for (const auto& [t, at] : pasted) paste(&img, *t, at.x, at.y);
    return img;
  }

  TempDir dir_;
  GstBus* bus_ = nullptr;
  GstElement* element_ = nullptr;
  GstHarness* harness_ = nullptr;
};


// The two backends every element test runs on, named cpu and cuda.
#define NCCMATCH_INSTANTIATE_ELEMENT_TESTS()                                                        \
  INSTANTIATE_TEST_SUITE_P(Backends, Element, ::testing::Values(Backend::Cpu, Backend::Cuda),          \
                           [](const ::testing::TestParamInfo<Backend>& info) { return backendName(info.param); })

}  // namespace nccmatch::test
