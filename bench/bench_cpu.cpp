// CPU backend benchmark: per-frame time of match() on each CPU path (Reference, Direct, Fft,
// Auto) next to OpenCV's cv::matchTemplate (TM_CCOEFF_NORMED + minMaxLoc, same thread count),
// measured in the same run. Medians of repeated frames after a warm-up. Prints a markdown table.
//   bench_cpu [--reps N] [--threads N] [--quick] [--frame WxH] [--size N] [--bank N]
// --frame/--size/--bank run only the matching rows (for profiling one case).
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "cpu/cpu_cost_model.hpp"
#include "wall_clock.hpp"
#include "nccmatch/engine.hpp"

#ifdef NCCMATCH_HAVE_OPENCV
#include <opencv2/core.hpp>
#include <opencv2/imgproc.hpp>
#endif

using namespace nccmatch;

namespace {

using nccmatch::bench::medianWallMs;

// A camera-like frame: smooth shading plus texture and noise (flat, textured and noisy areas).
std::vector<uint8_t> makeFrame(int w, int h, std::mt19937& gen) {
  std::vector<uint8_t> f(std::size_t(w) * h);
  std::normal_distribution<double> noise(0, 6);
  for (int y = 0; y < h; ++y)
    for (int x = 0; x < w; ++x) {
      double v = 110 + 60 * std::sin(x * 0.013) * std::cos(y * 0.021) +
                 40 * std::sin(x * 0.31 + y * 0.17) * (x > w / 2) + noise(gen);
      f[std::size_t(y) * w + x] = uint8_t(std::clamp(v, 0.0, 255.0));
    }
  return f;
}

TemplateImage cut(const std::vector<uint8_t>& f, int w, int x, int y, int size) {
  TemplateImage t;
  t.name = "t" + std::to_string(size);
  t.width = t.height = size;
  t.pixels.resize(std::size_t(size) * size);
  for (int r = 0; r < size; ++r)
    std::memcpy(&t.pixels[std::size_t(r) * size], &f[std::size_t(y + r) * w + x], size);
  return t;
}

}  // namespace

