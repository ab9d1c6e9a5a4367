// Track mode against detect mode per frame: 16 objects (16 different 32x32 templates) moving on a
// camera-like 1080p frame. detect: Engine::match of the whole frame with the bank of 16; track:
// Tracker::track with search-margin 48 (128x128 windows), all 16 windows in one matchRegions call,
// no full-frame search after the first frame (acquire-interval 0); also matchRegions alone, and
// the mean per frame with a full-frame search every 10 frames; on the CUDA backend also
// matchRegions and Tracker::track on the frame already in device memory (a decoder's CUDA frames:
// no upload of the windows) and on the frame in pinned host memory (cudaMallocHost, as the
// element's buffer pool: the windows gathered into device memory by one copy kernel reading over
// the bus, the default, and read in place by the scoring kernels, CudaMappedFrames::InPlace),
// matchRegions on the pageable frame with its packed windows read from the mapped work buffer
// (CudaPackedWindows::Mapped) instead of uploaded and on that buffer registered by its owner
// (registerPinnedHost), with baselines of the same run (the windows'
// copy into pinned memory, their upload, the latency floor of an enqueue-and-wait). Every variant's
// matchRegions results are checked against the pageable frame's. Where Tracker::track's time goes
// beyond its matchRegions call: the tracker on an unchanged frame, and matchRegions after the CPU
// rewrote the frame or wrote 2 MB elsewhere (a frame loop's gap), and the tracker's own host work
// (an engine that answers at once), and a call's fixed cost (one window on the device frame); and
// detect on the pinned and on the device frame, each compared with the tracked frames there.
// Medians; prints a markdown table.
//   bench_track [--backend auto|cpu|cuda] [--frames N] [--threads N]   (auto: CUDA where usable)
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <functional>
#include <random>
#include <string>
#include <vector>

#ifdef NCCMATCH_HAVE_CUDA
#include <cuda_runtime_api.h>
#endif

#include "median.hpp"
#include "nccmatch/engine.hpp"
#include "nccmatch/host_memory.hpp"
#include "nccmatch/tracker.hpp"

using namespace nccmatch;

