// Frame rate and per-frame time of the nccmatch element in real GStreamer pipelines:
//   appsrc (cycling pre-made NV12 frames, pushed as fast as the pipeline takes them) ! nccmatch ! fakesink
// at 1920x1080 and 3840x2160, with 1 template of 64x64 and 16 of 32x32; frames in pageable
// memory, in pinned memory (what a producer writing into nccmatch's proposed pool gives), and in
// CUDA memory (uploaded once by cudaupload beforehand). Baselines in the same run: the same
// pipelines without nccmatch, and nccmatch on the CPU backend. Each figure is the median of
// --reps runs. display=false, post-messages=false (ROI meta is still attached to every buffer).
// CUDA rows hold frames-in-flight=2 (the default for a non-live source: frame n+1 uploads while
// frame n is matched); the 1x64 bank is also run with frames-in-flight=1 (no overlap) to show it,
// and on pinned frames with worker-thread=false (matching in appsrc's thread: the older path).
//   bench_pipeline [--frames N] [--cpu-frames N] [--reps N]
#include <gst/app/gstappsink.h>
#include <gst/app/gstappsrc.h>
#include <gst/gst.h>
#include <gst/video/video.h>
#include <glib/gstdio.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "find_plugin.hpp"
#include "nccmatch/engine.hpp"
#include "nccmatch/host_memory.hpp"

