// What the element's `search-region` and `scales` cost on the CPU backend, against a whole-frame,
// single-size search of the same frame in the same run: match() on a FrameView of part of the
// frame (what search-region passes), and on a scaled bank (what scales builds). Medians of
// repeated frames after a warm-up; prints a markdown table.
//   bench_cpu_features [--reps N] [--threads N]
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "wall_clock.hpp"
#include "nccmatch/engine.hpp"
#include "nccmatch/scales.hpp"

using namespace nccmatch;

namespace {

using nccmatch::bench::medianWallMs;

// A textured 8-bit frame: smooth shading plus noise, so templates cut from it are distinctive.
std::vector<uint8_t> makeFrame(int w, int h, std::mt19937& gen) {
  std::vector<uint8_t> f(std::size_t(w) * h);
  std::uniform_int_distribution<int> noise(-40, 40);
  for (int y = 0; y < h; ++y)
    for (int x = 0; x < w; ++x)
      f[std::size_t(y) * w + x] = uint8_t(std::clamp(128 + int(60 * std::sin(x * 0.05) * std::cos(y * 0.04)) + noise(gen), 0, 255));
  return f;
}

}  // namespace

int main(int argc, char** argv) {
  int reps = 7, threads = int(std::max(1u, std::thread::hardware_concurrency()));
  for (int i = 1; i < argc; ++i) {
    if (!std::strcmp(argv[i], "--reps") && i + 1 < argc) reps = std::max(1, std::atoi(argv[++i]));
    else if (!std::strcmp(argv[i], "--threads") && i + 1 < argc) threads = std::max(1, std::atoi(argv[++i]));
  }
  const int w = 1920, h = 1080;
  std::mt19937 gen(7);
  std::vector<uint8_t> frame = makeFrame(w, h, gen);
  EngineOptions options;
  options.backend = Backend::Cpu;
  options.threads = threads;
  MatchParams params;  // ccoeff-normed, threshold 0.8, one match
  std::printf("CPU backend, %d threads, %dx%d frame, ccoeff-normed; medians of %d frames (ms per frame)\n\n",
              threads, w, h, reps);
  std::printf("| template | search | ms | vs whole frame, one size |\n|---|---|---|---|\n");
  for (int side : {32, 64}) {
    TemplateImage t{"t", side, side, {}, {}};
    t.pixels.resize(std::size_t(side) * side);
    const int tx = 901, ty = 433;  // the template's place in the frame
    for (int r = 0; r < side; ++r)
      std::memcpy(&t.pixels[std::size_t(r) * side], &frame[std::size_t(ty + r) * w + tx], std::size_t(side));
    std::unique_ptr<Engine> engine;
    if (!Engine::create(options, &engine).ok() || !engine->setTemplates({t}).ok()) return 1;
    FrameResult result;
    auto run = [&](const FrameView& view) {
      return medianWallMs(reps, [&] {
        Status s = engine->match(view, params, &result);
        if (!s.ok()) std::fprintf(stderr, "match: %s\n", s.message().c_str());
      });
    };
    const double whole = run(FrameView{frame.data(), w, h, std::size_t(w), MemoryKind::Host});
    std::printf("| %dx%d | whole frame | %.2f | 1.00x |\n", side, side, whole);
    for (int region : {512, 256, 128}) {
      // A region centred on the template, as a tracker's window around its last match.
      const int x0 = tx + side / 2 - region / 2, y0 = ty + side / 2 - region / 2;
      const double ms = run(FrameView{frame.data() + std::size_t(y0) * w + x0, region, region, std::size_t(w),
                                      MemoryKind::Host});
      if (result.matches.size() != 1 || result.matches[0].x + x0 != tx || result.matches[0].y + y0 != ty)
        std::fprintf(stderr, "region %d: the template was not found at its place\n", region);
      std::printf("| %dx%d | search-region %dx%d | %.2f | %.2fx faster |\n", side, side, region, region, ms,
                  whole / ms);
    }
    for (const std::vector<double>& scales : {std::vector<double>{0.9, 1.0, 1.1},
                                              std::vector<double>{0.8, 0.9, 1.0, 1.1, 1.25}}) {
      ScaledBank scaled;
      if (!scaleTemplates({t}, scales, &scaled).ok() || !engine->setTemplates(scaled.templates).ok()) return 1;
      FrameResult merged;
      const double ms = medianWallMs(reps, [&] {
        Status s = engine->match(FrameView{frame.data(), w, h, std::size_t(w), MemoryKind::Host}, params, &result);
        if (!s.ok()) std::fprintf(stderr, "match: %s\n", s.message().c_str());
        merged = mergeScaledResult(scaled, result, params);
      });
      if (merged.matches.size() != 1 || merged.matches[0].x != tx || merged.matches[0].scale != 1.0)
        std::fprintf(stderr, "scales: the template was not found at its place and size\n");
      std::printf("| %dx%d | whole frame, %zu scales | %.2f | %.2fx the time |\n", side, side, scales.size(), ms,
                  ms / whole);
    }
  }
  return 0;
}
