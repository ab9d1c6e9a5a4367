// The nccmatch element's contract with its neighbours, through GstHarness, on the CPU backend and
// on the CUDA backend (skipped where no GPU is usable): caps for every format and memory type,
// the device=auto fallback, the buffer pool offered upstream, latency, QoS, and the stats.
#include <gst/check/gstharness.h>
#include <gst/video/video.h>
#include <gtest/gtest.h>

#include <thread>

#include <string>
#include <vector>

#include "nccmatch/engine.hpp"
#include "plugin_test_support.hpp"

namespace nccmatch::test {
namespace {

// The template caps say whether this build takes memory:CUDAMemory (gstcuda and CUDA were found).
bool buildTakesCudaMemory() {
  GstElementFactory* factory = gst_element_factory_find("nccmatch");
  bool cuda = false;
  for (const GList* l = gst_element_factory_get_static_pad_templates(factory); l != nullptr; l = l->next) {
    GstCaps* caps = gst_static_caps_get(&static_cast<GstStaticPadTemplate*>(l->data)->static_caps);
    for (guint i = 0; i < gst_caps_get_size(caps); ++i)
      cuda = cuda || gst_caps_features_contains(gst_caps_get_features(caps, i), "memory:CUDAMemory");
    gst_caps_unref(caps);
  }
  gst_object_unref(factory);
  return cuda;
}

GstCaps* cudaCaps(const char* format, int width, int height) {
  GstCaps* caps = gst_caps_new_simple("video/x-raw", "format", G_TYPE_STRING, format, "width", G_TYPE_INT, width,
                                      "height", G_TYPE_INT, height, "framerate", GST_TYPE_FRACTION, 30, 1, nullptr);
  gst_caps_set_features(caps, 0, gst_caps_features_new("memory:CUDAMemory", nullptr));
  return caps;
}

class Negotiation : public ::testing::TestWithParam<Backend> {
 protected:
  static void SetUpTestSuite() { initGstreamer(); }

  void SetUp() override {
    std::string why;
    if (GetParam() == Backend::Cuda && !cudaAvailable(&why)) GTEST_SKIP() << "CUDA backend: " << why;
    bus_ = gst_bus_new();
    makeElement();
  }

  // A fresh nccmatch on the backend under test (dropping the harness and element of before).
  void makeElement() {
    dropElement();
    element_ = gst_element_factory_make("nccmatch", nullptr);
    ASSERT_NE(element_, nullptr);
    gst_object_ref_sink(element_);
    g_object_set(element_, "device", int(GetParam()), "display", FALSE, nullptr);
    gst_element_set_bus(element_, bus_);
  }
  void dropElement() {
    if (harness_ != nullptr) gst_harness_teardown(harness_);
    harness_ = nullptr;
    if (element_ != nullptr) {
      gst_element_set_state(element_, GST_STATE_NULL);
      gst_object_unref(element_);
    }
    element_ = nullptr;
  }

  void TearDown() override {
    dropElement();
    if (bus_ != nullptr) {
      std::vector<GstMessage*> rest = popMessages(bus_, GST_MESSAGE_ANY);
      unrefMessages(&rest);
      gst_object_unref(bus_);
    }
  }

  // A 16x16 textured template; frames of `layout` with it pasted at (20, 10).
  void startWithTemplate(const FrameLayout& layout) {
    template_ = makeTemplate(16, 16, Fill::Random, "needle");
    std::string path = dir_.path("needle.pgm");
    writePgm(path, template_);
    g_object_set(element_, "template", path.c_str(), nullptr);
    harness_ = gst_harness_new_with_element(element_, "sink", "src");
    gst_harness_set_src_caps(harness_, capsFor(layout));
  }
  GstBuffer* frame(const FrameLayout& layout, GstClockTime pts) {
    Image luma = makeImage(layout.width, layout.height, Fill::Random);
    paste(&luma, template_, 20, 10);
    GstBuffer* buffer = makeFrame(layout, luma);
    GST_BUFFER_PTS(buffer) = pts;
    GST_BUFFER_DURATION(buffer) = GST_SECOND / 30;
    return buffer;
  }
  // Frames at 30 frames/s pushed one by one, each pulled back (whichever thread pushes it).
  void pushAndPullFrames(const FrameLayout& layout, int count) {
    for (int i = 0; i < count; ++i) {
      GstBuffer* out = gst_harness_push_and_pull(harness_, frame(layout, i * GST_SECOND / 30));
      ASSERT_NE(out, nullptr);
      gst_buffer_unref(out);
    }
  }
  GstStructure* stats() {
    GstStructure* s = nullptr;
    g_object_get(element_, "stats", &s, nullptr);
    return s;
  }