namespace {

struct Options {
  int frames = 1000;
  int cpuFrames = 8;
  int reps = 3;
};

struct Bank {
  int count, size;
};

constexpr int kPremade = 4;  // distinct frames cycled by appsrc

std::mt19937& rng() {
  static std::mt19937 r(12345);
  return r;
}

// Template files (PGM) of random texture, written once.
std::vector<std::string> writeTemplates(const Bank& bank, const std::string& dir,
                                        std::vector<std::vector<uint8_t>>* pixels) {
  std::vector<std::string> files;
  for (int i = 0; i < bank.count; ++i) {
    std::vector<uint8_t> p(std::size_t(bank.size) * bank.size);
    for (uint8_t& v : p) v = uint8_t(rng()());
    std::string path = dir + "/t" + std::to_string(bank.size) + "_" + std::to_string(i) + ".pgm";
    FILE* f = std::fopen(path.c_str(), "wb");
    std::fprintf(f, "P5\n%d %d\n255\n", bank.size, bank.size);
    std::fwrite(p.data(), 1, p.size(), f);
    std::fclose(f);
    files.push_back(path);
    pixels->push_back(std::move(p));
  }
  return files;
}

// NV12 frames (default layout): noise luma with every template pasted once, chroma 128.
void fillFrame(uint8_t* data, int width, int height, const Bank& bank, const std::vector<std::vector<uint8_t>>& pixels) {
  for (std::size_t i = 0; i < std::size_t(width) * height; ++i) data[i] = uint8_t(rng()());
  std::memset(data + std::size_t(width) * height, 128, std::size_t(width) * height / 2);
  std::uniform_int_distribution<int> x(0, width - bank.size), y(0, height - bank.size);
  for (const auto& p : pixels) {
    int px = x(rng()), py = y(rng());
    for (int r = 0; r < bank.size; ++r) std::memcpy(data + std::size_t(py + r) * width + px, &p[std::size_t(r) * bank.size], bank.size);
  }
}

GstCaps* nv12Caps(int width, int height) {
  return gst_caps_new_simple("video/x-raw", "format", G_TYPE_STRING, "NV12", "width", G_TYPE_INT, width, "height",
                             G_TYPE_INT, height, "framerate", GST_TYPE_FRACTION, 0, 1, nullptr);
}

struct Result {
  double fps = 0;
  double meanUs = 0, maxUs = 0;
  bool ok = false;
};

// Pushes `frames` buffers cycling `premade` into `appsrc name=src ! <rest>` and times it to EOS.
Result runOnce(const std::string& rest, GstCaps* caps, const std::vector<GstBuffer*>& premade, int frames) {
  Result result;
  GError* error = nullptr;
  std::string description = "appsrc name=src format=time block=true max-buffers=4 ! " + rest;
  GstElement* pipeline = gst_parse_launch(description.c_str(), &error);
  if (pipeline == nullptr) {
    std::fprintf(stderr, "%s: %s\n", description.c_str(), error ? error->message : "parse failed");
    return result;
  }
  GstElement* src = gst_bin_get_by_name(GST_BIN(pipeline), "src");
  GstElement* m = gst_bin_get_by_name(GST_BIN(pipeline), "m");
  g_object_set(src, "caps", caps, nullptr);
  gst_element_set_state(pipeline, GST_STATE_PLAYING);
  const auto begin = std::chrono::steady_clock::now();
  std::thread feeder([&] {
    for (int i = 0; i < frames; ++i)
      if (gst_app_src_push_buffer(GST_APP_SRC(src), gst_buffer_ref(premade[i % premade.size()])) != GST_FLOW_OK) break;
    gst_app_src_end_of_stream(GST_APP_SRC(src));
  });
  GstBus* bus = gst_element_get_bus(pipeline);
  GstMessage* msg = gst_bus_timed_pop_filtered(bus, 60 * GST_SECOND, GstMessageType(GST_MESSAGE_EOS | GST_MESSAGE_ERROR));
  const auto end = std::chrono::steady_clock::now();
  if (msg != nullptr && GST_MESSAGE_TYPE(msg) == GST_MESSAGE_EOS) {
    result.ok = true;
    result.fps = frames / std::chrono::duration<double>(end - begin).count();
  } else if (msg == nullptr) {
    std::fprintf(stderr, "%s: no EOS within 60 s\n", description.c_str());
  } else {
    GError* err = nullptr;
    gst_message_parse_error(msg, &err, nullptr);
    std::fprintf(stderr, "%s: %s\n", description.c_str(), err->message);
    g_error_free(err);
  }
  if (msg != nullptr) gst_message_unref(msg);
  gst_element_set_state(pipeline, GST_STATE_NULL);  // unblocks a feeder stuck after an error
  feeder.join();
  if (m != nullptr) {
    GstStructure* stats = nullptr;
    g_object_get(m, "stats", &stats, nullptr);
    gst_structure_get_double(stats, "mean-us", &result.meanUs);
    gst_structure_get_double(stats, "max-us", &result.maxUs);
    gst_structure_free(stats);
    gst_object_unref(m);
  }
  gst_object_unref(src);
  gst_object_unref(bus);
  gst_object_unref(pipeline);
  return result;
}

Result median(const std::string& rest, GstCaps* caps, const std::vector<GstBuffer*>& premade, int frames, int reps) {
  std::vector<Result> runs;
  for (int r = 0; r < reps; ++r) {
    Result one = runOnce(rest, caps, premade, frames);
    if (!one.ok) return one;
    runs.push_back(one);
  }
  std::sort(runs.begin(), runs.end(), [](const Result& a, const Result& b) { return a.fps < b.fps; });
  return runs[runs.size() / 2];
}

// The pre-made frames uploaded once by cudaupload; empty when that element or a GPU is missing.
std::vector<GstBuffer*> uploadToCuda(const std::vector<GstBuffer*>& frames, GstCaps* caps, GstCaps** cudaCaps) {
  std::vector<GstBuffer*> uploaded;
  GstElement* pipeline = gst_parse_launch("appsrc name=src format=time ! cudaupload ! video/x-raw(memory:CUDAMemory) ! appsink name=out sync=false", nullptr);
  if (pipeline == nullptr) return uploaded;
  GstElement* src = gst_bin_get_by_name(GST_BIN(pipeline), "src");
  GstElement* out = gst_bin_get_by_name(GST_BIN(pipeline), "out");
  g_object_set(src, "caps", caps, nullptr);
  // The appsink keeps every buffer: the upload pool must not recycle them.
  g_object_set(out, "max-buffers", 0, nullptr);
  gst_element_set_state(pipeline, GST_STATE_PLAYING);
  for (GstBuffer* f : frames) gst_app_src_push_buffer(GST_APP_SRC(src), gst_buffer_copy_deep(f));
  gst_app_src_end_of_stream(GST_APP_SRC(src));
  while (GstSample* sample = gst_app_sink_try_pull_sample(GST_APP_SINK(out), 10 * GST_SECOND)) {
    if (*cudaCaps == nullptr) *cudaCaps = gst_caps_copy(gst_sample_get_caps(sample));
    uploaded.push_back(gst_buffer_ref(gst_sample_get_buffer(sample)));
    gst_sample_unref(sample);
    if (uploaded.size() == frames.size()) break;
  }
  gst_element_set_state(pipeline, GST_STATE_NULL);
  gst_object_unref(src);
  gst_object_unref(out);
  gst_object_unref(pipeline);
  return uploaded;
}

void row(const char* size, const Bank& bank, const char* input, const char* backend, const Result& r,
         const Result& baseline) {
  if (!r.ok) {
    std::printf("| %s | %dx %dx%d | %s | %s | failed | | | |\n", size, bank.count, bank.size, bank.size, input, backend);
    return;
  }
  char mean[32] = "-", max[32] = "-";
  if (r.meanUs > 0) std::snprintf(mean, sizeof mean, "%.1f", r.meanUs), std::snprintf(max, sizeof max, "%.0f", r.maxUs);
  std::printf("| %s | %dx %dx%d | %s | %s | %.*f | %s | %s | %.0f |\n", size, bank.count, bank.size, bank.size, input,
              backend, r.fps < 100 ? 1 : 0, r.fps, mean, max, baseline.fps);
  std::fflush(stdout);
}

}  // namespace

