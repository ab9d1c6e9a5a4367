// A live source at 60 frames/s in front of the element (bench/live_latency.hpp: appsrc is-live ->
// nccmatch -> appsink, each frame's time from its push to its buffer with ROI metas at the sink and
// to its `nccmatch` message). Small GRAY8 frames on the CPU backend (and on the CUDA backend where
// a GPU is usable): every frame comes out with its match, and no frame waits for the next one,
// i.e. latency stays within one frame duration + 1 ms (issue 14's target) -- at the median and at
// the 90th percentile, which leaves room for a loaded 2-core CI host. The control run holds one
// frame (frames-in-flight=2) and must measure at least one frame duration: the measurement can see
// a held frame.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "live_latency.hpp"
#include "nccmatch/engine.hpp"
#include "plugin_test_support.hpp"

namespace nccmatch::test {
namespace {

// Under ASan or TSan (scripts/sanitize-test.sh, tsan-test.sh) code runs several times slower: the
// frames must still all come out right, but the upper time bounds are not checked there.
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
constexpr bool kTimed = false;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
constexpr bool kTimed = false;
#else
constexpr bool kTimed = true;
#endif
#else
constexpr bool kTimed = true;
#endif

constexpr int kFps = 60;
constexpr double kFrameUs = 1e6 / kFps;

class LiveLatency : public ::testing::TestWithParam<Backend> {
 protected:
  static void SetUpTestSuite() { initGstreamer(); }
  void SetUp() override {
    std::string why;
    if (GetParam() == Backend::Cuda && !cudaAvailable(&why)) GTEST_SKIP() << "CUDA backend: " << why;
  }

  // 90 frames (1.5 s) of 160x120 with a 16x16 template pasted at (30 + i % 50, 40).
  live::LiveResult run(const std::string& extra) {
    const TemplateImage t = makeTemplate(16, 16, Fill::Random, "t");
    const std::string path = dir_.path("t.pgm");
    writePgm(path, t);
    live::LiveRun r;
    r.fps = kFps;
    r.frames = 90;
    for (int k = 0; k < 50; ++k) {
      Image img = makeImage(r.width, r.height, Fill::Random);
      paste(&img, t, 30 + k, 40);
      r.premade.push_back(img.bytes);  // no padding: stride == width
    }
    r.element = "nccmatch template=" + path + " device=" + backendName(GetParam()) + " display=false " + extra;
    return live::measureLiveLatency(r);
  }

  static std::vector<double> metaLatencies(const live::LiveResult& r) {
    std::vector<double> v;
    for (const live::FrameLatency& f : r.frames) v.push_back(f.metaUs);
    return v;
  }

  TempDir dir_;
};

TEST_P(LiveLatency, EveryFrameComesOutWithinOneFrameDurationPlusAMillisecond) {
  const live::LiveResult r = run("");
  ASSERT_TRUE(r.ok) << r.error;
  std::vector<double> meta = metaLatencies(r), message;
  for (std::size_t i = 0; i < r.frames.size(); ++i) {
    const live::FrameLatency& f = r.frames[i];
    ASSERT_GE(f.metaUs, 0) << "frame " << i << " never reached the sink";
    ASSERT_GE(f.messageUs, 0) << "frame " << i << " posted no nccmatch message";
    EXPECT_LE(f.messageUs, f.metaUs) << "the message is posted before the buffer is pushed";
    EXPECT_EQ(f.rois, 1) << "frame " << i;
    EXPECT_EQ(f.roiX, 30 + int(i % 50)) << "frame " << i;
    EXPECT_EQ(f.roiY, 40) << "frame " << i;
    message.push_back(f.messageUs);
  }
  const double median = live::quantile(meta, 0.5), p90 = live::quantile(meta, 0.9);
  std::printf("[ latency ] %s: ROI meta median %.0f us, p90 %.0f us, max %.0f us; message median %.0f us "
              "(frame %.0f us)\n",
              backendName(GetParam()), median, p90, live::quantile(meta, 1.0), live::quantile(message, 0.5), kFrameUs);
  if (!kTimed) GTEST_SKIP() << "built with a sanitizer: latency bounds not checked (every frame was right)";
  EXPECT_LE(median, kFrameUs + 1000);
  EXPECT_LE(p90, kFrameUs + 1000);
}

TEST_P(LiveLatency, AFrameHeldInFlightShowsAsAFrameOfLatency) {
  const live::LiveResult r = run("frames-in-flight=2");
  ASSERT_TRUE(r.ok) << r.error;
  const double median = live::quantile(metaLatencies(r), 0.5);
  std::printf("[ latency ] %s, frames-in-flight=2: ROI meta median %.0f us\n", backendName(GetParam()), median);
  EXPECT_GE(median, kFrameUs * 0.9) << "a frame held until the next one arrives waits one period";
}

INSTANTIATE_TEST_SUITE_P(Backends, LiveLatency, ::testing::Values(Backend::Cpu, Backend::Cuda),
                         [](const ::testing::TestParamInfo<Backend>& info) { return backendName(info.param); });

}  // namespace
}  // namespace nccmatch::test
