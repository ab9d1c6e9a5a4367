// CudaEngine::matchRegions against the CPU Reference engine, bit for bit: every method, regions
// of 1x1, odd sizes, at the frame's edges, smaller than their template, templates of 1x1 to 64x64
// (the fused region kernel) and larger (the masked region kernel), own images, masked templates of
// the bank and masked own images (the masked region kernel), host and device frames,
// many regions of mixed sizes in one call; host frames in pinned and registered memory (read in
// place by the kernels) and pageable ones through the mapped work buffer
// (CudaPackedWindows::Mapped); copyPatch from device memory; refusals; every template shape the
// fused region kernel takes (heights 1..64, widths around its K steps); one engine's successive
// calls of every kind; ties and peaks on the fused kernel's tile borders. Skips without a GPU.
#include <gtest/gtest.h>
#include <cuda_runtime.h>

#include <cstring>
#include <functional>
#include <iterator>
#include <memory>
#include <random>
#include <string>

#include "region_check.hpp"

namespace nccmatch::test {
namespace {

struct RegionCase {
  int x, y, w, h;
  int tpl;  // bank index, or -1 for the own image
};

// Parameters under which every position reaches the threshold (each method's way round): every
// local peak is a candidate.
std::function<MatchParams(Method)> everyPosition(int maxMatches, double nmsIou = MatchParams().nmsIou) {
  return [=](Method method) {
    MatchParams params;
    params.method = method;
    params.maxMatches = maxMatches;
    params.threshold = lowerIsBetter(method) ? 1e12 : -1e12;
    params.nmsIou = nmsIou;
    return params;
  };
}

TEST(CudaRegions, EveryRegionEqualsTheCpuReference) {
  SKIP_WITHOUT_GPU();
  Image img = makeImage(301, 203, Fill::Smooth, 7);
  std::vector<TemplateImage> bank = {makeTemplate(1, 1, Fill::Random, "one"), makeTemplate(7, 5, Fill::Random, "a"),
                                     cutTemplate(img, 100, 50, 32, 32, "c32"), makeTemplate(64, 64, Fill::Smooth, "c64"),
                                     makeTemplate(65, 20, Fill::Random, "wide"), cutTemplate(img, 3, 4, 33, 17, "odd"),
                                     cutTemplate(img, 40, 120, 21, 21, "ring")};
  bank[6].mask = makeMask(21, 21, MaskShape::Ring);
  const TemplateImage own = cutTemplate(img, 200, 100, 29, 31, "own");
  TemplateImage ownMasked = cutTemplate(img, 150, 30, 19, 23, "disc");
  ownMasked.mask = makeMask(19, 23, MaskShape::Disc);
  paste(&img, bank[1], 0, 0);
  const std::vector<RegionCase> cases = {
      // x    y    w    h  template
      {0, 0, 301, 203, 1},    // the whole frame
      {13, 17, 1, 1, 0},      // 1x1
      {0, 0, 7, 5, 1},        // exactly the template, at the corner with its copy
      {294, 198, 7, 5, 1},    // bottom-right corner
      {68, 18, 128, 128, 2},  // a tracker's window around the 32x32 cut
      {60, 30, 200, 150, 3},  // 64x64
      {10, 10, 100, 60, 4},   // 65 wide: the masked kernel
      {5, 150, 130, 53, 5},   // odd sizes
      {180, 80, 60, 70, -1},  // own image
      {9, 9, 20, 90, 2},      // narrower than its template: nothing
      {25, 105, 60, 50, 6},   // a masked template of the bank
      {140, 20, 40, 45, -2},  // a masked own image
  };
  std::vector<RegionQuery> regions;
  for (const RegionCase& c : cases)
    regions.push_back(RegionQuery{c.x, c.y, c.w, c.h, c.tpl < 0 ? 9u : uint32_t(c.tpl),
                                  c.tpl == -1 ? &own : c.tpl == -2 ? &ownMasked : nullptr});
  expectRegionsLikeTheCpu(img, bank, regions, everyPosition(5, 0.2), "regions");
}

// Every template shape the fused region kernel takes: heights 1..64 (the numerator splits a
// template's rows in four parts, some empty below 4 rows) at widths around its K steps (16, 32, 48,
// 64), each an own image cut from the frame inside its region (a margin of 6 around it, so each
// has its match), all in one call.
TEST(CudaRegions, EveryFusedTemplateShapeEqualsTheCpuReference) {
  SKIP_WITHOUT_GPU();
  Image img = makeImage(811, 607, Fill::Random);
  std::mt19937 g(testSeed());
  const int widths[] = {1, 3, 4, 16, 17, 32, 33, 48, 63, 64};
  std::vector<TemplateImage> owns;
  owns.reserve(64 * std::size(widths));  // the regions point into it
  std::vector<RegionQuery> regions;
  for (int h = 1; h <= 64; ++h)
    for (int w : widths) {
      const int x = 6 + int(g() % unsigned(img.width - w - 12)), y = 6 + int(g() % unsigned(img.height - h - 12));
      owns.push_back(cutTemplate(img, x, y, w, h, std::to_string(w) + "x" + std::to_string(h)));
      regions.push_back(RegionQuery{x - 6, y - 6, w + 12, h + 12, 0, &owns.back()});
    }
  expectRegionsLikeTheCpu(img, {makeTemplate(5, 5, Fill::Random, "bank")}, regions, everyPosition(2),
                          "every fused shape");
}

// The fused region kernel's tiles (kRegionTileWidth x kRegionTileHeight positions a block, each
// block testing its own positions against neighbours it scored itself) on maps where every tile
// holds equal bests and peaks lie on the tiles' borders: a frame repeating a random 9 x 7 patch
// (exact matches every 9 columns and 7 rows: on columns 125 | 126 and rows 13 | 14, the first
// tiles' borders) and a flat frame (every score equal: every position a local peak, the best the
// first in raster order); maps of one tile, several across and down, and a last tile of one
// position. The CPU Reference decides ties by raster order; the GPU's tiles must agree.
TEST(CudaRegions, TiesAndPeaksOnTileBordersEqualTheCpuReference) {
  SKIP_WITHOUT_GPU();
  const TemplateImage patch = makeTemplate(9, 7, Fill::Random, "patch");
  Image periodic = makeImage(420, 200, Fill::Flat);
  for (int y = 0; y < periodic.height; y += 7)
    for (int x = 0; x < periodic.width; x += 9)
      for (int v = 0; v < 7 && y + v < periodic.height; ++v)
        for (int u = 0; u < 9 && x + u < periodic.width; ++u)
          periodic.bytes[std::size_t(y + v) * periodic.stride + std::size_t(x + u)] =
              patch.pixels[std::size_t(v) * std::size_t(patch.width) + std::size_t(u)];
  const Image flat = makeImage(420, 200, Fill::Flat, 0, 90);
  const std::vector<TemplateImage> bank = {cutTemplate(periodic, 18, 14, 5, 5, "p5"),
                                           cutTemplate(periodic, 27, 21, 32, 16, "p32x16"),
                                           makeTemplate(3, 3, Fill::Random, "r3")};
  const std::vector<RegionQuery> regions = {
      RegionQuery{0, 0, 400, 190, 0, nullptr},    // 396 x 186 map: 4 tiles across, 14 down
      RegionQuery{9, 7, 130, 18, 0, nullptr},     // 126 x 14: exactly one tile
      RegionQuery{0, 0, 131, 19, 0, nullptr},     // 127 x 15: a last tile of one column, one row
      RegionQuery{5, 3, 300, 120, 1, nullptr},    // 269 x 105 of a 32 x 16 template
      RegionQuery{40, 40, 140, 60, 2, nullptr},   // random template: ties only by chance
  };
  for (const Image* img : std::vector<const Image*>{&periodic, &flat})
    expectRegionsLikeTheCpu(*img, bank, regions, everyPosition(40, 0.3), img == &flat ? "flat frame" : "periodic frame");
}

// Sixteen 128x128 windows of 32x32 templates on a 1080p frame, as a tracker searches them, and
// random regions of random sizes: one call each.
TEST(CudaRegions, ManyRegionsOfMixedSizesInOneCall) {
  SKIP_WITHOUT_GPU();
  Image img = makeImage(1920, 1080, Fill::Random, 0);
  std::vector<TemplateImage> bank;
  for (int k = 0; k < 4; ++k) bank.push_back(makeTemplate(32, 32, Fill::Random, "t" + std::to_string(k)));
  std::mt19937_64& g = rng();
  std::vector<RegionQuery> windows, random;
  for (int k = 0; k < 16; ++k) {
    const int x = 64 + 110 * k, y = 100 + int(g() % 800);
    paste(&img, bank[k % 4], x + int(g() % 96), y + int(g() % 96));
    windows.push_back(RegionQuery{x, y, 128, 128, uint32_t(k % 4), nullptr});
  }
  for (int k = 0; k < 40; ++k) {
    const int w = 1 + int(g() % 200), h = 1 + int(g() % 200);
    random.push_back(RegionQuery{int(g() % (1920 - w + 1)), int(g() % (1080 - h + 1)), w, h, uint32_t(g() % 4), nullptr});
  }
  auto cpu = makeEngine(Backend::Cpu);
  auto gpu = makeEngine(Backend::Cuda);
  ASSERT_TRUE(cpu->setTemplates(bank).ok());
  ASSERT_TRUE(gpu->setTemplates(bank).ok());
  MatchParams params;
  params.threshold = 0.5;
  params.maxMatches = 3;
  for (const auto* list : {&windows, &random}) {
    std::vector<RegionResult> want, got;
    ASSERT_TRUE(cpu->matchRegions(img.view(), *list, params, &want).ok());
    const Status st = gpu->matchRegions(img.view(), *list, params, &got);
    ASSERT_TRUE(st.ok()) << st.message();
    expectSameRegions(got, want, list == &windows ? "windows" : "random regions");
  }
}

// One engine's successive calls, each against the CPU: the kernels hand every call's results to
// the host themselves and leave the call's device counters zero for the next, so a call after one
// with more regions, fewer, only masked ones, more than 256 candidates (the rest copied back) or
// no candidates collected must still give its own results, into the results of the call before.
TEST(CudaRegions, SuccessiveCallsEachEqualTheCpuReference) {
  SKIP_WITHOUT_GPU();
  Image img = makeImage(640, 480, Fill::Random, 0);
  std::vector<TemplateImage> bank = {makeTemplate(16, 16, Fill::Random, "t16"),
                                     makeTemplate(65, 9, Fill::Random, "wide"), makeTemplate(7, 7, Fill::Random, "t7")};
  paste(&img, bank[0], 100, 100);
  paste(&img, bank[1], 300, 200);
  std::mt19937_64& g = rng();
  struct Call {
    const char* name;
    std::vector<RegionQuery> regions;
    MatchParams params;
  };
  std::vector<Call> calls;
  MatchParams usual;
  usual.threshold = 0.5;
  usual.maxMatches = 3;
  MatchParams everyPeak = usual;  // every local peak of the map is a candidate
  everyPeak.threshold = -2.0;
  everyPeak.maxMatches = 2000;
  MatchParams bestOnly = usual;
  bestOnly.maxMatches = 0;
  std::vector<RegionQuery> windows, random;
  for (int k = 0; k < 12; ++k)
    windows.push_back(RegionQuery{40 * k, int(g() % 400), 80, 80, uint32_t(k % 3 == 1 ? 2 : 0), nullptr});
  for (int k = 0; k < 30; ++k) {
    const int w = 1 + int(g() % 120), h = 1 + int(g() % 120);
    random.push_back(RegionQuery{int(g() % (640 - w + 1)), int(g() % (480 - h + 1)), w, h, uint32_t(g() % 3), nullptr});
  }
  calls.push_back({"12 windows", windows, usual});
  calls.push_back({"one region, every local peak", {RegionQuery{20, 30, 400, 300, 2, nullptr}}, everyPeak});
  calls.push_back({"the masked kernel only", {RegionQuery{250, 150, 160, 100, 1, nullptr}}, usual});
  calls.push_back({"30 random regions, bests only", random, bestOnly});
  calls.push_back({"one region", {RegionQuery{60, 60, 100, 100, 0, nullptr}}, usual});
  calls.push_back({"12 windows again", windows, usual});
  calls.push_back({"30 random regions, every local peak", random, everyPeak});
  auto cpu = makeEngine(Backend::Cpu);
  auto gpu = makeEngine(Backend::Cuda);
  ASSERT_TRUE(cpu->setTemplates(bank).ok());
  ASSERT_TRUE(gpu->setTemplates(bank).ok());
  bool manyCandidates = false;
  // One results vector for every call, as the tracker keeps its own: a call reuses its memory,
  // never its contents (regions with no position, fewer regions, bests only).
  std::vector<RegionResult> got;
  for (int round = 0; round < 2; ++round)
    for (const Call& c : calls) {
      std::vector<RegionResult> want;
      ASSERT_TRUE(cpu->matchRegions(img.view(), c.regions, c.params, &want).ok());
      const Status st = gpu->matchRegions(img.view(), c.regions, c.params, &got);
      ASSERT_TRUE(st.ok()) << c.name << ": " << st.message();
      expectSameRegions(got, want, c.name);
      std::size_t matches = 0;
      for (const RegionResult& r : want) matches += r.matches.size();
      manyCandidates = manyCandidates || matches > 256;
    }
  EXPECT_TRUE(manyCandidates) << "no call had more than 256 candidates: the copy back of the rest went untested";
}

// A copy of an image's bytes (padding included) in page-locked host memory the device reads in
// place: cudaMallocHost'd (the element's buffer pool), or a std::vector's own bytes registered
// with cudaHostRegister. `offset` bytes into the allocation, so that a frame may start unaligned.
struct HostFrameCopy {
  enum Kind { MallocHost, Registered };
  HostFrameCopy(const Image& img, Kind kind, std::size_t offset) : kind(kind) {
    const std::size_t bytes = img.bytes.size() + offset;
    if (kind == MallocHost) {
      EXPECT_EQ(cudaMallocHost(reinterpret_cast<void**>(&pinned), bytes), cudaSuccess);
      base = pinned;
    } else {
      registered.resize(bytes);
      base = registered.data();
      EXPECT_EQ(cudaHostRegister(base, bytes, cudaHostRegisterDefault), cudaSuccess);
    }
    std::memcpy(base + offset, img.bytes.data(), img.bytes.size());
    view = img.view();
    view.data = base + offset;
  }
  HostFrameCopy(const HostFrameCopy&) = delete;
  HostFrameCopy& operator=(const HostFrameCopy&) = delete;
  ~HostFrameCopy() {
    if (kind == MallocHost) cudaFreeHost(pinned);
    else cudaHostUnregister(base);
  }
  const char* name() const { return kind == MallocHost ? "cudaMallocHost frame" : "cudaHostRegister'ed frame"; }

