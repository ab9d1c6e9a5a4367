// The CUDA engine end to end against the CPU Reference engine: score maps of every method
// through both numerators (exact where the path is integer, 1e-4 for ccoeff-normed on fft),
// matches of pasted templates, banks of mixed sizes, device and pinned frames, size changes.
#include <gtest/gtest.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <memory>
#include <tuple>

#include "cuda/engine/cuda_engine.hpp"
#include "cuda/engine/device_sharing.hpp"
#include "cuda/engine/template_bank.hpp"
#include "cuda/fault_injection.hpp"
#include "nccmatch/scales.hpp"
#include "rules/peak_rules.hpp"
#include "gpu_test_support.hpp"
#include "test_support.hpp"

namespace nccmatch::test {
namespace {

// Allowed |gpu - cpu| on the fft path (float transform, exact window sums).
double fftTolerance(Method method, const TemplateImage& t) {
  const double n = double(t.width) * t.height;
  switch (method) {
    case Method::CCoeffNormed:
    case Method::CCorrNormed:
    case Method::SqDiffNormed: return 1e-4;
    case Method::SqDiff: return 2e-6 * n * 65025.0;
    default: return 1e-6 * n * 65025.0;
  }
}

struct MapCase {
  int frameW, frameH;
  int tplW, tplH;
  std::size_t padding;
  Fill frameFill, tplFill;
  bool halfFlat;  // the frame's left half is flat (77)
};

std::ostream& operator<<(std::ostream& os, const MapCase& c) {
  return os << describe(c.frameW, c.frameH, c.padding) << " template " << c.tplW << "x" << c.tplH
            << " fills " << int(c.frameFill) << "/" << int(c.tplFill) << (c.halfFlat ? " half-flat" : "");
}

Image caseImage(const MapCase& c) {
  Image img = makeImage(c.frameW, c.frameH, c.frameFill, c.padding);
  if (c.halfFlat)
    for (int y = 0; y < c.frameH; ++y)
      for (int x = 0; x < c.frameW / 2; ++x) img.at(x, y) = 77;
  return img;
}

class CudaScoreMap : public ::testing::TestWithParam<std::tuple<CudaNumerator, MapCase>> {};

TEST_P(CudaScoreMap, EveryMethodMatchesTheCpuReference) {
  SKIP_WITHOUT_GPU();
  const CudaNumerator numerator = std::get<0>(GetParam());
  const MapCase c = std::get<1>(GetParam());
  Image img = caseImage(c);
  TemplateImage t = makeTemplate(c.tplW, c.tplH, c.tplFill);
  auto gpu = makeEngine(Backend::Cuda, numerator);
  auto cpu = makeEngine(Backend::Cpu);
  ASSERT_TRUE(gpu->setTemplates({t}).ok());
  ASSERT_TRUE(cpu->setTemplates({t}).ok());
  for (int m = 0; m <= 5; ++m) {
    const Method method = static_cast<Method>(m);
    std::vector<double> want, got;
    Status s = cpu->scoreMap(img.view(), method, 0, &want);
    ASSERT_TRUE(s.ok()) << s.message();
    got.assign(want.size() + 7, -12345.0);  // poison: every entry must be written
    s = gpu->scoreMap(img.view(), method, 0, &got);
    ASSERT_TRUE(s.ok()) << s.message();
    ASSERT_EQ(got.size(), want.size());
    const int mapW = c.frameW - c.tplW + 1;
    const double tol = numerator == CudaNumerator::Fft ? fftTolerance(method, t) : 0.0;
    for (std::size_t i = 0; i < want.size(); ++i) {
      ASSERT_TRUE(std::isfinite(got[i])) << methodName(method) << " at " << i % mapW << "," << i / mapW;
      if (tol == 0.0) {
        ASSERT_EQ(got[i], want[i]) << methodName(method) << " at " << i % mapW << "," << i / mapW << " " << c;
      } else {
        ASSERT_NEAR(got[i], want[i], tol) << methodName(method) << " at " << i % mapW << "," << i / mapW << " " << c;
      }
    }
  }
}

INSTANTIATE_TEST_SUITE_P(
    Sizes, CudaScoreMap,
    ::testing::Combine(
        ::testing::Values(CudaNumerator::Spatial, CudaNumerator::Fft),
        ::testing::Values(
            //      frame        template   pad  frame fill     template fill  half-flat
            MapCase{1, 1,        1, 1,      0,   Fill::Random, Fill::Random, false},
            MapCase{9, 7,        1, 1,      3,   Fill::Random, Fill::Random, false},
            MapCase{13, 11,      13, 11,    0,   Fill::Random, Fill::Random, false},  // template == frame
            MapCase{31, 17,      5, 3,      1,   Fill::Random, Fill::Random, false},  // odd stride: byte loads
            MapCase{33, 29,      8, 8,      7,   Fill::Smooth, Fill::Smooth, false},
            MapCase{40, 23,      7, 9,      0,   Fill::Binary, Fill::Random, false},
            MapCase{24, 24,      6, 6,      2,   Fill::Flat,   Fill::Random, false},  // every window flat
            MapCase{24, 20,      6, 5,      0,   Fill::Random, Fill::Flat,   false},  // flat template
            MapCase{200, 150,    64, 64,    0,   Fill::Random, Fill::Random, false},  // chunk boundary
            MapCase{211, 97,     65, 17,    5,   Fill::Smooth, Fill::Random, false},  // 2 chunks wide, odd
            MapCase{130, 300,    100, 3,    0,   Fill::Random, Fill::Smooth, false},
            MapCase{301, 257,    256, 256,  0,   Fill::Random, Fill::Random, false},  // 64-bit sums
            MapCase{190, 190,    182, 182,  4,   Fill::Smooth, Fill::Smooth, false},  // first 64-bit size
            MapCase{1, 37,       1, 5,      0,   Fill::Random, Fill::Random, false},
            MapCase{37, 1,       4, 1,      5,   Fill::Random, Fill::Random, false},
            MapCase{1001, 701,   37, 29,    3,   Fill::Random, Fill::Random, true},   // flat regions
            MapCase{1920, 1080,  16, 16,    0,   Fill::Random, Fill::Random, false},
            MapCase{1920, 1080,  32, 24,    0,   Fill::Smooth, Fill::Smooth, false},
            MapCase{1920, 1080,  8, 8,      0,   Fill::Smooth, Fill::Random, true})));

// Frames too large for full CPU maps: sampled positions against the brute-force definition.
struct SampledCase {
  int frameW, frameH, tplW, tplH;
  Fill frameFill;
};

// One method a test: each case is a process of its own under compute-sanitizer's shards (a 4K
// frame's three methods ran past 600 s under racecheck as one test).
class CudaSampledMap : public ::testing::TestWithParam<std::tuple<CudaNumerator, SampledCase, Method>> {};

TEST_P(CudaSampledMap, SampledPositionsMatchTheDefinition) {
  SKIP_WITHOUT_GPU();
  const CudaNumerator numerator = std::get<0>(GetParam());
  const SampledCase c = std::get<1>(GetParam());
  const Method method = std::get<2>(GetParam());
  Image img = makeImage(c.frameW, c.frameH, c.frameFill);
  TemplateImage t = makeTemplate(c.tplW, c.tplH, Fill::Random);
  const int px = int(rng()() % (c.frameW - c.tplW + 1)), py = int(rng()() % (c.frameH - c.tplH + 1));
  paste(&img, t, px, py);
  auto gpu = makeEngine(Backend::Cuda, numerator);
  ASSERT_TRUE(gpu->setTemplates({t}).ok());
  const int mapW = c.frameW - c.tplW + 1, mapH = c.frameH - c.tplH + 1;
  std::vector<double> got;
  Status s = gpu->scoreMap(img.view(), method, 0, &got);
  ASSERT_TRUE(s.ok()) << s.message();
  ASSERT_EQ(got.size(), std::size_t(mapW) * mapH);
  for (double v : got) ASSERT_TRUE(std::isfinite(v));
  std::vector<std::pair<int, int>> at = {{px, py}, {0, 0}, {mapW - 1, mapH - 1}};
  for (int k = 0; k < 60; ++k) at.push_back({int(rng()() % mapW), int(rng()() % mapH)});
  for (auto [x, y] : at) {
    const double want = bruteForceScore(img, t, method, x, y);
    double tol = numerator == CudaNumerator::Fft ? fftTolerance(method, t)
                 : method == Method::SqDiff ? 0.0 : 1e-9 * std::max(1.0, std::fabs(want));
    ASSERT_NEAR(got[std::size_t(y) * mapW + x], want, tol) << methodName(method) << " at " << x << "," << y;
  }
}

INSTANTIATE_TEST_SUITE_P(
    BigFrames, CudaSampledMap,
    ::testing::Combine(::testing::Values(CudaNumerator::Spatial, CudaNumerator::Fft),
                       ::testing::Values(SampledCase{1920, 1080, 256, 256, Fill::Smooth},
                                         SampledCase{1920, 1080, 1920, 1080, Fill::Random},  // template == frame
                                         SampledCase{3840, 2160, 128, 128, Fill::Random},
                                         SampledCase{3840, 2160, 256, 256, Fill::Smooth},
                                         SampledCase{3840, 2160, 9, 13, Fill::Random}),
                       ::testing::Values(Method::CCoeffNormed, Method::SqDiff, Method::CCorrNormed)));

// One frame matched by the CPU engine (want, on `frame`) and the CUDA engine (got, on `gpuFrame`:
// the same pixels, e.g. a DeviceCopy's view); a fatal failure when either call fails.
void matchOnBoth(Engine& cpu, Engine& gpu, const FrameView& frame, const FrameView& gpuFrame, const MatchParams& p,
                 FrameResult* want, FrameResult* got) {
  Status s = cpu.match(frame, p, want);
  ASSERT_TRUE(s.ok()) << s.message();
  s = gpu.match(gpuFrame, p, got);
  ASSERT_TRUE(s.ok()) << s.message();
}

void matchOnBoth(Engine& cpu, Engine& gpu, const FrameView& frame, const MatchParams& p, FrameResult* want,
                 FrameResult* got) {
  matchOnBoth(cpu, gpu, frame, frame, p, want, got);
}

// An image copied into pitched device memory (a decoder's CUDA frame), freed with the object.
// ok() is false when the allocation or the copy failed.
class DeviceCopy {
 public:
  explicit DeviceCopy(const Image& img) : width_(img.width), height_(img.height) {
    void* dev = nullptr;
    if (cudaMallocPitch(&dev, &pitch_, std::size_t(img.width), std::size_t(img.height)) != cudaSuccess) return;
    data_.reset(static_cast<uint8_t*>(dev));
    copied_ = cudaMemcpy2D(dev, pitch_, img.bytes.data(), img.stride, std::size_t(img.width), std::size_t(img.height),
                           cudaMemcpyHostToDevice) == cudaSuccess;
  }
  bool ok() const { return data_ != nullptr && copied_; }
  uint8_t* data() const { return data_.get(); }
  std::size_t pitch() const { return pitch_; }
  FrameView view() const { return FrameView{data_.get(), width_, height_, pitch_, MemoryKind::Device}; }

