#include "frame_worker.hpp"

#include <algorithm>
#include <utility>

namespace nccmatch::plugin {

void FrameWorker::start(Process process, int capacity) {
  stop();
  std::lock_guard<std::mutex> lock(mutex_);
  process_ = std::move(process);
  capacity_ = std::max(1, capacity);
  busy_ = quit_ = flushing_ = false;
  flow_ = GST_FLOW_OK;
  thread_ = std::thread([this] { run(); });
}

void FrameWorker::stop() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (!thread_.joinable()) return;
    quit_ = true;
    dropWaitingLocked();
  }
  changed_.notify_all();
  thread_.join();
  std::lock_guard<std::mutex> lock(mutex_);
  process_ = nullptr;
}

bool FrameWorker::running() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return thread_.joinable() && !quit_;
}

GstFlowReturn FrameWorker::push(GstBuffer* buffer) {
  std::unique_lock<std::mutex> lock(mutex_);
  changed_.wait(lock, [&] { return flushing_ || quit_ || flow_ != GST_FLOW_OK || int(waiting_.size()) < capacity_; });
  const GstFlowReturn flow = flushing_ || quit_ ? GST_FLOW_FLUSHING : flow_;
  if (flow != GST_FLOW_OK) {
    lock.unlock();
    gst_buffer_unref(buffer);
    return flow;
  }
  waiting_.push_back(buffer);
  lock.unlock();
  changed_.notify_all();
  return GST_FLOW_OK;
}

GstFlowReturn FrameWorker::waitIdle() {
  std::unique_lock<std::mutex> lock(mutex_);
  changed_.wait(lock, [&] { return !thread_.joinable() || quit_ || (waiting_.empty() && !busy_); });
  return flushing_ ? GST_FLOW_FLUSHING : flow_;
}

void FrameWorker::setFlushing(bool flushing) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    flushing_ = flushing;
    if (flushing) dropWaitingLocked();
    else flow_ = GST_FLOW_OK;
  }
  changed_.notify_all();
}

int FrameWorker::waiting() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return int(waiting_.size());
}

void FrameWorker::dropWaitingLocked() {
  for (GstBuffer* b : waiting_) gst_buffer_unref(b);
  waiting_.clear();
}

void FrameWorker::run() {
  std::unique_lock<std::mutex> lock(mutex_);
  for (;;) {
    changed_.wait(lock, [&] { return quit_ || !waiting_.empty(); });
    if (quit_) return;
    // A failure drops what waits and push() queues nothing after it: a buffer here is to process.
    GstBuffer* buffer = waiting_.front();
    waiting_.pop_front();
    busy_ = true;
    lock.unlock();
    changed_.notify_all();  // room for the next push
    const GstFlowReturn flow = process_(buffer);
    lock.lock();
    busy_ = false;
    // While flushing the push failed because of the flush: flush-stop resets the flow anyway.
    if (flow != GST_FLOW_OK && !flushing_) {
      flow_ = flow;
      dropWaitingLocked();
    }
    changed_.notify_all();
  }
}

}  // namespace nccmatch::plugin
