// FrameWorker (plugin/frame_worker): buffers processed in order on a thread of its own, at most
// `capacity` waiting, a failed flow dropping what waits and returned by the next push, flushing,
// waitIdle, stop with buffers waiting (no leak: ASan in CI), and a restart with its flow reset.
#include "frame_worker.hpp"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <future>
#include <mutex>
#include <vector>

#include "plugin_test_support.hpp"

namespace nccmatch::plugin {
namespace {

using namespace std::chrono_literals;

// A buffer that says which it is (its offset), and the process that records the order and can be
// held until released or made to fail at a given buffer.
GstBuffer* numbered(guint64 n) {
  GstBuffer* b = gst_buffer_new();
  GST_BUFFER_OFFSET(b) = n;
  return b;
}

struct Recorder {
  std::mutex mutex;
  std::condition_variable changed;
  std::vector<guint64> seen;
  bool hold = false;
  bool inHand = false;
  guint64 failAt = G_MAXUINT64;
  GstFlowReturn failWith = GST_FLOW_ERROR;

  FrameWorker::Process process() {
    return [this](GstBuffer* b) {
      std::unique_lock<std::mutex> lock(mutex);
      const guint64 n = GST_BUFFER_OFFSET(b);
      gst_buffer_unref(b);
      seen.push_back(n);
      inHand = true;
      changed.notify_all();
      changed.wait(lock, [&] { return !hold; });
      inHand = false;
      return n == failAt ? failWith : GST_FLOW_OK;
    };
  }
  void setFailure(guint64 n, GstFlowReturn flow) {
    std::lock_guard<std::mutex> lock(mutex);
    failAt = n;
    failWith = flow;
  }
  void release() {
    std::lock_guard<std::mutex> lock(mutex);
    hold = false;
    changed.notify_all();
  }
  bool waitInHand() {
    std::unique_lock<std::mutex> lock(mutex);
    return changed.wait_for(lock, 20s, [&] { return inHand; });
  }
  std::vector<guint64> order() {
    std::lock_guard<std::mutex> lock(mutex);
    return seen;
  }
};

class FrameWorkerTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { nccmatch::test::initGstreamer(); }
};

TEST_F(FrameWorkerTest, ProcessesEveryBufferInOrderOnAnotherThread) {
  for (int count : {1, 2, 3, 100}) {
    Recorder r;
    FrameWorker worker;
    EXPECT_FALSE(worker.running());
    worker.start(r.process(), 2);
    EXPECT_TRUE(worker.running());
    for (int i = 0; i < count; ++i) ASSERT_EQ(worker.push(numbered(guint64(i))), GST_FLOW_OK);
    EXPECT_EQ(worker.waitIdle(), GST_FLOW_OK);
    EXPECT_EQ(worker.waiting(), 0);
    std::vector<guint64> expected;
    for (int i = 0; i < count; ++i) expected.push_back(guint64(i));
    EXPECT_EQ(r.order(), expected) << count;
    worker.stop();
    EXPECT_FALSE(worker.running());
  }
}

TEST_F(FrameWorkerTest, APushWaitsWhileCapacityBuffersWait) {
  for (int capacity : {1, 2, 3}) {
    Recorder r;
    r.hold = true;
    FrameWorker worker;
    worker.start(r.process(), capacity);
    ASSERT_EQ(worker.push(numbered(0)), GST_FLOW_OK);
    ASSERT_TRUE(r.waitInHand());
    for (int i = 1; i <= capacity; ++i) ASSERT_EQ(worker.push(numbered(guint64(i))), GST_FLOW_OK);
    EXPECT_EQ(worker.waiting(), capacity);
    auto blocked = std::async(std::launch::async, [&] { return worker.push(numbered(99)); });
    EXPECT_EQ(blocked.wait_for(200ms), std::future_status::timeout) << "capacity " << capacity;
    r.release();
    EXPECT_EQ(blocked.get(), GST_FLOW_OK);
    EXPECT_EQ(worker.waitIdle(), GST_FLOW_OK);
    EXPECT_EQ(r.order().size(), std::size_t(capacity + 2));
    EXPECT_EQ(r.order().back(), 99u);
  }
}

TEST_F(FrameWorkerTest, AFailureDropsWhatWaitsAndReachesTheNextPush) {
  for (GstFlowReturn failure : {GST_FLOW_ERROR, GST_FLOW_EOS, GST_FLOW_NOT_LINKED}) {
    Recorder r;
    r.hold = true;
    r.failAt = 0;
    r.failWith = failure;
    FrameWorker worker;
    worker.start(r.process(), 2);
    ASSERT_EQ(worker.push(numbered(0)), GST_FLOW_OK);
    ASSERT_TRUE(r.waitInHand());
    ASSERT_EQ(worker.push(numbered(1)), GST_FLOW_OK);  // waits, dropped by the failure
    r.release();
    EXPECT_EQ(worker.waitIdle(), failure);
    EXPECT_EQ(worker.push(numbered(2)), failure) << "the failure reaches upstream";
    EXPECT_EQ(worker.waitIdle(), failure);
    EXPECT_EQ(r.order(), std::vector<guint64>{0}) << "nothing after the failure is processed";
    // A restart (stop, start) begins with OK.
    worker.start(r.process(), 2);
    EXPECT_EQ(worker.push(numbered(3)), GST_FLOW_OK);
    EXPECT_EQ(worker.waitIdle(), GST_FLOW_OK);
    EXPECT_EQ(r.order(), (std::vector<guint64>{0, 3}));
  }
}

// Capacity 1: buffer 0 held in the process, buffer 1 waiting, the push of buffer 2 waiting for room
// (on another thread: *blocked).
void fillAndBlockAPush(Recorder& r, FrameWorker& worker, std::future<GstFlowReturn>* blocked) {
  r.hold = true;
  worker.start(r.process(), 1);
  ASSERT_EQ(worker.push(numbered(0)), GST_FLOW_OK);
  ASSERT_TRUE(r.waitInHand());
  ASSERT_EQ(worker.push(numbered(1)), GST_FLOW_OK);
  *blocked = std::async(std::launch::async, [&worker] { return worker.push(numbered(2)); });
}

TEST_F(FrameWorkerTest, FlushingDropsWhatWaitsReturnsAWaitingPushAndEndsWithOk) {
  Recorder r;
  FrameWorker worker;
  std::future<GstFlowReturn> blocked;
  ASSERT_NO_FATAL_FAILURE(fillAndBlockAPush(r, worker, &blocked));
  EXPECT_EQ(blocked.wait_for(200ms), std::future_status::timeout);
  worker.setFlushing(true);
  EXPECT_EQ(blocked.get(), GST_FLOW_FLUSHING);
  EXPECT_EQ(worker.waiting(), 0) << "buffer 1 dropped";
  EXPECT_EQ(worker.push(numbered(3)), GST_FLOW_FLUSHING);
  r.setFailure(0, GST_FLOW_FLUSHING);  // the push in hand fails as a flushed downstream would: not kept as the flow
  r.release();
  EXPECT_EQ(worker.waitIdle(), GST_FLOW_FLUSHING);
  worker.setFlushing(false);
  EXPECT_EQ(worker.waitIdle(), GST_FLOW_OK);
  EXPECT_EQ(worker.push(numbered(4)), GST_FLOW_OK);
  EXPECT_EQ(worker.waitIdle(), GST_FLOW_OK);
  EXPECT_EQ(r.order(), (std::vector<guint64>{0, 4}));
}

TEST_F(FrameWorkerTest, StopWithBuffersWaitingDropsThemAndReturnsAWaitingPush) {
  Recorder r;
  FrameWorker worker;
  std::future<GstFlowReturn> blocked;
  ASSERT_NO_FATAL_FAILURE(fillAndBlockAPush(r, worker, &blocked));
  EXPECT_EQ(blocked.wait_for(100ms), std::future_status::timeout);
  auto stopped = std::async(std::launch::async, [&] { worker.stop(); });
  EXPECT_EQ(blocked.get(), GST_FLOW_FLUSHING);
  r.release();  // the buffer in hand finishes, then the thread ends
  stopped.get();
  EXPECT_FALSE(worker.running());
  EXPECT_EQ(r.order(), std::vector<guint64>{0});
  EXPECT_EQ(worker.waitIdle(), GST_FLOW_OK) << "a stopped worker is idle";
}

}  // namespace
}  // namespace nccmatch::plugin
