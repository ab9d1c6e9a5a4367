// Many nccmatch instances in one process, each with a bank of its own, give the matches each gives
// alone: 8 behind one tee (8 streaming threads, one bus) and 8 pipelines played at once from 8
// threads. On the CPU backend (CI) and on the CUDA backend (one GPU shared by the 8 engines;
// skipped, saying why, without one). Small frames, few of them: this is about sharing, not speed.
// On the CUDA backend every instance of the process works in one CUDA context (the device's
// primary one, wrapped for gstcuda): separate contexts would take turns on the GPU.
#include <gst/video/video.h>
#include <gtest/gtest.h>

#include <chrono>
#include <condition_variable>
#include <functional>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "nccmatch/engine.hpp"
#include "pipeline_run.hpp"
#include "plugin_test_support.hpp"

namespace nccmatch::test {
namespace {

constexpr int kInstances = 8;
constexpr int kFrames = 5;
constexpr int kWidth = 192, kHeight = 144;

class Instances : public ::testing::TestWithParam<Backend> {
 protected:
  static void SetUpTestSuite() { initGstreamer(); }
  void SetUp() override {
    std::string why;
    if (GetParam() == Backend::Cuda && !cudaAvailable(&why)) GTEST_SKIP() << "CUDA backend: " << why;
    // Instance i's bank: a template of its own (sizes differ, so the banks differ in shape too)
    // and one template every bank shares.
    const TemplateImage shared = makeTemplate(14, 14, Fill::Random, "shared");
    writePgm(dir_.path("shared.pgm"), shared);
    std::vector<TemplateImage> own;
    for (int i = 0; i < kInstances; ++i) {
      own.push_back(makeTemplate(10 + 2 * i, 8 + i, Fill::Random, "own" + std::to_string(i)));
      const std::string path = dir_.path("own" + std::to_string(i) + ".pgm");
      writePgm(path, own.back());
      banks_.push_back(path + "," + dir_.path("shared.pgm"));
    }
    FrameLayout layout = makeLayout(GST_VIDEO_FORMAT_GRAY8, kWidth, kHeight, 0);
    for (int f = 0; f < kFrames; ++f) {
      Image luma = makeImage(kWidth, kHeight, Fill::Smooth);
      for (int i = 0; i < kInstances; ++i) paste(&luma, own[i], 4 + (i % 4) * 46 + f, 6 + (i / 4) * 60 + f % 2);
      paste(&luma, shared, 90 - 2 * f, 120);
      GstBuffer* buffer = makeFrame(layout, luma);
      GST_BUFFER_PTS(buffer) = f * GST_SECOND / 30;
      GST_BUFFER_DURATION(buffer) = GST_SECOND / 30;
      frames_.push_back(buffer);
    }
    GstCaps* caps = capsFor(layout);
    gchar* text = gst_caps_to_string(caps);
    source_ = "appsrc name=src format=time caps=\"" + std::string(text) + "\"";
    g_free(text);
    gst_caps_unref(caps);
  }
  void TearDown() override {
    for (GstBuffer* b : frames_) gst_buffer_unref(b);
  }

  std::string element(int i) const {
    return "nccmatch name=m" + std::to_string(i) + " device=" + backendName(GetParam()) +
           " cpu-threads=1 display=false threshold=0.8 max-matches=3 templates=\"" + banks_[i] + "\"";
  }
  // Instance i alone in its pipeline.
  PipelineRun runAlone(int i) const { return runPipeline(source_ + " ! " + element(i) + " ! fakesink", frames_); }

  // Each instance's matches in `run` equal those it gave alone, on the backend asked for.
  void expectAsAlone(const PipelineRun& run, const std::vector<PipelineRun>& alone) const {
    for (int i = 0; i < kInstances; ++i) {
      SCOPED_TRACE("instance " + std::to_string(i));
      const std::string name = "m" + std::to_string(i);
      ASSERT_EQ(run.elements.count(name), 1u);
      const ElementRun& got = run.elements.at(name);
      const ElementRun& want = alone[i].elements.at(name);
      EXPECT_EQ(got.backend, backendName(GetParam()));
      ASSERT_EQ(got.matches.size(), std::size_t(kFrames));
      EXPECT_EQ(got.matches[0].size(), 2u) << "its own template and the shared one";
      expectSameMatches(got, want, 0.0);
    }
  }

