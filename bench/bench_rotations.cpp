// Templates at many angles and scales: the variants' whole rotated support as each one's mask
// (RotationSupport::Rectangle: every variant its own mask and window sums) against the disc
// inscribed in the template (RotationSupport::Disc: one mask per scale, its window sums computed
// once a frame and shared by every angle), and OpenCV's matchTemplate looping the same rectangle
// variants with their masks where OpenCV is present (built without OpenCV, that line is left
// out), and the coarse-to-fine search (coarse_to_fine.hpp) at 1..--levels pyramid levels beside
// each exhaustive search, in the same run, saying for how many templates it found the exhaustive
// search's best (variant, position, angle), and where its last run's time went (each level's
// refinement split into its matchRegions call and the host's work around it; the finer levels'
// variants are prepared on the engine once, at the warm-up run, and that time printed apart). The frame is
// noise with each template (a smooth textured object, a different pattern each) drawn on it
// turned (37 degrees, then 23 more each) at 1.1x. One frame, ccoeff-normed, the median of
// --reps runs (--opencv-reps for OpenCV's loop, which is slow); prints the bank sizes and ms per
// frame.
//   bench_rotations [--width=640] [--height=360] [--side=32] [--step=5] [--templates=1] [--threads=0]
//                   [--reps=3] [--opencv=1] [--opencv-reps=1] [--opencv-first=0] [--opencv-count=all]
//                   [--opencv-variants=all] [--opencv-threads=host threads] [--opencv-slice=0 --opencv-slices=1]
//                   [--exhaustive=1] [--cuda=0] [--levels=2] [--compare-cpu=0] [--spatial=0]
// --cuda=1 matches on the CUDA backend instead (--spatial=1: on exact spatial numerators only;
// --compare-cpu=1: the CPU backend repeats each search and every difference is printed). The figures on the H200 (one template,
// then eight: 216 and 1728 masked variants):
//   bench_rotations --cuda=1 --width=1920 --height=1080 --side=64 --step=5
//   bench_rotations --cuda=1 --width=1920 --height=1080 --side=64 --step=5 --templates=8
// OpenCV's loop over eight templates' 1728 variants takes longer than one device command may run:
// --opencv-first/--opencv-count loop the variants of those originals only, so that consecutive
// runs (--exhaustive=0 --levels=0 for OpenCV alone) cover the bank in parts whose times add up,
// or processes side by side (--opencv-threads each) cover it at once; --opencv-variants loops only
// the first N variants of that range (to see how OpenCV's time goes with its threads);
// --opencv-slice=K --opencv-slices=N loops every Nth variant of the range from its Kth, so that N
// processes side by side share one template's variants.
// A pack with OpenCV (GPU_PACK_OPENCV=1 scripts/gpu-pack.sh) carries its libraries in lib/.
#include <climits>
#include <cmath>
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

#include "nccmatch/coarse_to_fine.hpp"
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

// A smooth, textured object of side x side pixels: waves and two blobs, asymmetric, so each angle
// looks different and a half-size copy keeps its structure.
// Pattern `which` moves the waves' phases and frequencies and the blobs, so each template looks
// different.
nccmatch::TemplateImage texturedObject(int side, int which) {
  nccmatch::TemplateImage t;
  t.name = "t" + std::to_string(which);
  t.width = t.height = side;
  const double k = 32.0 / side;  // the pattern scales with the side
  const double p = 0.9 * which, bx = 6 - (which % 3) * 3, by = -5 + (which % 4) * 3;
  for (int y = 0; y < side; ++y)
    for (int x = 0; x < side; ++x) {
      const double u = (x - (side - 1) / 2.0) * k, v = (y - (side - 1) / 2.0) * k;
      const double f = 1 + 0.06 * which;
      const double value = 128 + 55 * std::sin(f * (0.33 * u + 0.21 * v) + p) * std::cos(0.25 * v - f * 0.12 * u + 0.4 * p) +
                           45 * std::exp(-((u - bx) * (u - bx) + (v - by) * (v - by)) / 18.0) -
                           50 * std::exp(-((u + by) * (u + by) + (v - bx) * (v - bx)) / 14.0);
      t.pixels.push_back(uint8_t(std::lround(value)));
    }
  return t;
}

