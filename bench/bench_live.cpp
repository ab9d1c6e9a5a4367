// Latency of the nccmatch element behind a live source: appsrc is-live=true pushing pre-made GRAY8
// frames at --fps (default 60), each at its own wall-clock time (bench/live_latency.hpp). Per row:
// the latency from a frame's push to its buffer with ROI metas at the appsink (and to its `nccmatch`
// message) as median, 90th and 99th percentile and maximum, over the frames after --warmup; the
// target of issue 14 is one frame duration + 1 ms. Rows: 1920x1080 with 1 x 64x64 and 16 x 32x32
// templates on the CUDA backend (where a GPU is usable), and on the CPU backend 640x360 with
// 1 x 16x16 (the CPU cannot match 1080p x 64^2 at 60 frames/s: its queue would only grow).
//   bench_live [--frames N] [--fps N] [--warmup N] [--csv FILE]
// --csv writes every frame's latencies (row,frame,meta_us,message_us) for bench/plots/plots.py.
#include <glib/gstdio.h>
#include <gst/gst.h>

#include <cstdio>
#include <cstdlib>
#include <random>
#include <string>
#include <vector>

#include "find_plugin.hpp"
#include "live_latency.hpp"
#include "nccmatch/engine.hpp"

namespace {

struct Row {
  int width, height, count, size;
  const char* device;
};

std::string writeBank(const Row& row, const std::string& dir, std::mt19937& rng,
                      std::vector<std::vector<uint8_t>>* pixels) {
  std::string list;
  for (int i = 0; i < row.count; ++i) {
    std::vector<uint8_t> p(std::size_t(row.size) * row.size);
    for (uint8_t& v : p) v = uint8_t(rng());
    const std::string path = dir + "/t" + std::to_string(row.size) + "_" + std::to_string(i) + ".pgm";
    FILE* f = std::fopen(path.c_str(), "wb");
    std::fprintf(f, "P5\n%d %d\n255\n", row.size, row.size);
    std::fwrite(p.data(), 1, p.size(), f);
    std::fclose(f);
    list += (list.empty() ? "" : ",") + path;
    pixels->push_back(std::move(p));
  }
  return list;
}

// Noise frames with every template pasted once at a random place.
std::vector<std::vector<uint8_t>> makeFrames(const Row& row, const std::vector<std::vector<uint8_t>>& bank,
                                             std::mt19937& rng, int count) {
  std::vector<std::vector<uint8_t>> frames;
  std::uniform_int_distribution<int> x(0, row.width - row.size), y(0, row.height - row.size);
  for (int k = 0; k < count; ++k) {
    std::vector<uint8_t> f(std::size_t(row.width) * row.height);
    for (uint8_t& v : f) v = uint8_t(rng());
    for (const auto& t : bank) {
      const int px = x(rng), py = y(rng);
      for (int r = 0; r < row.size; ++r)
        std::copy_n(t.data() + std::size_t(r) * row.size, row.size, f.data() + std::size_t(py + r) * row.width + px);
    }
    frames.push_back(std::move(f));
  }
  return frames;
}

}  // namespace