  TempDir dir_;
  TemplateImage template_;
  GstBus* bus_ = nullptr;
  GstElement* element_ = nullptr;
  GstHarness* harness_ = nullptr;
};

TEST_P(Negotiation, EveryFormatAndMemoryTypeIsAcceptedOrRefusedAsTheBackendAllows) {
  FrameLayout layout = makeLayout(GST_VIDEO_FORMAT_GRAY8, 64, 48, 0);
  startWithTemplate(layout);  // started: the backend is known
  GstPad* sink = gst_element_get_static_pad(element_, "sink");
  const bool cudaMemoryExpected = GetParam() == Backend::Cuda && buildTakesCudaMemory();
  struct Case {
    const char* format;
    bool cudaMemory;
    bool accepted;
  } cases[] = {
      {"GRAY8", false, true}, {"I420", false, true}, {"NV12", false, true}, {"RGB", false, false},
      {"GRAY8", true, false}, {"I420", true, cudaMemoryExpected}, {"NV12", true, cudaMemoryExpected},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(std::string(c.format) + (c.cudaMemory ? " in CUDA memory" : " in system memory"));
    GstCaps* caps = c.cudaMemory ? cudaCaps(c.format, 64, 48)
                                 : gst_caps_new_simple("video/x-raw", "format", G_TYPE_STRING, c.format, "width",
                                                       G_TYPE_INT, 64, "height", G_TYPE_INT, 48, "framerate",
                                                       GST_TYPE_FRACTION, 30, 1, nullptr);
    EXPECT_EQ(bool(gst_pad_query_accept_caps(sink, caps)), c.accepted);
    GstCaps* offered = gst_pad_query_caps(sink, caps);
    EXPECT_EQ(!gst_caps_is_empty(offered), c.accepted) << "caps query answered " << gst_caps_to_string(offered);
    gst_caps_unref(offered);
    gst_caps_unref(caps);
  }
  gst_object_unref(sink);
}

// With CUDA caps forced on an element that cannot take them, the stream stops with a clear error.
TEST_P(Negotiation, CudaMemoryWithoutTheCudaBackendFailsClearly) {
  if (GetParam() == Backend::Cuda && buildTakesCudaMemory()) GTEST_SKIP() << "this element takes CUDA memory";
  FrameLayout layout = makeLayout(GST_VIDEO_FORMAT_NV12, 64, 48, 0);
  startWithTemplate(layout);
  gst_harness_set_src_caps(harness_, cudaCaps("NV12", 64, 48));
  EXPECT_NE(gst_harness_push(harness_, frame(layout, 0)), GST_FLOW_OK);
}

TEST_P(Negotiation, DeviceAutoPicksCudaWhenUsableElseSaysOnceItFallsBackToTheCpu) {
  struct Captured {
    std::vector<std::string> lines;
  } captured;
  GstLogFunction log = [](GstDebugCategory* category, GstDebugLevel level, const gchar*, const gchar*, gint,
                          GObject*, GstDebugMessage* message, gpointer data) {
    if (level <= GST_LEVEL_WARNING && std::string(gst_debug_category_get_name(category)) == "nccmatch")
      static_cast<Captured*>(data)->lines.push_back(gst_debug_message_get(message));
  };
  GstDebugLevel before = gst_debug_get_default_threshold();
  gst_debug_set_threshold_for_name("nccmatch", GST_LEVEL_WARNING);
  gst_debug_add_log_function(log, &captured, nullptr);
  g_object_set(element_, "device", 0 /* auto */, nullptr);
  FrameLayout layout = makeLayout(GST_VIDEO_FORMAT_GRAY8, 64, 48, 0);
  startWithTemplate(layout);
  gst_debug_remove_log_function(log);
  gst_debug_set_threshold_for_name("nccmatch", before);

  GstStructure* s = stats();
  std::string why;
  const bool gpu = cudaAvailable(&why);
  EXPECT_STREQ(gst_structure_get_string(s, "backend"), gpu ? "cuda" : "cpu");
  gst_structure_free(s);
  int fallbackLines = 0;
  for (const std::string& line : captured.lines)
    if (line.find("device=auto") != std::string::npos && line.find("CPU") != std::string::npos) ++fallbackLines;
  EXPECT_EQ(fallbackLines, gpu ? 0 : 1);
  // It still matches.
  GstBuffer* out = gst_harness_push_and_pull(harness_, frame(layout, 0));
  ASSERT_NE(out, nullptr);
  EXPECT_NE(gst_buffer_get_video_region_of_interest_meta(out), nullptr);
  gst_buffer_unref(out);
}

// Upstream asking for a pool gets one; with the CUDA backend its memory is pinned, and frames
// written into it are matched like any other.
TEST_P(Negotiation, BufferPoolOfferedUpstream) {
  for (GstVideoFormat format : {GST_VIDEO_FORMAT_GRAY8, GST_VIDEO_FORMAT_I420, GST_VIDEO_FORMAT_NV12}) {
    SCOPED_TRACE(gst_video_format_to_string(format));
    FrameLayout layout = makeLayout(format, 96, 64, 0);
    if (harness_ == nullptr) startWithTemplate(layout);
    else gst_harness_set_src_caps(harness_, capsFor(layout));
    GstCaps* caps = capsFor(layout);
    GstQuery* query = gst_query_new_allocation(caps, TRUE);
    ASSERT_TRUE(gst_pad_peer_query(harness_->srcpad, query));
    const bool pinnedExpected = GetParam() == Backend::Cuda;
    bool pinnedParam = false;
    for (guint i = 0; i < gst_query_get_n_allocation_params(query); ++i) {
      GstAllocator* allocator = nullptr;
      gst_query_parse_nth_allocation_param(query, i, &allocator, nullptr);
      if (allocator != nullptr) {
        pinnedParam = pinnedParam || std::string(allocator->mem_type) == "NccMatchPinnedMemory";
        gst_object_unref(allocator);
      }
    }
    EXPECT_EQ(pinnedParam, pinnedExpected);
    if (pinnedExpected) {
      ASSERT_GT(gst_query_get_n_allocation_pools(query), 0u);
      EXPECT_TRUE(gst_query_find_allocation_meta(query, GST_VIDEO_META_API_TYPE, nullptr));
      GstBufferPool* pool = nullptr;
      guint size = 0, minBuffers = 0, maxBuffers = 0;
      gst_query_parse_nth_allocation_pool(query, 0, &pool, &size, &minBuffers, &maxBuffers);
      ASSERT_NE(pool, nullptr);
      EXPECT_GE(size, guint(layout.size));
      ASSERT_TRUE(gst_buffer_pool_set_active(pool, TRUE));
      GstBuffer* pooled = nullptr;
      ASSERT_EQ(gst_buffer_pool_acquire_buffer(pool, &pooled, nullptr), GST_FLOW_OK);
      EXPECT_TRUE(gst_memory_is_type(gst_buffer_peek_memory(pooled, 0), "NccMatchPinnedMemory"));
      // Fill it as a producer would (default layout) and match it.
      GstBuffer* content = frame(layout, 0);
      GstMapInfo from, to;
      ASSERT_TRUE(gst_buffer_map(content, &from, GST_MAP_READ));
      ASSERT_TRUE(gst_buffer_map(pooled, &to, GST_MAP_WRITE));
      ASSERT_GE(to.size, from.size);
      memcpy(to.data, from.data, from.size);
      gst_buffer_unmap(pooled, &to);
      gst_buffer_unmap(content, &from);
      gst_buffer_unref(content);
      GstBuffer* out = gst_harness_push_and_pull(harness_, pooled);
      ASSERT_NE(out, nullptr);
      GstVideoRegionOfInterestMeta* roi = gst_buffer_get_video_region_of_interest_meta(out);
      ASSERT_NE(roi, nullptr);
      EXPECT_EQ(roi->x, 20u);
      EXPECT_EQ(roi->y, 10u);
      gst_buffer_unref(out);
      gst_buffer_pool_set_active(pool, FALSE);
      gst_object_unref(pool);
    }
    gst_query_unref(query);
    gst_caps_unref(caps);
  }
}

// A producer that renegotiates for every frame with unchanged caps (pnmdec behind multifilesrc
// sends an ALLOCATION query per image) gets the same pool back each time, already active and
// configured again as before, so its frames keep coming from the same pinned buffers; other caps
// get another pool.
TEST_P(Negotiation, EqualCapsGetTheSamePoolBackEveryTime) {
  if (GetParam() != Backend::Cuda) GTEST_SKIP() << "the CPU backend proposes no pool of its own";
  FrameLayout layout = makeLayout(GST_VIDEO_FORMAT_GRAY8, 96, 64, 0);
  startWithTemplate(layout);
  auto proposedPool = [&](const FrameLayout& l) -> GstBufferPool* {
    GstCaps* caps = capsFor(l);
    GstQuery* query = gst_query_new_allocation(caps, TRUE);
    GstBufferPool* pool = nullptr;
    if (gst_pad_peer_query(harness_->srcpad, query) && gst_query_get_n_allocation_pools(query) > 0)
      gst_query_parse_nth_allocation_pool(query, 0, &pool, nullptr, nullptr, nullptr);
    gst_query_unref(query);
    gst_caps_unref(caps);
    return pool;
  };
  GstBufferPool* first = proposedPool(layout);
  ASSERT_NE(first, nullptr);
  for (int frame = 0; frame < 20; ++frame) {
    GstBufferPool* again = proposedPool(layout);
    EXPECT_EQ(again, first) << "query " << frame;
    if (again == nullptr) break;
    // As GstVideoDecoder does with the pool it gets: configure (the same way each time), activate.
    GstStructure* config = gst_buffer_pool_get_config(again);
    GstCaps* caps = capsFor(layout);
    gst_buffer_pool_config_set_params(config, caps, guint(layout.size), 0, 0);
    gst_caps_unref(caps);
    EXPECT_TRUE(gst_buffer_pool_set_config(again, config));
    EXPECT_TRUE(gst_buffer_pool_set_active(again, TRUE));
    gst_object_unref(again);
  }
  GstBufferPool* other = proposedPool(makeLayout(GST_VIDEO_FORMAT_GRAY8, 64, 64, 0));
  EXPECT_NE(other, first);
  if (other != nullptr) gst_object_unref(other);
  gst_buffer_pool_set_active(first, FALSE);
  gst_object_unref(first);
}

// Where the element passes allocation queries on (the CPU backend; CUDA memory), a producer that
// renegotiates for every frame with unchanged caps gets downstream's first answer again instead of
// a query downstream per frame (where a queue would drain and a sink deep-copy its last buffer);
// a RECONFIGURE from downstream or other caps ask downstream again.
TEST_P(Negotiation, EqualCapsAskDownstreamForAnAllocationOnce) {
  if (GetParam() == Backend::Cuda) GTEST_SKIP() << "the CUDA backend answers system-memory queries with its own pool";
  FrameLayout layout = makeLayout(GST_VIDEO_FORMAT_GRAY8, 96, 64, 0);
  startWithTemplate(layout);
  GstAllocationParams params;
  gst_allocation_params_init(&params);
  params.align = 63;
  GstAllocator* system = gst_allocator_find(nullptr);
  gst_harness_set_propose_allocator(harness_, system, &params);  // downstream's answer
  // Counts the producer's queries that reach downstream (the element's own allocation query,
  // GstBaseTransform's once per negotiation, is another query object and is not counted).
  struct Seen {
    GstQuery* sent = nullptr;
    int downstream = 0;
  } seen;
  int& downstream = seen.downstream;
  gst_pad_add_probe(
      harness_->sinkpad, GstPadProbeType(GST_PAD_PROBE_TYPE_QUERY_DOWNSTREAM | GST_PAD_PROBE_TYPE_PUSH),  // before it is answered
      [](GstPad*, GstPadProbeInfo* info, gpointer data) {
        auto* s = static_cast<Seen*>(data);
        if (GST_PAD_PROBE_INFO_QUERY(info) == s->sent) ++s->downstream;
        return GST_PAD_PROBE_OK;
      },
      &seen, nullptr);
  // One query as a producer sends it; the answer's allocator and alignment.
  auto ask = [&](const FrameLayout& l) -> std::pair<GstAllocator*, gsize> {
    GstCaps* caps = capsFor(l);
    GstQuery* query = gst_query_new_allocation(caps, TRUE);
    seen.sent = query;
    std::pair<GstAllocator*, gsize> answer{nullptr, 0};
    EXPECT_TRUE(gst_pad_peer_query(harness_->srcpad, query));
    seen.sent = nullptr;
    if (gst_query_get_n_allocation_params(query) > 0) {
      GstAllocationParams got;
      gst_query_parse_nth_allocation_param(query, 0, &answer.first, &got);
      answer.second = got.align;
    }
    gst_query_unref(query);
    gst_caps_unref(caps);
    return answer;
  };
  // As a stream: a frame has gone through (GstBaseTransform has settled its own negotiation).
  GstBuffer* out = gst_harness_push_and_pull(harness_, frame(layout, 0));
  ASSERT_NE(out, nullptr);
  gst_buffer_unref(out);
  for (int frame = 0; frame < 10; ++frame) {
    auto [allocator, align] = ask(layout);
    EXPECT_EQ(allocator, system) << "query " << frame << ": downstream's answer, also when kept";
    EXPECT_EQ(align, 63u) << "query " << frame;
    if (allocator != nullptr) gst_object_unref(allocator);
  }
  EXPECT_EQ(downstream, 1) << "ten queries with equal caps, one went downstream";
  EXPECT_TRUE(gst_harness_push_upstream_event(harness_, gst_event_new_reconfigure()));
  auto [afterReconfigure, alignAfter] = ask(layout);
  EXPECT_EQ(downstream, 2) << "downstream asked for a new allocation";
  if (afterReconfigure != nullptr) gst_object_unref(afterReconfigure);
  auto [otherCaps, alignOther] = ask(makeLayout(GST_VIDEO_FORMAT_GRAY8, 64, 64, 0));
  EXPECT_EQ(downstream, 3) << "other caps";
  if (otherCaps != nullptr) gst_object_unref(otherCaps);
  gst_object_unref(system);
}

// In place and synchronous: the element adds no latency to what upstream reports.
TEST_P(Negotiation, LatencyIsUpstreamsUnchanged) {
  FrameLayout layout = makeLayout(GST_VIDEO_FORMAT_GRAY8, 64, 48, 0);
  startWithTemplate(layout);
  gst_harness_set_upstream_latency(harness_, 40 * GST_MSECOND);
  GstQuery* query = gst_query_new_latency();
  ASSERT_TRUE(gst_pad_peer_query(harness_->sinkpad, query));
  gboolean live = FALSE;
  GstClockTime minimum = 0, maximum = 0;
  gst_query_parse_latency(query, &live, &minimum, &maximum);
  EXPECT_TRUE(live);
  EXPECT_EQ(minimum, 40 * GST_MSECOND);
  gst_query_unref(query);
}

// QoS as a GstVideoFilter: with qos=true (the default) a frame already late by a downstream QoS
// event is dropped unprocessed and a QoS message is posted; with qos=false it is processed.
TEST_P(Negotiation, QosDropsLateFramesOnlyWhenEnabled) {
  for (bool qos : {true, false}) {
    SCOPED_TRACE(qos ? "qos=true" : "qos=false");
    if (harness_ != nullptr) {
      gst_harness_teardown(harness_);
      harness_ = nullptr;
      gst_element_set_state(element_, GST_STATE_NULL);
      gst_object_unref(element_);
      element_ = gst_element_factory_make("nccmatch", nullptr);
      gst_object_ref_sink(element_);
      g_object_set(element_, "device", int(GetParam()), "display", FALSE, nullptr);
      gst_element_set_bus(element_, bus_);
    }
    gboolean enabled = FALSE;
    g_object_get(element_, "qos", &enabled, nullptr);
    EXPECT_TRUE(enabled) << "qos defaults to true";
    g_object_set(element_, "qos", gboolean(qos), nullptr);
    FrameLayout layout = makeLayout(GST_VIDEO_FORMAT_I420, 64, 48, 0);
    startWithTemplate(layout);
    std::vector<GstMessage*> old = popMessages(bus_, GST_MESSAGE_ANY);
    unrefMessages(&old);
    // Downstream: the frame at 1 s arrived 1 s late, so anything before 2 s is too late.
    ASSERT_TRUE(gst_harness_push_upstream_event(
        harness_, gst_event_new_qos(GST_QOS_TYPE_UNDERFLOW, 2.0, GST_CLOCK_DIFF(0, GST_SECOND), GST_SECOND)));
    EXPECT_EQ(gst_harness_push(harness_, frame(layout, GST_SECOND / 2)), GST_FLOW_OK);
    EXPECT_EQ(gst_harness_push(harness_, frame(layout, 10 * GST_SECOND)), GST_FLOW_OK);
    EXPECT_TRUE(drainElement(harness_));  // what a worker thread holds is out
    EXPECT_EQ(gst_harness_buffers_received(harness_), qos ? 1u : 2u);
    std::vector<GstMessage*> qosMessages = popMessages(bus_, GST_MESSAGE_QOS);
    EXPECT_EQ(qosMessages.size(), qos ? 1u : 0u);
    unrefMessages(&qosMessages);
    GstStructure* s = stats();
    guint64 frames = 0;
    EXPECT_TRUE(gst_structure_get_uint64(s, "frames", &frames));
    EXPECT_EQ(frames, qos ? 1u : 2u) << "a dropped frame is never matched";
    gst_structure_free(s);
  }
}

TEST_P(Negotiation, StatsCountFramesAndArePostedAtEos) {
  GstStructure* idle = stats();
  guint64 frames = 99;
  EXPECT_TRUE(gst_structure_get_uint64(idle, "frames", &frames));
  EXPECT_EQ(frames, 0u);
  EXPECT_STREQ(gst_structure_get_string(idle, "backend"), "none");
  int threads = -1;
  EXPECT_TRUE(gst_structure_get_int(idle, "threads", &threads));
  EXPECT_EQ(threads, 0);
  guint64 idleInputs = 99;
  EXPECT_TRUE(gst_structure_get_uint64(idle, "streaming-buffers", &idleInputs));
  EXPECT_EQ(idleInputs, 0u);
  gst_structure_free(idle);

  FrameLayout layout = makeLayout(GST_VIDEO_FORMAT_NV12, 80, 60, 0);
  startWithTemplate(layout);
  pushAndPullFrames(layout, 5);
  GstStructure* s = stats();
  EXPECT_TRUE(gst_structure_get_uint64(s, "frames", &frames));
  EXPECT_EQ(frames, 5u);
  EXPECT_STREQ(gst_structure_get_string(s, "backend"), backendName(GetParam()));
  EXPECT_STREQ(gst_structure_get_string(s, "memory"), "system");
  EXPECT_TRUE(gst_structure_get_int(s, "threads", &threads));
  const int cores = int(std::max(1u, std::thread::hardware_concurrency()));
  EXPECT_EQ(threads, GetParam() == Backend::Cpu ? cores : 1) << "cpu-threads 0: one per core on the CPU";
  double mean = -1, max = -1;
  EXPECT_TRUE(gst_structure_get_double(s, "mean-us", &mean));
  EXPECT_TRUE(gst_structure_get_double(s, "max-us", &max));
  EXPECT_GE(mean, 0.0);
  EXPECT_GE(max, mean);
  // The worker thread's time holds each frame's engine time (every frame was submitted and
  // collected there: one out for one in), and more; the streaming thread only hands buffers over.
  double streaming = -1, worker = -1;
  EXPECT_TRUE(gst_structure_get_double(s, "streaming-us", &streaming));
  EXPECT_TRUE(gst_structure_get_double(s, "worker-us", &worker));
  EXPECT_GT(streaming, 0.0);
  EXPECT_GT(worker, 0.0);
  EXPECT_GE(worker, mean);
  guint64 inputs = 0;
  EXPECT_TRUE(gst_structure_get_uint64(s, "streaming-buffers", &inputs));
  EXPECT_EQ(inputs, 5u) << "streaming-us is the mean over the 5 input buffers";
  gst_structure_free(s);

  ASSERT_TRUE(gst_harness_push_event(harness_, gst_event_new_eos()));
  std::vector<GstMessage*> messages = popMessages(bus_, GST_MESSAGE_ELEMENT);
  auto posted = structuresNamed(messages, "nccmatch-stats");
  ASSERT_EQ(posted.size(), 1u);
  EXPECT_TRUE(gst_structure_get_uint64(posted[0], "frames", &frames));
  EXPECT_EQ(frames, 5u);
  unrefMessages(&messages);

  // A restart starts counting afresh.
  gst_harness_teardown(harness_);
  harness_ = nullptr;
  gst_element_set_state(element_, GST_STATE_NULL);
  gst_element_set_state(element_, GST_STATE_PAUSED);
  s = stats();
  EXPECT_TRUE(gst_structure_get_uint64(s, "frames", &frames));
  EXPECT_EQ(frames, 0u);
  EXPECT_TRUE(gst_structure_get_double(s, "streaming-us", &streaming));
  EXPECT_EQ(streaming, 0.0);
  gst_structure_free(s);
}

// Without a worker thread the streaming thread does it all: its time holds each frame's engine
// time, and worker-us stays 0.
TEST_P(Negotiation, StatsWithoutAWorkerThreadCountTheStreamingThread) {
  g_object_set(element_, "worker-thread", FALSE, nullptr);
  FrameLayout layout = makeLayout(GST_VIDEO_FORMAT_NV12, 80, 60, 0);
  startWithTemplate(layout);
  pushAndPullFrames(layout, 5);
  GstStructure* s = stats();
  double mean = -1, streaming = -1, worker = -1;
  EXPECT_TRUE(gst_structure_get_double(s, "mean-us", &mean));
  EXPECT_TRUE(gst_structure_get_double(s, "streaming-us", &streaming));
  EXPECT_TRUE(gst_structure_get_double(s, "worker-us", &worker));
  EXPECT_GE(streaming, mean);
  EXPECT_GT(streaming, 0.0);
  EXPECT_EQ(worker, 0.0);
  gst_structure_free(s);
}

// cpu-threads sets the CPU backend's workers (stats 'threads'); the CUDA backend ignores it.
TEST_P(Negotiation, CpuThreadsSetTheCpuBackendsWorkers) {
  for (guint wanted : {1u, 3u}) {
    SCOPED_TRACE(wanted);
    makeElement();
    g_object_set(element_, "cpu-threads", wanted, nullptr);
    FrameLayout layout = makeLayout(GST_VIDEO_FORMAT_GRAY8, 64, 48, 0);
    startWithTemplate(layout);
    GstBuffer* out = gst_harness_push_and_pull(harness_, frame(layout, 0));
    ASSERT_NE(out, nullptr);
    EXPECT_NE(gst_buffer_get_video_region_of_interest_meta(out), nullptr) << "still matches";
    gst_buffer_unref(out);
    GstStructure* s = stats();
    int threads = 0;
    EXPECT_TRUE(gst_structure_get_int(s, "threads", &threads));
    EXPECT_EQ(threads, GetParam() == Backend::Cpu ? int(wanted) : 1);
    gst_structure_free(s);
  }
}

TEST_P(Negotiation, CudaDeviceIdDefaultsToMinusOneAndAnAbsentDeviceFailsToStart) {
  gint id = 0;
  g_object_get(element_, "cuda-device-id", &id, nullptr);
  EXPECT_EQ(id, -1);
  if (GetParam() != Backend::Cuda) GTEST_SKIP() << "device ids matter to the CUDA backend only";
  g_object_set(element_, "cuda-device-id", 4096, nullptr);
  EXPECT_EQ(gst_element_set_state(element_, GST_STATE_PAUSED), GST_STATE_CHANGE_FAILURE);
  std::vector<GstMessage*> errors = popMessages(bus_, GST_MESSAGE_ERROR);
  ASSERT_FALSE(errors.empty());
  EXPECT_NE(messageText(errors[0]).find("4096"), std::string::npos) << messageText(errors[0]);
  unrefMessages(&errors);
}

INSTANTIATE_TEST_SUITE_P(Backends, Negotiation, ::testing::Values(Backend::Cpu, Backend::Cuda),
                         [](const ::testing::TestParamInfo<Backend>& info) { return backendName(info.param); });

}  // namespace
}  // namespace nccmatch::test