// Draws the variant's compared pixels into the frame with its corner at (x, y).
void drawVariant(const nccmatch::TemplateImage& v, int x, int y, std::vector<uint8_t>* frame, int width) {
  for (int j = 0; j < v.height; ++j)
    for (int i = 0; i < v.width; ++i) {
      const std::size_t k = std::size_t(j) * v.width + i;
      if (v.mask.empty() || v.mask[k]) (*frame)[std::size_t(y + j) * width + x + i] = v.pixels[k];
    }
}

// How many templates have the same best in both results (place, scale, angle, score).
int sameBests(const nccmatch::FrameResult& a, const nccmatch::FrameResult& b) {
  int same = 0;
  for (std::size_t i = 0; i < a.best.size() && i < b.best.size(); ++i) {
    if (!a.best[i] || !b.best[i]) continue;
    const nccmatch::Match &p = *a.best[i], &q = *b.best[i];
    same += p.x == q.x && p.y == q.y && p.scale == q.scale && std::fabs(p.angle - q.angle) < 1e-9 && p.score == q.score;
  }
  return same;
}

// Each template whose bests differ: both, to the last digit (a near-tie, or a real miss).
void printDifferentBests(const nccmatch::FrameResult& exhaustive, const nccmatch::FrameResult& found) {
  for (std::size_t i = 0; i < exhaustive.best.size() && i < found.best.size(); ++i) {
    if (!exhaustive.best[i] || !found.best[i]) continue;
    const nccmatch::Match &p = *exhaustive.best[i], &q = *found.best[i];
    if (p.x == q.x && p.y == q.y && p.scale == q.scale && std::fabs(p.angle - q.angle) < 1e-9 && p.score == q.score)
      continue;
    std::printf("  template %zu: exhaustive %d,%d scale %g angle %.4f score %.17g; coarse-to-fine %d,%d scale %g "
                "angle %.4f score %.17g\n",
                i, p.x, p.y, p.scale, p.angle, p.score, q.x, q.y, q.scale, q.angle, q.score);
  }
}

// Every difference between two engines' raw results on one bank (each variant's matches, in
// order, and best, to the last bit, sub-pixel places included), at most `limit` printed; returns
// the number of variants that differ.
std::size_t printRawDifferences(const char* what, const nccmatch::FrameResult& a, const nccmatch::FrameResult& b,
                                int limit) {
  auto same = [](const nccmatch::Match& p, const nccmatch::Match& q) {
    return p.templateIndex == q.templateIndex && p.x == q.x && p.y == q.y && p.score == q.score && p.subX == q.subX &&
           p.subY == q.subY && p.width == q.width && p.height == q.height && p.angle == q.angle && p.scale == q.scale;
  };
  auto show = [](const char* side, const nccmatch::Match& m) {
    std::printf("    %s: variant %u at %d,%d (%.17g,%.17g) score %.17g scale %g angle %.17g\n", side, m.templateIndex,
                m.x, m.y, m.subX, m.subY, m.score, m.scale, m.angle);
  };
  std::size_t differ = 0;
  const std::size_t n = std::max(a.best.size(), b.best.size());
  std::vector<std::vector<const nccmatch::Match*>> ma(n), mb(n);
  for (const nccmatch::Match& m : a.matches)
    if (m.templateIndex < n) ma[m.templateIndex].push_back(&m);
  for (const nccmatch::Match& m : b.matches)
    if (m.templateIndex < n) mb[m.templateIndex].push_back(&m);
  for (std::size_t v = 0; v < n; ++v) {
    const bool bestSame = v < a.best.size() && v < b.best.size() && a.best[v].has_value() == b.best[v].has_value() &&
                          (!a.best[v] || same(*a.best[v], *b.best[v]));
    bool matchesSame = ma[v].size() == mb[v].size();
    for (std::size_t k = 0; matchesSame && k < ma[v].size(); ++k) matchesSame = same(*ma[v][k], *mb[v][k]);
    if (bestSame && matchesSame) continue;
    if (int(++differ) > limit) continue;
    std::printf("  %s differ at %zu (%zu / %zu matches):\n", what, v, ma[v].size(), mb[v].size());
    if (!bestSame) {
      if (v < a.best.size() && a.best[v]) show("best A", *a.best[v]);
      if (v < b.best.size() && b.best[v]) show("best B", *b.best[v]);
    }
    for (std::size_t k = 0; !matchesSame && k < std::max(ma[v].size(), mb[v].size()); ++k) {
      if (k < ma[v].size()) show("match A", *ma[v][k]);
      if (k < mb[v].size()) show("match B", *mb[v][k]);
    }
  }
  std::printf("  %s: %zu of %zu entries differ (A: CUDA, B: CPU)\n", what, differ, n);
  return differ;
}

}  // namespace

