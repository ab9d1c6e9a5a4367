// The Tracker on the CUDA engine gives the CPU engine's tracks: the synthetic scenes of
// tests/kernels/track (track_scene.hpp), frame by frame the same matches (positions, scores),
// ids, states, lost and ended lists, also with template-update, and with the GPU's frames in
// pinned host memory (the element's buffer pool: the region kernels read the windows in place).
// Skips without a GPU.
#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <cstring>
#include <memory>

#include "gpu_test_support.hpp"
#include "nccmatch/tracker.hpp"
#include "test_support.hpp"
#include "track_scene.hpp"

namespace nccmatch::test {
namespace {

// Pinned host memory of `bytes` (cudaMallocHost), freed at the end.
struct PinnedBytes {
  explicit PinnedBytes(std::size_t bytes) {
    EXPECT_EQ(cudaMallocHost(reinterpret_cast<void**>(&data), bytes), cudaSuccess);
  }
  PinnedBytes(const PinnedBytes&) = delete;
  PinnedBytes& operator=(const PinnedBytes&) = delete;
  ~PinnedBytes() { cudaFreeHost(data); }
  uint8_t* data = nullptr;
};

// pinnedFrames: the GPU tracker's frames are copies in pinned host memory, the CPU's the images.
void expectSameTracks(double templateUpdate, bool pinnedFrames = false) {
  TrackerOptions options;
  options.templateUpdate = templateUpdate;
  const Scene scene = trackingScene(options.lostFrames, testSeed());
  auto cpu = makeEngine(Backend::Cpu);
  auto gpu = makeEngine(Backend::Cuda);
  ASSERT_TRUE(cpu->setTemplates(scene.templates).ok());
  ASSERT_TRUE(gpu->setTemplates(scene.templates).ok());
  Tracker onCpu(options), onGpu(options);
  MatchParams params;
  params.threshold = 0.7;
  params.maxMatches = 8;
  int regionFrames = 0;
  std::unique_ptr<PinnedBytes> pinned;
  for (int t = 0; t < 60; ++t) {
    std::vector<TruthBox> truth;
    const Image img = scene.frame(t, &truth);
    FrameView gpuFrame = img.view();
    if (pinnedFrames) {
      if (!pinned) pinned = std::make_unique<PinnedBytes>(img.bytes.size());  // every frame is one size
      ASSERT_NE(pinned->data, nullptr);
      std::memcpy(pinned->data, img.bytes.data(), img.bytes.size());
      gpuFrame.data = pinned->data;
    }
    TrackerFrame want, got;
    ASSERT_TRUE(onCpu.track(*cpu, img.view(), params, &want).ok());
    const Status st = onGpu.track(*gpu, gpuFrame, params, &got);
    ASSERT_TRUE(st.ok()) << st.message();
    const std::string where = "frame " + std::to_string(t) + " seed " + std::to_string(scene.seed);
    EXPECT_EQ(got.fullFrameSearch, want.fullFrameSearch) << where;
    EXPECT_EQ(got.regionsSearched, want.regionsSearched) << where;
    regionFrames += got.fullFrameSearch ? 0 : 1;
    EXPECT_EQ(got.lostTracks, want.lostTracks) << where;
    EXPECT_EQ(got.endedTracks, want.endedTracks) << where;
    ASSERT_EQ(got.matches.size(), want.matches.size()) << where;
    for (std::size_t i = 0; i < got.matches.size(); ++i) {
      EXPECT_EQ(got.matches[i].trackId, want.matches[i].trackId) << where;
      EXPECT_EQ(got.matches[i].state, want.matches[i].state) << where;
      EXPECT_EQ(got.matches[i].match.x, want.matches[i].match.x) << where;
      EXPECT_EQ(got.matches[i].match.y, want.matches[i].match.y) << where;
      // Full-frame searches may take the GPU's fft path (scores within 1e-4); windows are exact.
      EXPECT_NEAR(got.matches[i].match.score, want.matches[i].match.score, got.fullFrameSearch ? 1e-4 : 0.0)
          << where;
    }
  }
  EXPECT_GT(regionFrames, 40);
}

TEST(TrackerGpu, SameTracksAsTheCpu) {
  SKIP_WITHOUT_GPU();
  expectSameTracks(0.0);
}

TEST(TrackerGpu, SameTracksAsTheCpuWithTemplateUpdate) {
  SKIP_WITHOUT_GPU();
  expectSameTracks(0.4);
}

TEST(TrackerGpu, SameTracksAsTheCpuOnPinnedHostFrames) {
  SKIP_WITHOUT_GPU();
  expectSameTracks(0.4, true);
}

}  // namespace
}  // namespace nccmatch::test
