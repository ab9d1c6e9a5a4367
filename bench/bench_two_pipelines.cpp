// Two nccmatch pipelines on one GPU: does either slow the other beyond sharing the GPU fairly?
//   appsrc (cycling pre-made GRAY8 frames, pushed as fast as the pipeline takes them)
//     ! nccmatch device=cuda ! fakesink
// twice, with separate elements and banks (A: 1 template of 64x64; B: 16 of 32x32, each pasted
// in every frame), first each alone, then both at once from two threads, started together.
// Reported: each one's frames/s alone and together after a warm-up (the first tenth of its
// frames), and its share (together / alone). Together, the faster one gets proportionally more
// frames (the slower one --frames), so that both run about as long; the rate together counts only
// the frames out while both ran (each frame timed when its message is read), so neither is
// credited with time it ran alone. Fair: neither gets less than --min-share (default 0.4) of its
// alone rate while together. Every frame's matches (template, position, score) of each pipeline
// together must equal those of its run alone. Exit status 1 when a share is below the bound or a
// result differs, 2 when it cannot run (no GPU, no element).
// --device cpu runs the same on the CPU backend (a check of the bench where there is no GPU; the
// two elements then share the CPU's cores, which says nothing about the GPU).
// --contexts separate: the application answers each pipeline's need-context with a CUDA context of
// that pipeline's own (gst_cuda_context_new, what gstcuda makes when nobody offers one), instead of
// leaving the elements to the process's context (the device's primary one, shared): the baseline
// of the same run for what sharing one context changes.
//   bench_two_pipelines [--frames N] [--width W] [--height H] [--min-share F] [--seed S] [--device cuda|cpu]
//                       [--contexts shared|separate]
#include <gst/app/gstappsrc.h>
#include <gst/gst.h>
#ifdef NCCMATCH_HAVE_GST_CUDA
#include <gst/cuda/gstcudacontext.h>
#include <gst/cuda/gstcudaloader.h>
#include <gst/cuda/gstcudautils.h>
#endif
#include <glib/gstdio.h>

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <thread>
#include <tuple>
#include <vector>

#include "find_plugin.hpp"
#include "nccmatch/engine.hpp"