int main(int argc, char** argv) {
  int frames = 600, fps = 60, warmup = 30;
  std::string csvPath;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string a = argv[i];
    if (a == "--frames") frames = std::atoi(argv[i + 1]);
    else if (a == "--fps") fps = std::atoi(argv[i + 1]);
    else if (a == "--warmup") warmup = std::atoi(argv[i + 1]);
    else if (a == "--csv") csvPath = argv[i + 1];
    else {
      std::fprintf(stderr, "unknown option %s\nusage: bench_live [--frames N] [--fps N] [--warmup N] [--csv FILE]\n",
                   a.c_str());
      return 2;
    }
  }
  if (frames <= warmup || fps <= 0 || warmup < 0) {
    std::fprintf(stderr, "need --frames > --warmup >= 0 and --fps > 0\n");
    return 2;
  }
  gst_init(&argc, &argv);
  if (!nccmatch::bench::findNccmatchPlugin()) return 2;
  std::string why;
  const bool gpu = nccmatch::cudaAvailable(&why);
  if (!gpu) std::fprintf(stderr, "no GPU (%s): CPU rows only\n", why.c_str());
  FILE* csv = csvPath.empty() ? nullptr : std::fopen(csvPath.c_str(), "w");
  if (!csvPath.empty() && csv == nullptr) {
    std::fprintf(stderr, "cannot write %s\n", csvPath.c_str());
    return 2;
  }
  if (csv != nullptr) std::fprintf(csv, "row,frame,meta_us,message_us\n");
  gchar* dir = g_dir_make_tmp("bench-live-XXXXXX", nullptr);
  std::mt19937 rng(2026);
  const double frameUs = 1e6 / fps;
  std::printf("live appsrc at %d frames/s, %d frames a row (the first %d left out of the figures); latency from "
              "push to ROI meta at the sink (and to the nccmatch message), us; target: one frame + 1 ms = %.0f us\n\n",
              fps, frames, warmup, frameUs + 1000);
  std::printf("| frame | bank | device | median | p90 | p99 | max | message median | frames out | target met |\n");
  std::printf("|---|---|---|---|---|---|---|---|---|---|\n");
  const Row rows[] = {{1920, 1080, 1, 64, "cuda"}, {1920, 1080, 16, 32, "cuda"}, {640, 360, 1, 16, "cpu"}};
  int status = 0;
  for (const Row& row : rows) {
    if (std::string(row.device) == "cuda" && !gpu) continue;
    std::vector<std::vector<uint8_t>> bank;
    nccmatch::live::LiveRun run;
    run.width = row.width;
    run.height = row.height;
    run.fps = fps;
    run.frames = frames;
    const std::string list = writeBank(row, dir, rng, &bank);
    run.premade = makeFrames(row, bank, rng, 8);
    run.element = "nccmatch templates=\"" + list + "\" device=" + row.device + " display=false threshold=0.9";
    const nccmatch::live::LiveResult r = nccmatch::live::measureLiveLatency(run);
    char label[64];
    std::snprintf(label, sizeof label, "%dx%d %dx%d^2 %s", row.width, row.height, row.count, row.size, row.device);
    if (!r.ok) {
      std::printf("| %dx%d | %d x %d² | %s | failed: %s | | | | | | |\n", row.width, row.height, row.count, row.size,
                  row.device, r.error.c_str());
      status = 1;
      continue;
    }
    std::vector<double> meta, message;
    int out = 0;
    for (std::size_t i = 0; i < r.frames.size(); ++i) {
      const nccmatch::live::FrameLatency& f = r.frames[i];
      out += f.metaUs >= 0;
      if (csv != nullptr) std::fprintf(csv, "%s,%zu,%.1f,%.1f\n", label, i, f.metaUs, f.messageUs);
      if (int(i) < warmup) continue;
      meta.push_back(f.metaUs);
      message.push_back(f.messageUs);
    }
    const double p99 = nccmatch::live::quantile(meta, 0.99);
    std::printf("| %dx%d | %d x %d² | %s | %.0f | %.0f | %.0f | %.0f | %.0f | %d/%d | %s |\n", row.width, row.height,
                row.count, row.size, row.device, nccmatch::live::quantile(meta, 0.5), nccmatch::live::quantile(meta, 0.9),
                p99, nccmatch::live::quantile(meta, 1.0), nccmatch::live::quantile(message, 0.5), out, frames,
                out == frames && p99 >= 0 && p99 <= frameUs + 1000 ? "yes (p99)" : "no");
    std::fflush(stdout);
    for (int i = 0; i < row.count; ++i)
      g_remove((std::string(dir) + "/t" + std::to_string(row.size) + "_" + std::to_string(i) + ".pgm").c_str());
  }
  if (csv != nullptr) std::fclose(csv);
  g_rmdir(dir);
  g_free(dir);
  return status;
}
