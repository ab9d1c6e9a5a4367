// The element's frames in flight (`frames-in-flight`, plugin/element_frames.cpp) through GstHarness:
// output order and content independent of the depth, the latency it reports, depth changes while
// PLAYING, caps changes, flushes and drain queries with frames held. CPU and CUDA backends.
#include <gst/check/gstharness.h>
#include <gst/video/video.h>
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "element_fixture.hpp"
#include "nccmatch/engine.hpp"
#include "plugin_test_support.hpp"

namespace nccmatch::test {
namespace {

// ---- frames in flight ----

// What one run of frames through an element gives: per output buffer its bytes and the place of
// its match, and the timestamps of the nccmatch messages, in order.
struct FramesOut {
  std::vector<std::vector<uint8_t>> bytes;
  std::vector<std::pair<guint, guint>> boxes;
  std::vector<guint64> stamps;
};

TEST_P(Element, FramesInFlightKeepTheOrderAndContentOfEveryOutput) {
  TemplateImage t = makeTemplate(12, 10, Fill::Random);
  const std::string path = writeTemplate("t.pgm", t);
  const FrameLayout layout = makeLayout(GST_VIDEO_FORMAT_I420, 96, 72, 0);
  const int frames = 7;
  std::vector<Image> scenes;
  for (int i = 0; i < frames; ++i) scenes.push_back(scene(96, 72, {{&t, {3 + 11 * i, 2 + 8 * i}}}));

  // worker: the element's own thread matches and pushes (worker-thread), so outputs come at their
  // own pace, not with each push; the same outputs by EOS.
  // lanes: `cuda-lanes` (the CUDA backend's frames matched side by side; the CPU ignores it).
  auto run = [&](guint depth, bool worker, guint lanes = 2) {
    FramesOut out;
    GstElement* e = gst_element_factory_make("nccmatch", nullptr);
    gst_object_ref_sink(e);
    g_object_set(e, "device", int(GetParam()), "template", path.c_str(), "frames-in-flight", depth, "worker-thread",
                 gboolean(worker), "cuda-lanes", lanes, nullptr);
    gst_element_set_bus(e, bus_);
    GstHarness* h = gst_harness_new_with_element(e, "sink", "src");
    gst_harness_set_src_caps(h, capsFor(layout));
    for (int i = 0; i < frames; ++i) {
      GstBuffer* in = makeFrame(layout, scenes[i]);
      GST_BUFFER_PTS(in) = guint64(i) * GST_SECOND / 30;
      GST_BUFFER_DURATION(in) = GST_SECOND / 30;
      EXPECT_EQ(gst_harness_push(h, in), GST_FLOW_OK);
      // Frame i goes out once depth - 1 later frames have been handed to the engine.
      if (!worker) {
        EXPECT_EQ(gst_harness_buffers_received(h), guint(std::max(0, i + 2 - int(depth)))) << "depth " << depth;
      }
    }
    EXPECT_TRUE(gst_harness_push_event(h, gst_event_new_eos()));  // EOS pushes the frames held
    EXPECT_EQ(gst_harness_buffers_received(h), guint(frames));
    while (GstBuffer* b = gst_harness_try_pull(h)) {
      out.bytes.push_back(bufferBytes(b));
      auto rois = roiMetas(b);
      EXPECT_EQ(rois.size(), 1u);
      if (!rois.empty()) out.boxes.emplace_back(rois[0]->x, rois[0]->y);
      gst_buffer_unref(b);
    }
    std::vector<GstMessage*> messages = popMessages(bus_, GST_MESSAGE_ELEMENT);
    for (const GstStructure* m : structuresNamed(messages, "nccmatch")) {
      guint64 v = 0;
      EXPECT_TRUE(gst_structure_get_uint64(m, "timestamp", &v));
      out.stamps.push_back(v);
    }
    unrefMessages(&messages);
    gst_harness_teardown(h);
    gst_element_set_state(e, GST_STATE_NULL);
    gst_object_unref(e);
    return out;
  };
  const FramesOut one = run(1, false);
  ASSERT_EQ(one.boxes.size(), std::size_t(frames));
  for (int i = 0; i < frames; ++i) {
    EXPECT_EQ(one.boxes[i].first, guint(3 + 11 * i));
    EXPECT_EQ(one.boxes[i].second, guint(2 + 8 * i));
    EXPECT_EQ(one.stamps.at(i), guint64(i) * GST_SECOND / 30);
  }
  for (bool worker : {false, true}) {
    for (guint depth : {1u, 2u, 3u}) {
      if (depth == 1 && !worker) continue;  // the reference
      const FramesOut held = run(depth, worker);
      EXPECT_EQ(held.boxes, one.boxes) << depth << " worker " << worker;
      EXPECT_EQ(held.stamps, one.stamps) << depth << " worker " << worker;
      EXPECT_TRUE(held.bytes == one.bytes) << "pixels (boxes drawn) differ at depth " << depth << " worker " << worker;
    }
  }
  for (guint lanes : {1u, 3u}) {
    const FramesOut held = run(3, true, lanes);
    EXPECT_EQ(held.boxes, one.boxes) << lanes << " lanes";
    EXPECT_EQ(held.stamps, one.stamps) << lanes << " lanes";
    EXPECT_TRUE(held.bytes == one.bytes) << "pixels (boxes drawn) differ with " << lanes << " lanes";
  }
}

// A running worker thread adds its 2 waiting buffers to the most latency (not to the least); the
// worker-thread setting changed while running does not change that until the next start.
TEST_P(Element, LatencyQueryCountsTheWorkersWaitingBuffersInTheMost) {
  auto maxLatency = [](GstHarness* h) {
    GstQuery* q = gst_query_new_latency();
    EXPECT_TRUE(gst_pad_peer_query(h->sinkpad, q));
    GstClockTime min = 0, max = 0;
    gst_query_parse_latency(q, nullptr, &min, &max);
    gst_query_unref(q);
    EXPECT_EQ(min, 5 * GST_MSECOND);
    return max;
  };
  GstClockTime withWorker = 0;
  for (bool worker : {true, false}) {
    makeElement();
    g_object_set(element_, "template", writeTemplate("t.pgm", makeTemplate(8, 8, Fill::Random)).c_str(),
                 "frames-in-flight", 1u, "worker-thread", gboolean(worker), nullptr);
    start(makeLayout(GST_VIDEO_FORMAT_GRAY8, 64, 48, 0));  // 30 frames/s
    // Upstream: live, 5 ms at least, 50 ms at most (the harness alone gives no most).
    gst_pad_add_probe(
        harness_->srcpad, GstPadProbeType(GST_PAD_PROBE_TYPE_QUERY_UPSTREAM | GST_PAD_PROBE_TYPE_PUSH),
        [](GstPad*, GstPadProbeInfo* info, gpointer) {
          GstQuery* q = GST_PAD_PROBE_INFO_QUERY(info);
          if (GST_QUERY_TYPE(q) != GST_QUERY_LATENCY) return GST_PAD_PROBE_OK;
          gst_query_set_latency(q, TRUE, 5 * GST_MSECOND, 50 * GST_MSECOND);
          return GST_PAD_PROBE_HANDLED;
        },
        nullptr, nullptr);
    const GstClockTime max = maxLatency(harness_);
    ASSERT_TRUE(GST_CLOCK_TIME_IS_VALID(max));
    if (worker) {
      withWorker = max;
      g_object_set(element_, "worker-thread", FALSE, nullptr);  // read at start: the worker still runs
      EXPECT_EQ(maxLatency(harness_), withWorker);
    } else {
      EXPECT_EQ(withWorker - max, gst_util_uint64_scale_int(GST_SECOND, 2, 30));
    }
    gst_harness_teardown(harness_);
    harness_ = nullptr;
    gst_object_unref(element_);
    element_ = nullptr;
  }
}

TEST_P(Element, LatencyQueryCountsTheFramesHeld) {
  makeElement();
  g_object_set(element_, "template", writeTemplate("t.pgm", makeTemplate(8, 8, Fill::Random)).c_str(),
               "frames-in-flight", 3u, nullptr);
  start(makeLayout(GST_VIDEO_FORMAT_GRAY8, 64, 48, 0));  // 30 frames/s
  gst_harness_set_upstream_latency(harness_, 5 * GST_MSECOND);
  EXPECT_EQ(gst_harness_query_latency(harness_), 5 * GST_MSECOND + gst_util_uint64_scale_int(GST_SECOND, 2, 30));
  g_object_set(element_, "frames-in-flight", 1u, nullptr);
  EXPECT_EQ(gst_harness_query_latency(harness_), 5 * GST_MSECOND);
  g_object_set(element_, "frames-in-flight", 0u, nullptr);  // auto behind a live source: none held
  EXPECT_EQ(gst_harness_query_latency(harness_), 5 * GST_MSECOND);
}

// Changing frames-in-flight while playing changes the latency the element adds: it posts a
// latency message so the pipeline asks again, and the frames it held go out in order.
TEST_P(Element, FramesInFlightChangeWhilePlayingPostsALatencyMessage) {
  TemplateImage t = makeTemplate(8, 8, Fill::Random);
  makeElement();
  g_object_set(element_, "template", writeTemplate("t.pgm", t).c_str(), "worker-thread", FALSE,
               "frames-in-flight", 1u, nullptr);
  const FrameLayout layout = makeLayout(GST_VIDEO_FORMAT_GRAY8, 64, 48, 0);
  start(layout);
  ASSERT_EQ(gst_harness_push(harness_, makeFrame(layout, scene(64, 48, {{&t, {1, 2}}}))), GST_FLOW_OK);
  EXPECT_EQ(gst_harness_buffers_received(harness_), 1u);
  std::vector<GstMessage*> before = popMessages(bus_, GST_MESSAGE_LATENCY);
  EXPECT_TRUE(before.empty());
  unrefMessages(&before);

  g_object_set(element_, "frames-in-flight", 3u, nullptr);
  for (int i = 0; i < 3; ++i)
    ASSERT_EQ(gst_harness_push(harness_, makeFrame(layout, scene(64, 48, {{&t, {10 + i, 2}}}))), GST_FLOW_OK);
  EXPECT_EQ(gst_harness_buffers_received(harness_), 2u);  // two of the three held
  std::vector<GstMessage*> latency = popMessages(bus_, GST_MESSAGE_LATENCY);
  EXPECT_EQ(latency.size(), 1u);
  unrefMessages(&latency);

  g_object_set(element_, "frames-in-flight", 1u, nullptr);  // back: the held frames go out
  ASSERT_EQ(gst_harness_push(harness_, makeFrame(layout, scene(64, 48, {{&t, {20, 2}}}))), GST_FLOW_OK);
  EXPECT_EQ(gst_harness_buffers_received(harness_), 5u);
  latency = popMessages(bus_, GST_MESSAGE_LATENCY);
  EXPECT_EQ(latency.size(), 1u);
  unrefMessages(&latency);
  pullMatchesAt({{1, 2}, {10, 2}, {11, 2}, {12, 2}, {20, 2}});
}

// New caps mid-stream (format and size) while frames are held: the held frames go out first
// (matched at the old size), then frames of the new size match at theirs.
TEST_P(Element, CapsChangeWithFramesInFlightKeepsEveryFrameRight) {
  TemplateImage t = makeTemplate(12, 9, Fill::Random);
  makeElement();
  g_object_set(element_, "template", writeTemplate("t.pgm", t).c_str(), "frames-in-flight", 3u, nullptr);
  const FrameLayout small = makeLayout(GST_VIDEO_FORMAT_GRAY8, 160, 120, 0);
  const FrameLayout large = makeLayout(GST_VIDEO_FORMAT_NV12, 333, 201, 0);
  start(small);
  for (int i = 0; i < 2; ++i)
    ASSERT_EQ(gst_harness_push(harness_, makeFrame(small, scene(160, 120, {{&t, {5 + i, 7}}}))), GST_FLOW_OK);
  EXPECT_EQ(gst_harness_buffers_received(harness_), 0u);
  gst_harness_set_src_caps(harness_, capsFor(large));
  EXPECT_EQ(gst_harness_buffers_received(harness_), 2u) << "held frames go out before the new caps";
  for (int i = 0; i < 3; ++i)
    ASSERT_EQ(gst_harness_push(harness_, makeFrame(large, scene(333, 201, {{&t, {300 + i, 180}}}))), GST_FLOW_OK);
  EXPECT_TRUE(gst_harness_push_event(harness_, gst_event_new_eos()));
  ASSERT_EQ(gst_harness_buffers_received(harness_), 5u);
  const std::vector<gsize> sizes = pullMatchesAt({{5, 7}, {6, 7}, {300, 180}, {301, 180}, {302, 180}});
  EXPECT_EQ(sizes, (std::vector<gsize>{small.size, small.size, large.size, large.size, large.size}));
}

// Producers that renegotiate per frame may re-send caps equal to the current ones before every
// frame: that changes nothing, so the frames held stay in flight (no drain, which would make the
// engine wait for each frame) and upstream is asked nothing more (no latency query per frame).
TEST_P(Element, IdenticalCapsBeforeEveryFrameKeepTheFramesInFlight) {
  TemplateImage t = makeTemplate(8, 8, Fill::Random);
  makeElement();
  const FrameLayout layout = makeLayout(GST_VIDEO_FORMAT_GRAY8, 64, 48, 0);
  startFinding(t, 3u, layout);
  int latencyQueries = 0;
  gst_pad_add_probe(
      harness_->srcpad, GstPadProbeType(GST_PAD_PROBE_TYPE_QUERY_UPSTREAM | GST_PAD_PROBE_TYPE_PUSH),  // once a query
      [](GstPad*, GstPadProbeInfo* info, gpointer count) {
        if (GST_QUERY_TYPE(GST_PAD_PROBE_INFO_QUERY(info)) == GST_QUERY_LATENCY) ++*static_cast<int*>(count);
        return GST_PAD_PROBE_OK;
      },
      &latencyQueries, nullptr);
  std::vector<std::pair<guint, guint>> places;
  int queriesAfterFirstFrame = -1;
  for (guint i = 0; i < 8; ++i) {
    GstCaps* same = capsFor(layout);  // equal to the current caps, a new object as a producer sends
    EXPECT_TRUE(gst_harness_push_event(harness_, gst_event_new_caps(same)));
    gst_caps_unref(same);
    EXPECT_EQ(gst_harness_buffers_received(harness_), i < 2 ? 0u : i - 2) << "before frame " << i;
    // The first frame was handled (on the worker thread too: the caps event waited for it).
    if (i == 1) queriesAfterFirstFrame = latencyQueries;
    ASSERT_EQ(gst_harness_push(harness_, makeFrame(layout, scene(64, 48, {{&t, {int(i), 5}}}))), GST_FLOW_OK);
    places.push_back({i, 5});
  }
  GstCaps* same = capsFor(layout);  // once more: the last frame handled (by a worker thread too)
  EXPECT_TRUE(gst_harness_push_event(harness_, gst_event_new_caps(same)));
  gst_caps_unref(same);
  EXPECT_EQ(latencyQueries, queriesAfterFirstFrame) << "no latency query for caps that did not change";
  EXPECT_EQ(gst_harness_buffers_received(harness_), 6u);
  // New caps still push the held frames out first.
  const FrameLayout other = makeLayout(GST_VIDEO_FORMAT_GRAY8, 80, 48, 0);
  gst_harness_set_src_caps(harness_, capsFor(other));
  EXPECT_EQ(gst_harness_buffers_received(harness_), 8u);
  pullMatchesAt(places);
}

TEST_P(Element, FlushDropsTheFramesHeldAndADrainQueryPushesThem) {
  TemplateImage t = makeTemplate(8, 8, Fill::Random);
  makeElement();
  const FrameLayout layout = makeLayout(GST_VIDEO_FORMAT_GRAY8, 64, 48, 0);
  startFinding(t, 3u, layout);
  for (int i = 0; i < 2; ++i) ASSERT_EQ(gst_harness_push(harness_, makeFrame(layout, scene(64, 48, {{&t, {i, 5}}}))), GST_FLOW_OK);
  EXPECT_EQ(gst_harness_buffers_received(harness_), 0u);
  EXPECT_TRUE(gst_harness_push_event(harness_, gst_event_new_flush_start()));
  EXPECT_TRUE(gst_harness_push_event(harness_, gst_event_new_flush_stop(TRUE)));
  GstSegment segment;
  gst_segment_init(&segment, GST_FORMAT_TIME);
  EXPECT_TRUE(gst_harness_push_event(harness_, gst_event_new_segment(&segment)));
  EXPECT_EQ(gst_harness_buffers_received(harness_), 0u);
  for (int i = 0; i < 2; ++i) ASSERT_EQ(gst_harness_push(harness_, makeFrame(layout, scene(64, 48, {{&t, {20 + i, 9}}}))), GST_FLOW_OK);
  EXPECT_EQ(gst_harness_buffers_received(harness_), 0u);
  GstQuery* drain = gst_query_new_drain();
  EXPECT_TRUE(gst_pad_peer_query(harness_->srcpad, drain));
  gst_query_unref(drain);
  ASSERT_EQ(gst_harness_buffers_received(harness_), 2u);
  pullMatchesAt({{20, 9}, {21, 9}});
}

}  // namespace

NCCMATCH_INSTANTIATE_ELEMENT_TESTS();

}  // namespace nccmatch::test
