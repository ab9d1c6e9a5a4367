// Soak: frames through the element, every frame matched, its boxes drawn, its messages posted
// and read, its ROI metas attached, with memory sampled as it goes and asserted flat after a
// warm-up: a leak of one frame buffer, one message or one match list per frame would grow it by
// tens to hundreds of MiB. The figures are printed.
// - CPU backend: NCCMATCH_SOAK_CPU_FRAMES frames (default 10 000, CI; 100 000 for the soak
//   on the GPU host); the process's resident memory (/proc/self/statm) every tenth of them,
//   within 3 MiB of its value after the first fifth.
// - CUDA backend (a GPU host; skipped, saying why, without one): NCCMATCH_SOAK_CUDA_FRAMES frames
//   (default 5000; 100 000 for the soak), frames in flight as the element chooses; host
//   resident memory and the device's memory in use (cudaMemGetInfo, device_memory.hpp) sampled
//   20 times, both within their tolerances of their values after the first fifth.
// Suite 'soak': the sanitizer scripts leave it out (ASan's quarantine holds freed memory back,
// which grows RSS by design; built with a sanitizer it runs but does not assert the RSS).
#include <gst/check/gstharness.h>
#include <gst/video/video.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>
#include <vector>

#include "device_memory.hpp"
#include "element_fixture.hpp"
#include "nccmatch/engine.hpp"
#include "plugin_test_support.hpp"