namespace {

constexpr int kWidth = 1920, kHeight = 1080, kObjects = 16, kSide = 32, kMargin = 48;

// The same matches and bests, region by region (positions and scores exactly).
bool sameResults(const std::vector<RegionResult>& a, const std::vector<RegionResult>& b) {
  if (a.size() != b.size()) return false;
  const auto same = [](const Match& x, const Match& y) {
    return x.templateIndex == y.templateIndex && x.x == y.x && x.y == y.y && x.score == y.score;
  };
  for (std::size_t k = 0; k < a.size(); ++k) {
    if (a[k].matches.size() != b[k].matches.size() || a[k].best.has_value() != b[k].best.has_value()) return false;
    for (std::size_t i = 0; i < a[k].matches.size(); ++i)
      if (!same(a[k].matches[i], b[k].matches[i])) return false;
    if (a[k].best && !same(*a[k].best, *b[k].best)) return false;
  }
  return true;
}

double nowMs() {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

// Forwards to an engine, timing the matchRegions calls Tracker::track makes (the engine's share
// of a tracked frame) and keeping the last call's windows (the tracker's own, which the bench
// times matchRegions on alone).
class TimedEngine final : public Engine {
 public:
  explicit TimedEngine(Engine& engine) : engine_(engine) {}
  std::vector<double> regionMs;
  std::vector<RegionQuery> lastRegions;

  Backend backend() const override { return engine_.backend(); }
  int workerThreads() const override { return engine_.workerThreads(); }
  Status setTemplates(std::vector<TemplateImage> bank) override { return engine_.setTemplates(std::move(bank)); }
  const std::vector<TemplateImage>& templates() const override { return engine_.templates(); }
  Status match(const FrameView& frame, const MatchParams& params, FrameResult* result) override {
    return engine_.match(frame, params, result);
  }
  Status matchRegions(const FrameView& frame, const std::vector<RegionQuery>& regions, const MatchParams& params,
                      std::vector<RegionResult>* results) override {
    const auto t0 = std::chrono::steady_clock::now();
    const Status s = engine_.matchRegions(frame, regions, params, results);
    regionMs.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
    lastRegions = regions;
    return s;
  }
  Status prepareRegionTemplates(std::vector<TemplateImage> templates, RegionTemplateSet* set) override {
    return engine_.prepareRegionTemplates(std::move(templates), set);
  }
  Status releaseRegionTemplates(RegionTemplateSet* set) override { return engine_.releaseRegionTemplates(set); }
  bool holdsRegionTemplates(const RegionTemplateSet& set) const override { return engine_.holdsRegionTemplates(set); }
  Status copyPatch(const FrameView& frame, int x, int y, int width, int height, std::vector<uint8_t>* pixels) override {
    return engine_.copyPatch(frame, x, y, width, height, pixels);
  }
  Status scoreMap(const FrameView& frame, Method method, uint32_t templateIndex, std::vector<double>* map) override {
    return engine_.scoreMap(frame, method, templateIndex, map);
  }

 private:
  Engine& engine_;
};

// An engine that answers at once with the scene's true positions (frame `frame`: object k's
// match where Scene::frame puts it, in every window that holds it): Tracker::track with it times
// the tracker's own host work (predictions, windows, assignment, states) without any matching.
class InstantEngine final : public Engine {
 public:
  explicit InstantEngine(std::vector<TemplateImage> bank) : bank_(std::move(bank)) {}
  int frame = 0;

  Backend backend() const override { return Backend::Cpu; }
  Status setTemplates(std::vector<TemplateImage> bank) override {
    bank_ = std::move(bank);
    return Status();
  }
  const std::vector<TemplateImage>& templates() const override { return bank_; }
  Status match(const FrameView&, const MatchParams&, FrameResult* result) override {
    *result = FrameResult();
    for (uint32_t k = 0; k < bank_.size(); ++k) {
      result->matches.push_back(truth(k));
      result->best.push_back(truth(k));
    }
    return Status();
  }
  Status matchRegions(const FrameView&, const std::vector<RegionQuery>& regions, const MatchParams&,
                      std::vector<RegionResult>* results) override {
    results->assign(regions.size(), RegionResult());
    for (std::size_t i = 0; i < regions.size(); ++i) {
      const RegionQuery& r = regions[i];
      const Match m = truth(r.templateIndex);
      if (m.x < r.x || m.y < r.y || m.x + m.width > r.x + r.width || m.y + m.height > r.y + r.height) continue;
      (*results)[i].matches.push_back(m);
      (*results)[i].best = m;
    }
    return Status();
  }
  Status prepareRegionTemplates(std::vector<TemplateImage>, RegionTemplateSet*) override {
    return Status::error("InstantEngine: no region sets");
  }
  Status releaseRegionTemplates(RegionTemplateSet*) override { return Status::error("InstantEngine: no region sets"); }
  bool holdsRegionTemplates(const RegionTemplateSet&) const override { return false; }
  Status scoreMap(const FrameView&, Method, uint32_t, std::vector<double>*) override {
    return Status::error("InstantEngine: no score maps");
  }

 private:
  Match truth(uint32_t k) const {
    Match m;
    m.templateIndex = k;
    m.x = 150 + int(k % 4) * 420 + 2 * frame;
    m.y = 100 + int(k / 4) * 230 + frame;
    m.width = m.height = kSide;
    m.score = 0.99;
    m.subX = m.x + 0.25;  // sub-pixel corners, as the engines refine them
    m.subY = m.y - 0.25;
    return m;
  }
  std::vector<TemplateImage> bank_;
};

// A camera-like background (smooth shading, texture, noise) and 16 textured objects.
struct Scene {
  std::vector<uint8_t> background;
  std::vector<TemplateImage> objects;

  explicit Scene(std::mt19937& g) {
    background.resize(std::size_t(kWidth) * kHeight);
    std::normal_distribution<double> noise(0, 6);
    for (int y = 0; y < kHeight; ++y)
      for (int x = 0; x < kWidth; ++x) {
        const double v = 110 + 60 * std::sin(x * 0.013) * std::cos(y * 0.021) +
                         40 * std::sin(x * 0.31 + y * 0.17) * (x > kWidth / 2) + noise(g);
        background[std::size_t(y) * kWidth + x] = uint8_t(std::clamp(v, 0.0, 255.0));
      }
    for (int k = 0; k < kObjects; ++k) {
      TemplateImage t;
      t.name = "o" + std::to_string(k);
      t.width = t.height = kSide;
      for (int i = 0; i < kSide * kSide; ++i) t.pixels.push_back(uint8_t(g() % 256));
      objects.push_back(t);
    }
  }

  // Frame n: object k on a 4x4 grid, moving 2 px right and 1 px down a frame.
  void frame(int n, std::vector<uint8_t>* out) const {
    *out = background;
    for (int k = 0; k < kObjects; ++k) {
      const int x0 = 150 + (k % 4) * 420 + 2 * n, y0 = 100 + (k / 4) * 230 + n;
      for (int r = 0; r < kSide; ++r)
        std::memcpy(out->data() + std::size_t(y0 + r) * kWidth + x0, objects[k].pixels.data() + r * kSide, kSide);
    }
  }
};

}  // namespace

int main(int argc, char** argv) {
  Backend backend = Backend::Auto;
  int frames = 30, threads = 0;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--backend" && i + 1 < argc) {
      const std::string b = argv[++i];
      if (b != "auto" && b != "cpu" && b != "cuda") return std::fprintf(stderr, "--backend auto|cpu|cuda\n"), 2;
      backend = b == "cuda" ? Backend::Cuda : (b == "cpu" ? Backend::Cpu : Backend::Auto);
    } else if (a == "--frames" && i + 1 < argc) {
      frames = std::atoi(argv[++i]);
      // The objects move 2 px a frame right and 1 down: past frame 200 their windows leave the frame.
      if (frames < 3 || frames > 200) return std::fprintf(stderr, "--frames: 3 to 200\n"), 2;
    } else if (a == "--threads" && i + 1 < argc) {
      threads = std::max(0, std::atoi(argv[++i]));
    } else {
      std::fprintf(stderr, "usage: bench_track [--backend auto|cpu|cuda] [--frames N] [--threads N]\n");
      return 2;
    }
  }
  EngineOptions options;
  options.backend = backend;
  options.threads = threads;
  std::unique_ptr<Engine> engine;
  Status st = Engine::create(options, &engine);
  if (!st.ok()) return std::fprintf(stderr, "engine: %s\n", st.message().c_str()), 1;
  std::mt19937 g(7);
  const Scene scene(g);
  st = engine->setTemplates(scene.objects);
  if (!st.ok()) return std::fprintf(stderr, "bank: %s\n", st.message().c_str()), 1;
  MatchParams params;
  params.threshold = 0.8;
  params.maxMatches = 1;

  std::vector<uint8_t> pixels;
  auto view = [&] { return FrameView{pixels.data(), kWidth, kHeight, std::size_t(kWidth), MemoryKind::Host}; };

  // detect: Engine::match of the whole frame `frames` times, each on frameFor(n) (the scene's frame
  // n, or one frame in pinned or device memory); the first call warms up (plans, scratch).
  const auto timeDetect = [&](const auto& frameFor, const char* what, std::vector<double>* ms) {
    for (int n = 0; n < frames; ++n) {
      const FrameView frame = frameFor(n);
      FrameResult r;
      const double t0 = nowMs();
      const Status s = engine->match(frame, params, &r);
      if (n > 0) ms->push_back(nowMs() - t0);
      if (!s.ok() || r.matches.size() != std::size_t(kObjects))
        return std::fprintf(stderr, "detect (%s) frame %d: %s, %zu matches\n", what, n, s.message().c_str(),
                            r.matches.size()),
               false;
    }
    return true;
  };
  std::vector<double> detect;
  const auto sceneFrame = [&](int n) {
    scene.frame(n, &pixels);
    return view();
  };
  if (!timeDetect(sceneFrame, "pageable frame", &detect)) return 1;

  // track: the first frame searched whole, then the 16 windows only.
  TrackerOptions to;
  to.searchMargin = kMargin;
  to.acquireInterval = 0;
  Tracker tracker(to);
  TimedEngine timed(*engine);
  std::vector<double> track, trackRegions, regionsOnly;
  for (int n = 0; n < frames; ++n) {
    scene.frame(n, &pixels);
    TrackerFrame out;
    const double t0 = nowMs();
    st = tracker.track(timed, view(), params, &out);
    const double ms = nowMs() - t0;
    if (n > 1 && !timed.regionMs.empty()) trackRegions.push_back(timed.regionMs.back());
    if (!st.ok() || out.matches.size() != std::size_t(kObjects) || (n > 0 && out.fullFrameSearch))
      return std::fprintf(stderr, "track frame %d: %s, %zu matches\n", n, st.message().c_str(), out.matches.size()), 1;
    for (const TrackedMatch& m : out.matches)
      if (m.trackId != m.match.templateIndex + 1)
        return std::fprintf(stderr, "track frame %d: object %u changed its id\n", n, m.match.templateIndex), 1;
    if (n > 1) track.push_back(ms);  // frame 1 warms the region path up
  }
  // The tracker's own host work: the same tracking against an engine that answers at once.
  std::vector<double> trackerOwn;
  {
    InstantEngine instant(scene.objects);
    Tracker own(to);
    for (int n = 0; n < frames; ++n) {
      instant.frame = n;
      TrackerFrame out;
      const double t0 = nowMs();
      st = own.track(instant, view(), params, &out);
      if (n > 1) trackerOwn.push_back(nowMs() - t0);
      if (!st.ok() || out.matches.size() != std::size_t(kObjects) || (n > 0 && out.fullFrameSearch))
        return std::fprintf(stderr, "track (instant engine) frame %d: %s, %zu matches\n", n, st.message().c_str(),
                            out.matches.size()), 1;
    }
  }
  // matchRegions alone: the 16 windows the tracker searched on the last frame, again.
  std::vector<RegionQuery> windows;
  for (int k = 0; k < kObjects; ++k) {
    const int x0 = 150 + (k % 4) * 420 + 2 * (frames - 1), y0 = 100 + (k / 4) * 230 + (frames - 1);
    windows.push_back(RegionQuery{x0 - kMargin, y0 - kMargin, kSide + 2 * kMargin, kSide + 2 * kMargin, uint32_t(k)});
  }
  std::vector<RegionResult> expected;  // the pageable frame's, which every other variant must give
  for (int rep = 0; rep < frames; ++rep) {
    std::vector<RegionResult> results;
    const double t0 = nowMs();
    st = engine->matchRegions(view(), windows, params, &results);
    if (rep > 0) regionsOnly.push_back(nowMs() - t0);
    if (!st.ok()) return std::fprintf(stderr, "matchRegions: %s\n", st.message().c_str()), 1;
    expected = std::move(results);
  }
  // Times `frames` calls of matchRegions on `frame` (the first warms up), each checked against the
  // pageable frame's results.
  // `between` runs before each call, untimed (the CPU's work between two frames: see the gap rows).
  const auto timeRegionsAfter = [&](Engine& e, const FrameView& frame, const char* what, std::vector<double>* ms,
                                    const std::function<void()>& between) {
    for (int rep = 0; rep < frames; ++rep) {
      std::vector<RegionResult> results;
      between();
      const double t0 = nowMs();
      const Status s = e.matchRegions(frame, windows, params, &results);
      if (rep > 0) ms->push_back(nowMs() - t0);
      if (!s.ok()) return std::fprintf(stderr, "matchRegions (%s): %s\n", what, s.message().c_str()), false;
      if (!sameResults(results, expected))
        return std::fprintf(stderr, "matchRegions (%s): results differ from the pageable frame's\n", what), false;
    }
    return true;
  };
  const auto timeRegions = [&](Engine& e, const FrameView& frame, const char* what, std::vector<double>* ms) {
    return timeRegionsAfter(e, frame, what, ms, [] {});
  };

  std::vector<double> deviceRegions, deviceTrack, pinnedRegions, pinnedTrack, inPlaceRegions, inPlaceTrack,
      mappedRegions, packWindows, uploadWindows, launchFloor, pinnedRewritten, pinnedGap, pinnedStillTrack, deviceGap,
      deviceStillTrack, pinnedTrackRegions, inPlaceTrackRegions, deviceTrackRegions, trackerWindowsPageable,
      trackerWindowsPinned, trackerWindowsDevice, registeredRegions, oneWindowDevice, detectPinned, detectDevice;
  int trackerWindowWidth = 0, trackerWindowHeight = 0;