namespace {

struct Options {
  int frames = 2000;
  int width = 1920, height = 1080;
  double minShare = 0.4;
  unsigned seed = 20261201;
  std::string device = "cuda";
  bool separateContexts = false;  // --contexts separate
};

constexpr int kPremade = 4;  // distinct frames cycled by appsrc

// One match as reported in the 'nccmatch' message.
using Found = std::tuple<guint, guint, guint, double>;  // template, x, y, score

// One pipeline's input: its templates (files) and frames with every template pasted.
struct Workload {
  std::string name;
  std::string templates;           // comma-separated PGM files
  std::vector<std::string> files;  // the same, to remove at the end
  int count = 0;                   // templates
  std::vector<GstBuffer*> frames;  // GRAY8, cycled
};

Workload makeWorkload(const char* name, int count, int size, const Options& o, const std::string& dir,
                      std::mt19937& rng) {
  Workload w;
  w.name = name;
  w.count = count;
  std::vector<std::vector<uint8_t>> pixels;
  for (int i = 0; i < count; ++i) {
    std::vector<uint8_t> p(std::size_t(size) * size);
    for (uint8_t& v : p) v = uint8_t(rng());
    const std::string path = dir + "/" + name + std::to_string(i) + ".pgm";
    FILE* f = std::fopen(path.c_str(), "wb");
    std::fprintf(f, "P5\n%d %d\n255\n", size, size);
    std::fwrite(p.data(), 1, p.size(), f);
    std::fclose(f);
    w.templates += (w.templates.empty() ? "" : ",") + path;
    w.files.push_back(path);
    pixels.push_back(std::move(p));
  }
  const int stride = (o.width + 3) / 4 * 4;  // GStreamer's default GRAY8 layout
  const std::size_t bytes = std::size_t(stride) * o.height;
  // Each template in a cell of its own (cells of twice its size, taken in a shuffled order), at a
  // random place in it: templates never overlap, so every one is found in every frame.
  const int cols = o.width / (2 * size), rows = o.height / (2 * size);
  std::vector<int> cells(std::size_t(cols) * rows);
  for (std::size_t c = 0; c < cells.size(); ++c) cells[c] = int(c);
  std::uniform_int_distribution<int> offset(0, size);
  for (int k = 0; k < kPremade; ++k) {
    auto* data = static_cast<uint8_t*>(g_malloc(bytes));
    for (std::size_t i = 0; i < bytes; ++i) data[i] = uint8_t(rng());
    std::shuffle(cells.begin(), cells.end(), rng);
    for (std::size_t t = 0; t < pixels.size(); ++t) {
      const auto& p = pixels[t];
      const int px = cells[t] % cols * 2 * size + offset(rng), py = cells[t] / cols * 2 * size + offset(rng);
      for (int r = 0; r < size; ++r)
        std::memcpy(data + std::size_t(py + r) * stride + px, &p[std::size_t(r) * size], std::size_t(size));
    }
    w.frames.push_back(gst_buffer_new_wrapped(data, bytes));
  }
  return w;
}

// Seconds since the program started.
double now() {
  static const auto start = std::chrono::steady_clock::now();
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

struct Run {
  bool ok = false;
  double fps = 0.0;                 // frames over the whole run
  double begin = 0.0, end = 0.0;    // now() at the first push and at EOS
  std::vector<double> frameTimes;   // now() as each frame's message was read
  std::vector<std::vector<Found>> matches;  // per frame
  std::string backend;
};

std::vector<Found> foundIn(const GstStructure* s) {
  std::vector<Found> frame;
  const GValue* list = gst_structure_get_value(s, "matches");
  for (guint i = 0; list != nullptr && i < gst_value_list_get_size(list); ++i) {
    const GstStructure* m = gst_value_get_structure(gst_value_list_get_value(list, i));
    guint t = 0, x = 0, y = 0;
    double score = 0.0;
    gst_structure_get_uint(m, "template", &t);
    gst_structure_get_uint(m, "x", &x);
    gst_structure_get_uint(m, "y", &y);
    gst_structure_get_double(m, "score", &score);
    frame.emplace_back(t, x, y, score);
  }
  return frame;
}

// The pipelines of one run wait here, started (engines made, banks loaded), until all are.
class StartLine {
 public:
  explicit StartLine(int pipelines) : waiting_(pipelines) {}
  void arriveAndWait() {
    std::unique_lock<std::mutex> lock(mutex_);
    if (--waiting_ == 0) ready_.notify_all();
    ready_.wait(lock, [&] { return waiting_ == 0; });
  }

 private:
  std::mutex mutex_;
  std::condition_variable ready_;
  int waiting_;
};

// One pipeline made, played to EOS from a feeder thread of its own, and timed.
class Pipeline {
 public:
  Pipeline(const Workload& w, const Options& o, int frames) : w_(w), o_(o), frames_(frames) {
    const std::string description =
        "appsrc name=src format=time block=true max-buffers=4 caps=\"video/x-raw,format=GRAY8,width=" +
        std::to_string(o.width) + ",height=" + std::to_string(o.height) +
        ",framerate=0/1\" ! nccmatch name=m device=" + o.device + " display=false threshold=0.9 max-matches=" +
        std::to_string(w.count) + " templates=\"" + w.templates + "\" ! fakesink sync=false";
    GError* error = nullptr;
    pipeline_ = gst_parse_launch(description.c_str(), &error);
    if (pipeline_ == nullptr || error != nullptr) {
      std::fprintf(stderr, "%s: %s\n", description.c_str(), error != nullptr ? error->message : "parse failed");
      g_clear_error(&error);
    }
#ifdef NCCMATCH_HAVE_GST_CUDA
    if (pipeline_ != nullptr && o.separateContexts && o.device == "cuda") {
      own_ = gst_cuda_load_library() ? gst_cuda_context_new(0) : nullptr;
      if (own_ == nullptr) std::fprintf(stderr, "--contexts separate: no gstcuda context could be made\n");
      GstBus* bus = gst_element_get_bus(pipeline_);
      gst_bus_set_sync_handler(bus, answerNeedContext, this, nullptr);
      gst_object_unref(bus);
    }
#endif
  }
  ~Pipeline() {
    if (pipeline_ != nullptr) gst_object_unref(pipeline_);
#ifdef NCCMATCH_HAVE_GST_CUDA
    if (own_ != nullptr) gst_object_unref(own_);
#endif
  }

  // Plays the pipeline to EOS (or an error, or 120 s) on this thread; its feeder pushes the frames
  // once every pipeline at `start` has started.
  Run play(StartLine& start) {
    Run run;
    if (pipeline_ == nullptr) return run;
    GstElement* src = gst_bin_get_by_name(GST_BIN(pipeline_), "src");
    GstElement* m = gst_bin_get_by_name(GST_BIN(pipeline_), "m");
    GstBus* bus = gst_element_get_bus(pipeline_);
    gst_element_set_state(pipeline_, GST_STATE_PLAYING);  // the element starts its engine in here
    start.arriveAndWait();
    run.begin = now();
    std::thread feeder([&] {
      for (int i = 0; i < frames_; ++i)
        if (gst_app_src_push_buffer(GST_APP_SRC(src), gst_buffer_ref(w_.frames[i % w_.frames.size()])) != GST_FLOW_OK)
          break;
      gst_app_src_end_of_stream(GST_APP_SRC(src));
    });
    const gint64 deadline = g_get_monotonic_time() + 120 * G_TIME_SPAN_SECOND;
    for (bool done = false; !done;) {
      if (g_get_monotonic_time() > deadline) {
        std::fprintf(stderr, "%s: no EOS within 120 s\n", w_.name.c_str());
        break;
      }
      GstMessage* msg = gst_bus_timed_pop_filtered(
          bus, 100 * GST_MSECOND, GstMessageType(GST_MESSAGE_EOS | GST_MESSAGE_ERROR | GST_MESSAGE_ELEMENT));
      if (msg == nullptr) continue;
      if (GST_MESSAGE_TYPE(msg) == GST_MESSAGE_EOS) {
        run.ok = true;
        done = true;
      } else if (GST_MESSAGE_TYPE(msg) == GST_MESSAGE_ERROR) {
        GError* err = nullptr;
        gst_message_parse_error(msg, &err, nullptr);
        std::fprintf(stderr, "%s: %s\n", w_.name.c_str(), err->message);
        g_error_free(err);
        done = true;
      } else if (const GstStructure* s = gst_message_get_structure(msg); gst_structure_has_name(s, "nccmatch")) {
        run.matches.push_back(foundIn(s));
        run.frameTimes.push_back(now());
      }
      gst_message_unref(msg);
    }
    run.end = now();
    run.fps = frames_ / (run.end - run.begin);
    GstStructure* stats = nullptr;
    g_object_get(m, "stats", &stats, nullptr);
    if (const char* backend = gst_structure_get_string(stats, "backend")) run.backend = backend;
    gst_structure_free(stats);
    gst_element_set_state(pipeline_, GST_STATE_NULL);  // unblocks a feeder stuck after an error
    feeder.join();
    gst_object_unref(bus);
    gst_object_unref(m);
    gst_object_unref(src);
    run.ok = run.ok && run.backend == o_.device && int(run.matches.size()) == frames_;
    return run;
  }

 private:
#ifdef NCCMATCH_HAVE_GST_CUDA
  // --contexts separate: the pipeline's own CUDA context for every element asking for one.
  static GstBusSyncReply answerNeedContext(GstBus*, GstMessage* msg, gpointer data) {
    const gchar* type = nullptr;
    auto* self = static_cast<Pipeline*>(data);
    if (GST_MESSAGE_TYPE(msg) == GST_MESSAGE_NEED_CONTEXT && self->own_ != nullptr &&
        gst_message_parse_context_type(msg, &type) && g_strcmp0(type, GST_CUDA_CONTEXT_TYPE) == 0) {
      GstContext* context = gst_context_new_cuda_context(self->own_);
      gst_element_set_context(GST_ELEMENT(GST_MESSAGE_SRC(msg)), context);
      gst_context_unref(context);
    }
    return GST_BUS_PASS;
  }
  GstCudaContext* own_ = nullptr;
#endif
  const Workload& w_;
  const Options& o_;
  int frames_;
  GstElement* pipeline_ = nullptr;
};

// When a run's warm-up ends: the message of its frame a tenth of the way in (at least the
// pre-made frames: the first frames of a size make plans and buffers).
double warmedUp(const Run& run) {
  if (run.frameTimes.empty()) return run.end;
  const std::size_t k = std::min(run.frameTimes.size() - 1, std::max<std::size_t>(kPremade, run.frameTimes.size() / 10));
  return run.frameTimes[k];
}

// Frames/s of `run` after its warm-up, while `other` (when given) ran too after its own warm-up:
// the frames out in that time over that time.
double steadyFps(const Run& run, const Run* other = nullptr) {
  double from = warmedUp(run), to = run.frameTimes.empty() ? run.end : run.frameTimes.back();
  if (other != nullptr) {
    from = std::max(from, warmedUp(*other));
    to = std::min(to, other->frameTimes.empty() ? other->end : other->frameTimes.back());
  }
  if (to <= from) return 0.0;
  int frames = 0;
  for (double t : run.frameTimes) frames += t > from && t <= to ? 1 : 0;
  return frames / (to - from);
}

// Frames where `together` differs from `alone` (first few printed). Frame f is pre-made frame
// f % kPremade in both runs.
int differingFrames(const char* name, const Run& together, const Run& alone) {
  int differing = 0;
  for (std::size_t f = 0; f < together.matches.size(); ++f) {
    const std::size_t same = f % kPremade;
    if (same < alone.matches.size() && together.matches[f] == alone.matches[same]) continue;
    if (differing++ < 3)
      std::printf("  %s frame %zu: %zu matches together, %zu alone (or they differ)\n", name, f,
                  together.matches[f].size(), same < alone.matches.size() ? alone.matches[same].size() : 0);
  }
  return differing;
}

}  // namespace

int main(int argc, char** argv) {
  Options o;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string a = argv[i];
    if (a == "--frames") o.frames = std::atoi(argv[i + 1]);
    else if (a == "--width") o.width = std::atoi(argv[i + 1]);
    else if (a == "--height") o.height = std::atoi(argv[i + 1]);
    else if (a == "--min-share") o.minShare = std::atof(argv[i + 1]);
    else if (a == "--seed") o.seed = unsigned(std::strtoul(argv[i + 1], nullptr, 10));
    else if (a == "--device") o.device = argv[i + 1];
    else if (a == "--contexts") {
      const std::string c = argv[i + 1];
      if (c != "shared" && c != "separate") {
        std::fprintf(stderr, "--contexts shared or separate, not '%s'\n", c.c_str());
        return 2;
      }
      o.separateContexts = c == "separate";
    }
  }
  gst_init(&argc, &argv);
  if (!nccmatch::bench::findNccmatchPlugin()) return 2;
  std::string why;
  if (o.device != "cpu" && o.device != "cuda") {
    std::fprintf(stderr, "--device cuda or cpu\n");
    return 2;
  }
  if (o.device == "cuda" && !nccmatch::cudaAvailable(&why)) {
    std::fprintf(stderr, "no GPU: %s\n", why.c_str());
    return 2;
  }
  if (o.width < 256 || o.height < 256 || o.frames < kPremade) {
    std::fprintf(stderr, "need --width, --height >= 256 (16 cells of 64x64) and --frames >= %d\n", kPremade);
    return 2;
  }
  gchar* dir = g_dir_make_tmp("bench-two-pipelines-XXXXXX", nullptr);
  std::mt19937 rng(o.seed);
  const Workload a = makeWorkload("A", 1, 64, o, dir, rng);
  const Workload b = makeWorkload("B", 16, 32, o, dir, rng);
  std::printf("two nccmatch pipelines on one %s: %d frames each, GRAY8 %dx%d, seed %u\n",
              o.device == "cuda" ? "GPU" : "CPU", o.frames, o.width, o.height, o.seed);
  std::printf("A: 1 template of 64x64; B: 16 of 32x32; appsrc ! nccmatch device=%s ! fakesink each\n",
              o.device.c_str());
#ifndef NCCMATCH_HAVE_GST_CUDA
  if (o.separateContexts) {
    std::fprintf(stderr, "--contexts separate needs a build with gstcuda (gstreamer-cuda-1.0)\n");
    return 2;
  }
#endif
  if (o.device == "cuda")
    std::printf("CUDA contexts: %s\n", o.separateContexts ? "one of its own per pipeline (--contexts separate)"
                                                         : "the elements' own choice (the process's, shared)");
  std::printf("\n");