int main(int argc, char** argv) {
  using namespace nccmatch;
  const int width = option(argc, argv, "width", 640), height = option(argc, argv, "height", 360);
  const int side = option(argc, argv, "side", 32), step = option(argc, argv, "step", 5);
  const int threads = option(argc, argv, "threads", 0), reps = option(argc, argv, "reps", 3);
  const int templates = option(argc, argv, "templates", 1);
  [[maybe_unused]] const bool withOpenCv = option(argc, argv, "opencv", 1) != 0;
  [[maybe_unused]] const int openCvReps = option(argc, argv, "opencv-reps", 1);
  [[maybe_unused]] const int openCvFirst = option(argc, argv, "opencv-first", 0);
  [[maybe_unused]] const int openCvCount = option(argc, argv, "opencv-count", templates);
  [[maybe_unused]] const int openCvVariants = option(argc, argv, "opencv-variants", INT_MAX);
  [[maybe_unused]] const int openCvThreads = option(argc, argv, "opencv-threads", 0);
  [[maybe_unused]] const int openCvSlice = option(argc, argv, "opencv-slice", 0);
  [[maybe_unused]] const int openCvSlices = option(argc, argv, "opencv-slices", 1);
  const bool withExhaustive = option(argc, argv, "exhaustive", 1) != 0;
  const bool cuda = option(argc, argv, "cuda", 0) != 0;
  const int maxLevels = option(argc, argv, "levels", 2);
  // --compare-cpu=1 (with --cuda=1): the CPU backend runs the same searches and every difference
  // from the CUDA results is printed (raw per-variant results and merged ones).
  const bool compareCpu = cuda && option(argc, argv, "compare-cpu", 0) != 0;
  // --spatial=1 (with --cuda=1): the CUDA engine scores every variant on an exact spatial
  // numerator (CudaNumerator::Spatial): the unmasked variants too (angles at multiples of 90
  // degrees with the rectangle support), which the cost model otherwise gives to cuFFT.
  const bool spatialOnly = cuda && option(argc, argv, "spatial", 0) != 0;
  if (templates < 1) return std::fprintf(stderr, "--templates must be at least 1\n"), 1;
  if (openCvSlices < 1 || openCvSlice < 0 || openCvSlice >= openCvSlices)
    return std::fprintf(stderr, "--opencv-slice=%d --opencv-slices=%d: not a slice\n", openCvSlice, openCvSlices), 1;
  if (openCvFirst < 0 || openCvCount < 1 || openCvFirst + openCvCount > templates)
    return std::fprintf(stderr, "--opencv-first=%d --opencv-count=%d: not a range of the %d templates\n", openCvFirst,
                        openCvCount, templates), 1;
  std::mt19937 rng(7);
  std::vector<uint8_t> frame(std::size_t(width) * height);
  for (auto& p : frame) p = uint8_t(rng());
  std::vector<TemplateImage> originals;
  for (int k = 0; k < templates; ++k) originals.push_back(texturedObject(side, k));
  {  // each object turned and grown, on a grid of cells across the frame
    const int columns = int(std::ceil(std::sqrt(double(templates))));
    const int rows = (templates + columns - 1) / columns;
    const int grown = int(std::lround(side * 1.1));
    for (int k = 0; k < templates; ++k) {
      const TemplateImage drawn = rotateTemplate(resizeTemplate(originals[std::size_t(k)], grown, grown), 37 + 23 * k);
      const int cellW = width / columns, cellH = height / rows;
      if (drawn.width > cellW || drawn.height > cellH)
        return std::fprintf(stderr, "the frame is too small for %d objects of %dx%d\n", templates, drawn.width,
                            drawn.height), 1;
      drawVariant(drawn, (k % columns) * cellW + (cellW - drawn.width + 1) / 2,
                  (k / columns) * cellH + (cellH - drawn.height + 1) / 2, &frame, width);
    }
  }
  const std::vector<double> scales{0.9, 1.0, 1.1}, angles = angleRange(0, 360, step);
  EngineOptions options;
  options.backend = cuda ? Backend::Cuda : Backend::Cpu;
  options.threads = threads;
  if (spatialOnly) options.cudaNumerator = CudaNumerator::Spatial;
  std::unique_ptr<Engine> engine;
  if (Status s = Engine::create(options, &engine); !s.ok()) return std::fprintf(stderr, "%s\n", s.message().c_str()), 1;
  std::unique_ptr<Engine> cpuEngine;
  if (compareCpu) {
    EngineOptions cpuOptions;
    cpuOptions.backend = Backend::Cpu;
    cpuOptions.threads = threads;
    if (Status s = Engine::create(cpuOptions, &cpuEngine); !s.ok())
      return std::fprintf(stderr, "%s\n", s.message().c_str()), 1;
  }
  const FrameView view{frame.data(), width, height, std::size_t(width), MemoryKind::Host};
  MatchParams params;
  params.maxMatches = 5;
  std::printf("frame %dx%d, %d template(s) %dx%d, %zu angles x %zu scales, backend %s%s, %d host threads\n", width,
              height, templates, side, side, angles.size(), scales.size(), backendName(engine->backend()),
              spatialOnly ? " (spatial numerator only)" : "", engine->workerThreads());
  for (RotationSupport support : {RotationSupport::Rectangle, RotationSupport::Disc}) {
    ScaledBank bank;
    if (Status s = rotateAndScaleTemplates(originals, scales, angles, &bank, support); !s.ok())
      return std::fprintf(stderr, "%s\n", s.message().c_str()), 1;
    // OpenCV alone (--exhaustive=0 --levels=0): the engine needs no bank.
    const bool engineSearches = withExhaustive || maxLevels > 0;
    if (!engineSearches && support == RotationSupport::Disc) continue;  // OpenCV loops the rectangle variants only
    if (Status s = engineSearches ? engine->setTemplates(bank.templates) : Status(); !s.ok())
      return std::fprintf(stderr, "%s\n", s.message().c_str()), 1;
    std::size_t pixels = 0;
    for (const TemplateImage& v : bank.templates) pixels += v.pixels.size();
    const char* supportName = support == RotationSupport::Disc ? "disc" : "rectangle";
    FrameResult exhaustive;
    double ms = 0;
    if (withExhaustive) {
      ms = bench::medianWallMs(reps, [&] {
        FrameResult raw;
        engine->match(view, params, &raw);
        exhaustive = mergeScaledResult(bank, raw, params);
      });
      std::printf("nccmatch %-9s %4zu variants, %8zu template pixels: %9.1f ms/frame\n", supportName,
                  bank.templates.size(), pixels, ms);
      if (compareCpu) {
        FrameResult raw, cpuRaw;
        engine->match(view, params, &raw);
        if (Status st = cpuEngine->setTemplates(bank.templates); !st.ok())
          return std::fprintf(stderr, "%s\n", st.message().c_str()), 1;
        cpuEngine->match(view, params, &cpuRaw);
        printRawDifferences("exhaustive raw", raw, cpuRaw, 8);
        printRawDifferences("exhaustive merged", exhaustive, mergeScaledResult(bank, cpuRaw, params), 8);
      }
      for (std::size_t i = 0; i < exhaustive.best.size() && i < 8; ++i)
        if (exhaustive.best[i])
          std::printf("  best of template %zu: %d,%d scale %g angle %.2f score %.4f\n", i, exhaustive.best[i]->x,
                      exhaustive.best[i]->y, exhaustive.best[i]->scale, exhaustive.best[i]->angle,
                      exhaustive.best[i]->score);
    }
    // The coarse-to-fine search of the same bank, same frame, same engine.
    for (int levels = 1; levels <= maxLevels; ++levels) {
      CoarseToFineOptions c2fOptions;
      c2fOptions.levels = levels;
      CoarseToFineSearch search;
      if (Status s = CoarseToFineSearch::create(bank, c2fOptions, &search); !s.ok()) {
        std::printf("coarse-to-fine %-9s levels %d: %s\n", supportName, levels, s.message().c_str());
        continue;
      }
      if (Status s = engine->setTemplates(search.engineTemplates()); !s.ok())
        return std::fprintf(stderr, "%s\n", s.message().c_str()), 1;
      FrameResult found;
      Status matched;
      double prepareMs = -1;  // the first (warm-up) run prepares the finer levels' variants on the engine
      const double c2fMs = bench::medianWallMs(reps, [&] {
        matched = search.match(*engine, view, params, &found);
        if (prepareMs < 0) prepareMs = search.lastWork().prepareMs;
      });
      if (!matched.ok()) return std::fprintf(stderr, "%s\n", matched.message().c_str()), 1;
      const CoarseToFineWork& work = search.lastWork();
      const double full = exhaustiveProducts(bank.templates, width, height);
      std::printf("coarse-to-fine %-9s levels %d: %9.1f ms/frame", supportName, levels, c2fMs);
      if (withExhaustive)
        std::printf(" (%.1fx), same best as exhaustive: %d of %d templates", ms / c2fMs, sameBests(exhaustive, found),
                    templates);
      std::printf(", %zu regions, work %.3f of exhaustive\n", work.regions,
                  (work.coarseProducts + work.refineProducts) / full);
      if (withExhaustive) printDifferentBests(exhaustive, found);
      if (compareCpu) {
        if (Status st = cpuEngine->setTemplates(search.engineTemplates()); !st.ok())
          return std::fprintf(stderr, "%s\n", st.message().c_str()), 1;
        FrameResult cpuFound;
        if (Status st = search.match(*cpuEngine, view, params, &cpuFound); !st.ok())
          return std::fprintf(stderr, "%s\n", st.message().c_str()), 1;
        printRawDifferences("coarse-to-fine merged", found, cpuFound, 8);
      }
      // Where the last run's time went (lastWork: one run, not the median).
      // Each level's refinement: the matchRegions call, and the host's picking of candidates and
      // choice of peaks around it.
      std::printf("  last run: pyramid %.2f ms, coarse match %.2f ms", work.pyramidMs, work.coarseMs);
      for (const CoarseToFineLevelStats& l : work.refine)
        std::printf(", level %d refine %.2f ms (matchRegions %.2f, host %.2f; %zu candidates, %zu regions)", l.level,
                    l.ms, l.regionsMs, l.ms - l.regionsMs, l.candidates, l.regions);
      std::printf(", merge %.2f ms\n", work.mergeMs);
      std::printf("  once, at the first frame (not in the times above): finer levels' variants prepared in %.1f ms\n",
                  prepareMs);
    }
#ifdef NCCMATCH_HAVE_OPENCV
    if (support == RotationSupport::Rectangle && withOpenCv) {
      cv::setNumThreads(openCvThreads > 0 ? openCvThreads : engine->workerThreads());
      const cv::Mat image(height, width, CV_8U, frame.data());
      std::size_t looped = 0;
      const double cvMs = bench::medianWallMs(openCvReps, [&] {
        cv::Mat scores;
        looped = 0;
        for (std::size_t e = 0, inRange = 0; e < bank.templates.size(); ++e) {
          if (int(bank.original[e]) < openCvFirst || int(bank.original[e]) >= openCvFirst + openCvCount) continue;
          if (int(inRange++ % std::size_t(openCvSlices)) != openCvSlice) continue;
          if (int(looped) >= openCvVariants) break;
          const TemplateImage& v = bank.templates[e];
          ++looped;
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
      std::printf("OpenCV   rectangle %4zu variants (matchTemplate with mask, looped, templates %d..%d of %d, slice %d "
                  "of %d, %d threads): %9.1f ms/frame\n",
                  looped, openCvFirst, openCvFirst + openCvCount - 1, templates, openCvSlice, openCvSlices,
                  cv::getNumThreads(), cvMs);
    }
#endif
  }
  return 0;
}