#ifdef NCCMATCH_HAVE_CUDA
  if (engine->backend() == Backend::Cuda) {
    // Where Tracker::track's time beyond its one matchRegions call goes. A frame loop writes a frame
    // between two calls, the matchRegions rows above do not: these rows time matchRegions after the
    // CPU rewrote the pinned frame (as a producer does) or wrote 2 MB elsewhere (a gap that leaves
    // the frame alone), and the tracker on one unchanged frame (its own work and the engine call).
    std::vector<uint8_t> elsewhere(pixels.size());
    uint8_t stamp = 0;
    const auto writeElsewhere = [&] { std::memset(elsewhere.data(), ++stamp, elsewhere.size()); };
    // Times Tracker::track on `frame` as it is (the last scene frame): frame 0 acquires, frame 1 warms.
    const auto timeStillTrack = [&](Engine& e, const FrameView& frame, const char* what, std::vector<double>* ms) {
      Tracker still(to);
      for (int n = 0; n < frames; ++n) {
        TrackerFrame out;
        const double t0 = nowMs();
        const Status s = still.track(e, frame, params, &out);
        if (n > 1) ms->push_back(nowMs() - t0);
        if (!s.ok() || out.matches.size() != std::size_t(kObjects))
          return std::fprintf(stderr, "track (%s) frame %d: %s\n", what, n, s.message().c_str()), false;
      }
      return true;
    };
    // The frame in pinned host memory (cudaMallocHost, the element's buffer pool): the kernels read
    // the windows where they lie, nothing packed or uploaded.
    uint8_t* pinnedFrame = nullptr;
    if (cudaMallocHost(reinterpret_cast<void**>(&pinnedFrame), pixels.size()) != cudaSuccess)
      return std::fprintf(stderr, "pinned frame: %s\n", cudaGetErrorString(cudaGetLastError())), 1;
    std::memcpy(pinnedFrame, pixels.data(), pixels.size());
    const FrameView inPinned{pinnedFrame, kWidth, kHeight, std::size_t(kWidth), MemoryKind::Host};
    // The same frame read in place by the scoring kernels (CudaMappedFrames::InPlace).
    EngineOptions inPlaceOptions = options;
    inPlaceOptions.cudaMappedFrames = CudaMappedFrames::InPlace;
    std::unique_ptr<Engine> inPlace;
    st = Engine::create(inPlaceOptions, &inPlace);
    if (st.ok()) st = inPlace->setTemplates(scene.objects);
    if (!st.ok()) return std::fprintf(stderr, "in-place engine: %s\n", st.message().c_str()), 1;
    struct PinnedVariant {
      Engine* engine;
      const char* what;
      std::vector<double>* regions;
      std::vector<double>* track;
      std::vector<double>* trackRegions;
    };
    for (const PinnedVariant& v :
         {PinnedVariant{engine.get(), "pinned frame, gathered", &pinnedRegions, &pinnedTrack, &pinnedTrackRegions},
          PinnedVariant{inPlace.get(), "pinned frame, in place", &inPlaceRegions, &inPlaceTrack,
                        &inPlaceTrackRegions}}) {
      std::memcpy(pinnedFrame, pixels.data(), pixels.size());
      if (!timeRegions(*v.engine, inPinned, v.what, v.regions)) return 1;
      Tracker onPinned(to);
      TimedEngine timedPinned(*v.engine);
      for (int n = 0; n < frames; ++n) {
        scene.frame(n, &pixels);
        std::memcpy(pinnedFrame, pixels.data(), pixels.size());  // as a producer writes its frame
        TrackerFrame out;
        const double t0 = nowMs();
        st = onPinned.track(timedPinned, inPinned, params, &out);
        if (n > 1) v.track->push_back(nowMs() - t0);
        if (n > 1 && !timedPinned.regionMs.empty()) v.trackRegions->push_back(timedPinned.regionMs.back());
        if (!st.ok() || out.matches.size() != std::size_t(kObjects))
          return std::fprintf(stderr, "track (%s) frame %d: %s\n", v.what, n, st.message().c_str()), 1;
      }
    }
    // The gap rows on the pinned frame (gathered, the default), the last scene frame in it.
    std::memcpy(pinnedFrame, pixels.data(), pixels.size());
    if (!timeStillTrack(*engine, inPinned, "pinned frame, unchanged", &pinnedStillTrack) ||
        !timeRegionsAfter(*engine, inPinned, "pinned frame, rewritten before each call", &pinnedRewritten,
                          [&] { std::memcpy(pinnedFrame, pixels.data(), pixels.size()); }) ||
        !timeRegionsAfter(*engine, inPinned, "pinned frame, 2 MB written elsewhere before each call", &pinnedGap,
                          writeElsewhere))
      return 1;
    if (!timeDetect([&](int) { return inPinned; }, "pinned frame", &detectPinned)) return 1;
    cudaFreeHost(pinnedFrame);
    // The pageable frame, its windows packed into the mapped work buffer and read there by the
    // kernels (CudaPackedWindows::Mapped) instead of uploaded (the default, the rows above).
    EngineOptions mappedOptions = options;
    mappedOptions.cudaPackedWindows = CudaPackedWindows::Mapped;
    std::unique_ptr<Engine> mapped;
    st = Engine::create(mappedOptions, &mapped);
    if (st.ok()) st = mapped->setTemplates(scene.objects);
    if (!st.ok()) return std::fprintf(stderr, "mapped engine: %s\n", st.message().c_str()), 1;
    if (!timeRegions(*mapped, view(), "pageable frame, mapped work buffer", &mappedRegions)) return 1;
    // The same buffer registered by its owner (registerPinnedHost, once): it takes the pinned path.
    st = registerPinnedHost(pixels.data(), pixels.size());
    if (!st.ok()) return std::fprintf(stderr, "registerPinnedHost: %s\n", st.message().c_str()), 1;
    const bool registeredOk = timeRegions(*engine, view(), "registered frame", &registeredRegions);
    st = unregisterPinnedHost(pixels.data());
    if (!registeredOk || !st.ok()) return std::fprintf(stderr, "registered frame: %s\n", st.message().c_str()), 1;

    // The frame in device memory: the windows are read where they lie. A pageable cudaMemcpy may
    // return before its DMA ends, and the engine's stream does not wait for the default stream:
    // the frame is complete before the first call.
    uint8_t* device = nullptr;
    if (cudaMalloc(reinterpret_cast<void**>(&device), pixels.size()) != cudaSuccess ||
        cudaMemcpy(device, pixels.data(), pixels.size(), cudaMemcpyHostToDevice) != cudaSuccess ||
        cudaDeviceSynchronize() != cudaSuccess)
      return std::fprintf(stderr, "device frame: %s\n", cudaGetErrorString(cudaGetLastError())), 1;
    const FrameView onDevice{device, kWidth, kHeight, std::size_t(kWidth), MemoryKind::Device};
    if (!timeRegions(*engine, onDevice, "device frame", &deviceRegions) ||
        !timeDetect([&](int) { return onDevice; }, "device frame", &detectDevice))
      return 1;
    Tracker onGpu(to);
    TimedEngine timedDevice(*engine);
    for (int n = 0; n < frames; ++n) {
      scene.frame(n, &pixels);
      // A pageable cudaMemcpy may return before its DMA ends: the frame is complete before timing,
      // as a decoder's CUDA frame is when it arrives.
      if (cudaMemcpy(device, pixels.data(), pixels.size(), cudaMemcpyHostToDevice) != cudaSuccess ||
          cudaDeviceSynchronize() != cudaSuccess)
        return std::fprintf(stderr, "device frame copy failed\n"), 1;
      TrackerFrame out;
      const double t0 = nowMs();
      st = onGpu.track(timedDevice, onDevice, params, &out);
      if (n > 1) deviceTrack.push_back(nowMs() - t0);
      if (n > 1 && !timedDevice.regionMs.empty()) deviceTrackRegions.push_back(timedDevice.regionMs.back());
      if (!st.ok() || out.matches.size() != std::size_t(kObjects))
        return std::fprintf(stderr, "track (device) frame %d: %s\n", n, st.message().c_str()), 1;
    }
    // The gap rows on the device frame (the last scene frame in it).
    if (!timeStillTrack(*engine, onDevice, "device frame, unchanged", &deviceStillTrack) ||
        !timeRegionsAfter(*engine, onDevice, "device frame, 2 MB written elsewhere before each call", &deviceGap,
                          writeElsewhere))
      return 1;
    // matchRegions alone on the tracker's own windows of the last frame (the main loop's), on the
    // last scene frame in pageable, pinned and device memory.
    {
      const std::vector<RegionQuery> benchWindows = windows;  // the baselines below copy these
      windows = timed.lastRegions;
      // The pageable frame's results on these windows first: every timing below is checked against them.
      std::vector<RegionResult> pageableResults;
      st = engine->matchRegions(view(), windows, params, &pageableResults);
      if (!st.ok()) return std::fprintf(stderr, "tracker's windows: %s\n", st.message().c_str()), 1;
      expected = std::move(pageableResults);
      if (!timeRegions(*engine, view(), "tracker's windows, pageable frame", &trackerWindowsPageable)) return 1;
      uint8_t* pinnedCopy = nullptr;
      if (cudaMallocHost(reinterpret_cast<void**>(&pinnedCopy), pixels.size()) != cudaSuccess)
        return std::fprintf(stderr, "pinned frame: %s\n", cudaGetErrorString(cudaGetLastError())), 1;
      std::memcpy(pinnedCopy, pixels.data(), pixels.size());
      const FrameView pinnedView{pinnedCopy, kWidth, kHeight, std::size_t(kWidth), MemoryKind::Host};
      const bool ok = timeRegions(*engine, pinnedView, "tracker's windows, pinned frame", &trackerWindowsPinned) &&
                      timeRegions(*engine, onDevice, "tracker's windows, device frame", &trackerWindowsDevice);
      cudaFreeHost(pinnedCopy);
      if (!ok) return 1;
      trackerWindowWidth = windows.front().width;
      trackerWindowHeight = windows.front().height;
      windows = benchWindows;
    }
    // One window on the device frame: a call's fixed cost (descriptors up, one launch, results
    // back, the sync, the host's work around them), against the 16 windows' rows above.
    {
      const std::vector<RegionQuery> sixteen = windows;
      windows.assign(1, sixteen.front());
      st = engine->matchRegions(view(), windows, params, &expected);
      if (!st.ok()) return std::fprintf(stderr, "one window: %s\n", st.message().c_str()), 1;
      if (!timeRegions(*engine, onDevice, "one window, device frame", &oneWindowDevice)) return 1;
      windows = sixteen;
    }
    // Baselines of the same run, where a host frame's matchRegions spends its time besides the
    // kernels: the windows' rows packed into pinned memory (the CPU's copy), their upload, and the
    // floor of any call that enqueues work and waits for it (a memset and a small copy back).
    const std::size_t windowBytes = std::size_t(kSide + 2 * kMargin) * (kSide + 2 * kMargin);
    uint8_t* pinned = nullptr;
    uint8_t* small = nullptr;
    if (cudaMallocHost(reinterpret_cast<void**>(&pinned), windowBytes * kObjects) != cudaSuccess ||
        cudaMallocHost(reinterpret_cast<void**>(&small), 64) != cudaSuccess)
      return std::fprintf(stderr, "pinned memory: %s\n", cudaGetErrorString(cudaGetLastError())), 1;
    for (int rep = 0; rep < frames; ++rep) {
      double t0 = nowMs();
      for (int k = 0; k < kObjects; ++k)
        for (int r = 0; r < windows[k].height; ++r)
          std::memcpy(pinned + k * windowBytes + std::size_t(r) * windows[k].width,
                      pixels.data() + std::size_t(windows[k].y + r) * kWidth + windows[k].x, windows[k].width);
      const double packed = nowMs();
      cudaMemcpyAsync(device, pinned, windowBytes * kObjects, cudaMemcpyHostToDevice, 0);
      cudaStreamSynchronize(0);
      const double uploaded = nowMs();
      cudaMemsetAsync(device, 0, 4, 0);
      cudaMemcpyAsync(small, device, 64, cudaMemcpyDeviceToHost, 0);
      cudaStreamSynchronize(0);
      const double roundTrip = nowMs();
      if (rep > 0) {
        packWindows.push_back(packed - t0);
        uploadWindows.push_back(uploaded - packed);
        launchFloor.push_back(roundTrip - uploaded);
      }
    }
    if (cudaGetLastError() != cudaSuccess) return std::fprintf(stderr, "baselines failed\n"), 1;
    cudaFreeHost(pinned);
    cudaFreeHost(small);
    cudaFree(device);
  }
