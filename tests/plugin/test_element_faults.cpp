// The element when the GPU fails (faults injected through the NCCMATCH_CUDA_* variables, which
// the plugin's engine reads when it is made; kernels/src/cuda/fault_injection.hpp): out of device
// memory at start and mid-stream (a larger frame), a lost context, a device that does not exist.
// device=auto goes on on the CPU with exactly one warning and the CPU's matches; device=cuda stops
// with one error that says why. Needs a GPU: skipped, saying why, without one (the no-GPU cases
// are in test_element and test_element_negotiation).
#include <gst/video/video.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <set>
#include <string>
#include <vector>

#include "nccmatch/engine.hpp"
#include "pipeline_run.hpp"
#include "plugin_test_support.hpp"
#ifdef NCCMATCH_HAVE_CUDA
#include <cuda_runtime_api.h>

#include "cuda/fault_injection.hpp"
#endif

namespace nccmatch::test {
namespace {

constexpr const char* kVariables[] = {"NCCMATCH_CUDA_FAIL_ALLOC_AFTER", "NCCMATCH_CUDA_ALLOC_LIMIT_BYTES",
                                      "NCCMATCH_CUDA_FAIL_PINNED_AFTER", "NCCMATCH_CUDA_FAIL_CHECK_AFTER"};
constexpr int kSmall[2] = {160, 120}, kLarge[2] = {640, 480};
constexpr int kFrames = 4;

class ElementFaults : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { initGstreamer(); }
  void SetUp() override {
    std::string why;
    if (!cudaAvailable(&why)) GTEST_SKIP() << why;
    a_ = makeTemplate(16, 12, Fill::Random, "a");
    b_ = makeTemplate(40, 30, Fill::Random, "b");
    writePgm(dir_.path("a.pgm"), a_);
    writePgm(dir_.path("b.pgm"), b_);
  }
  void TearDown() override {
    for (const char* name : kVariables) unsetenv(name);
    for (GstBuffer* b : frames_) gst_buffer_unref(b);
  }

  // Frames (GRAY8 unless `format` says otherwise) of width x height with both templates pasted,
  // moving a little each frame, and `extra` at 60,60 when given (owned by the fixture).
  std::vector<GstBuffer*> makeFrames(int width, int height, int firstPts, const TemplateImage* extra = nullptr,
                                     GstVideoFormat format = GST_VIDEO_FORMAT_GRAY8) {
    FrameLayout layout = makeLayout(format, width, height, 0);
    std::vector<GstBuffer*> frames;
    for (int i = 0; i < kFrames; ++i) {
      Image luma = makeImage(width, height, Fill::Smooth);
      paste(&luma, a_, 10 + 3 * i, 20);
      paste(&luma, b_, width - 60, height - 40 - i);
      if (extra != nullptr) paste(&luma, *extra, 60, 60);
      GstBuffer* buffer = makeFrame(layout, luma);
      GST_BUFFER_PTS(buffer) = (firstPts + i) * GST_SECOND / 30;
      GST_BUFFER_DURATION(buffer) = GST_SECOND / 30;
      frames.push_back(buffer);
      frames_.push_back(buffer);
    }
    return frames;
  }
  static std::string source(int width, int height, GstVideoFormat format = GST_VIDEO_FORMAT_GRAY8) {
    FrameLayout layout = makeLayout(format, width, height, 0);
    GstCaps* caps = capsFor(layout);
    gchar* text = gst_caps_to_string(caps);
    std::string s = "appsrc name=src format=time caps=\"" + std::string(text) + "\" ! ";
    g_free(text);
    gst_caps_unref(caps);
    return s;
  }
  std::string element(const char* device, const std::string& extra = "") const {
    return std::string("nccmatch name=m device=") + device + " display=false threshold=0.8 max-matches=2 templates=\"" +
           dir_.path("a.pgm") + "," + dir_.path("b.pgm") + "\" " + extra;
  }
  // Small frames through the element, on `device`.
  PipelineRun runSmall(const char* device, const std::string& extra = "") {
    return runPipeline(source(kSmall[0], kSmall[1]) + element(device, extra) + " ! fakesink",
                       makeFrames(kSmall[0], kSmall[1], 0));
  }