namespace nccmatch::test {
namespace {

constexpr double kHostToleranceMiB = 3.0;
constexpr double kDeviceToleranceMiB = 4.0;  // cudaMemGetInfo moves in 2 MiB steps

// ASan's quarantine (256 MiB) and TSan's allocator hold freed memory back by design: under them
// the frames still run and are checked, the RSS figures are printed, but flatness is not asserted.
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
constexpr bool kSanitizerAllocator = true;
#else
constexpr bool kSanitizerAllocator = false;
#endif

// Resident set size of this process in MiB (statm's second field, in pages).
double residentMiB() {
  std::ifstream statm("/proc/self/statm");
  long total = 0, resident = 0;
  statm >> total >> resident;
  return double(resident) * double(sysconf(_SC_PAGESIZE)) / (1024.0 * 1024.0);
}

// What a soak measured: samples of host RSS and (CUDA) device memory in use, in MiB.
struct SoakFigures {
  std::vector<double> host, device;
  int framesOut = 0, framesWithBothFound = 0;
  double seconds = 0.0;
};

// `frames` I420 frames of width x height (both templates at moving places, eight scenes cycled)
// through one element on `backend`, memory sampled every `sampleEvery` frames and at the end.
// Frames in flight come out after later pushes: every buffer ready is pulled after each push, and
// the rest after EOS.
SoakFigures soak(Backend backend, int frames, int sampleEvery, int width, int height) {
  initGstreamer();
  TempDir dir;
  const TemplateImage a = makeTemplate(12, 10, Fill::Random, "a");
  const TemplateImage b = makeTemplate(8, 8, Fill::Random, "b");
  writePgm(dir.path("a.pgm"), a);
  writePgm(dir.path("b.pgm"), b);
  const std::string templates = dir.path("a.pgm") + "," + dir.path("b.pgm");
  const FrameLayout layout = makeLayout(GST_VIDEO_FORMAT_I420, width, height, 0);
  std::vector<Image> scenes;
  for (int i = 0; i < 8; ++i) {
    Image img = makeImage(width, height, Fill::Random);
    // The places of a 160x120 scene, stretched to the frame's size (they never overlap).
    paste(&img, a, (5 + 17 * i) * width / 160, (7 + 9 * i) * height / 120);
    paste(&img, b, (140 - 15 * i) * width / 160, (100 - 11 * i) * height / 120);
    scenes.push_back(img);
  }

  GstBus* bus = gst_bus_new();
  GstElement* element = gst_element_factory_make("nccmatch", nullptr);
  EXPECT_NE(element, nullptr);
  SoakFigures figures;
  if (element == nullptr) return figures;
  gst_object_ref_sink(element);
  gst_element_set_bus(element, bus);
  g_object_set(element, "device", int(backend), "templates", templates.c_str(), "threshold", 0.9, "max-matches", 2u,
               "display", TRUE, nullptr);
  GstHarness* harness = gst_harness_new_with_element(element, "sink", "src");
  gst_harness_set_src_caps(harness, capsFor(layout));

  auto sample = [&] {
    figures.host.push_back(residentMiB());
    double used = 0.0;
    if (backend == Backend::Cuda && deviceMemoryUsedMiB(&used)) figures.device.push_back(used);
  };
  auto pullReady = [&] {
    while (GstBuffer* out = gst_harness_try_pull(harness)) {
      ++figures.framesOut;
      if (roiMetas(out).size() == 2) ++figures.framesWithBothFound;
      gst_buffer_unref(out);
    }
    std::vector<GstMessage*> messages = popMessages(bus, GST_MESSAGE_ANY);
    for (GstMessage* m : messages)
      EXPECT_NE(GST_MESSAGE_TYPE(m), GST_MESSAGE_ERROR) << messageText(m);
    unrefMessages(&messages);
  };
  const auto begin = std::chrono::steady_clock::now();
  for (int i = 0; i < frames; ++i) {
    if (i % sampleEvery == 0) sample();
    GstBuffer* in = makeFrame(layout, scenes[i % scenes.size()]);
    GST_BUFFER_PTS(in) = guint64(i) * GST_SECOND / 30;
    const GstFlowReturn flow = gst_harness_push(harness, in);
    EXPECT_EQ(flow, GST_FLOW_OK) << "frame " << i;
    if (flow != GST_FLOW_OK) break;
    pullReady();
  }
  gst_harness_push_event(harness, gst_event_new_eos());
  pullReady();
  sample();
  figures.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - begin).count();
  GstStructure* stats = nullptr;
  g_object_get(element, "stats", &stats, nullptr);
  const char* used = gst_structure_get_string(stats, "backend");
  EXPECT_STREQ(used, backend == Backend::Cuda ? "cuda" : "cpu");
  gst_structure_free(stats);
  gst_harness_teardown(harness);
  gst_object_unref(element);
  gst_object_unref(bus);
  return figures;
}

// Prints the samples and returns the highest rise after `warmUpSamples` samples.
double riseAfterWarmUp(const char* what, const std::vector<double>& samples, std::size_t warmUpSamples,
                       int sampleEvery) {
  std::printf("[ soak     ] %s MiB every %d frames:", what, sampleEvery);
  for (double s : samples) std::printf(" %.2f", s);
  const double afterWarmUp = samples[warmUpSamples];
  const double highest = *std::max_element(samples.begin() + long(warmUpSamples), samples.end());
  std::printf("\n[ soak     ] %s after warm-up %.2f MiB, highest since %.2f MiB (+%.2f)\n", what, afterWarmUp, highest,
              highest - afterWarmUp);
  return highest - afterWarmUp;
}

// The frame count from `variable` (NCCMATCH_SOAK_<BACKEND>_FRAMES) into `frames`, or `fallback`
// when unset; a value that is not a whole number from 100 (ten samples and more) is a failure
// naming the variable.
::testing::AssertionResult soakFrames(const char* variable, int fallback, int* frames) {
  const char* asked = std::getenv(variable);
  *frames = fallback;
  if (asked == nullptr) return ::testing::AssertionSuccess();
  char* end = nullptr;
  const long value = std::strtol(asked, &end, 10);
  if (end == asked || *end != '\0' || value < 100 || value > 100000000)
    return ::testing::AssertionFailure() << variable << "='" << asked
                                         << "': a whole number of frames from 100 to 100000000";
  *frames = int(value);
  return ::testing::AssertionSuccess();
}

TEST(Soak, CpuFramesKeepHostMemoryFlat) {
  int frames = 0;
  ASSERT_TRUE(soakFrames("NCCMATCH_SOAK_CPU_FRAMES", 10000, &frames));
  const int sampleEvery = frames / 10;
  const SoakFigures f = soak(Backend::Cpu, frames, sampleEvery, 160, 120);
  ASSERT_GE(f.host.size(), 11u);
  std::printf("[ soak     ] CPU: %d frames (I420 160x120, 2 templates) in %.1f s (%.0f frames/s)\n", frames, f.seconds,
              frames / f.seconds);
  const double rise = riseAfterWarmUp("host RSS", f.host, 2, sampleEvery);
  EXPECT_EQ(f.framesOut, frames);
  EXPECT_EQ(f.framesWithBothFound, frames) << "every frame's two templates are found";
  if (kSanitizerAllocator)
    std::printf("[ soak     ] RSS not asserted: a sanitizer's allocator holds freed memory back\n");
  else
    EXPECT_LE(rise, kHostToleranceMiB) << "host memory grows with the frames";
}

TEST(Soak, CudaFramesKeepHostAndDeviceMemoryFlat) {
  std::string why;
  if (!cudaAvailable(&why)) GTEST_SKIP() << why;
  int frames = 0;
  ASSERT_TRUE(soakFrames("NCCMATCH_SOAK_CUDA_FRAMES", 5000, &frames));
  const int sampleEvery = frames / 20;
  const SoakFigures f = soak(Backend::Cuda, frames, sampleEvery, 640, 480);
  std::printf("[ soak     ] CUDA: %d frames (I420 640x480, 2 templates) in %.1f s (%.0f frames/s)\n", frames,
              f.seconds, frames / f.seconds);
  ASSERT_GE(f.host.size(), 21u);
  ASSERT_EQ(f.device.size(), f.host.size()) << "cudaMemGetInfo did not answer";
  const double hostRise = riseAfterWarmUp("host RSS", f.host, 4, sampleEvery);
  const double deviceRise = riseAfterWarmUp("device memory in use", f.device, 4, sampleEvery);
  EXPECT_EQ(f.framesOut, frames);
  EXPECT_EQ(f.framesWithBothFound, frames) << "every frame's two templates are found";
  if (kSanitizerAllocator)
    std::printf("[ soak     ] RSS not asserted: a sanitizer's allocator holds freed memory back\n");
  else
    EXPECT_LE(hostRise, kHostToleranceMiB) << "host memory grows with the frames";
  EXPECT_LE(deviceRise, kDeviceToleranceMiB) << "device memory grows with the frames";
}

}  // namespace
}  // namespace nccmatch::test