  // CUDA backend: every instance kept the same gstcuda context (read while all of them ran).
  void expectOneCudaContext(const std::function<const void*(int)>& contextOf) const {
    if (GetParam() != Backend::Cuda) return;
    for (int i = 0; i < kInstances; ++i) {
      EXPECT_NE(contextOf(i), nullptr) << "instance " << i << " has no CUDA context";
      EXPECT_EQ(contextOf(i), contextOf(0)) << "instance " << i << " works in a CUDA context of its own";
    }
  }

  std::vector<PipelineRun> allAlone() const {
    std::vector<PipelineRun> runs;
    for (int i = 0; i < kInstances; ++i) {
      runs.push_back(runAlone(i));
      EXPECT_TRUE(runs.back().errors.empty()) << ::testing::PrintToString(runs.back().errors);
      EXPECT_TRUE(runs.back().warnings.empty()) << ::testing::PrintToString(runs.back().warnings);
    }
    return runs;
  }

  TempDir dir_;
  std::vector<std::string> banks_;
  std::vector<GstBuffer*> frames_;
  std::string source_;
};

TEST_P(Instances, EightBehindOneTeeMatchAsEachAlone) {
  const std::vector<PipelineRun> alone = allAlone();
  std::string description = source_ + " ! tee name=t";
  for (int i = 0; i < kInstances; ++i) description += " t. ! queue ! " + element(i) + " ! fakesink";
  const PipelineRun together = runPipeline(description, frames_);
  EXPECT_TRUE(together.errors.empty()) << ::testing::PrintToString(together.errors);
  EXPECT_TRUE(together.warnings.empty()) << ::testing::PrintToString(together.warnings);
  EXPECT_TRUE(together.eos);
  expectAsAlone(together, alone);
  expectOneCudaContext([&](int i) { return together.elements.at("m" + std::to_string(i)).cudaContext; });
}

TEST_P(Instances, EightPipelinesPlayedAtOnceMatchAsEachAlone) {
  const std::vector<PipelineRun> alone = allAlone();
  std::vector<PipelineRun> together(kInstances);
  std::vector<std::thread> threads;
  // After its first frame each pipeline waits (up to 30 s) until all have theirs: all 8 engines
  // then run at once, each element holding its CUDA context.
  std::mutex mutex;
  std::condition_variable allPushed;
  int pushed = 0;
  const auto meet = [&](GstElement*, std::size_t count) {
    if (count != 1) return;
    std::unique_lock<std::mutex> lock(mutex);
    if (++pushed == kInstances) allPushed.notify_all();
    allPushed.wait_for(lock, std::chrono::seconds(30), [&] { return pushed == kInstances; });
  };
  for (int i = 0; i < kInstances; ++i)
    threads.emplace_back([&, i] {
      together[i] = runPipeline(source_ + " ! " + element(i) + " ! fakesink", frames_, 60, {}, meet);
    });
  for (std::thread& t : threads) t.join();
  for (int i = 0; i < kInstances; ++i) {
    SCOPED_TRACE("pipeline " + std::to_string(i));
    EXPECT_TRUE(together[i].errors.empty()) << ::testing::PrintToString(together[i].errors);
    EXPECT_TRUE(together[i].eos);
    const std::string name = "m" + std::to_string(i);
    ASSERT_EQ(together[i].elements.count(name), 1u);
    EXPECT_EQ(together[i].elements.at(name).backend, backendName(GetParam()));
    expectSameMatches(together[i].elements.at(name), alone[i].elements.at(name), 0.0);
  }
  expectOneCudaContext([&](int i) { return together[i].elements.at("m" + std::to_string(i)).cudaContext; });
}

INSTANTIATE_TEST_SUITE_P(Backends, Instances, ::testing::Values(Backend::Cpu, Backend::Cuda),
                         [](const ::testing::TestParamInfo<Backend>& info) {
                           return std::string(backendName(info.param));
                         });

}  // namespace
}  // namespace nccmatch::test