  TempDir dir_;
  TemplateImage a_, b_;
  std::vector<GstBuffer*> frames_;  // every frame made, unreffed at the end
};

// The GStreamer elements of `names` that are not installed, joined by spaces.
[[maybe_unused]] std::string missingElements(std::initializer_list<const char*> names) {  // (CUDA builds only)
  std::string missing;
  for (const char* name : names) {
    GstElementFactory* factory = gst_element_factory_find(name);
    if (factory == nullptr) missing += std::string(missing.empty() ? "" : " ") + name;
    else gst_object_unref(factory);
  }
  return missing;
}

// The one warning of `run` from "m", which must say device=auto and contain `reason`.
void expectOneFallbackWarning(const PipelineRun& run, const std::string& reason) {
  std::vector<std::string> warnings = run.from(run.warnings, "m");
  ASSERT_EQ(warnings.size(), 1u) << "warnings: " << ::testing::PrintToString(run.warnings);
  EXPECT_NE(warnings[0].find("device=auto"), std::string::npos) << warnings[0];
  EXPECT_NE(warnings[0].find("CPU"), std::string::npos) << warnings[0];
  EXPECT_NE(warnings[0].find(reason), std::string::npos) << warnings[0];
}

void expectOneError(const PipelineRun& run, const std::string& reason) {
  ASSERT_EQ(run.errors.size(), 1u) << "errors: " << ::testing::PrintToString(run.errors);
  EXPECT_EQ(run.errors[0].rfind("m: ", 0), 0u) << run.errors[0];
  EXPECT_NE(run.errors[0].find(reason), std::string::npos) << run.errors[0];
  EXPECT_FALSE(run.eos);
}

// Small frames through `engine` as the element streams them: frames in flight (each slot's
// buffers, each matching lane's scratch), not one match() at a time (one slot, one lane).
void streamSmallFrames(Engine& engine) {
  Image small = makeImage(kSmall[0], kSmall[1], Fill::Smooth);
  MatchParams params;
  params.threshold = 0.8;
  params.maxMatches = 2;
  FrameResult result;
  for (int round = 0; round < 2; ++round) {
    for (int i = 0; i < Engine::kMaxFramesInFlight; ++i) ASSERT_TRUE(engine.submit(small.view(), params).ok());
    for (int i = 0; i < Engine::kMaxFramesInFlight; ++i) ASSERT_TRUE(engine.collect(&result).ok());
  }
}

// No device memory at all: the CUDA engine starts but cannot take the bank.
TEST_F(ElementFaults, OutOfDeviceMemoryAtStart) {
  const PipelineRun cpu = runSmall("cpu");
  ASSERT_TRUE(cpu.errors.empty()) << cpu.errors[0];
  ASSERT_EQ(cpu.elements.at("m").matches.size(), std::size_t(kFrames));
  setenv("NCCMATCH_CUDA_FAIL_ALLOC_AFTER", "0", 1);
  {
    SCOPED_TRACE("device=auto");
    const PipelineRun run = runSmall("auto");
    EXPECT_TRUE(run.errors.empty()) << ::testing::PrintToString(run.errors);
    EXPECT_TRUE(run.eos);
    expectOneFallbackWarning(run, "cudaErrorMemoryAllocation");
    EXPECT_EQ(run.elements.at("m").backend, "cpu");
    expectSameMatches(run.elements.at("m"), cpu.elements.at("m"), 0.0);
  }
  {
    SCOPED_TRACE("device=cuda");
    const PipelineRun run = runSmall("cuda");
    expectOneError(run, "cudaErrorMemoryAllocation");
  }
  unsetenv("NCCMATCH_CUDA_FAIL_ALLOC_AFTER");
  {
    SCOPED_TRACE("lifted");
    const PipelineRun run = runSmall("cuda");
    EXPECT_TRUE(run.errors.empty()) << ::testing::PrintToString(run.errors);
    EXPECT_TRUE(run.warnings.empty()) << ::testing::PrintToString(run.warnings);
    EXPECT_EQ(run.elements.at("m").backend, "cuda");
    expectSameMatches(run.elements.at("m"), cpu.elements.at("m"), 1e-4);
  }
}

// The context lost from the first checked CUDA call: the engine cannot even start.
TEST_F(ElementFaults, LostContextAtStart) {
  const PipelineRun cpu = runSmall("cpu");
  ASSERT_TRUE(cpu.errors.empty()) << cpu.errors[0];
  setenv("NCCMATCH_CUDA_FAIL_CHECK_AFTER", "0", 1);
  {
    SCOPED_TRACE("device=auto");
    const PipelineRun run = runSmall("auto");
    EXPECT_TRUE(run.errors.empty()) << ::testing::PrintToString(run.errors);
    expectOneFallbackWarning(run, "cudaErrorLaunchFailure");
    EXPECT_EQ(run.elements.at("m").backend, "cpu");
    expectSameMatches(run.elements.at("m"), cpu.elements.at("m"), 0.0);
  }
  {
    SCOPED_TRACE("device=cuda");
    expectOneError(runSmall("cuda"), "cudaErrorLaunchFailure");
  }
}

// cuda-device-id past the last device.
TEST_F(ElementFaults, ADeviceThatDoesNotExist) {
#ifdef NCCMATCH_HAVE_CUDA
  int count = 0;
  ASSERT_EQ(cudaGetDeviceCount(&count), cudaSuccess);
  const std::string id = "cuda-device-id=" + std::to_string(count);
  const PipelineRun cpu = runSmall("cpu");
  ASSERT_TRUE(cpu.errors.empty()) << cpu.errors[0];
  {
    SCOPED_TRACE("device=auto");
    const PipelineRun run = runSmall("auto", id);
    EXPECT_TRUE(run.errors.empty()) << ::testing::PrintToString(run.errors);
    expectOneFallbackWarning(run, "CUDA device " + std::to_string(count));
    EXPECT_EQ(run.elements.at("m").backend, "cpu");
    expectSameMatches(run.elements.at("m"), cpu.elements.at("m"), 0.0);
  }
  {
    SCOPED_TRACE("device=cuda");
    expectOneError(runSmall("cuda", id), "CUDA device " + std::to_string(count));
  }
#else
  GTEST_SKIP() << "this build has no CUDA backend";
#endif
}

// Device memory enough for small frames only (the limit measured on an engine like the element's,
// in this process): the caps change to larger frames mid-stream. device=auto matches the small
// frames on the GPU and the large ones on the CPU, with one warning; device=cuda stops at the
// first large frame with an error naming the memory.
TEST_F(ElementFaults, OutOfDeviceMemoryMidStream) {
#ifdef NCCMATCH_HAVE_CUDA
  std::size_t held = 0;
  {
    EngineOptions o;
    o.backend = Backend::Cuda;
    std::unique_ptr<Engine> engine;
    Status s = Engine::create(o, &engine);
    ASSERT_TRUE(s.ok()) << s.message();
    ASSERT_TRUE(engine->setTemplates({a_, b_}).ok());
    ASSERT_NO_FATAL_FAILURE(streamSmallFrames(*engine));
    held = cuda::faults::deviceBytesHeld();
  }
  ASSERT_GT(held, 0u);
  const std::string limit = std::to_string(held + 256 * 1024);  // a little slack; a large frame needs MBs

  // Small frames, then large ones: appsrc sends the new caps before the first large frame.
  std::vector<GstBuffer*> frames = makeFrames(kSmall[0], kSmall[1], 0);
  const std::vector<GstBuffer*> large = makeFrames(kLarge[0], kLarge[1], kFrames);
  auto run = [&](const char* device) {
    const std::string description = source(kSmall[0], kSmall[1]) + element(device) + " ! fakesink";
    std::vector<GstCaps*> caps(frames.size() + large.size(), nullptr);
    FrameLayout largeLayout = makeLayout(GST_VIDEO_FORMAT_GRAY8, kLarge[0], kLarge[1], 0);
    caps[frames.size()] = capsFor(largeLayout);
    std::vector<GstBuffer*> all = frames;
    all.insert(all.end(), large.begin(), large.end());
    PipelineRun r = runPipeline(description, all, 60, caps);
    gst_caps_unref(caps[frames.size()]);
    return r;
  };
  const PipelineRun cpu = run("cpu");
  ASSERT_TRUE(cpu.errors.empty()) << cpu.errors[0];
  ASSERT_EQ(cpu.elements.at("m").matches.size(), std::size_t(2 * kFrames));
  setenv("NCCMATCH_CUDA_ALLOC_LIMIT_BYTES", limit.c_str(), 1);
  {
    SCOPED_TRACE("device=auto");
    const PipelineRun r = run("auto");
    EXPECT_TRUE(r.errors.empty()) << ::testing::PrintToString(r.errors);
    EXPECT_TRUE(r.eos);
    expectOneFallbackWarning(r, "cudaErrorMemoryAllocation");
    EXPECT_EQ(r.elements.at("m").backend, "cpu") << "on the CPU from the first large frame";
    expectSameMatches(r.elements.at("m"), cpu.elements.at("m"), 1e-4);
  }
  {
    SCOPED_TRACE("device=cuda");
    const PipelineRun r = run("cuda");
    expectOneError(r, "cudaErrorMemoryAllocation");
    EXPECT_EQ(r.elements.at("m").matches.size(), std::size_t(kFrames)) << "the small frames were matched";
  }
#else
  GTEST_SKIP() << "this build has no CUDA backend";
#endif
}

// A larger bank set while PLAYING when the device has room for nothing more than the first bank
// and its frames (a countdown measured on an engine like the element's): device=auto hands over to
// the CPU with one warning and finds the new template; device=cuda stops with an error naming the
// memory. When the new bank's copies or the next frame's buffers fail depends on the element's
// frames in flight: either way it is one warning, or one error.
TEST_F(ElementFaults, OutOfDeviceMemoryForALargerBankWhilePlaying) {
#ifdef NCCMATCH_HAVE_CUDA
  std::uint64_t allocations = 0;
  {
    EngineOptions o;
    o.backend = Backend::Cuda;
    std::unique_ptr<Engine> engine;
    Status s = Engine::create(o, &engine);
    ASSERT_TRUE(s.ok()) << s.message();
    const std::uint64_t before = cuda::faults::deviceAllocationCount();
    ASSERT_TRUE(engine->setTemplates({a_, b_}).ok());
    ASSERT_NO_FATAL_FAILURE(streamSmallFrames(*engine));
    allocations = cuda::faults::deviceAllocationCount() - before;
  }
  const TemplateImage c = makeTemplate(24, 20, Fill::Random, "c");
  writePgm(dir_.path("c.pgm"), c);
  std::vector<GstBuffer*> frames = makeFrames(kSmall[0], kSmall[1], 0, &c);
  const std::vector<GstBuffer*> later = makeFrames(kSmall[0], kSmall[1], kFrames, &c);
  frames.insert(frames.end(), later.begin(), later.end());
  const std::string larger = dir_.path("a.pgm") + "," + dir_.path("b.pgm") + "," + dir_.path("c.pgm");
  auto setLargerBank = [&](GstElement* pipeline, std::size_t pushed) {
    if (pushed != std::size_t(kFrames)) return;
    GstElement* m = gst_bin_get_by_name(GST_BIN(pipeline), "m");
    g_object_set(m, "templates", larger.c_str(), nullptr);
    gst_object_unref(m);
  };
  setenv("NCCMATCH_CUDA_FAIL_ALLOC_AFTER", std::to_string(allocations).c_str(), 1);
  {
    SCOPED_TRACE("device=auto");
    const PipelineRun r =
        runPipeline(source(kSmall[0], kSmall[1]) + element("auto") + " ! fakesink", frames, 60, {}, setLargerBank);
    EXPECT_TRUE(r.errors.empty()) << ::testing::PrintToString(r.errors);
    EXPECT_TRUE(r.eos);
    expectOneFallbackWarning(r, "cudaErrorMemoryAllocation");
    const ElementRun& m = r.elements.at("m");
    EXPECT_EQ(m.backend, "cpu");
    ASSERT_EQ(m.matches.size(), std::size_t(2 * kFrames));
    bool foundC = false;
    for (const Found& f : m.matches.back()) foundC = foundC || (f.templateIndex == 2 && f.x == 60 && f.y == 60);
    EXPECT_TRUE(foundC) << "the last frame is matched with the larger bank";
  }
  {
    SCOPED_TRACE("device=cuda");
    const PipelineRun r =
        runPipeline(source(kSmall[0], kSmall[1]) + element("cuda") + " ! fakesink", frames, 60, {}, setLargerBank);
    expectOneError(r, "cudaErrorMemoryAllocation");
  }
#else
  GTEST_SKIP() << "this build has no CUDA backend";
#endif
}

#ifdef NCCMATCH_HAVE_CUDA
// Runs one pipeline description on a device ("auto", "cuda" or "cpu").
using DeviceRun = std::function<PipelineRun(const char* device)>;

// Every NCC_CUDA_CHECK-ed call of a run failed in turn: the lost-context countdown
// (NCCMATCH_CUDA_FAIL_CHECK_AFTER=k) fails call k of the engine and every later one, so each
// place where the CUDA backend can fail (engine start, bank, upload, a frame's submit, its
// collect with other frames in flight, the tracker's windows, the coarse-to-fine levels, boxes
// drawn on CUDA memory) fails once across the sweep. device=auto: never an error; either the
// fault came after the last CUDA call (no warning, backend cuda) or exactly one warning naming
// the CUDA error and the CPU backend from there; every frame's matches (and track ids) those of
// the CPU backend. device=cuda (every 4th position): one error naming the CUDA error, or none
// when the fault came after the last call.
// The checked CUDA calls of one clean run. The plugin module links its own copy of the library,
// fault counters included, so this binary's checkedCallCount() never sees them: the count is the
// least k for which failing the call after the k-th changes nothing (no fall-back), found by
// doubling k and then bisecting.
std::uint64_t checkedCallsOfARun(const DeviceRun& run) {
  const auto fallsBack = [&](std::uint64_t k) {
    setenv("NCCMATCH_CUDA_FAIL_CHECK_AFTER", std::to_string(k).c_str(), 1);
    const PipelineRun r = run("auto");
    unsetenv("NCCMATCH_CUDA_FAIL_CHECK_AFTER");
    const auto m = r.elements.find("m");
    return m != r.elements.end() && m->second.backend == "cpu";
  };
  constexpr std::uint64_t kLimit = std::uint64_t(1) << 24;
  std::uint64_t high = 1;
  while (high < kLimit && fallsBack(high)) high *= 2;
  if (high == 1) return fallsBack(0) ? 1 : 0;
  std::uint64_t low = high / 2;  // falls back at low, not at high
  while (high - low > 1) {
    const std::uint64_t mid = low + (high - low) / 2;
    (fallsBack(mid) ? low : high) = mid;
  }
  return high;
}

void sweepCheckedCalls(const DeviceRun& run) {
  const PipelineRun cpu = run("cpu");
  ASSERT_TRUE(cpu.errors.empty()) << cpu.errors[0];
  ASSERT_EQ(cpu.elements.at("m").matches.size(), std::size_t(kFrames));
  const PipelineRun clean = run("auto");
  const std::uint64_t total = checkedCallsOfARun(run);
  std::printf("[ faults   ] %llu checked CUDA calls in a clean run\n", static_cast<unsigned long long>(total));
  ASSERT_TRUE(clean.errors.empty()) << clean.errors[0];
  ASSERT_TRUE(clean.warnings.empty()) << clean.warnings[0];
  ASSERT_EQ(clean.elements.at("m").backend, "cuda");
  expectSameMatches(clean.elements.at("m"), cpu.elements.at("m"), 1e-4);
  ASSERT_GT(total, 0u);
  // Positions: the first 16 calls (start-up), then 32 spread to just past the last call (each run
  // starts a CUDA context: a few hundred ms).
  std::set<std::uint64_t> positions;
  for (std::uint64_t k = 0; k < std::min<std::uint64_t>(16, total); ++k) positions.insert(k);
  for (std::uint64_t k = 0; k <= 32; ++k) positions.insert(k * (total + 2) / 32);
  std::uint64_t fired = 0, lastFired = 0;
  int index = 0;
  for (const std::uint64_t k : positions) {
    SCOPED_TRACE(::testing::Message() << "NCCMATCH_CUDA_FAIL_CHECK_AFTER=" << k << " of " << total << " calls");
    setenv("NCCMATCH_CUDA_FAIL_CHECK_AFTER", std::to_string(k).c_str(), 1);
    const PipelineRun r = run("auto");
    const PipelineRun strict = index++ % 4 == 0 ? run("cuda") : PipelineRun();
    unsetenv("NCCMATCH_CUDA_FAIL_CHECK_AFTER");
    EXPECT_TRUE(r.errors.empty()) << ::testing::PrintToString(r.errors);
    EXPECT_TRUE(r.eos);
    const ElementRun& m = r.elements.at("m");
    if (m.backend == "cpu") {
      expectOneFallbackWarning(r, "cudaErrorLaunchFailure");
      ++fired;
      lastFired = std::max(lastFired, k);
    } else {
      EXPECT_EQ(m.backend, "cuda");
      EXPECT_TRUE(r.warnings.empty()) << ::testing::PrintToString(r.warnings);
    }
    expectSameMatches(m, cpu.elements.at("m"), 1e-4);
    if (!strict.elements.empty()) {
      EXPECT_TRUE(strict.from(strict.warnings, "m").empty()) << ::testing::PrintToString(strict.warnings);
      if (!strict.errors.empty()) {
        expectOneError(strict, "cudaErrorLaunchFailure");
      } else {
        EXPECT_TRUE(strict.eos);
        expectSameMatches(strict.elements.at("m"), cpu.elements.at("m"), 1e-4);
      }
    }
  }
  std::printf("checked-call sweep: %llu calls in a clean run, %zu positions, the CPU took over in %llu (last at "
              "call %llu)\n",
              (unsigned long long)total, positions.size(), (unsigned long long)fired, (unsigned long long)lastFired);
  // The countdown starts when the engine is made: the fault must fire for every position but the
  // last few calls (those of stop, after the last frame, warn no one).
  EXPECT_GE(lastFired + std::max<std::uint64_t>(8, total / 10), total) << "the countdown missed the end of the run";
}
#endif

// A lost context at each checked CUDA call in turn, frames in system memory with frames in
// flight (frames-in-flight 2): failures at submit and at collect (the frame in flight then is
// matched again on the CPU).
TEST_F(ElementFaults, EveryCheckedCallFailingInTurnDetect) {
#ifdef NCCMATCH_HAVE_CUDA
  const std::vector<GstBuffer*> frames = makeFrames(kSmall[0], kSmall[1], 0);
  sweepCheckedCalls([&](const char* device) {
    return runPipeline(source(kSmall[0], kSmall[1]) + element(device, "frames-in-flight=2") + " ! fakesink", frames);
  });
#else
  GTEST_SKIP() << "this build has no CUDA backend";
#endif
}

// The same in mode=track: the tracker's full-frame search and its windows (matchRegions); a frame
// whose tracking fails is tracked again on the CPU with the tracks it had, so ids and states are
// those of the CPU backend.
TEST_F(ElementFaults, EveryCheckedCallFailingInTurnTrack) {
#ifdef NCCMATCH_HAVE_CUDA
  const std::vector<GstBuffer*> frames = makeFrames(kSmall[0], kSmall[1], 0);
  sweepCheckedCalls([&](const char* device) {
    return runPipeline(source(kSmall[0], kSmall[1]) + element(device, "mode=track search-margin=8") + " ! fakesink",
                       frames);
  });
#else
  GTEST_SKIP() << "this build has no CUDA backend";
#endif
}

// The same with pyramid-levels=1 (the coarse-to-fine search calls match and matchRegions).
TEST_F(ElementFaults, EveryCheckedCallFailingInTurnCoarseToFine) {
#ifdef NCCMATCH_HAVE_CUDA
  const std::vector<GstBuffer*> frames = makeFrames(kSmall[0], kSmall[1], 0);
  sweepCheckedCalls([&](const char* device) {
    return runPipeline(source(kSmall[0], kSmall[1]) + element(device, "pyramid-levels=1") + " ! fakesink", frames);
  });
#else
  GTEST_SKIP() << "this build has no CUDA backend";
#endif
}

// Frames in CUDA memory (cudaupload), boxes drawn: when the CUDA engine fails, the frame is mapped
// on the host (GStreamer's CUDA memory downloads it) and matched and drawn on the CPU, and so is
// every later frame; the frames in flight too. A fault at start leaves a CPU engine that still
// takes the CUDA caps (the capsfilter allows nothing else) and reads every frame back. (Only nccmatch's own CUDA calls fail here:
// GStreamer's CUDA memory still works, as after an out-of-memory error of the engine. A context
// truly lost makes the read-back fail too: the element then stops with an error saying so.)
TEST_F(ElementFaults, EveryCheckedCallFailingInTurnCudaMemory) {
#ifdef NCCMATCH_HAVE_CUDA
  if (std::string missing = missingElements({"cudaupload", "cudadownload"}); !missing.empty())
    GTEST_SKIP() << "missing GStreamer elements: " << missing;
  // NV12: a format cudaupload takes.
  const std::vector<GstBuffer*> frames = makeFrames(kSmall[0], kSmall[1], 0, nullptr, GST_VIDEO_FORMAT_NV12);
  sweepCheckedCalls([&](const char* device) {
    // device=cpu refuses CUDA memory: the CPU's reference runs on system memory, the same frames.
    const bool cuda = std::string(device) != "cpu";
    const std::string toCuda = cuda ? "cudaupload ! video/x-raw(memory:CUDAMemory) ! " : "";
    const std::string fromCuda = cuda ? " ! cudadownload" : "";
    std::string description = source(kSmall[0], kSmall[1], GST_VIDEO_FORMAT_NV12) + toCuda + element(device, "frames-in-flight=2") +
                              fromCuda + " ! fakesink";
    const std::string noBoxes = "display=false";
    description.replace(description.find(noBoxes), noBoxes.size(), "display=true");
    return runPipeline(description, frames);
  });
#else
  GTEST_SKIP() << "this build has no CUDA backend";
#endif
}

}  // namespace
}  // namespace nccmatch::test
