// worker-thread: the element matches and pushes on a thread of its own, so upstream's thread is
// back as soon as it handed a buffer over, also while downstream blocks; at most
// kWorkerWaitingBuffers wait, then upstream waits too; a flush while downstream blocks returns
// every push; outputs keep their order and matches. CPU and CUDA backends.
#include <chrono>
#include <future>
#include <mutex>
#include <condition_variable>

#include "element_fixture.hpp"

namespace nccmatch::test {
namespace {

// A pad probe that holds every buffer reaching the harness's sink until released.
struct DownstreamGate {
  std::mutex mutex;
  std::condition_variable changed;
  bool open = false;
  int held = 0;  // buffers waiting at the gate now

  static GstPadProbeReturn hold(GstPad*, GstPadProbeInfo*, gpointer data) {
    auto* gate = static_cast<DownstreamGate*>(data);
    std::unique_lock<std::mutex> lock(gate->mutex);
    ++gate->held;
    gate->changed.notify_all();
    gate->changed.wait(lock, [&] { return gate->open; });
    --gate->held;
    return GST_PAD_PROBE_OK;
  }
  bool waitHeld(int n) {
    std::unique_lock<std::mutex> lock(mutex);
    return changed.wait_for(lock, std::chrono::seconds(20), [&] { return held >= n; });
  }
  void release() {
    std::lock_guard<std::mutex> lock(mutex);
    open = true;
    changed.notify_all();
  }
};

TEST_P(Element, WorkerThreadGivesUpstreamItsThreadBackWhileDownstreamBlocks) {
  TemplateImage t = makeTemplate(10, 8, Fill::Random);
  makeElement();
  gboolean worker = FALSE;
  g_object_get(element_, "worker-thread", &worker, nullptr);
  EXPECT_TRUE(worker) << "worker-thread defaults to true";
  const FrameLayout layout = makeLayout(GST_VIDEO_FORMAT_GRAY8, 64, 48, 0);
  startFinding(t, 1u, layout);
  DownstreamGate gate;
  gst_pad_add_probe(harness_->sinkpad, GST_PAD_PROBE_TYPE_BUFFER, DownstreamGate::hold, &gate, nullptr);
  // Frame 0 reaches the gate on the worker thread; frames 1 and 2 wait for the worker: every push
  // returns at once. A fourth push waits for room (upstream is held back, not flooded).
  std::vector<std::pair<guint, guint>> places;
  for (int i = 0; i < 3; ++i) {
    places.push_back({guint(3 + 9 * i), guint(2 + 4 * i)});
    auto pushed = std::async(std::launch::async, [&, i] {
      return gst_harness_push(harness_, makeFrame(layout, scene(64, 48, {{&t, {3 + 9 * i, 2 + 4 * i}}})));
    });
    ASSERT_EQ(pushed.wait_for(std::chrono::seconds(20)), std::future_status::ready) << "push " << i << " waited";
    EXPECT_EQ(pushed.get(), GST_FLOW_OK);
    if (i == 0) ASSERT_TRUE(gate.waitHeld(1)) << "frame 0 never reached downstream";
  }
  places.push_back({40, 30});
  auto fourth = std::async(std::launch::async, [&] {
    return gst_harness_push(harness_, makeFrame(layout, scene(64, 48, {{&t, {40, 30}}})));
  });
  EXPECT_EQ(fourth.wait_for(std::chrono::milliseconds(300)), std::future_status::timeout)
      << "a third buffer waiting: upstream waits for room";
  gate.release();
  EXPECT_EQ(fourth.get(), GST_FLOW_OK);
  EXPECT_TRUE(drainElement(harness_));
  ASSERT_EQ(gst_harness_buffers_received(harness_), 4u);
  pullMatchesAt(places);
}

TEST_P(Element, FlushWhileDownstreamBlocksReturnsEveryPushAndTheStreamGoesOn) {
  TemplateImage t = makeTemplate(10, 8, Fill::Random);
  makeElement();
  const FrameLayout layout = makeLayout(GST_VIDEO_FORMAT_GRAY8, 64, 48, 0);
  startFinding(t, 1u, layout);
  DownstreamGate gate;
  const gulong probe =
      gst_pad_add_probe(harness_->sinkpad, GST_PAD_PROBE_TYPE_BUFFER, DownstreamGate::hold, &gate, nullptr);
  for (int i = 0; i < 3; ++i)
    ASSERT_EQ(gst_harness_push(harness_, makeFrame(layout, scene(64, 48, {{&t, {i, 5}}}))), GST_FLOW_OK);
  ASSERT_TRUE(gate.waitHeld(1));
  // A fourth push waits for room; flush-start (from another thread, as a seek's) returns it.
  auto fourth = std::async(std::launch::async, [&] {
    return gst_harness_push(harness_, makeFrame(layout, scene(64, 48, {{&t, {9, 9}}})));
  });
  EXPECT_EQ(fourth.wait_for(std::chrono::milliseconds(200)), std::future_status::timeout);
  EXPECT_TRUE(gst_harness_push_event(harness_, gst_event_new_flush_start()));
  ASSERT_EQ(fourth.wait_for(std::chrono::seconds(20)), std::future_status::ready) << "flush-start left a push waiting";
  EXPECT_EQ(fourth.get(), GST_FLOW_FLUSHING);
  gate.release();  // the push in hand ends (downstream flushing drops it)
  EXPECT_TRUE(gst_harness_push_event(harness_, gst_event_new_flush_stop(TRUE)));
  gst_pad_remove_probe(harness_->sinkpad, probe);
  GstSegment segment;
  gst_segment_init(&segment, GST_FORMAT_TIME);
  EXPECT_TRUE(gst_harness_push_event(harness_, gst_event_new_segment(&segment)));
  while (GstBuffer* old = gst_harness_try_pull(harness_)) gst_buffer_unref(old);  // before the flush, if any
  const guint before = gst_harness_buffers_received(harness_);
  for (int i = 0; i < 2; ++i)
    ASSERT_EQ(gst_harness_push(harness_, makeFrame(layout, scene(64, 48, {{&t, {20 + i, 9}}}))), GST_FLOW_OK);
  EXPECT_TRUE(drainElement(harness_));
  EXPECT_EQ(gst_harness_buffers_received(harness_), before + 2);
  pullMatchesAt({{20, 9}, {21, 9}});
}

}  // namespace

NCCMATCH_INSTANTIATE_ELEMENT_TESTS();

}  // namespace nccmatch::test
