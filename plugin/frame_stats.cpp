#include "frame_stats.hpp"

#include <algorithm>

namespace nccmatch::plugin {

void FrameStats::add(int64_t microseconds) {
  microseconds = std::max<int64_t>(microseconds, 0);
  ++frames_;
  totalUs_ += microseconds;
  maxUs_ = std::max(maxUs_, microseconds);
}

void FrameStats::addStreaming(int64_t microseconds, bool input) {
  if (input) ++inputs_;
  streamingUs_ += std::max<int64_t>(microseconds, 0);
}

void FrameStats::addWorker(int64_t microseconds) {
  ++workerInputs_;
  workerUs_ += std::max<int64_t>(microseconds, 0);
}

GstStructure* makeStatsStructure(const FrameStats& stats, const std::string& backend, const std::string& memory,
                                 int threads) {
  return gst_structure_new("nccmatch-stats", "frames", G_TYPE_UINT64, guint64(stats.frames()), "mean-us",
                           G_TYPE_DOUBLE, stats.meanMicroseconds(), "max-us", G_TYPE_DOUBLE,
                           double(stats.maxMicroseconds()), "streaming-us", G_TYPE_DOUBLE,
                           stats.streamingMeanMicroseconds(), "streaming-buffers", G_TYPE_UINT64,
                           guint64(stats.streamingInputs()), "worker-us", G_TYPE_DOUBLE,
                           stats.workerMeanMicroseconds(), "backend", G_TYPE_STRING, backend.c_str(), "memory",
                           G_TYPE_STRING, memory.c_str(), "threads", G_TYPE_INT, threads, nullptr);
}

}  // namespace nccmatch::plugin