 private:
  struct Free {
    void operator()(uint8_t* p) const { cudaFree(p); }
  };
  std::unique_ptr<uint8_t, Free> data_;
  std::size_t pitch_ = 0;
  int width_, height_;
  bool copied_ = false;
};

// Matches equal the CPU engine's: same boxes; scores equal (spatial) or within 1e-4 (fft).
void expectSameMatches(const FrameResult& got, const FrameResult& want, bool exact) {
  const double tol = exact ? 0.0 : 1e-4;
  ASSERT_EQ(got.best.size(), want.best.size());
  for (std::size_t i = 0; i < want.best.size(); ++i) {
    ASSERT_EQ(got.best[i].has_value(), want.best[i].has_value()) << "template " << i;
    if (!want.best[i]) continue;
    EXPECT_EQ(got.best[i]->x, want.best[i]->x) << "template " << i;
    EXPECT_EQ(got.best[i]->y, want.best[i]->y) << "template " << i;
    EXPECT_NEAR(got.best[i]->score, want.best[i]->score, tol) << "template " << i;
  }
  ASSERT_EQ(got.matches.size(), want.matches.size());
  for (std::size_t k = 0; k < want.matches.size(); ++k) {
    const Match& g = got.matches[k];
    const Match& w = want.matches[k];
    EXPECT_EQ(g.templateIndex, w.templateIndex) << "match " << k;
    EXPECT_EQ(g.x, w.x) << "match " << k;
    EXPECT_EQ(g.y, w.y) << "match " << k;
    EXPECT_EQ(g.width, w.width) << "match " << k;
    EXPECT_EQ(g.height, w.height) << "match " << k;
    EXPECT_NEAR(g.score, w.score, tol) << "match " << k;
    // Every path's sub-pixel offsets come from exact scores (the fft path's rescored: its map rounds).
    EXPECT_EQ(g.subX, w.subX) << "match " << k;
    EXPECT_EQ(g.subY, w.subY) << "match " << k;
  }
}

// A method's rule with its own threshold (normed: ccoeff- and ccorr-normed's; the raw methods'
// in their own units), max-matches and NMS overlap 0.3.
struct MethodThresholds {
  double normed, sqdiffNormed, sqdiff, ccorr, ccoeff;
};

MatchParams paramsFor(Method method, const MethodThresholds& t, int maxMatches) {
  MatchParams p;
  p.method = method;
  p.threshold = method == Method::CCoeffNormed || method == Method::CCorrNormed ? t.normed
                : method == Method::SqDiffNormed                                ? t.sqdiffNormed
                : method == Method::SqDiff                                      ? t.sqdiff
                : method == Method::CCorr                                       ? t.ccorr
                                                                                : t.ccoeff;
  p.maxMatches = maxMatches;
  p.nmsIou = 0.3;
  return p;
}

struct BankCase {
  int frameW, frameH;
  int templates;
  int maxSide;
};

class CudaBank : public ::testing::TestWithParam<std::tuple<CudaNumerator, BankCase>> {};

TEST_P(CudaBank, MatchesEqualTheCpuEngine) {
  SKIP_WITHOUT_GPU();
  const CudaNumerator numerator = std::get<0>(GetParam());
  const BankCase c = std::get<1>(GetParam());
  Image img = makeImage(c.frameW, c.frameH, Fill::Random, 3);
  std::vector<TemplateImage> bank;
  for (int i = 0; i < c.templates; ++i) {
    // Tiny templates tie at +-1 in many places; only the exact path breaks ties like the CPU.
    const int minSide = numerator == CudaNumerator::Spatial ? 1 : 6;
    const int w = minSide + int(rng()() % (c.maxSide - minSide + 1));
    const int h = minSide + int(rng()() % (c.maxSide - minSide + 1));
    bank.push_back(makeTemplate(w, h, Fill::Random, "t" + std::to_string(i)));
    // Two copies of each fitting template, so NMS and max-matches have work to do; the second
    // has 1/32 of its pixels redrawn, so no two positions tie at a perfect score.
    for (int copy = 0; copy < 2 && w <= c.frameW && h <= c.frameH; ++copy) {
      const int x = int(rng()() % (c.frameW - w + 1)), y = int(rng()() % (c.frameH - h + 1));
      paste(&img, bank.back(), x, y);
      if (copy == 1) img.at(x, y) ^= 0x80;
      for (int ty = 0; copy == 1 && ty < h; ++ty)
        for (int tx = 0; tx < w; ++tx)
          if (rng()() % 32 == 0) img.at(x + tx, y + ty) = uint8_t(rng()());
    }
  }
  bank.push_back(makeTemplate(c.frameW + 1, 3, Fill::Random, "too-wide"));  // skipped
  auto gpu = makeEngine(Backend::Cuda, numerator);
  auto cpu = makeEngine(Backend::Cpu);
  ASSERT_TRUE(gpu->setTemplates(bank).ok());
  ASSERT_TRUE(cpu->setTemplates(bank).ok());
  for (Method method : {Method::CCoeffNormed, Method::SqDiffNormed, Method::CCorr}) {
    MatchParams p;
    p.method = method;
    p.threshold = method == Method::CCoeffNormed ? 0.9 : method == Method::SqDiffNormed ? 0.05 : 1e18;
    p.maxMatches = 3;
    p.nmsIou = 0.3;
    FrameResult want, got;
    ASSERT_NO_FATAL_FAILURE(matchOnBoth(*cpu, *gpu, img.view(), p, &want, &got));
    const bool exact = numerator == CudaNumerator::Spatial;
    if (method == Method::CCorr && !exact) continue;  // raw ccorr on fft: ties within rounding
    SCOPED_TRACE(methodName(method));
    expectSameMatches(got, want, exact);
  }
}

INSTANTIATE_TEST_SUITE_P(
    Banks, CudaBank,
    ::testing::Combine(::testing::Values(CudaNumerator::Spatial, CudaNumerator::Fft, CudaNumerator::Auto),
                       ::testing::Values(BankCase{320, 240, 1, 40}, BankCase{641, 479, 2, 64},
                                         BankCase{640, 480, 16, 48}, BankCase{1920, 1080, 16, 32})));

// Banks with groups of equal-size templates (the cost model gives groups of four or more to the
// GEMM bank numerator) beside single sizes (the fused loop) and a large template (spatial with
// SAT or fft): every method's matches equal the CPU engine's, bit for bit.
TEST(CudaEngine, GroupsOfEqualSizesMatchTheCpuEngine) {
  SKIP_WITHOUT_GPU();
  Image img = makeImage(643, 367, Fill::Random, 5);
  std::vector<TemplateImage> bank;
  const std::vector<std::pair<int, int>> groups = {{32, 32}, {16, 16}, {24, 20}, {9, 9}, {64, 64}};
  const std::vector<int> counts = {12, 5, 4, 1, 6};
  for (std::size_t g = 0; g < groups.size(); ++g)
    for (int i = 0; i < counts[g]; ++i) {
      const auto [w, h] = groups[g];
      // Every other template is cut from the frame: it is found there with a score of 1.
      if (i % 2 == 0) {
        bank.push_back(makeTemplate(w, h, Fill::Random, "g" + std::to_string(g)));
      } else {
        const int x = int(rng()() % (img.width - w + 1)), y = int(rng()() % (img.height - h + 1));
        bank.push_back(cutTemplate(img, x, y, w, h, "c" + std::to_string(g)));
      }
    }
  bank.push_back(makeTemplate(100, 90, Fill::Random, "large"));
  auto gpu = makeEngine(Backend::Cuda, CudaNumerator::Spatial);
  auto cpu = makeEngine(Backend::Cpu);
  ASSERT_TRUE(gpu->setTemplates(bank).ok());
  ASSERT_TRUE(cpu->setTemplates(bank).ok());
  for (int m = 0; m <= 5; ++m) {
    MatchParams p;
    p.method = static_cast<Method>(m);
    p.threshold = p.method == Method::CCoeffNormed || p.method == Method::CCorrNormed ? 0.95
                  : p.method == Method::SqDiffNormed                                  ? 0.05
                  : p.method == Method::SqDiff                                        ? 1000.0
                                                                                      : 1e18;
    p.maxMatches = 2;
    FrameResult want, got;
    ASSERT_NO_FATAL_FAILURE(matchOnBoth(*cpu, *gpu, img.view(), p, &want, &got));
    SCOPED_TRACE(methodName(p.method));
    expectSameMatches(got, want, true);
  }
}

// Groups of equal sizes where gemmGroupPays take the GEMM bank with sparse maps: only the
// positions reaching the threshold are in the maps, the best may lie below it, and every match's
// sub-pixel neighbours are rescored from the frame; the matches still equal the CPU engine's,
// sub-pixel offsets included, for every method, with no matches kept, a few (select) and many
// (sorted NMS), beside a group small enough for the fused loop.
// One method a test (each a process of its own under compute-sanitizer's shards: the six as
// one test took more than 100 GB of host memory under racecheck). The frame in pageable host
// memory (uploaded into the engine's slot: the frame's work replays one captured graph) and in
// device memory (read in place: the same kernels enqueued one by one). The GEMM groups hold
// their templates as u8 pixels and, for the zero-mean screen, as s8 T - r as well
// (EngineOptions::cudaGemmTemplates; Auto: zero-mean for the group of 33 only): the same
// matches every way.
class CudaGemmGroups
    : public ::testing::TestWithParam<std::tuple<Method, MemoryKind, CudaGemmTemplates>> {};

TEST_P(CudaGemmGroups, SparseMapsMatchTheCpuEngine) {
  SKIP_WITHOUT_GPU();
  const auto [method, memory, gemmTemplates] = GetParam();
  Image img = makeImage(301, 203, Fill::Smooth, 3);
  std::vector<TemplateImage> bank;
  const std::vector<std::pair<int, int>> sizes = {{16, 16}, {24, 20}, {33, 31}, {40, 36}, {12, 12}};
  const std::vector<int> counts = {cuda::kGemmGroupLeast + 3, cuda::kGemmGroupLeast, 2 * cuda::kGemmGroupLeast + 1,
                                   cuda::kGemmGroupLeast, 5};
  ASSERT_TRUE(cuda::gemmGroupPays(33, 31, counts[2]));
  ASSERT_FALSE(cuda::gemmGroupPays(40, 36, counts[3]));  // the fused loop, as the 12x12 group
  for (std::size_t g = 0; g < sizes.size(); ++g)
    for (int i = 0; i < counts[g]; ++i) {
      const auto [w, h] = sizes[g];
      if (i % 3 == 0) {
        bank.push_back(makeTemplate(w, h, i % 2 ? Fill::Smooth : Fill::Random, "g" + std::to_string(g)));
      } else {  // cut from the frame: found there with a score of 1, near-matches around it
        const int x = int(rng()() % (img.width - w + 1)), y = int(rng()() % (img.height - h + 1));
        bank.push_back(cutTemplate(img, x, y, w, h, "c" + std::to_string(g)));
      }
    }
  EngineOptions options;
  options.backend = Backend::Cuda;
  options.cudaNumerator = CudaNumerator::Spatial;
  options.cudaGemmTemplates = gemmTemplates;
  auto gpu = makeEngine(options);
  auto cpu = makeEngine(Backend::Cpu);
  ASSERT_TRUE(gpu->setTemplates(bank).ok());
  ASSERT_TRUE(cpu->setTemplates(bank).ok());
  const DeviceCopy onDevice(img);
  ASSERT_TRUE(onDevice.ok());
  const FrameView gpuFrame = memory == MemoryKind::Device ? onDevice.view() : img.view();
  for (int maxMatches : {0, 3, 80}) {
    const MatchParams p = paramsFor(method, MethodThresholds{0.9, 0.1, 20000.0, 2e7, 1e5}, maxMatches);
    FrameResult want, got;
    ASSERT_NO_FATAL_FAILURE(matchOnBoth(*cpu, *gpu, img.view(), gpuFrame, p, &want, &got));
    SCOPED_TRACE(std::string(methodName(p.method)) + " max-matches " + std::to_string(maxMatches) +
                 (memory == MemoryKind::Device ? ", device frame" : ", host frame") + ", " +
                 cudaGemmTemplatesName(gemmTemplates) + " templates");
    expectSameMatches(got, want, true);
    if (HasFatalFailure()) return;
  }
}

INSTANTIATE_TEST_SUITE_P(Methods, CudaGemmGroups,
                         ::testing::Combine(::testing::Values(Method::SqDiff, Method::SqDiffNormed, Method::CCorr,
                                                              Method::CCorrNormed, Method::CCoeff, Method::CCoeffNormed),
                                            ::testing::Values(MemoryKind::Host, MemoryKind::Device),
                                            ::testing::Values(CudaGemmTemplates::Unsigned, CudaGemmTemplates::ZeroMean,
                                                              CudaGemmTemplates::Auto)));

// DeviceShare counts the live engines of each device: shared while two or more are.
TEST(DeviceShare, CountsTheEnginesOfEachDevice) {
  cuda::DeviceShare first(0);
  EXPECT_FALSE(first.shared());
  {
    cuda::DeviceShare second(0), elsewhere(1);
    EXPECT_TRUE(first.shared());
    EXPECT_TRUE(second.shared());
    EXPECT_FALSE(elsewhere.shared());
  }
  EXPECT_FALSE(first.shared());
  cuda::DeviceShare uncounted(-1), beyond(1 << 20);
  EXPECT_FALSE(uncounted.shared());
  EXPECT_FALSE(beyond.shared());
}

// While another engine lives on the device, a GEMM bank's bands are launched in slices
// (GemmBank::sliceRows): the matches stay the CPU engine's, through match() (bands of a host
// frame) and through frames in flight (whole frames, replayed graphs, captured again when the
// sharing changes).
TEST(CudaEngine, GemmGroupSlicedWhileAnotherEngineLivesMatchesTheCpuEngine) {
  SKIP_WITHOUT_GPU();
  Image img = makeImage(700, 1500, Fill::Smooth, int(testSeed() % 1000));
  auto& pick = rng();
  std::vector<TemplateImage> bank;
  for (int i = 0; i < cuda::kGemmGroupLeast + 2; ++i) {
    const int x = int(pick() % (img.width - 24 + 1)), y = int(pick() % (img.height - 20 + 1));
    bank.push_back(i % 4 == 0 ? makeTemplate(24, 20, Fill::Random, "r") : cutTemplate(img, x, y, 24, 20, "c"));
  }
  ASSERT_TRUE(cuda::gemmGroupPays(24, 20, int(bank.size())));
  auto gpu = makeEngine(Backend::Cuda, CudaNumerator::Spatial);
  auto cpu = makeEngine(Backend::Cpu);
  ASSERT_TRUE(gpu->setTemplates(bank).ok());
  ASSERT_TRUE(cpu->setTemplates(bank).ok());
  MatchParams p;
  p.threshold = 0.9;
  p.maxMatches = 4;
  p.nmsIou = 0.3;
  FrameResult want;
  ASSERT_TRUE(cpu->match(img.view(), p, &want).ok());
  const auto check = [&](const char* what) {
    SCOPED_TRACE(what);
    FrameResult got;
    Status s = gpu->match(img.view(), p, &got);
    ASSERT_TRUE(s.ok()) << s.message();
    expectSameMatches(got, want, true);
    for (int f = 0; f < 3; ++f) ASSERT_TRUE(gpu->submit(img.view(), p).ok());
    for (int f = 0; f < 3; ++f) {
      FrameResult inFlight;
      s = gpu->collect(&inFlight);
      ASSERT_TRUE(s.ok()) << s.message();
      expectSameMatches(inFlight, want, true);
    }
  };
  check("alone: whole bands");
  {
    auto other = makeEngine(Backend::Cuda);
    check("another engine on the device: sliced bands");
  }
  check("alone again");
}

// A scaled bank (scales.hpp) is a bank of mixed sizes: the CUDA engine's merged matches equal the
// CPU engine's, scale included, on both numerators.
TEST(CudaEngine, ScaledBankMatchesTheCpuEngine) {
  SKIP_WITHOUT_GPU();
  Image img = makeImage(1920, 1080, Fill::Random, 5);
  std::vector<TemplateImage> originals;
  for (int i = 0; i < 3; ++i) {
    originals.push_back(makeTemplate(24 + 8 * i, 20 + 6 * i, Fill::Random, "t" + std::to_string(i)));
    paste(&img, resizeTemplate(originals.back(), int(std::lround(originals.back().width * 1.25)),
                               int(std::lround(originals.back().height * 1.25))),
          100 + 500 * i, 200 + 100 * i);
    paste(&img, originals.back(), 300 + 500 * i, 700);
    // 1/32 of the unscaled copy redrawn: it scores clearly below the enlarged one (no near-tie
    // that float rounding could reorder).
    for (int y = 0; y < originals.back().height; ++y)
      for (int x = 0; x < originals.back().width; ++x)
        if (rng()() % 32 == 0) img.at(300 + 500 * i + x, 700 + y) = uint8_t(rng()());
  }
  ScaledBank scaled;
  ASSERT_TRUE(scaleTemplates(originals, {0.8, 1.0, 1.25}, &scaled).ok());
  auto cpu = makeEngine(Backend::Cpu);
  ASSERT_TRUE(cpu->setTemplates(scaled.templates).ok());
  MatchParams p;
  p.threshold = 0.9;
  p.maxMatches = 4;
  FrameResult cpuRaw;
  ASSERT_TRUE(cpu->match(img.view(), p, &cpuRaw).ok());
  const FrameResult want = mergeScaledResult(scaled, cpuRaw, p);
  ASSERT_EQ(want.matches.size(), 6u);  // each template at 1.25 and at 1
  for (CudaNumerator numerator : {CudaNumerator::Spatial, CudaNumerator::Fft, CudaNumerator::Auto}) {
    SCOPED_TRACE(int(numerator));
    auto gpu = makeEngine(Backend::Cuda, numerator);
    ASSERT_TRUE(gpu->setTemplates(scaled.templates).ok());
    FrameResult gpuRaw;
    Status s = gpu->match(img.view(), p, &gpuRaw);
    ASSERT_TRUE(s.ok()) << s.message();
    const FrameResult got = mergeScaledResult(scaled, gpuRaw, p);
    expectSameMatches(got, want, numerator == CudaNumerator::Spatial);
    for (std::size_t k = 0; k < want.matches.size() && k < got.matches.size(); ++k)
      EXPECT_EQ(got.matches[k].scale, want.matches[k].scale) << "match " << k;
  }
}

// A view of part of a device frame (the element's search-region on CUDA memory): its first pixel at
// odd offsets, so no row is aligned; the same matches as the CPU on the same part of a host frame.
TEST(CudaEngine, UnalignedDeviceSubFrameMatchesTheCpu) {
  SKIP_WITHOUT_GPU();
  Image img = makeImage(1280, 720, Fill::Random, 0);
  TemplateImage small = makeTemplate(13, 11, Fill::Random, "small"), large = makeTemplate(96, 80, Fill::Random, "large");
  paste(&img, small, 405, 301);
  paste(&img, large, 700, 500);
  const DeviceCopy onDevice(img);
  ASSERT_TRUE(onDevice.ok());
  const uint8_t* dev = onDevice.data();
  const std::size_t pitch = onDevice.pitch();
  auto cpu = makeEngine(Backend::Cpu);
  ASSERT_TRUE(cpu->setTemplates({small, large}).ok());
  MatchParams p;
  p.maxMatches = 2;
  for (CudaNumerator numerator : {CudaNumerator::Spatial, CudaNumerator::Fft, CudaNumerator::Auto}) {
    SCOPED_TRACE(int(numerator));
    auto gpu = makeEngine(Backend::Cuda, numerator);
    ASSERT_TRUE(gpu->setTemplates({small, large}).ok());
    for (auto [x0, y0, w, h] : {std::tuple{1, 3, 901, 601}, std::tuple{397, 299, 411, 287}}) {
      SCOPED_TRACE(::testing::Message() << x0 << "," << y0 << " " << w << "x" << h);
      const FrameView hostPart{img.bytes.data() + std::size_t(y0) * img.stride + x0, w, h, img.stride,
                               MemoryKind::Host};
      const FrameView devicePart{dev + std::size_t(y0) * pitch + x0, w, h, pitch, MemoryKind::Device};
      FrameResult want, got;
      ASSERT_TRUE(cpu->match(hostPart, p, &want).ok());
      Status s = gpu->match(devicePart, p, &got);
      ASSERT_TRUE(s.ok()) << s.message();
      ASSERT_FALSE(want.matches.empty());
      expectSameMatches(got, want, numerator == CudaNumerator::Spatial);
    }
  }
}

TEST(CudaEngine, DevicePinnedAndPageableFramesGiveTheSameMatches) {
  SKIP_WITHOUT_GPU();
  Image img = makeImage(1921, 1079, Fill::Random, 13);
  TemplateImage a = makeTemplate(24, 20, Fill::Random, "a"), b = makeTemplate(130, 90, Fill::Random, "b");
  paste(&img, a, 300, 200);
  paste(&img, b, 1500, 900);
  auto gpu = makeEngine(Backend::Cuda);
  ASSERT_TRUE(gpu->setTemplates({a, b}).ok());
  MatchParams p;
  p.maxMatches = 2;
  FrameResult pageable, device, pinned;
  ASSERT_TRUE(gpu->match(img.view(), p, &pageable).ok());
  ASSERT_EQ(pageable.matches.size(), 2u);
  EXPECT_EQ(pageable.matches[0].x, 300);
  EXPECT_EQ(pageable.matches[0].y, 200);
  EXPECT_EQ(pageable.matches[1].x, 1500);
  EXPECT_EQ(pageable.matches[1].y, 900);

  Status s;
  {
    const DeviceCopy dev(img);
    ASSERT_TRUE(dev.ok());
    s = gpu->match(dev.view(), p, &device);
  }
  ASSERT_TRUE(s.ok()) << s.message();

  uint8_t* host = nullptr;
  ASSERT_EQ(cudaMallocHost(reinterpret_cast<void**>(&host), img.bytes.size()), cudaSuccess);
  std::copy(img.bytes.begin(), img.bytes.end(), host);
  FrameView hv{host, img.width, img.height, img.stride, MemoryKind::Host};
  s = gpu->match(hv, p, &pinned);
  cudaFreeHost(host);
  ASSERT_TRUE(s.ok()) << s.message();
  expectSameMatches(device, pageable, true);
  expectSameMatches(pinned, pageable, true);
}

// A CUDA engine on the fft numerator and a CPU reference engine, both holding bank.
void fftAndReference(const std::vector<TemplateImage>& bank, std::unique_ptr<Engine>* gpu,
                     std::unique_ptr<Engine>* cpu) {
  *gpu = makeEngine(Backend::Cuda, CudaNumerator::Fft);
  *cpu = makeEngine(Backend::Cpu);
  ASSERT_TRUE((*gpu)->setTemplates(bank).ok());
  ASSERT_TRUE((*cpu)->setTemplates(bank).ok());
}

// want: the CPU reference's matches of img; got: the CUDA engine's (its fft path).
void matchOnBoth(Engine& gpu, Engine& cpu, const Image& img, const MatchParams& p, FrameResult* got,
                 FrameResult* want) {
  ASSERT_TRUE(cpu.match(img.view(), p, want).ok());
  Status s = gpu.match(img.view(), p, got);
  ASSERT_TRUE(s.ok()) << s.message();
}

// The fft numerator's map rounds, but its matches' scores and sub-pixel offsets are the CPU
// reference's, bit for bit: each match's window and its four neighbours are rescored exactly (the
// rounded values would move them in their last bits). Matches inside the map, at its first column and
// row, and at its last ones (where the rules take no offset across the edge).
TEST(CudaEngine, FftMatchesTakeTheReferenceScoresAndSubPixelOffsets) {
  SKIP_WITHOUT_GPU();
  const Image img = makeImage(701, 489, Fill::Random);
  const int w = 72, h = 61;
  const std::vector<TemplateImage> bank = {cutTemplate(img, 313, 207, w, h, "inside"),
                                           cutTemplate(img, 0, 0, w, h, "corner"),
                                           cutTemplate(img, 701 - w, 489 - h, w, h, "far corner")};
  std::unique_ptr<Engine> gpu, cpu;
  ASSERT_NO_FATAL_FAILURE(fftAndReference(bank, &gpu, &cpu));
  // Thresholds only the cut places pass (random windows: ccorr-normed ~0.8, sqdiff-normed ~0.5).
  for (auto [method, threshold] : {std::pair{Method::CCoeffNormed, 0.5}, std::pair{Method::CCorrNormed, 0.95},
                                   std::pair{Method::SqDiffNormed, 0.05}}) {
    SCOPED_TRACE(methodName(method));
    MatchParams p;
    p.method = method;
    p.threshold = threshold;
    p.maxMatches = 2;
    FrameResult want, got;
    ASSERT_NO_FATAL_FAILURE(matchOnBoth(*gpu, *cpu, img, p, &got, &want));
    ASSERT_EQ(want.matches.size(), bank.size());
    expectSameMatches(got, want, true);
    EXPECT_NE(want.matches[0].subX, 313.0) << "the inside match has a fractional offset to compare";
    EXPECT_NE(want.matches[0].subY, 207.0);
  }
}

// Every match `got` and `want` both report (a near-tie at the lists' ends may differ) has want's
// score and offsets, bit for bit; at least minShared do; got is ordered best first by those exact
// scores (method: which way is better).
void expectReferenceScoresWhereShared(const FrameResult& got, const FrameResult& want, Method method, int minShared) {
  std::map<std::pair<int, int>, const Match*> reference;
  for (const Match& m : want.matches) reference[{m.x, m.y}] = &m;
  int shared = 0;
  for (const Match& g : got.matches) {
    const auto it = reference.find({g.x, g.y});
    if (it == reference.end()) continue;
    ++shared;
    EXPECT_EQ(g.score, it->second->score) << g.x << "," << g.y;
    EXPECT_EQ(g.subX, it->second->subX) << g.x << "," << g.y;
    EXPECT_EQ(g.subY, it->second->subY) << g.x << "," << g.y;
  }
  EXPECT_GE(shared, minShared);
  const double sign = goodnessSign(method);
  for (std::size_t k = 1; k < got.matches.size(); ++k)
    EXPECT_GE(sign * got.matches[k - 1].score, sign * got.matches[k].score) << "match " << k;
}

// More reported matches than the exact rescoring kernel takes at once (they take turns): the
// reference's scores and offsets, and the list ordered by them.
TEST(CudaEngine, ManyFftMatchesTakeTheReferenceScoresAndSubPixelOffsets) {
  SKIP_WITHOUT_GPU();
  const Image img = makeImage(701, 489, Fill::Random);
  const TemplateImage t = cutTemplate(img, 200, 100, 40, 40);
  std::unique_ptr<Engine> gpu, cpu;
  ASSERT_NO_FATAL_FAILURE(fftAndReference({t}, &gpu, &cpu));
  MatchParams p;
  p.method = Method::CCoeffNormed;
  p.threshold = 0.0;
  p.nmsIou = 1.0;  // no box dropped: the map's 300 best local maxima
  p.maxMatches = 300;
  FrameResult want, got;
  ASSERT_NO_FATAL_FAILURE(matchOnBoth(*gpu, *cpu, img, p, &got, &want));
  ASSERT_EQ(want.matches.size(), 300u);
  ASSERT_EQ(got.matches.size(), 300u);
  expectReferenceScoresWhereShared(got, want, p.method, 290);
}

// A large template (many blocks sum each match: slices ending mid-row) on one engine whose
// max-matches changes from frame to frame (the rescoring's sums move over old kept matches and
// must start from zero again): the reference's scores and offsets every time.
TEST(CudaEngine, FftExactRescoringKeepsLargeTemplatesAndChangingMaxMatchesExact) {
  SKIP_WITHOUT_GPU();
  const Image img = makeImage(640, 480, Fill::Random);
  const TemplateImage t = cutTemplate(img, 301, 197, 211, 157);
  std::unique_ptr<Engine> gpu, cpu;
  ASSERT_NO_FATAL_FAILURE(fftAndReference({t}, &gpu, &cpu));
  for (int maxMatches : {1, 120, 3, 40, 1, 120}) {
    SCOPED_TRACE("max-matches " + std::to_string(maxMatches));
    MatchParams p;
    p.method = Method::SqDiffNormed;
    p.threshold = 2.0;  // every local minimum
    p.nmsIou = 1.0;
    p.maxMatches = maxMatches;
    FrameResult want, got;
    ASSERT_NO_FATAL_FAILURE(matchOnBoth(*gpu, *cpu, img, p, &got, &want));
    ASSERT_EQ(got.matches.size(), std::size_t(maxMatches));
    ASSERT_TRUE(got.best[0] && want.best[0]);
    EXPECT_EQ(got.best[0]->x, 301);
    EXPECT_EQ(got.best[0]->score, want.best[0]->score);
    EXPECT_EQ(got.best[0]->subX, want.best[0]->subX);
    expectReferenceScoresWhereShared(got, want, p.method, maxMatches - maxMatches / 10);
  }
}

// The float fft path on near-flat windows: its rounding bound does not clear them, so they are
// recomputed exactly (bit-identical to the CPU Reference), and the rest stays within 1e-4.
TEST(CudaEngine, FloatFftRecomputesNearFlatWindowsExactly) {
  SKIP_WITHOUT_GPU();
  const int W = 800, H = 600;
  Image img = makeImage(W, H, Fill::Random, 3);
  for (int y = 0; y < H; ++y)
    for (int x = 0; x < W / 2; ++x) img.at(x, y) = uint8_t(200 + rng()() % 2);  // bright, near flat
  TemplateImage t = makeTemplate(37, 29, Fill::Random);
  std::unique_ptr<Engine> gpu, cpu;
  ASSERT_NO_FATAL_FAILURE(fftAndReference({t}, &gpu, &cpu));
  auto* cuda = dynamic_cast<cuda::CudaEngine*>(gpu.get());
  ASSERT_NE(cuda, nullptr);
  for (Method method : {Method::CCoeffNormed, Method::CCorrNormed}) {
    std::vector<double> want, got;
    ASSERT_TRUE(cpu->scoreMap(img.view(), method, 0, &want).ok());
    Status s = gpu->scoreMap(img.view(), method, 0, &got);
    ASSERT_TRUE(s.ok()) << s.message();
    const int recomputed = cuda->lastRecomputeCount();
    const int mapW = W - t.width + 1, mapH = H - t.height + 1;
    if (method == Method::CCoeffNormed) {
      EXPECT_GE(recomputed, (W / 2 - t.width) * mapH) << "near-flat windows";
    }
    for (int y = 0; y < mapH; ++y) {
      for (int x = 0; x < mapW; ++x) {
        const std::size_t i = std::size_t(y) * mapW + x;
        if (method == Method::CCoeffNormed && x + t.width <= W / 2)
          ASSERT_EQ(got[i], want[i]) << "near-flat window " << x << "," << y;
        else
          ASSERT_NEAR(got[i], want[i], 1e-4) << methodName(method) << " at " << x << "," << y;
      }
    }
  }
}

// Two engines on the fft numerator: `scanned` forced to scan its maps for peaks, `other`'s hand-off
// left to the caller (cuda: its CudaEngine).
struct FftEnginePair {
  std::unique_ptr<Engine> scanned, other;
  cuda::CudaEngine* cuda = nullptr;
};

FftEnginePair fftEnginesOneScanning() {
  EngineOptions options;
  options.backend = Backend::Cuda;
  options.cudaNumerator = CudaNumerator::Fft;
  FftEnginePair pair{makeEngine(options), makeEngine(options)};
  pair.cuda = dynamic_cast<cuda::CudaEngine*>(pair.other.get());
  if (auto* scanning = dynamic_cast<cuda::CudaEngine*>(pair.scanned.get())) scanning->setFftPeakHandoff(false);
  return pair;
}

// Float-fft templates whose score and recompute kernels hand their peaks over
// (CudaEngine::setFftPeakHandoff) give the matches of the scan of the whole map, bit for bit:
// every method, no matches kept, a few (select) and many (sorted NMS), on frames whose best lies
// among the recomputed windows (a bright near-flat half, the template cut from it), a flat frame
// (every window flat), noise with pasted templates, and maps whose sizes are no multiple of the
// score kernel's blocks. (The map scan's own agreement with the CPU is CudaScoreMap's and
// CudaBank's.)
TEST(CudaEngine, FftPeakHandoffGivesTheMapScansMatches) {
  SKIP_WITHOUT_GPU();
  const int W = 301, H = 203;
  std::vector<std::pair<std::string, Image>> frames;
  frames.emplace_back("noise", makeImage(W, H, Fill::Random, 3));
  // The other half noise: a window is recomputed when 2 errorScale sqrt(frameNormSq) >
  // kMaxScoreError sqrt(its variance sum) (whatever the template), so the frame's norm must be
  // large. With a smooth half (200 +- 20) frameNormSq is ~3.5e6: only variance sums below ~120
  // are recomputed, and the near-flat windows' are ~340 (none was). Noise gives ~2.5e8 (~8600).
  Image halfFlat = makeImage(W, H, Fill::Random, 0);
  for (int y = 0; y < H; ++y)
    for (int x = 0; x < W / 2; ++x) halfFlat.at(x, y) = uint8_t(200 + rng()() % 2);  // bright, near flat
  frames.emplace_back("half near-flat", halfFlat);
  frames.emplace_back("flat", makeImage(W, H, Fill::Flat, 1));
  // The near-flat cut last: lastRecomputeCount() is the last fft template's.
  std::vector<TemplateImage> bank = {makeTemplate(1, 1, Fill::Random, "1x1"),
                                     cutTemplate(frames[0].second, 40, 50, 37, 29, "noise cut"),
                                     makeTemplate(64, 64, Fill::Smooth, "smooth"),
                                     cutTemplate(halfFlat, 20, 60, 33, 41, "near-flat cut")};
  auto [scanned, handed, handedCuda] = fftEnginesOneScanning();
  ASSERT_NE(handedCuda, nullptr);
  handedCuda->setFftPeakHandoff(true);
  for (Engine* e : {scanned.get(), handed.get()}) ASSERT_TRUE(e->setTemplates(bank).ok());
  bool anyRecomputed = false;
  std::size_t matchesSeen = 0;
  for (const auto& [name, img] : frames) {
    for (int m = 0; m <= 5; ++m) {
      for (int maxMatches : {0, 3, 80}) {
        const MatchParams p =
            paramsFor(static_cast<Method>(m), MethodThresholds{0.8, 0.2, 30000.0, 2e6, 1e4}, maxMatches);
        FrameResult want, got;
        Status s = scanned->match(img.view(), p, &want);
        ASSERT_TRUE(s.ok()) << s.message();
        s = handed->match(img.view(), p, &got);
        ASSERT_TRUE(s.ok()) << s.message();
        anyRecomputed = anyRecomputed || handedCuda->lastRecomputeCount() > 0;
        SCOPED_TRACE(name + ", " + methodName(p.method) + ", max-matches " + std::to_string(maxMatches));
        expectSameMatches(got, want, true);
        if (HasFatalFailure()) return;
        matchesSeen += got.matches.size();
      }
    }
  }
  EXPECT_TRUE(anyRecomputed) << "no window was recomputed: the recompute kernel's hand-off went untested";
  EXPECT_GT(matchesSeen, 0u) << "no match kept: the above lists went untested";
}

// By default the size plan picks the hand-off per template (cuda::fftPeakHandoffPays): a 128²
// template scans its map on 1080p frames and hands its peaks over on 2160p ones, with the
// matches (pasted copies of the template among noise, several kept) of an engine forced to scan,
// bit for bit; an explicit setting overrides the plan and setFftPeakHandoffAuto() gives it back.
TEST(CudaEngine, FftPeakHandoffPickedByMapSize) {
  SKIP_WITHOUT_GPU();
  auto [scanned, picked, pickedCuda] = fftEnginesOneScanning();
  ASSERT_NE(pickedCuda, nullptr);
  const TemplateImage t = makeTemplate(128, 128, Fill::Random, "128 noise");
  for (Engine* e : {picked.get(), scanned.get()}) ASSERT_TRUE(e->setTemplates({t}).ok());
  for (auto [width, height, handedOver] : {std::tuple{1920, 1080, false}, std::tuple{3840, 2160, true}}) {
    SCOPED_TRACE(std::to_string(width) + "x" + std::to_string(height));
    Image img = makeImage(width, height, Fill::Random);
    paste(&img, t, 17, 23);
    paste(&img, t, width - 128 - 5, height - 128);
    paste(&img, t, width / 2 + 1, height / 3);
    const MatchParams p = paramsFor(Method::CCoeffNormed, MethodThresholds{0.5, 0.2, 30000.0, 2e6, 1e4}, 8);
    FrameResult want, got;
    ASSERT_TRUE(scanned->match(img.view(), p, &want).ok());
    ASSERT_TRUE(picked->match(img.view(), p, &got).ok());
    EXPECT_EQ(pickedCuda->fftPeaksHandedOver(0), handedOver);
    EXPECT_EQ(got.matches.size(), 3u);
    expectSameMatches(got, want, true);
    if (HasFatalFailure()) return;
    // An explicit setting wins over the plan; auto gives the plan's choice back.
    pickedCuda->setFftPeakHandoff(!handedOver);
    ASSERT_TRUE(picked->match(img.view(), p, &got).ok());
    EXPECT_EQ(pickedCuda->fftPeaksHandedOver(0), !handedOver);
    expectSameMatches(got, want, true);
    pickedCuda->setFftPeakHandoffAuto();
    ASSERT_TRUE(picked->match(img.view(), p, &got).ok());
    EXPECT_EQ(pickedCuda->fftPeaksHandedOver(0), handedOver);
  }
}

// Banks of fused spatial templates upload host frames in bands of rows and score each band as
// it arrives: the matches equal those of the same frame already on the device (one launch),
// for templates straddling band edges and at the bottom rows, pinned and pageable.
// EngineOptions::cudaStagingCopy = HostFunction: submit() leaves a pageable frame's copy into the
// staging buffer to a host function on the copy stream. A stream of distinct pageable frames (odd
// strides, the first banded with nothing in flight, then 1 to 3 in flight, a frame size change
// on the way), a fused bank and one with a SAT (a 100x90 template): every result equals the
// default engine's (the calling thread copies), bit for bit.
TEST(CudaEngine, HostFunctionStagingGivesTheCallerThreadsMatches) {
  SKIP_WITHOUT_GPU();
  EngineOptions o;
  o.backend = Backend::Cuda;
  o.cudaNumerator = CudaNumerator::Spatial;
  std::unique_ptr<Engine> caller, hostFunction;
  ASSERT_TRUE(Engine::create(o, &caller).ok());
  o.cudaStagingCopy = CudaStagingCopy::HostFunction;
  ASSERT_TRUE(Engine::create(o, &hostFunction).ok());
  const std::vector<std::vector<TemplateImage>> banks = {
      {makeTemplate(16, 16, Fill::Random, "a"), makeTemplate(31, 17, Fill::Random, "b")},  // fused: banded uploads
      {makeTemplate(16, 16, Fill::Random, "a"), makeTemplate(100, 90, Fill::Random, "large")}};  // SAT
  for (std::size_t k = 0; k < banks.size(); ++k) {
    ASSERT_TRUE(caller->setTemplates(banks[k]).ok());
    ASSERT_TRUE(hostFunction->setTemplates(banks[k]).ok());
    for (int depth = 1; depth <= hostFunction->maxFramesInFlight(); ++depth) {
      SCOPED_TRACE("bank " + std::to_string(k) + ", " + std::to_string(depth) + " in flight");
      // Each frame its own buffer, valid until collected; sizes change after the fourth.
      std::vector<Image> frames;
      for (int n = 0; n < 9; ++n) {
        const int W = n < 4 ? 1920 : 641, H = n < 4 ? 1080 : 359;
        frames.push_back(makeImage(W, H, Fill::Random, std::size_t(n % 3) * 7));
        paste(&frames.back(), banks[k][0], 37 * n + 5, 19 * n + 3);
      }
      MatchParams p;
      p.threshold = 0.5;
      p.maxMatches = 3;
      std::vector<FrameResult> want(frames.size()), got(frames.size());
      for (std::size_t n = 0; n < frames.size(); ++n) {
        Status s = caller->match(frames[n].view(), p, &want[n]);
        ASSERT_TRUE(s.ok()) << s.message();
      }
      std::size_t collected = 0;
      for (std::size_t n = 0; n < frames.size(); ++n) {
        if (n == 4) {  // the size changes: the frames in flight first
          while (hostFunction->framesInFlight() > 0) ASSERT_TRUE(hostFunction->collect(&got[collected++]).ok());
        }
        Status s = hostFunction->submit(frames[n].view(), p);
        ASSERT_TRUE(s.ok()) << s.message();
        if (hostFunction->framesInFlight() == depth) {
          ASSERT_TRUE(hostFunction->collect(&got[collected++]).ok());
        }
      }
      while (hostFunction->framesInFlight() > 0) ASSERT_TRUE(hostFunction->collect(&got[collected++]).ok());
      ASSERT_EQ(collected, frames.size());
      for (std::size_t n = 0; n < frames.size(); ++n) {
        SCOPED_TRACE("frame " + std::to_string(n));
        ASSERT_FALSE(got[n].matches.empty());
        expectSameMatches(got[n], want[n], true);
        if (HasFatalFailure()) return;
      }
    }
  }
}

TEST(CudaEngine, BandedUploadsGiveTheDeviceFrameMatches) {
  SKIP_WITHOUT_GPU();
  for (auto [W, H] : {std::pair{1920, 1080}, std::pair{3840, 2160}}) {
    Image img = makeImage(W, H, Fill::Random, 5);
    std::vector<TemplateImage> bank = {makeTemplate(40, 40, Fill::Random, "a"),
                                       makeTemplate(20, 64, Fill::Random, "b"),
                                       makeTemplate(64, 8, Fill::Random, "c")};
    const std::pair<int, int> at[3] = {{300, 250}, {W - 20, 500}, {17, H - 8}};
    for (int i = 0; i < 3; ++i) paste(&img, bank[i], at[i].first, at[i].second);
    auto gpu = makeEngine(Backend::Cuda, CudaNumerator::Spatial);
    ASSERT_TRUE(gpu->setTemplates(bank).ok());
    MatchParams p;
    p.maxMatches = 2;
    p.threshold = 0.5;

    uint8_t* dev = nullptr;
    std::size_t pitch = 0;
    ASSERT_EQ(cudaMallocPitch(reinterpret_cast<void**>(&dev), &pitch, img.width, img.height), cudaSuccess);
    ASSERT_EQ(cudaMemcpy2D(dev, pitch, img.bytes.data(), img.stride, img.width, img.height, cudaMemcpyHostToDevice), cudaSuccess);
    FrameResult device, pageable, pinned;
    Status s = gpu->match(FrameView{dev, img.width, img.height, pitch, MemoryKind::Device}, p, &device);
    cudaFree(dev);
    ASSERT_TRUE(s.ok()) << s.message();
    ASSERT_EQ(device.matches.size(), 3u);
    for (const Match& m : device.matches) {
      EXPECT_EQ(m.x, at[m.templateIndex].first) << W << "x" << H << " template " << m.templateIndex;
      EXPECT_EQ(m.y, at[m.templateIndex].second) << W << "x" << H << " template " << m.templateIndex;
    }

    s = gpu->match(img.view(), p, &pageable);
    ASSERT_TRUE(s.ok()) << s.message();
    uint8_t* host = nullptr;
    ASSERT_EQ(cudaMallocHost(reinterpret_cast<void**>(&host), img.bytes.size()), cudaSuccess);
    std::copy(img.bytes.begin(), img.bytes.end(), host);
    s = gpu->match(FrameView{host, img.width, img.height, img.stride, MemoryKind::Host}, p, &pinned);
    cudaFreeHost(host);
    ASSERT_TRUE(s.ok()) << s.message();
    expectSameMatches(pageable, device, true);
    expectSameMatches(pinned, device, true);
    for (std::size_t i = 0; i < bank.size(); ++i) {
      EXPECT_EQ(pinned.best[i]->subX, device.best[i]->subX);
      EXPECT_EQ(pinned.best[i]->subY, device.best[i]->subY);
    }
  }
}

TEST(CudaEngine, FrameSizeAndBankChangesBetweenCalls) {
  SKIP_WITHOUT_GPU();
  auto gpu = makeEngine(Backend::Cuda);
  auto cpu = makeEngine(Backend::Cpu);
  TemplateImage t = makeTemplate(40, 30, Fill::Random);
  ASSERT_TRUE(gpu->setTemplates({t}).ok());
  ASSERT_TRUE(cpu->setTemplates({t}).ok());
  MatchParams p;
  p.maxMatches = 4;
  for (auto [w, h] : {std::pair{640, 480}, std::pair{1920, 1080}, std::pair{333, 211}, std::pair{640, 480}}) {
    Image img = makeImage(w, h, Fill::Random);
    paste(&img, t, w / 3, h / 4);
    FrameResult want, got;
    ASSERT_TRUE(cpu->match(img.view(), p, &want).ok());
    Status s = gpu->match(img.view(), p, &got);
    ASSERT_TRUE(s.ok()) << s.message();
    auto* cuda = dynamic_cast<cuda::CudaEngine*>(gpu.get());
    ASSERT_NE(cuda, nullptr);
    expectSameMatches(got, want, cuda->numeratorFor(0) == CudaNumerator::Spatial);
  }
  TemplateImage u = makeTemplate(8, 8, Fill::Random);
  ASSERT_TRUE(gpu->setTemplates({u, t}).ok());
  ASSERT_TRUE(cpu->setTemplates({u, t}).ok());
  Image img = makeImage(640, 480, Fill::Random);
  paste(&img, u, 10, 20);
  FrameResult want, got;
  ASSERT_TRUE(cpu->match(img.view(), p, &want).ok());
  ASSERT_TRUE(gpu->match(img.view(), p, &got).ok());
  ASSERT_FALSE(got.matches.empty());
  EXPECT_EQ(got.matches[0].x, 10);
  EXPECT_EQ(got.matches[0].y, 20);
}

// Frames in flight: each collected result equals match() of the same frame, in submission order,
// whatever mix of sizes and memory (pageable, pinned, device) the frames have, for banks taking
// the banded fused path, the SAT + fft path, and both.
TEST(CudaEngine, SubmittedFramesGiveTheirOwnResultsInOrder) {
  SKIP_WITHOUT_GPU();
  struct BankCase {
    const char* name;
    std::vector<std::pair<int, int>> sizes;
    CudaNumerator numerator;
  };
  const BankCase banks[] = {
      {"fused, banded uploads", {{24, 24}, {9, 40}}, CudaNumerator::Spatial},
      {"fft with SAT", {{100, 70}}, CudaNumerator::Fft},
      {"mixed", {{16, 16}, {120, 90}}, CudaNumerator::Auto},
  };
  const std::pair<int, int> frameSizes[] = {{1920, 1080}, {641, 479}, {1920, 1080}, {333, 1201}, {800, 600}};
  for (const BankCase& bc : banks) {
    SCOPED_TRACE(bc.name);
    std::vector<TemplateImage> bank;
    for (auto [w, h] : bc.sizes) bank.push_back(makeTemplate(w, h, Fill::Random));
    auto gpu = makeEngine(Backend::Cuda, bc.numerator);
    ASSERT_TRUE(gpu->setTemplates(bank).ok());
    std::vector<Image> frames;
    for (std::size_t f = 0; f < std::size(frameSizes); ++f) {
      frames.push_back(makeImage(frameSizes[f].first, frameSizes[f].second, Fill::Random, f));
      for (std::size_t i = 0; i < bank.size(); ++i)
        paste(&frames.back(), bank[i], int(17 * f + 150 * i) % (frameSizes[f].first - bank[i].width),
              int(11 * f + 200 * i) % (frameSizes[f].second - bank[i].height));
    }
    // Frame memory: pageable, pinned, device in turn; all of it stays valid until collected.
    std::vector<uint8_t*> pinned(frames.size(), nullptr), device(frames.size(), nullptr);
    std::vector<FrameView> views;
    for (std::size_t f = 0; f < frames.size(); ++f) {
      const Image& img = frames[f];
      FrameView v = img.view();
      if (f % 3 == 1) {
        ASSERT_EQ(cudaMallocHost(reinterpret_cast<void**>(&pinned[f]), img.bytes.size()), cudaSuccess);
        std::copy(img.bytes.begin(), img.bytes.end(), pinned[f]);
        v.data = pinned[f];
      } else if (f % 3 == 2) {
        std::size_t pitch = 0;
        ASSERT_EQ(cudaMallocPitch(reinterpret_cast<void**>(&device[f]), &pitch, img.width, img.height), cudaSuccess);
        ASSERT_EQ(cudaMemcpy2D(device[f], pitch, img.bytes.data(), img.stride, img.width, img.height,
                               cudaMemcpyHostToDevice), cudaSuccess);
        v = FrameView{device[f], img.width, img.height, pitch, MemoryKind::Device};
      }
      views.push_back(v);
    }
    MatchParams p;
    p.maxMatches = 3;
    p.threshold = 0.5;
    std::vector<FrameResult> collected;
    std::size_t submitted = 0;
    while (collected.size() < frames.size()) {
      while (submitted < frames.size() && gpu->framesInFlight() < gpu->maxFramesInFlight()) {
        Status s = gpu->submit(views[submitted], p);
        ASSERT_TRUE(s.ok()) << s.message();
        ++submitted;
      }
      if (gpu->framesInFlight() == gpu->maxFramesInFlight()) {
        EXPECT_FALSE(gpu->submit(views[0], p).ok()) << "more than maxFramesInFlight";
        FrameResult r;
        EXPECT_FALSE(gpu->match(views[0], p, &r).ok()) << "match with frames in flight";
        std::vector<double> map;
        EXPECT_FALSE(gpu->scoreMap(views[0], Method::CCoeffNormed, 0, &map).ok());
        EXPECT_FALSE(gpu->setTemplates(bank).ok()) << "a new bank with frames in flight";
      }
      FrameResult r;
      Status s = gpu->collect(&r);
      ASSERT_TRUE(s.ok()) << s.message();
      collected.push_back(std::move(r));
    }
    FrameResult none;
    EXPECT_FALSE(gpu->collect(&none).ok());
    for (std::size_t f = 0; f < frames.size(); ++f) {
      FrameResult alone;
      Status s = gpu->match(views[f], p, &alone);
      ASSERT_TRUE(s.ok()) << s.message();
      expectSameMatches(collected[f], alone, true);
      ASSERT_EQ(collected[f].best.size(), bank.size());
      for (std::size_t i = 0; i < bank.size(); ++i) {
        ASSERT_TRUE(collected[f].best[i].has_value());
        EXPECT_EQ(collected[f].best[i]->x, alone.best[i]->x) << "frame " << f;
        EXPECT_EQ(collected[f].best[i]->score, alone.best[i]->score) << "frame " << f;
      }
    }
    for (uint8_t* q : pinned) if (q) cudaFreeHost(q);
    for (uint8_t* q : device) if (q) cudaFree(q);
  }
}

// A flat 1080p frame and a flat template: every position scores 1 and is a candidate. Huge
// max-matches must finish (the round-per-match select was quadratic: hours) with the CPU's
// matches: every position with nms-iou 1, boxes tiling the frame with nms-iou 0.
TEST(CudaEngine, HugeMaxMatchesOnAFlatFrameFinishesWithTheCpuMatches) {
  SKIP_WITHOUT_GPU();
  Image img = makeImage(1920, 1080, Fill::Flat);
  TemplateImage t = makeTemplate(8, 8, Fill::Flat);
  auto gpu = makeEngine(Backend::Cuda, CudaNumerator::Spatial);
  auto cpu = makeEngine(Backend::Cpu);
  ASSERT_TRUE(gpu->setTemplates({t}).ok());
  ASSERT_TRUE(cpu->setTemplates({t}).ok());
  for (double iou : {1.0, 0.0, 0.5}) {
    MatchParams p;
    p.maxMatches = 2147483647;
    p.nmsIou = iou;
    p.threshold = 0.5;
    FrameResult want, got;
    ASSERT_TRUE(cpu->match(img.view(), p, &want).ok());
    Status s = gpu->match(img.view(), p, &got);
    ASSERT_TRUE(s.ok()) << s.message();
    if (iou == 1.0) {
      ASSERT_EQ(got.matches.size(), std::size_t(1913) * 1073);
    }
    if (iou == 0.0) {
      ASSERT_EQ(got.matches.size(), std::size_t(1913 / 8 + 1) * (1073 / 8 + 1));
    }
    expectSameMatches(got, want, true);
  }
}

// Frames in flight replay a captured graph per slot and lane (for frames with a SAT, what
// follows the upload, the SAT and the forward transform); whatever changes between frames (the
// rule, max-matches, the frame size, the bank, the fft peak hand-off) must give the CPU's
// matches, and every host frame's matching behind a frame in flight is a graph.
struct GraphedBanks {
  const char* name;
  CudaNumerator numerator;
  std::vector<TemplateImage> first, second;
};

void expectGraphedFramesFollowEveryChange(const GraphedBanks& banks) {
  SCOPED_TRACE(banks.name);
  auto gpu = makeEngine(Backend::Cuda, banks.numerator);
  auto cpu = makeEngine(Backend::Cpu);
  auto* cuda = dynamic_cast<cuda::CudaEngine*>(gpu.get());
  ASSERT_NE(cuda, nullptr);
  struct Step {
    int w, h;
    Method method;
    double threshold;
    int maxMatches;
    double nmsIou;
    int peakHandoff;  // fft peaks: 0 the plan's, 1 scanned, 2 handed over
  };
  const Step steps[] = {{640, 360, Method::CCoeffNormed, 0.8, 1, 0.3, 0}, {640, 360, Method::CCoeffNormed, 0.8, 1, 0.3, 0},
                        {640, 360, Method::CCoeffNormed, 0.5, 4, 0.3, 2}, {640, 360, Method::SqDiff, 1e9, 3, 0.0, 2},
                        {801, 333, Method::CCorrNormed, 0.9, 2, 0.5, 1},  {801, 333, Method::CCorrNormed, 0.9, 2, 0.5, 2},
                        {640, 360, Method::CCoeffNormed, 0.8, 1, 0.3, 0}, {640, 360, Method::CCoeffNormed, 0.8, 1, 0.3, 0},
                        {640, 360, Method::CCoeffNormed, 0.8, 1, 0.3, 0}};
  for (int round = 0; round < 2; ++round) {
    const std::vector<TemplateImage>& bank = round == 0 ? banks.first : banks.second;  // a new bank: new graphs
    ASSERT_TRUE(gpu->setTemplates(bank).ok());
    ASSERT_TRUE(cpu->setTemplates(bank).ok());
    std::vector<Image> frames;
    std::vector<MatchParams> params;
    for (const Step& st : steps) {
      frames.push_back(makeImage(st.w, st.h, Fill::Random));
      for (std::size_t i = 0; i < bank.size(); ++i)
        paste(&frames.back(), bank[i], int(40 + 150 * i + frames.size()), int(20 + 30 * i));
      MatchParams p;
      p.method = st.method;
      p.threshold = st.threshold;
      p.maxMatches = st.maxMatches;
      p.nmsIou = st.nmsIou;
      params.push_back(p);
    }
    std::vector<FrameResult> collected;
    for (std::size_t f = 0; f < frames.size(); ++f) {
      if (gpu->framesInFlight() == 2) {
        collected.emplace_back();
        ASSERT_TRUE(gpu->collect(&collected.back()).ok());
      }
      if (steps[f].peakHandoff == 0) cuda->setFftPeakHandoffAuto();
      else cuda->setFftPeakHandoff(steps[f].peakHandoff == 2);
      Status s = gpu->submit(frames[f].view(), params[f]);
      ASSERT_TRUE(s.ok()) << s.message();
      // Alone in flight, an all-fused bank's frame is uploaded in bands (scores start with the
      // first rows): calls one by one.
      if (f > 0 || cuda->usesSat()) {
        EXPECT_TRUE(cuda->lastFrameGraphed()) << "round " << round << " frame " << f;
        EXPECT_EQ(cuda->lastFrameTablesGraphed(), cuda->usesSat()) << "round " << round << " frame " << f;
      }
    }
    while (gpu->framesInFlight() > 0) {
      collected.emplace_back();
      ASSERT_TRUE(gpu->collect(&collected.back()).ok());
    }
    for (std::size_t f = 0; f < frames.size(); ++f) {
      FrameResult want;
      ASSERT_TRUE(cpu->match(frames[f].view(), params[f], &want).ok());
      SCOPED_TRACE("round " + std::to_string(round) + " frame " + std::to_string(f));
      expectSameMatches(collected[f], want, true);
    }
  }
}

TEST(CudaEngine, FramesInFlightFollowEveryChangeOfRuleSizeAndBank) {
  SKIP_WITHOUT_GPU();
  const GraphedBanks cases[] = {
      {"all fused", CudaNumerator::Spatial,
       {makeTemplate(16, 16, Fill::Random), makeTemplate(24, 9, Fill::Random)},
       {makeTemplate(32, 20, Fill::Random), makeTemplate(8, 8, Fill::Random), makeTemplate(20, 32, Fill::Random)}},
      // Larger than the fused kernel takes: the SAT and the spatial numerator.
      {"spatial with a SAT", CudaNumerator::Spatial,
       {makeTemplate(72, 65, Fill::Random), makeTemplate(16, 16, Fill::Random)},
       {makeTemplate(80, 70, Fill::Random)}},
      // The float fft path: the callback's template pointer, the recompute list, scan and hand-off.
      {"fft", CudaNumerator::Fft,
       {makeTemplate(37, 29, Fill::Random), makeTemplate(64, 64, Fill::Random)},
       {makeTemplate(96, 80, Fill::Random), makeTemplate(8, 8, Fill::Random), makeTemplate(20, 32, Fill::Random)}},
  };
  for (const GraphedBanks& banks : cases) ASSERT_NO_FATAL_FAILURE(expectGraphedFramesFollowEveryChange(banks));
}

// A SAT built inside a replayed graph gets a new stamp each replay (SatTables::restamp): past the
// stamps' cycle of 4095 builds (the carry words cleared) every frame still gets the CPU's matches.
// One lane, so one builder sees every build.
TEST(CudaEngine, GraphedSatBuildsStayExactPastTheStampCycle) {
  SKIP_WITHOUT_GPU();
  EngineOptions o;
  o.backend = Backend::Cuda;
  o.cudaNumerator = CudaNumerator::Fft;
  o.cudaMatchingLanes = 1;
  auto gpu = makeEngine(o);
  auto cpu = makeEngine(Backend::Cpu);
  auto* cuda = dynamic_cast<cuda::CudaEngine*>(gpu.get());
  ASSERT_NE(cuda, nullptr);
  const std::vector<TemplateImage> bank = {makeTemplate(24, 20, Fill::Random)};
  ASSERT_TRUE(gpu->setTemplates(bank).ok());
  ASSERT_TRUE(cpu->setTemplates(bank).ok());
  std::vector<Image> frames = {makeImage(130, 70, Fill::Random), makeImage(130, 70, Fill::Random)};
  paste(&frames[0], bank[0], 11, 7);
  paste(&frames[1], bank[0], 97, 44);
  MatchParams p;
  p.threshold = 0.5;
  p.maxMatches = 3;
  std::vector<FrameResult> want(2);
  for (int f = 0; f < 2; ++f) ASSERT_TRUE(cpu->match(frames[std::size_t(f)].view(), p, &want[std::size_t(f)]).ok());
  constexpr int kFrames = 4300;  // past 4095 builds
  int collected = 0, tablesGraphed = 0;
  for (int f = 0; f < kFrames || gpu->framesInFlight() > 0;) {
    if (f < kFrames && gpu->framesInFlight() < 2) {
      Status s = gpu->submit(frames[std::size_t(f % 2)].view(), p);
      ASSERT_TRUE(s.ok()) << s.message();
      tablesGraphed += cuda->lastFrameTablesGraphed() ? 1 : 0;
      ++f;
      continue;
    }
    FrameResult got;
    ASSERT_TRUE(gpu->collect(&got).ok());
    SCOPED_TRACE("frame " + std::to_string(collected));
    ASSERT_NO_FATAL_FAILURE(expectSameMatches(got, want[std::size_t(collected % 2)], true));
    ++collected;
  }
  EXPECT_EQ(collected, kFrames);
  EXPECT_EQ(tablesGraphed, kFrames);
}

TEST(CudaEngine, HugeMaxMatchesIsBoundedByThePositions) {
  // The element accepts max-matches up to INT_MAX; the results buffer must not be sized by it.
  SKIP_WITHOUT_GPU();
  for (CudaNumerator numerator : {CudaNumerator::Spatial, CudaNumerator::Fft}) {
    auto gpu = makeEngine(Backend::Cuda, numerator);
    auto cpu = makeEngine(Backend::Cpu);
    TemplateImage t = makeTemplate(9, 7, Fill::Random);
    ASSERT_TRUE(gpu->setTemplates({t}).ok());
    ASSERT_TRUE(cpu->setTemplates({t}).ok());
    Image img = makeImage(61, 43, Fill::Random, 5);
    paste(&img, t, 30, 11);
    for (Method method : {Method::SqDiff, Method::CCoeffNormed}) {
      MatchParams p;
      p.method = method;
      p.maxMatches = 2147483647;
      p.nmsIou = 0.0;
      p.threshold = method == Method::SqDiff ? 1e12 : -1.0;  // every local extremum passes
      FrameResult want, got;
      ASSERT_TRUE(cpu->match(img.view(), p, &want).ok());
      Status s = gpu->match(img.view(), p, &got);
      ASSERT_TRUE(s.ok()) << s.message();
      ASSERT_GT(want.matches.size(), 1u);
      if (numerator == CudaNumerator::Spatial) {
        expectSameMatches(got, want, true);  // exact integer path: identical lists
      } else {
        // Float scores may order near-ties differently among hundreds of weak peaks; the
        // pasted copy must still come first.
        ASSERT_FALSE(got.matches.empty());
        EXPECT_EQ(got.matches[0].x, 30);
        EXPECT_EQ(got.matches[0].y, 11);
      }
    }
  }
}

// The lane count is checked before any device is touched: the error names the option on any host.
TEST(CudaEngine, MatchingLanesOutOfRangeAreRefused) {
  for (int lanes : {0, -1, Engine::kMaxFramesInFlight + 1}) {
    EngineOptions o;
    o.backend = Backend::Cuda;
    o.cudaMatchingLanes = lanes;
    std::unique_ptr<Engine> e;
    const Status s = cuda::CudaEngine::create(o, &e);
    ASSERT_FALSE(s.ok()) << lanes;
    EXPECT_NE(s.message().find("cudaMatchingLanes " + std::to_string(lanes) + " is out of range"), std::string::npos)
        << s.message();
    EXPECT_EQ(e, nullptr);
  }
}

// Frames in flight on 1, 2 or 3 matching lanes (each its own streams and scratch): the lanes taken
// (consecutive frames in flight on different lanes, match() on one) and every frame's matches the
// same as one lane's, for banks through each path: fused alone, a GEMM group, the float fft with
// its exact rescoring, a masked template (its lanes fork from the matching lane's stream), and a
// frame size that changes in the stream (each lane prepares it on its own).
TEST(CudaEngine, EveryLaneCountGivesOneLanesMatches) {
  SKIP_WITHOUT_GPU();
  struct BankCase {
    const char* name;
    std::vector<std::pair<int, int>> sizes;
    CudaNumerator numerator;
    bool masked;
  };
  const BankCase banks[] = {
      {"fused", {{24, 24}, {9, 40}}, CudaNumerator::Spatial, false},
      {"GEMM group", std::vector<std::pair<int, int>>(16, {16, 16}), CudaNumerator::Spatial, false},
      {"fft", {{100, 70}, {128, 128}}, CudaNumerator::Fft, false},
      {"masked and fused", {{31, 31}, {16, 12}}, CudaNumerator::Auto, true},
  };
  const std::pair<int, int> frameSizes[] = {{640, 480}, {640, 480}, {640, 480}, {333, 401}, {640, 480},
                                            {640, 480}, {640, 480}};
  for (const BankCase& bc : banks) {
    SCOPED_TRACE(bc.name);
    std::vector<TemplateImage> bank;
    for (auto [w, h] : bc.sizes) bank.push_back(makeTemplate(w, h, Fill::Random));
    if (bc.masked) {  // a disc: the corners ignored
      TemplateImage& t = bank[0];
      t.mask.assign(std::size_t(t.width) * t.height, 0);
      for (int y = 0; y < t.height; ++y)
        for (int x = 0; x < t.width; ++x)
          if ((2 * x - t.width + 1) * (2 * x - t.width + 1) + (2 * y - t.height + 1) * (2 * y - t.height + 1) <=
              t.width * t.width)
            t.mask[std::size_t(y) * t.width + x] = 1;
    }
    std::vector<Image> frames;
    for (std::size_t f = 0; f < std::size(frameSizes); ++f) {
      frames.push_back(makeImage(frameSizes[f].first, frameSizes[f].second, Fill::Random));
      for (std::size_t i = 0; i < bank.size(); ++i)
        paste(&frames.back(), bank[i], int(13 * f + 37 * i) % (frameSizes[f].first - bank[i].width),
              int(7 * f + 23 * i) % (frameSizes[f].second - bank[i].height));
    }
    MatchParams p;
    p.maxMatches = 2;
    p.threshold = 0.6;
    const auto run = [&](int lanes, int depth, std::vector<int>* lanesTaken) {
      EngineOptions o;
      o.backend = Backend::Cuda;
      o.cudaNumerator = bc.numerator;
      o.cudaMatchingLanes = lanes;
      std::unique_ptr<Engine> e;
      const Status created = cuda::CudaEngine::create(o, &e);
      EXPECT_TRUE(created.ok()) << created.message();
      auto* engine = static_cast<cuda::CudaEngine*>(e.get());
      EXPECT_EQ(engine->matchingLanes(), lanes);
      EXPECT_TRUE(e->setTemplates(bank).ok());
      std::vector<FrameResult> collected;
      for (std::size_t f = 0; f < frames.size(); ++f) {
        if (e->framesInFlight() == depth) {
          collected.emplace_back();
          const Status s = e->collect(&collected.back());
          EXPECT_TRUE(s.ok()) << s.message();
        }
        const Status s = e->submit(frames[f].view(), p);
        EXPECT_TRUE(s.ok()) << s.message();
        lanesTaken->push_back(engine->lastLane());
      }
      while (e->framesInFlight() > 0) {
        collected.emplace_back();
        const Status s = e->collect(&collected.back());
        EXPECT_TRUE(s.ok()) << s.message();
      }
      FrameResult again;  // match() keeps to the lane it finds
      const int before = engine->lastLane();
      EXPECT_TRUE(e->match(frames[0].view(), p, &again).ok());
      EXPECT_EQ(engine->lastLane(), before);
      expectSameMatches(again, collected[0], true);
      return collected;
    };
    std::vector<int> oneLane;
    const std::vector<FrameResult> want = run(1, 2, &oneLane);
    for (int lane : oneLane) EXPECT_EQ(lane, 0);
    for (int lanes : {2, 3}) {
      for (int depth : {1, 2, 3}) {
        SCOPED_TRACE(std::to_string(lanes) + " lanes, " + std::to_string(depth) + " in flight");
        std::vector<int> taken;
        const std::vector<FrameResult> got = run(lanes, depth, &taken);
        ASSERT_EQ(got.size(), want.size());
        for (std::size_t f = 0; f < got.size(); ++f) {
          SCOPED_TRACE("frame " + std::to_string(f));
          expectSameMatches(got[f], want[f], true);
        }
        for (std::size_t f = 0; f < taken.size(); ++f) {
          EXPECT_GE(taken[f], 0);
          EXPECT_LT(taken[f], lanes);
          // A new size is prepared on lane 0 first; after a frame of the same size, a frame
          // submitted behind another in flight takes the next lane, alone the same one.
          if (f == 0 || frameSizes[f] != frameSizes[f - 1]) {
            EXPECT_EQ(taken[f], 0) << f;
          } else if (f >= 2 && frameSizes[f - 1] == frameSizes[f - 2]) {
            EXPECT_EQ(taken[f], depth == 1 ? taken[f - 1] : (taken[f - 1] + 1) % lanes) << f;
          }
        }
        if (depth >= 2) {
          EXPECT_TRUE(std::any_of(taken.begin(), taken.end(), [](int lane) { return lane != 0; }))
              << "no frame took a second lane";
        }
      }
    }
  }
}

// A CUDA engine with two matching lanes (the lane policy's tests).
std::unique_ptr<Engine> makeTwoLaneEngine() {
  EngineOptions o;
  o.backend = Backend::Cuda;
  o.cudaMatchingLanes = 2;
  return makeEngine(o);
}

// 2160p frames of an fft template keep to one lane (extraLanesPay: two lanes were slower there);
// 1080p frames of the same template take both.
TEST(CudaEngine, LargeFftFramesKeepToOneLane) {
  SKIP_WITHOUT_GPU();
  std::unique_ptr<Engine> e = makeTwoLaneEngine();
  auto* engine = dynamic_cast<cuda::CudaEngine*>(e.get());
  ASSERT_NE(engine, nullptr);
  const TemplateImage t = makeTemplate(128, 128, Fill::Random);
  ASSERT_TRUE(e->setTemplates({t}).ok());
  MatchParams p;
  p.threshold = 0.9;
  for (auto [w, h] : {std::pair{3840, 2160}, std::pair{1920, 1080}}) {
    Image frame = makeImage(w, h, Fill::Random);
    paste(&frame, t, 300, 200);
    std::vector<int> taken;
    FrameResult r;
    for (int f = 0; f < 6; ++f) {
      if (e->framesInFlight() == 2) {
        ASSERT_TRUE(e->collect(&r).ok());
      }
      ASSERT_TRUE(e->submit(frame.view(), p).ok());
      taken.push_back(engine->lastLane());
    }
    while (e->framesInFlight() > 0) {
      ASSERT_TRUE(e->collect(&r).ok());
      ASSERT_TRUE(r.best[0].has_value());
      EXPECT_EQ(r.best[0]->x, 300);
    }
    ASSERT_EQ(engine->numeratorFor(0), CudaNumerator::Fft);
    const bool second = std::any_of(taken.begin(), taken.end(), [](int lane) { return lane != 0; });
    EXPECT_EQ(second, w == 1920) << w << "x" << h;
  }
}

// A spare lane the device has no memory for: freed, and the frames keep to lane 0 with the same
// matches, instead of failing (one lane would have matched them).
TEST(CudaEngine, SpareLaneWithoutMemoryLeavesTheFramesOnTheFirst) {
  SKIP_WITHOUT_GPU();
  std::unique_ptr<Engine> e = makeTwoLaneEngine();
  auto* engine = dynamic_cast<cuda::CudaEngine*>(e.get());
  ASSERT_NE(engine, nullptr);
  std::vector<TemplateImage> bank = {makeTemplate(24, 24, Fill::Random), makeTemplate(100, 70, Fill::Random)};
  ASSERT_TRUE(e->setTemplates(bank).ok());
  Image frame = makeImage(640, 480, Fill::Random);
  paste(&frame, bank[0], 40, 30);
  paste(&frame, bank[1], 300, 200);
  MatchParams p;
  p.threshold = 0.8;
  FrameResult want;
  for (int i = 0; i < Engine::kMaxFramesInFlight + 1; ++i)  // lane 0 and every slot prepared
    ASSERT_TRUE(e->match(frame.view(), p, &want).ok());
  cuda::faults::FaultPlan plan;
  plan.deviceByteLimit = cuda::faults::deviceBytesHeld() + 4096;  // not a lane's worth
  cuda::faults::arm(plan);
  std::vector<FrameResult> got;
  for (int f = 0; f < 5; ++f) {
    if (e->framesInFlight() == 2) {
      got.emplace_back();
      const Status s = e->collect(&got.back());
      ASSERT_TRUE(s.ok()) << s.message();
    }
    const Status s = e->submit(frame.view(), p);
    ASSERT_TRUE(s.ok()) << "frame " << f << ": " << s.message();
    EXPECT_EQ(engine->lastLane(), 0) << f;
  }
  while (e->framesInFlight() > 0) {
    got.emplace_back();
    ASSERT_TRUE(e->collect(&got.back()).ok());
  }
  cuda::faults::lift();
  for (const FrameResult& r : got) expectSameMatches(r, want, true);
  // Memory back: the refusal holds for this bank and size only; a new bank takes both lanes again.
  ASSERT_TRUE(e->setTemplates(bank).ok());
  ASSERT_TRUE(e->match(frame.view(), p, &want).ok());
  std::vector<int> taken;
  FrameResult r;
  for (int f = 0; f < 4; ++f) {
    if (e->framesInFlight() == 2) {
      ASSERT_TRUE(e->collect(&r).ok());
    }
    ASSERT_TRUE(e->submit(frame.view(), p).ok());
    taken.push_back(engine->lastLane());
  }
  while (e->framesInFlight() > 0) ASSERT_TRUE(e->collect(&r).ok());
  EXPECT_TRUE(std::any_of(taken.begin(), taken.end(), [](int lane) { return lane != 0; }));
}

TEST(CudaEngine, AutoUsesTheCudaBackendAndReportsErrors) {
  SKIP_WITHOUT_GPU();
  auto e = makeEngine(Backend::Auto);
  EXPECT_EQ(e->backend(), Backend::Cuda);
  FrameResult r;
  Image img = makeImage(16, 16, Fill::Random);
  FrameView bad = img.view();
  bad.stride = 3;
  EXPECT_FALSE(e->match(bad, MatchParams{}, &r).ok());
  std::vector<double> map;
  EXPECT_FALSE(e->scoreMap(img.view(), Method::CCoeff, 0, &map).ok());  // empty bank
  TemplateImage big = makeTemplate(17, 4, Fill::Random);
  ASSERT_TRUE(e->setTemplates({big}).ok());
  EXPECT_FALSE(e->scoreMap(img.view(), Method::CCoeff, 0, &map).ok());  // larger than the frame
  ASSERT_TRUE(e->match(img.view(), MatchParams{}, &r).ok());
  ASSERT_EQ(r.best.size(), 1u);
  EXPECT_FALSE(r.best[0].has_value());
}

}  // namespace
}  // namespace nccmatch::test
