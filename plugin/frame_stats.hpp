// Per-frame processing time of the element (matching, plus drawing on the GPU path), accumulated
// by the streaming thread and read through the `stats` property and the EOS message.
#pragma once

#include <gst/gst.h>

#include <cstdint>
#include <string>

namespace nccmatch::plugin {

class FrameStats {
 public:
  void add(int64_t microseconds);
  // The element's own work in the streaming thread (one generate_output call: an input buffer
  // made writable and submitted, the oldest frame finished; downstream's push excluded), counted
  // as a new input buffer when `input`.
  void addStreaming(int64_t microseconds, bool input);
  // worker-thread=true: the worker thread's work for one input buffer (submitted, the oldest frame
  // finished; downstream's push excluded).
  void addWorker(int64_t microseconds);
  void reset() { *this = FrameStats(); }
  uint64_t frames() const { return frames_; }
  double meanMicroseconds() const { return frames_ == 0 ? 0.0 : double(totalUs_) / double(frames_); }
  int64_t maxMicroseconds() const { return maxUs_; }
  double streamingMeanMicroseconds() const { return inputs_ == 0 ? 0.0 : double(streamingUs_) / double(inputs_); }
  uint64_t streamingInputs() const { return inputs_; }
  double workerMeanMicroseconds() const { return workerInputs_ == 0 ? 0.0 : double(workerUs_) / double(workerInputs_); }

 private:
  uint64_t frames_ = 0;
  int64_t totalUs_ = 0;
  int64_t maxUs_ = 0;
  uint64_t inputs_ = 0;
  int64_t streamingUs_ = 0;
  uint64_t workerInputs_ = 0;
  int64_t workerUs_ = 0;
};

// "nccmatch-stats": frames (guint64), mean-us and max-us (double: wall-clock time of the engine's
// work per frame, which for CUDA includes the wait for the GPU), streaming-us (double: the
// element's mean time a buffer in the streaming thread, what a producer without a queue waits),
// streaming-buffers (guint64: the input buffers that mean is over; with frames and mean-us, two
// readings give the means between them, e.g. after a warm-up: bench_producers), worker-us (double:
// with worker-thread=true the worker thread's mean time a buffer, else 0),
// backend (string: "cpu", "cuda", or "none" before start), memory (string: "system" or "cuda", the negotiated input), threads
// (int: host threads the engine matches on, 0 before start).
GstStructure* makeStatsStructure(const FrameStats& stats, const std::string& backend, const std::string& memory,
                                 int threads);

}  // namespace nccmatch::plugin
