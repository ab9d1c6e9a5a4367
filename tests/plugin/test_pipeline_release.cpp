// releasePipeline with an element that refuses to stop: a pipeline is freed once it is in NULL
// throughout (also when the first change to NULL is refused, as decodebin2 did on fuzzed BMP
// files), and a pipeline that never stops is kept, not disposed in another state.
#include "pipeline_release.hpp"

#include <gtest/gtest.h>

#include "plugin_test_support.hpp"

// A pass-through-less element whose READY -> NULL change fails while refusals_left > 0.
struct StubbornStop {
  GstElement parent;
  int refusals_left;
};
struct StubbornStopClass {
  GstElementClass parent_class;
};
G_DEFINE_TYPE(StubbornStop, stubborn_stop, GST_TYPE_ELEMENT)

static GstStateChangeReturn stubbornStopChangeState(GstElement* element, GstStateChange transition) {
  auto* self = reinterpret_cast<StubbornStop*>(element);
  if (transition == GST_STATE_CHANGE_READY_TO_NULL && self->refusals_left > 0) {
    --self->refusals_left;
    return GST_STATE_CHANGE_FAILURE;
  }
  return GST_ELEMENT_CLASS(stubborn_stop_parent_class)->change_state(element, transition);
}
static void stubborn_stop_class_init(StubbornStopClass* klass) {
  GST_ELEMENT_CLASS(klass)->change_state = stubbornStopChangeState;
  gst_element_class_set_static_metadata(GST_ELEMENT_CLASS(klass), "stubborn stop", "Testing",
                                        "refuses to go to NULL", "nccmatch tests");
}
static void stubborn_stop_init(StubbornStop* self) { self->refusals_left = 0; }

namespace nccmatch::plugin {
namespace {

// A pipeline of fakesrc ! fakesink and a StubbornStop refusing `refusals` stops, in PAUSED; *freed
// turns true when the pipeline is finalized.
GstElement* makePipeline(int refusals, bool* freed) {
  GstElement* pipeline = gst_pipeline_new(nullptr);
  GstElement* src = gst_element_factory_make("fakesrc", nullptr);
  GstElement* sink = gst_element_factory_make("fakesink", nullptr);
  auto* stubborn = static_cast<StubbornStop*>(g_object_new(stubborn_stop_get_type(), nullptr));
  stubborn->refusals_left = refusals;
  gst_bin_add_many(GST_BIN(pipeline), src, sink, GST_ELEMENT(stubborn), nullptr);
  EXPECT_TRUE(gst_element_link(src, sink));
  g_object_set(sink, "async", FALSE, nullptr);
  EXPECT_NE(gst_element_set_state(pipeline, GST_STATE_PAUSED), GST_STATE_CHANGE_FAILURE);
  *freed = false;
  g_object_weak_ref(G_OBJECT(pipeline), [](gpointer flag, GObject*) { *static_cast<bool*>(flag) = true; }, freed);
  return pipeline;
}

TEST(PipelineRelease, FreesAPipelineThatStops) {
  test::initGstreamer();
  bool freed = false;
  const std::size_t parkedBefore = parkedPipelineCount();
  EXPECT_TRUE(releasePipeline(makePipeline(0, &freed)));
  EXPECT_TRUE(freed);
  EXPECT_EQ(parkedPipelineCount(), parkedBefore);
}

TEST(PipelineRelease, RetriesAStopThatWasRefusedOnce) {
  test::initGstreamer();
  for (int refusals : {1, 2}) {
    SCOPED_TRACE(refusals);
    bool freed = false;
    const std::size_t parkedBefore = parkedPipelineCount();
    EXPECT_TRUE(releasePipeline(makePipeline(refusals, &freed)));
    EXPECT_TRUE(freed);
    EXPECT_EQ(parkedPipelineCount(), parkedBefore);
  }
}

TEST(PipelineRelease, KeepsAPipelineThatNeverStops) {
  test::initGstreamer();
  bool freed = false;
  const std::size_t parkedBefore = parkedPipelineCount();
  GstElement* pipeline = makePipeline(1000, &freed);
  EXPECT_FALSE(releasePipeline(pipeline));
  EXPECT_FALSE(freed);  // not disposed in READY
  EXPECT_EQ(parkedPipelineCount(), parkedBefore + 1);
  GstState state = GST_STATE_VOID_PENDING;
  gst_element_get_state(pipeline, &state, nullptr, 0);
  EXPECT_NE(state, GST_STATE_NULL);
}

}  // namespace
}  // namespace nccmatch::plugin
