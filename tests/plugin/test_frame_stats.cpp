// FrameStats (count, mean, max of per-frame times) and the nccmatch-stats structure.
#include "frame_stats.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <random>

#include "plugin_test_support.hpp"

namespace nccmatch::plugin {
namespace {

TEST(FrameStats, EmptyIsAllZero) {
  FrameStats stats;
  EXPECT_EQ(stats.frames(), 0u);
  EXPECT_EQ(stats.meanMicroseconds(), 0.0);
  EXPECT_EQ(stats.maxMicroseconds(), 0);
}

TEST(FrameStats, CountMeanAndMaxOverRandomTimes) {
  const int counts[] = {1, 2, 7, 1000};
  for (int n : counts) {
    FrameStats stats;
    int64_t total = 0, max = 0;
    std::uniform_int_distribution<int64_t> time(0, 100000);
    for (int i = 0; i < n; ++i) {
      int64_t t = time(nccmatch::test::rng());
      total += t;
      max = std::max(max, t);
      stats.add(t);
    }
    EXPECT_EQ(stats.frames(), uint64_t(n));
    EXPECT_DOUBLE_EQ(stats.meanMicroseconds(), double(total) / n);
    EXPECT_EQ(stats.maxMicroseconds(), max);
    stats.reset();
    EXPECT_EQ(stats.frames(), 0u);
  }
}

TEST(FrameStats, NegativeTimesCountAsZero) {  // a clock step must not make the mean negative
  FrameStats stats;
  stats.add(-5);
  stats.add(10);
  EXPECT_DOUBLE_EQ(stats.meanMicroseconds(), 5.0);
  EXPECT_EQ(stats.maxMicroseconds(), 10);
}

// streaming-us is the mean over the input buffers only (a call that found no input buffer, e.g.
// draining at EOS, adds its time but is no buffer), and streaming-buffers counts them.
TEST(FrameStats, StreamingMeanIsOverTheInputBuffers) {
  FrameStats stats;
  EXPECT_EQ(stats.streamingInputs(), 0u);
  EXPECT_EQ(stats.streamingMeanMicroseconds(), 0.0);
  stats.addStreaming(30, true);
  stats.addStreaming(10, false);
  stats.addStreaming(-4, true);  // a clock step counts as zero
  EXPECT_EQ(stats.streamingInputs(), 2u);
  EXPECT_DOUBLE_EQ(stats.streamingMeanMicroseconds(), 20.0);
}

TEST(FrameStats, StructureCarriesEveryField) {
  nccmatch::test::initGstreamer();
  FrameStats stats;
  stats.add(30);
  stats.add(50);
  stats.addStreaming(40, true);
  stats.addStreaming(80, true);
  stats.addStreaming(30, true);
  GstStructure* s = makeStatsStructure(stats, "cuda", "system", 3);
  EXPECT_TRUE(gst_structure_has_name(s, "nccmatch-stats"));
  guint64 frames = 0;
  double mean = 0, max = 0;
  EXPECT_TRUE(gst_structure_get_uint64(s, "frames", &frames));
  EXPECT_TRUE(gst_structure_get_double(s, "mean-us", &mean));
  EXPECT_TRUE(gst_structure_get_double(s, "max-us", &max));
  EXPECT_EQ(frames, 2u);
  EXPECT_DOUBLE_EQ(mean, 40.0);
  EXPECT_DOUBLE_EQ(max, 50.0);
  double streaming = 0;
  guint64 inputs = 0;
  EXPECT_TRUE(gst_structure_get_double(s, "streaming-us", &streaming));
  EXPECT_TRUE(gst_structure_get_uint64(s, "streaming-buffers", &inputs));
  EXPECT_DOUBLE_EQ(streaming, 50.0);
  EXPECT_EQ(inputs, 3u);
  EXPECT_STREQ(gst_structure_get_string(s, "backend"), "cuda");
  EXPECT_STREQ(gst_structure_get_string(s, "memory"), "system");
  int threads = 0;
  EXPECT_TRUE(gst_structure_get_int(s, "threads", &threads));
  EXPECT_EQ(threads, 3);
  gst_structure_free(s);
}

}  // namespace
}  // namespace nccmatch::plugin