  Kind kind;
  uint8_t* pinned = nullptr;
  std::vector<uint8_t> registered;
  uint8_t* base = nullptr;
  FrameView view;
};

// Host frames the kernels read in place (pinned, registered) and pageable ones read from the
// mapped work buffer, against the CPU Reference and the CUDA engine on the pageable frame: frames
// with odd strides, starting unaligned, regions at the frame's borders, at x a multiple of 16 (a
// pinned frame's cp.async path where the stride is too) and not, the fused and the masked kernel,
// every method. One frame a test (each a process of its own under compute-sanitizer's shards:
// the four as one test ran past 600 s under racecheck).
struct HostFrameCase {
  int width, height;
  std::size_t padding, offset;  // stride = width + padding; the frame starts offset bytes in
  const char* what;
};

std::ostream& operator<<(std::ostream& os, const HostFrameCase& c) { return os << c.what; }

class CudaRegionHostFrames : public ::testing::TestWithParam<HostFrameCase> {};

TEST_P(CudaRegionHostFrames, PinnedRegisteredAndMappedHostFramesEqualTheCpuReference) {
  SKIP_WITHOUT_GPU();
  const HostFrameCase& fc = GetParam();
  EngineOptions mappedOptions;
  mappedOptions.backend = Backend::Cuda;
  mappedOptions.cudaPackedWindows = CudaPackedWindows::Mapped;
  std::unique_ptr<Engine> mapped;
  ASSERT_TRUE(Engine::create(mappedOptions, &mapped).ok());
  // Pinned and registered frames: gathered on the device (the default engine) or read in place.
  EngineOptions inPlaceOptions;
  inPlaceOptions.backend = Backend::Cuda;
  inPlaceOptions.cudaMappedFrames = CudaMappedFrames::InPlace;
  std::unique_ptr<Engine> inPlace;
  ASSERT_TRUE(Engine::create(inPlaceOptions, &inPlace).ok());
  auto cpu = makeEngine(Backend::Cpu);
  auto gpu = makeEngine(Backend::Cuda);
  const Image img = makeImage(fc.width, fc.height, Fill::Random, fc.padding);
  const int W = fc.width, H = fc.height;
  std::vector<TemplateImage> bank = {makeTemplate(1, 1, Fill::Random, "one"), makeTemplate(7, 5, Fill::Random, "a"),
                                     cutTemplate(img, 30, 20, 32, 32, "c32"), cutTemplate(img, 50, 40, 21, 21, "ring"),
                                     makeTemplate(65, 20, Fill::Random, "wide")};
  bank[3].mask = makeMask(21, 21, MaskShape::Ring);
  const TemplateImage own = cutTemplate(img, W - 19, H - 13, 19, 13, "own");
  const std::vector<RegionCase> cases = {
      // x       y       w    h  template
      {0, 0, W, H, 2},               // the whole frame
      {0, 0, 1, 1, 0},               // 1x1 at the first pixel
      {W - 40, H - 37, 40, 37, 1},   // bottom-right corner
      {16, 8, 64, 50, 2},            // x a multiple of 16
      {23, 11, 70, 60, 2},           // x not
      {W - 77, 3, 77, 66, 3},        // right border, odd x, masked template (masked kernel)
      {5, H - 45, 100, 45, 4},       // bottom border, 65 wide (masked kernel)
      {W - 19, H - 13, 19, 13, -1},  // own image, exactly at its place in the corner
      {40, 40, 20, 20, 2},           // smaller than its template: nothing
  };
  // With the whole frame among them a pageable frame's regions are packed as the rectangle
  // holding them all; without it, one by one where their rows are fewer bytes than that
  // rectangle (the 1920- and 301-wide frames), as the rectangle again on the small frames.
  // `many`: the regions without the whole frame six times over, more than the scoring kernel
  // takes in its parameters (it reads their descriptors over the bus).
  std::vector<RegionQuery> all, eachPacked, many;
  for (const RegionCase& c : cases) {
    const RegionQuery q{c.x, c.y, c.w, c.h, c.tpl < 0 ? 2u : uint32_t(c.tpl), c.tpl == -1 ? &own : nullptr};
    all.push_back(q);
    if (c.w < W || c.h < H) eachPacked.push_back(q);
  }
  for (int k = 0; k < 6; ++k) many.insert(many.end(), eachPacked.begin(), eachPacked.end());
  ASSERT_TRUE(cpu->setTemplates(bank).ok());
  ASSERT_TRUE(gpu->setTemplates(bank).ok());
  ASSERT_TRUE(mapped->setTemplates(bank).ok());
  ASSERT_TRUE(inPlace->setTemplates(bank).ok());
  const HostFrameCopy pinned(img, HostFrameCopy::MallocHost, fc.offset);
  const HostFrameCopy registered(img, HostFrameCopy::Registered, fc.offset);
  for (const std::vector<RegionQuery>* list : {&all, &eachPacked, &many}) {
    for (int m = 0; m <= 5; ++m) {
      const std::vector<RegionQuery>& regions = *list;
      MatchParams params;
      params.method = Method(m);
      params.maxMatches = 5;
      params.threshold = lowerIsBetter(params.method) ? 1e12 : -1e12;
      params.nmsIou = 0.2;
      const std::string what = std::string(fc.what) + ", " + methodName(params.method) +
                               (list == &all         ? ", with the whole frame, "
                                : list == &eachPacked ? ", without the whole frame, "
                                                      : ", 48 regions, ");
      std::vector<RegionResult> want, pageable, got;
      ASSERT_TRUE(cpu->matchRegions(img.view(), regions, params, &want).ok());
      Status st = gpu->matchRegions(img.view(), regions, params, &pageable);
      ASSERT_TRUE(st.ok()) << st.message();
      expectSameRegions(pageable, want, what + "pageable frame");
      for (const HostFrameCopy* copy : {&pinned, &registered}) {
        for (Engine* engine : {gpu.get(), inPlace.get()}) {
          const std::string how = engine == gpu.get() ? " (gathered)" : " (read in place)";
          st = engine->matchRegions(copy->view, regions, params, &got);
          ASSERT_TRUE(st.ok()) << st.message();
          expectSameRegions(got, pageable, what + copy->name() + how + " against the pageable frame");
          expectSameRegions(got, want, what + copy->name() + how);
        }
      }
      st = mapped->matchRegions(img.view(), regions, params, &got);
      ASSERT_TRUE(st.ok()) << st.message();
      expectSameRegions(got, want, what + "pageable frame, mapped work buffer");
      st = mapped->matchRegions(pinned.view, regions, params, &got);
      ASSERT_TRUE(st.ok()) << st.message();
      expectSameRegions(got, want, what + "cudaMallocHost frame, engine with the mapped work buffer");
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Frames, CudaRegionHostFrames,
                         ::testing::Values(HostFrameCase{1920, 120, 0, 0, "1920x120, stride 1920"},
                                           HostFrameCase{301, 203, 32, 0, "301x203, stride 333"},
                                           HostFrameCase{157, 99, 6, 5, "157x99, stride 163, starting 5 bytes in"},
                                           HostFrameCase{160, 96, 0, 16,
                                                         "160x96, stride 160, starting 16 bytes in"}));

TEST(CudaRegions, CopyPatchFromDeviceMemoryAndRefusals) {
  SKIP_WITHOUT_GPU();
  Image img = makeImage(50, 40, Fill::Random, 3);
  DeviceImage device;
  const FrameView onDevice = upload(img, &device);
  auto gpu = makeEngine(Backend::Cuda);
  ASSERT_TRUE(gpu->setTemplates({makeTemplate(5, 5, Fill::Random)}).ok());
  std::vector<uint8_t> pixels;
  ASSERT_TRUE(gpu->copyPatch(onDevice, 45, 37, 5, 3, &pixels).ok());
  for (int y = 0; y < 3; ++y)
    for (int x = 0; x < 5; ++x) EXPECT_EQ(pixels[y * 5 + x], img.at(45 + x, 37 + y));
  EXPECT_FALSE(gpu->copyPatch(onDevice, 46, 37, 5, 3, &pixels).ok());
  std::vector<RegionResult> results;
  EXPECT_FALSE(gpu->matchRegions(onDevice, {RegionQuery{40, 0, 11, 5, 0, nullptr}}, MatchParams(), &results).ok());
  EXPECT_FALSE(gpu->matchRegions(onDevice, {RegionQuery{0, 0, 10, 5, 1, nullptr}}, MatchParams(), &results).ok());
  // Refused while a frame is in flight.
  ASSERT_TRUE(gpu->submit(onDevice, MatchParams()).ok());
  EXPECT_FALSE(gpu->matchRegions(onDevice, {RegionQuery{0, 0, 10, 5, 0, nullptr}}, MatchParams(), &results).ok());
  FrameResult r;
  ASSERT_TRUE(gpu->collect(&r).ok());
  EXPECT_TRUE(gpu->matchRegions(onDevice, {RegionQuery{0, 0, 10, 5, 0, nullptr}}, MatchParams(), &results).ok());
}

}  // namespace
}  // namespace nccmatch::test