#endif

  const double d = bench::median(detect), t = bench::median(track), r = bench::median(regionsOnly);
  const double amortised = (d + 9 * t) / 10;
  std::printf("bench_track: %s backend, %d worker thread(s), %dx%d, %d objects of %dx%d, %dx%d windows, "
              "%d frames (medians)\n\n",
              backendName(engine->backend()), engine->workerThreads(), kWidth, kHeight, kObjects, kSide, kSide,
              kSide + 2 * kMargin, kSide + 2 * kMargin, frames);
  std::printf("| per frame | ms | vs detect |\n|---|---:|---:|\n");
  std::printf("| detect (match, whole frame, bank of 16) | %.3f | 1 |\n", d);
  std::printf("| track (Tracker::track, 16 windows) | %.3f | 1/%.0f |\n", t, d / t);
  std::printf("| matchRegions alone (16 windows) | %.3f | 1/%.0f |\n", r, d / r);
  // A row of medians and their share of detect.
  const auto row = [&](const char* what, const std::vector<double>& ms) {
    std::printf("| %s | %.3f | 1/%.0f |\n", what, bench::median(ms), d / bench::median(ms));
  };
  row("track: its matchRegions call", trackRegions);
  std::printf("| track with a full-frame search every 10 frames (mean) | %.3f | 1/%.1f |\n", amortised, d / amortised);
  std::printf("| the tracker's own host work (Tracker::track with an engine that answers at once) | %.4f | |\n",
              bench::median(trackerOwn));
  if (!deviceRegions.empty()) {
    const double dr = bench::median(deviceRegions), dt = bench::median(deviceTrack);
    const double pr = bench::median(pinnedRegions), pt = bench::median(pinnedTrack);
    const double mr = bench::median(mappedRegions);
    const double ir = bench::median(inPlaceRegions), it = bench::median(inPlaceTrack);
    std::printf("| matchRegions alone, frame in device memory | %.3f | 1/%.0f |\n", dr, d / dr);
    std::printf("| track, frame in device memory | %.3f | 1/%.0f |\n", dt, d / dt);
    std::printf("| matchRegions alone, frame in pinned host memory (windows gathered, default) | %.3f | 1/%.0f |\n",
                pr, d / pr);
    std::printf("| track, frame in pinned host memory (windows gathered, default) | %.3f | 1/%.0f |\n", pt, d / pt);
    std::printf("| matchRegions alone, frame in pinned host memory (read in place) | %.3f | 1/%.0f |\n", ir, d / ir);
    std::printf("| track, frame in pinned host memory (read in place) | %.3f | 1/%.0f |\n", it, d / it);
    std::printf("| matchRegions alone, pageable frame, packed windows read mapped (not uploaded) | %.3f | 1/%.0f |\n",
                mr, d / mr);
    row("matchRegions alone, the pageable buffer registered by its owner (registerPinnedHost)", registeredRegions);
    row("track, frame in pinned host memory (gathered): its matchRegions call", pinnedTrackRegions);
    row("track, frame in pinned host memory (in place): its matchRegions call", inPlaceTrackRegions);
    row("track, frame in device memory: its matchRegions call", deviceTrackRegions);
    std::printf("| (the tracker's windows: %dx%d) | | |\n", trackerWindowWidth, trackerWindowHeight);
    row("matchRegions alone on the tracker's windows, pageable frame", trackerWindowsPageable);
    row("matchRegions alone on the tracker's windows, pinned frame", trackerWindowsPinned);
    row("matchRegions alone on the tracker's windows, device frame", trackerWindowsDevice);
    row("matchRegions alone, one window, device frame (a call's fixed cost)", oneWindowDevice);
    // The same comparison in one memory: detect and track both on pinned, both on device frames.
    const double dp = bench::median(detectPinned), dd = bench::median(detectDevice);
    std::printf("| detect, frame in pinned host memory | %.3f | track there: 1/%.1f of it |\n", dp, dp / pt);
    std::printf("| detect, frame in device memory | %.3f | track there: 1/%.1f of it |\n", dd, dd / dt);
    row("track, pinned frame unchanged between calls", pinnedStillTrack);
    row("matchRegions, pinned frame rewritten by the CPU before each call", pinnedRewritten);
    row("matchRegions, pinned frame, 2 MB written elsewhere before each call", pinnedGap);
    row("track, device frame unchanged between calls", deviceStillTrack);
    row("matchRegions, device frame, 2 MB written elsewhere before each call", deviceGap);
    std::printf("| baseline: the 16 windows' rows copied into pinned memory | %.3f | |\n",
                bench::median(packWindows));
    std::printf("| baseline: their upload (%zu KB, pinned) and a stream sync | %.3f | |\n",
                std::size_t(kObjects) * (kSide + 2 * kMargin) * (kSide + 2 * kMargin) / 1024,
                bench::median(uploadWindows));
    std::printf("| baseline: a memset, a 64-byte copy back and a stream sync | %.3f | |\n",
                bench::median(launchFloor));
    // Issue 13's measure in one line (a device script can keep just this): the engine call on the
    // 16 windows against detect, each frame kind against detect on the same kind of frame.
    std::printf("issue-13: matchRegions pinned (gathered) %.1f us = 1/%.1f of detect pinned %.1f us; device "
                "frame %.1f us = 1/%.1f of detect device %.1f us\n",
                1000.0 * pr, dp / pr, 1000.0 * dp, 1000.0 * dr, dd / dr, 1000.0 * dd);
  }
  return 0;
}
