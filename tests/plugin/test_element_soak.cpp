// Soak: 10 000 frames through the element on the CPU backend, every frame
// matched, its boxes drawn, its messages posted and read, its ROI metas attached. The process's
// resident memory (/proc/self/statm) is sampled every 1000 frames; after a warm-up of 2000 frames
// it must stay within a tolerance of its value then: a leak of one frame buffer (19 KiB), one
// message or one match list per frame would grow it by tens to hundreds of MiB. The figures are
// printed. Suite 'soak': the sanitizer scripts leave it out (ASan's quarantine holds freed memory
// back, which grows RSS by design; built with a sanitizer it runs but does not assert the RSS).
#include <gst/check/gstharness.h>
#include <gst/video/video.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <fstream>
#include <string>
#include <vector>

#include "element_fixture.hpp"
#include "nccmatch/engine.hpp"
#include "plugin_test_support.hpp"

namespace nccmatch::test {
namespace {

constexpr int kFrames = 10000;
constexpr int kWarmUp = 2000;
constexpr int kSampleEvery = 1000;
constexpr double kToleranceMiB = 3.0;

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

TEST(Soak, TenThousandFramesKeepHostMemoryFlat) {
  initGstreamer();
  TempDir dir;
  const TemplateImage a = makeTemplate(12, 10, Fill::Random, "a");
  const TemplateImage b = makeTemplate(8, 8, Fill::Random, "b");
  writePgm(dir.path("a.pgm"), a);
  writePgm(dir.path("b.pgm"), b);
  const std::string templates = dir.path("a.pgm") + "," + dir.path("b.pgm");
  const FrameLayout layout = makeLayout(GST_VIDEO_FORMAT_I420, 160, 120, 0);
  // Frames with both templates at moving places (eight scenes, cycled).
  std::vector<Image> scenes;
  for (int i = 0; i < 8; ++i) {
    Image img = makeImage(160, 120, Fill::Random);
    paste(&img, a, 5 + 17 * i, 7 + 9 * i);
    paste(&img, b, 140 - 15 * i, 100 - 11 * i);
    scenes.push_back(img);
  }

  GstBus* bus = gst_bus_new();
  GstElement* element = gst_element_factory_make("nccmatch", nullptr);
  ASSERT_NE(element, nullptr);
  gst_object_ref_sink(element);
  gst_element_set_bus(element, bus);
  g_object_set(element, "device", int(Backend::Cpu), "templates", templates.c_str(), "threshold", 0.9,
               "max-matches", 2u, "display", TRUE, nullptr);
  GstHarness* harness = gst_harness_new_with_element(element, "sink", "src");
  gst_harness_set_src_caps(harness, capsFor(layout));

  std::vector<double> samples;  // RSS at frames 0, 1000, 2000, ...
  const auto begin = std::chrono::steady_clock::now();
  int framesWithBothFound = 0;
  for (int i = 0; i < kFrames; ++i) {
    if (i % kSampleEvery == 0) samples.push_back(residentMiB());
    GstBuffer* in = makeFrame(layout, scenes[i % scenes.size()]);
    GST_BUFFER_PTS(in) = guint64(i) * GST_SECOND / 30;
    ASSERT_EQ(gst_harness_push(harness, in), GST_FLOW_OK) << "frame " << i;
    GstBuffer* out = gst_harness_pull(harness);
    ASSERT_NE(out, nullptr) << "frame " << i;
    if (roiMetas(out).size() == 2) ++framesWithBothFound;
    gst_buffer_unref(out);
    std::vector<GstMessage*> messages = popMessages(bus, GST_MESSAGE_ANY);
    unrefMessages(&messages);
  }
  samples.push_back(residentMiB());
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - begin).count();
  gst_harness_teardown(harness);
  gst_object_unref(element);
  gst_object_unref(bus);

  std::printf("[ soak     ] %d frames (I420 160x120, 2 templates) in %.1f s (%.0f frames/s); RSS MiB at every %d "
              "frames:",
              kFrames, seconds, kFrames / seconds, kSampleEvery);
  for (double s : samples) std::printf(" %.2f", s);
  const double afterWarmUp = samples[kWarmUp / kSampleEvery];
  double highest = afterWarmUp;
  for (std::size_t k = kWarmUp / kSampleEvery; k < samples.size(); ++k) highest = std::max(highest, samples[k]);
  std::printf("\n[ soak     ] after warm-up (%d frames) %.2f MiB, highest since %.2f MiB (+%.2f, tolerance %.1f)\n",
              kWarmUp, afterWarmUp, highest, highest - afterWarmUp, kToleranceMiB);
  EXPECT_EQ(framesWithBothFound, kFrames) << "every frame's two templates are found";
  if (kSanitizerAllocator)
    std::printf("[ soak     ] RSS not asserted: a sanitizer's allocator holds freed memory back\n");
  else
    EXPECT_LE(highest - afterWarmUp, kToleranceMiB) << "host memory grows with the frames";
}

}  // namespace
}  // namespace nccmatch::test