  Run aloneA, aloneB, togetherA, togetherB;
  {
    Pipeline p(a, o, o.frames);
    StartLine alone(1);
    aloneA = p.play(alone);
  }
  {
    Pipeline p(b, o, o.frames);
    StartLine alone(1);
    aloneB = p.play(alone);
  }
  // Together, about as long each: the faster gets frames in proportion to its rate alone.
  const double rateA = steadyFps(aloneA), rateB = steadyFps(aloneB), slower = std::min(rateA, rateB);
  const int framesA = slower > 0.0 ? int(o.frames * rateA / slower) : o.frames;
  const int framesB = slower > 0.0 ? int(o.frames * rateB / slower) : o.frames;
  {
    Pipeline pa(a, o, framesA), pb(b, o, framesB);
    StartLine both(2);
    std::thread other([&] { togetherB = pb.play(both); });
    togetherA = pa.play(both);
    other.join();
  }
  int status = 0;
  if (!aloneA.ok || !aloneB.ok || !togetherA.ok || !togetherB.ok) {
    std::printf("a run failed (an error, a timeout, a frame without its message, or not on the asked backend)\n");
    status = 1;
  }
  const double soloA = steadyFps(aloneA), soloB = steadyFps(aloneB);
  const double bothA = steadyFps(togetherA, &togetherB), bothB = steadyFps(togetherB, &togetherA);
  const double shareA = bothA / soloA, shareB = bothB / soloB;
  std::printf("| pipeline | frames/s alone | frames/s together | share (together / alone) |\n|---|---|---|---|\n");
  std::printf("| A (1x 64x64) | %.0f | %.0f | %.2f |\n", soloA, bothA, shareA);
  std::printf("| B (16x 32x32) | %.0f | %.0f | %.2f |\n", soloB, bothB, shareB);
  std::printf("\nboth ran together for %.2f s (A: %d frames in %.2f s, B: %d in %.2f s)\n",
              std::min(togetherA.end, togetherB.end) - std::max(togetherA.begin, togetherB.begin), framesA,
              togetherA.end - togetherA.begin, framesB, togetherB.end - togetherB.begin);
  const bool fair = shareA >= o.minShare && shareB >= o.minShare;
  std::printf("fair (each share >= %.2f): %s\n", o.minShare, fair ? "yes" : "NO");
  const int diffA = differingFrames("A", togetherA, aloneA), diffB = differingFrames("B", togetherB, aloneB);
  std::printf("results together identical to alone: A %s, B %s\n", diffA == 0 ? "yes" : "NO", diffB == 0 ? "yes" : "NO");
  int foundAll = 0;
  for (const auto& f : aloneB.matches) foundAll += int(f.size()) == b.count ? 1 : 0;
  std::printf("B alone found all 16 templates in %d of %zu frames\n", foundAll, aloneB.matches.size());
  if (!fair || diffA != 0 || diffB != 0 || foundAll != int(aloneB.matches.size())) status = 1;

  for (const Workload* w : {&a, &b}) {
    for (GstBuffer* f : w->frames) gst_buffer_unref(f);
    for (const std::string& f : w->files) g_remove(f.c_str());
  }
  g_rmdir(dir);
  g_free(dir);
  return status;
}