int main(int argc, char** argv) {
  Options o;
  for (int i = 1; i + 1 < argc; i += 2) {
    std::string a = argv[i];
    if (a == "--frames") o.frames = std::atoi(argv[i + 1]);
    else if (a == "--cpu-frames") o.cpuFrames = std::atoi(argv[i + 1]);
    else if (a == "--reps") o.reps = std::atoi(argv[i + 1]);
  }
  gst_init(&argc, &argv);
  if (!nccmatch::bench::findNccmatchPlugin()) return 2;
  std::string why;
  const bool gpu = nccmatch::cudaAvailable(&why);
  if (!gpu) std::fprintf(stderr, "no GPU (%s): CPU rows only\n", why.c_str());
  gchar* dir = g_dir_make_tmp("bench-pipeline-XXXXXX", nullptr);

  std::printf("frames per run: %d (CPU backend: %d), median of %d runs; time/frame = the element's stats (wall-clock "
              "time the streaming thread spends in the engine per frame: submit + collect, GPU wait included)\n\n",
              o.frames, o.cpuFrames, o.reps);
  std::printf("| frame | bank | input | nccmatch | frames/s | mean us/frame | max us | frames/s without nccmatch |\n");
  std::printf("|---|---|---|---|---|---|---|---|\n");
  const struct { int width, height; const char* name; } sizes[] = {{1920, 1080, "1920x1080"}, {3840, 2160, "3840x2160"}};
  const Bank banks[] = {{1, 64}, {16, 32}};
  for (const auto& s : sizes) {
    for (const Bank& bank : banks) {
      std::vector<std::vector<uint8_t>> pixels;
      std::vector<std::string> files = writeTemplates(bank, dir, &pixels);
      std::string list;
      for (const std::string& f : files) list += (list.empty() ? "" : ",") + f;
      const std::size_t bytes = std::size_t(s.width) * s.height * 3 / 2;
      GstCaps* caps = nv12Caps(s.width, s.height);
      std::vector<GstBuffer*> pageable, pinned;
      std::vector<void*> pinnedBlocks;
      for (int k = 0; k < kPremade; ++k) {
        auto* data = static_cast<uint8_t*>(g_malloc(bytes));
        fillFrame(data, s.width, s.height, bank, pixels);
        pageable.push_back(gst_buffer_new_wrapped(data, bytes));
        void* block = nullptr;
        if (gpu && nccmatch::allocatePinnedHost(bytes, &block).ok()) {
          std::memcpy(block, data, bytes);
          pinnedBlocks.push_back(block);
          pinned.push_back(gst_buffer_new_wrapped_full(GstMemoryFlags(0), block, bytes, 0, bytes, nullptr, nullptr));
        }
      }
      const std::string ncc = "nccmatch name=m display=false post-messages=false threshold=0.9 templates=\"" + list + "\"";
      const std::string sink = " ! fakesink sync=false";
      Result base = median("fakesink sync=false", caps, pageable, o.frames, o.reps);
      if (gpu) {
        const std::string cuda2 = ncc + " device=cuda frames-in-flight=2" + sink;
        const std::string cuda1 = ncc + " device=cuda frames-in-flight=1" + sink;
        const std::string cuda2NoWorker = ncc + " device=cuda frames-in-flight=2 worker-thread=false" + sink;
        const bool compareDepth = bank.count == 1;
        row(s.name, bank, "system, pageable", "cuda, 2 in flight", median(cuda2, caps, pageable, o.frames, o.reps), base);
        if (!pinned.empty()) {
          if (compareDepth)
            row(s.name, bank, "system, pinned", "cuda, 1 in flight", median(cuda1, caps, pinned, o.frames, o.reps), base);
          row(s.name, bank, "system, pinned", "cuda, 2 in flight", median(cuda2, caps, pinned, o.frames, o.reps), base);
          if (compareDepth)  // the element's older path: matching in upstream's thread
            row(s.name, bank, "system, pinned", "cuda, 2 in flight, no worker",
                median(cuda2NoWorker, caps, pinned, o.frames, o.reps), base);
        }
        GstCaps* cudaCaps = nullptr;
        std::vector<GstBuffer*> onGpu = uploadToCuda(pageable, caps, &cudaCaps);
        if (!onGpu.empty()) {
          Result cudaBase = median("fakesink sync=false", cudaCaps, onGpu, o.frames, o.reps);
          if (compareDepth)
            row(s.name, bank, "CUDA memory", "cuda, 1 in flight", median(cuda1, cudaCaps, onGpu, o.frames, o.reps), cudaBase);
          row(s.name, bank, "CUDA memory", "cuda, 2 in flight", median(cuda2, cudaCaps, onGpu, o.frames, o.reps), cudaBase);
        } else {
          std::fprintf(stderr, "cudaupload unavailable: no CUDA-memory rows\n");
        }
        for (GstBuffer* b : onGpu) gst_buffer_unref(b);
        if (cudaCaps != nullptr) gst_caps_unref(cudaCaps);
      }
      row(s.name, bank, "system, pageable", "cpu", median(ncc + " device=cpu" + sink, caps, pageable, o.cpuFrames, 1), base);
      for (GstBuffer* b : pageable) gst_buffer_unref(b);
      for (GstBuffer* b : pinned) gst_buffer_unref(b);
      for (void* b : pinnedBlocks) nccmatch::freePinnedHost(b);
      gst_caps_unref(caps);
      for (const std::string& f : files) std::remove(f.c_str());
    }
  }
  g_rmdir(dir);
  g_free(dir);
  return 0;
}
