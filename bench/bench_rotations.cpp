// A template at many angles and scales on the CPU backend: the variants' whole rotated support as
// each one's mask (RotationSupport::Rectangle: every variant its own mask and window sums) against
// the disc inscribed in the template (RotationSupport::Disc: one mask per scale, its window sums
// computed once a frame and shared by every angle), and OpenCV's matchTemplate looping the same
// rectangle variants with their masks where OpenCV is present. One frame, ccoeff-normed, the
// median of a few runs; prints the bank sizes and ms per frame.
//   bench_rotations [--width=640] [--height=360] [--side=32] [--step=5] [--threads=0] [--reps=3]
//                   [--opencv=1] [--cuda=0]
// --cuda=1 matches on the CUDA backend instead (the figure on the H200:
// --cuda=1 --width=1920 --height=1080 --side=64 --step=5 --opencv=0).
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#ifdef NCCMATCH_HAVE_OPENCV
#include <opencv2/core.hpp>
#include <opencv2/imgproc.hpp>
#endif

#include "nccmatch/engine.hpp"
#include "nccmatch/rotations.hpp"
#include "wall_clock.hpp"

namespace {

int option(int argc, char** argv, const char* name, int fallback) {
  const std::string prefix = std::string("--") + name + "=";
  for (int i = 1; i < argc; ++i)
    if (std::strncmp(argv[i], prefix.c_str(), prefix.size()) == 0) return std::atoi(argv[i] + prefix.size());
  return fallback;
}

}  // namespace

int main(int argc, char** argv) {
  using namespace nccmatch;
  const int width = option(argc, argv, "width", 640), height = option(argc, argv, "height", 360);
  const int side = option(argc, argv, "side", 32), step = option(argc, argv, "step", 5);
  const int threads = option(argc, argv, "threads", 0), reps = option(argc, argv, "reps", 3);
  [[maybe_unused]] const bool withOpenCv = option(argc, argv, "opencv", 1) != 0;
  const bool cuda = option(argc, argv, "cuda", 0) != 0;
  std::mt19937 rng(7);
  std::vector<uint8_t> frame(std::size_t(width) * height);
  for (auto& p : frame) p = uint8_t(rng());
  TemplateImage t;
  t.name = "t";
  t.width = t.height = side;
  for (int k = 0; k < side * side; ++k) t.pixels.push_back(uint8_t(rng()));
  const std::vector<double> scales{0.9, 1.0, 1.1}, angles = angleRange(0, 360, step);
  EngineOptions options;
  options.backend = cuda ? Backend::Cuda : Backend::Cpu;
  options.threads = threads;
  std::unique_ptr<Engine> engine;
  if (Status s = Engine::create(options, &engine); !s.ok()) return std::fprintf(stderr, "%s\n", s.message().c_str()), 1;
  const FrameView view{frame.data(), width, height, std::size_t(width), MemoryKind::Host};
  MatchParams params;
  params.maxMatches = 5;
  std::printf("frame %dx%d, template %dx%d, %zu angles x %zu scales, backend %s, %d host threads\n", width, height,
              side, side, angles.size(), scales.size(), backendName(engine->backend()), engine->workerThreads());
  for (RotationSupport support : {RotationSupport::Rectangle, RotationSupport::Disc}) {
    ScaledBank bank;
    if (Status s = rotateAndScaleTemplates({t}, scales, angles, &bank, support); !s.ok())
      return std::fprintf(stderr, "%s\n", s.message().c_str()), 1;
    if (Status s = engine->setTemplates(bank.templates); !s.ok()) return std::fprintf(stderr, "%s\n", s.message().c_str()), 1;
    std::size_t pixels = 0;
    for (const TemplateImage& v : bank.templates) pixels += v.pixels.size();
    const double ms = bench::medianWallMs(reps, [&] {
      FrameResult raw;
      engine->match(view, params, &raw);
      mergeScaledResult(bank, raw, params);
    });
    std::printf("nccmatch %-9s %4zu variants, %8zu template pixels: %9.1f ms/frame\n",
                support == RotationSupport::Disc ? "disc" : "rectangle", bank.templates.size(), pixels, ms);
#ifdef NCCMATCH_HAVE_OPENCV
    if (support == RotationSupport::Rectangle && withOpenCv) {
      cv::setNumThreads(engine->workerThreads());
      const cv::Mat image(height, width, CV_8U, frame.data());
      const double cvMs = bench::medianWallMs(reps, [&] {
        cv::Mat scores;
        for (const TemplateImage& v : bank.templates) {
          const cv::Mat tpl(v.height, v.width, CV_8U, const_cast<uint8_t*>(v.pixels.data()));
          if (v.mask.empty()) {
            cv::matchTemplate(image, tpl, scores, cv::TM_CCOEFF_NORMED);
          } else {
            const cv::Mat mask(v.height, v.width, CV_8U, const_cast<uint8_t*>(v.mask.data()));
            cv::matchTemplate(image, tpl, scores, cv::TM_CCOEFF_NORMED, mask);
          }
          double lo, hi;
          cv::minMaxLoc(scores, &lo, &hi);
        }
      });
      std::printf("OpenCV   rectangle %4zu variants (matchTemplate with mask, looped): %9.1f ms/frame\n",
                  bank.templates.size(), cvMs);
    }
#endif
  }
  return 0;
}