int main(int argc, char** argv) {
  int reps = 5, threads = int(std::max(1u, std::thread::hardware_concurrency()));
  bool quick = false;
  int onlyWidth = 0, onlyHeight = 0, onlySize = 0, onlyBank = 0;
  for (int i = 1; i < argc; ++i) {
    if (!std::strcmp(argv[i], "--reps") && i + 1 < argc) reps = std::atoi(argv[++i]);
    else if (!std::strcmp(argv[i], "--threads") && i + 1 < argc) threads = std::atoi(argv[++i]);
    else if (!std::strcmp(argv[i], "--quick")) quick = true;
    else if (!std::strcmp(argv[i], "--frame") && i + 1 < argc)
      std::sscanf(argv[++i], "%dx%d", &onlyWidth, &onlyHeight);
    else if (!std::strcmp(argv[i], "--size") && i + 1 < argc) onlySize = std::atoi(argv[++i]);
    else if (!std::strcmp(argv[i], "--bank") && i + 1 < argc) onlyBank = std::atoi(argv[++i]);
  }
#ifdef NCCMATCH_HAVE_OPENCV
  cv::setNumThreads(threads);
#endif
  std::mt19937 gen(12345);
  const CpuPath paths[] = {CpuPath::Reference, CpuPath::Direct, CpuPath::Fft, CpuPath::Auto};
  std::printf("threads %d, medians of %d frames (ms per frame, match() with threshold 0.8, "
              "ccoeff-normed); '-' = skipped (over the time cap)\n\n", threads, reps);
  std::printf("| frame | template | bank | Reference | Direct | Fft | Auto (picks) | OpenCV | OpenCV / Auto |\n");
  std::printf("|---|---|---|---|---|---|---|---|---|\n");
  for (auto [w, h] : {std::pair{1920, 1080}, std::pair{640, 480}}) {
    if (onlyWidth && (w != onlyWidth || h != onlyHeight)) continue;
    std::vector<uint8_t> frame = makeFrame(w, h, gen);
    FrameView view{frame.data(), w, h, std::size_t(w), MemoryKind::Host};
    for (int size : {8, 16, 32, 64, 128, 256}) {
      if (size > h || (onlySize && size != onlySize)) continue;
      for (int bankSize : {1, 16}) {
        if ((quick && bankSize > 1) || (onlyBank && bankSize != onlyBank)) continue;
        std::vector<TemplateImage> bank;
        for (int b = 0; b < bankSize; ++b)
          bank.push_back(cut(frame, w, (b * 97 + 13) % (w - size), (b * 53 + 7) % (h - size), size));
        MatchParams params;
        params.method = Method::CCoeffNormed;
        params.threshold = 0.8;
        params.maxMatches = 1;
        std::string cells[4];
        double autoMs = NAN;
        std::string picks;
        for (int p = 0; p < 4; ++p) {
          const CpuPath path = paths[p];
          // Cap the slow exact paths: multiply-accumulates per thread and frame.
          const double macs = double(w - size + 1) * (h - size + 1) * size * size * bankSize / threads;
          if ((path == CpuPath::Reference && macs > (quick ? 3e8 : 1.2e9)) ||
              (path == CpuPath::Direct && macs > (quick ? 3e9 : 1.5e10)) ||
              (path == CpuPath::Fft && !cpuFftAvailable())) {
            cells[p] = "-";
            continue;
          }
          EngineOptions o;
          o.backend = Backend::Cpu;
          o.threads = threads;
          o.cpuPath = path;
          std::unique_ptr<Engine> engine;
          if (!Engine::create(o, &engine).ok() || !engine->setTemplates(bank).ok()) return 1;
          FrameResult result;
          const int r = path == CpuPath::Reference ? std::max(1, reps / 2) : reps;
          const double ms = medianWallMs(r, [&] {
            Status s = engine->match(view, params, &result);
            if (!s.ok()) std::fprintf(stderr, "match: %s\n", s.message().c_str());
          });
          char buf[32];
          std::snprintf(buf, sizeof buf, "%.1f", ms);
          cells[p] = buf;
          if (path == CpuPath::Auto) {
            autoMs = ms;
            picks = cpuPathName(resolveCpuPath(CpuPath::Auto, w, h, size, size, threads));
          }
        }
        std::string cvCell = "n/a", ratio = "n/a";
#ifdef NCCMATCH_HAVE_OPENCV
        cv::Mat img(h, w, CV_8UC1, frame.data());
        std::vector<cv::Mat> tpls;
        for (const TemplateImage& t : bank)
          tpls.emplace_back(t.height, t.width, CV_8UC1, const_cast<uint8_t*>(t.pixels.data()));
        cv::Mat scores;
        const double cvMs = medianWallMs(bankSize > 1 ? std::max(1, reps / 2) : reps, [&] {
          for (const cv::Mat& t : tpls) {
            cv::matchTemplate(img, t, scores, cv::TM_CCOEFF_NORMED);
            double lo, hi;
            cv::Point loAt, hiAt;
            cv::minMaxLoc(scores, &lo, &hi, &loAt, &hiAt);
          }
        });
        char buf[32];
        std::snprintf(buf, sizeof buf, "%.1f", cvMs);
        cvCell = buf;
        std::snprintf(buf, sizeof buf, "%.2fx", cvMs / autoMs);
        ratio = buf;
#endif
        std::printf("| %dx%d | %dx%d | %d | %s | %s | %s | %s (%s) | %s | %s |\n", w, h, size, size,
                    bankSize, cells[0].c_str(), cells[1].c_str(), cells[2].c_str(), cells[3].c_str(),
                    picks.c_str(), cvCell.c_str(), ratio.c_str());
        std::fflush(stdout);
      }
    }
  }
  return 0;
}
