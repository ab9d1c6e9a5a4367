// The element's own streaming thread (worker-thread=true): the upstream thread only hands each
// input buffer over and returns, while this thread matches it, finishes the frames and pushes them
// downstream, so a producer without a queue after it waits for none of the element's work
// (issue 14: videotestsrc kept 79% of its rate with the work on its thread, 92% with a queue).
// At most `capacity` buffers wait; a failed flow drops what waits and is returned to upstream by
// its next push, as a queue's is. Knows nothing of matching: it runs what it is given.
#pragma once

#include <gst/gst.h>

#include <condition_variable>
#include <deque>
#include <functional>
#include <mutex>
#include <thread>

namespace nccmatch::plugin {

// Buffers that may wait for the element's worker thread: one being matched and one more keep it
// busy when upstream comes in bursts; each adds a frame to the most latency the element reports.
inline constexpr int kWorkerWaitingBuffers = 2;

class FrameWorker {
 public:
  // Runs on the worker thread for each buffer in order; takes the buffer.
  using Process = std::function<GstFlowReturn(GstBuffer*)>;

  FrameWorker() = default;
  ~FrameWorker() { stop(); }
  FrameWorker(const FrameWorker&) = delete;
  FrameWorker& operator=(const FrameWorker&) = delete;

  // Starts the thread (a worker already running is stopped first); the flow is reset to OK.
  void start(Process process, int capacity);
  // Drops the waiting buffers, lets the one in hand finish and joins the thread.
  void stop();
  bool running() const;
  // The streaming thread's hand-over: queues `buffer` (taken), waiting while `capacity` buffers
  // wait. Returns the worker's flow: not OK after a failure or while flushing, and then the
  // buffer is dropped.
  GstFlowReturn push(GstBuffer* buffer);
  // Waits until no buffer waits and none is in hand (what the worker thread wrote is then seen by
  // the caller); returns the worker's flow.
  GstFlowReturn waitIdle();
  // Flushing (any thread): waiting buffers are dropped, push returns GST_FLOW_FLUSHING and a push
  // waiting for room returns. Leaving it (flush-stop) resets the flow to OK.
  void setFlushing(bool flushing);
  // Buffers waiting now (tests).
  int waiting() const;

 private:
  void run();
  void dropWaitingLocked();

  mutable std::mutex mutex_;
  std::condition_variable changed_;  // a buffer queued or taken, the worker idle, flushing, quit
  std::deque<GstBuffer*> waiting_;
  std::thread thread_;
  Process process_;
  int capacity_ = 1;
  bool busy_ = false;  // a buffer in hand
  bool quit_ = false;
  bool flushing_ = false;
  GstFlowReturn flow_ = GST_FLOW_OK;
};

}  // namespace nccmatch::plugin
