// The CUDA engine on a stream of frames: per-frame cost of match() (one frame at a time) against
// submit()/collect() with 1, 2 and 3 frames in flight (frame n+1 uploads while frame n is matched),
// ccoeff-normed, automatic numerator, 1920x1080 and 3840x2160, one template of 8..256 and a bank
// of 16 x 32x32. Frames: 4 distinct pinned host frames cycled (what the element's pinned pool
// gives). Baseline in the same run: the host-to-device copy of one frame alone (CUDA events), the
// floor of any stream that uploads its frames. Also the host's own time in submit() and
// collect() when frames come slower than the engine matches them (what the element costs a
// producer's thread), and for pageable frames the staging copy made by the calling thread or by a
// host function. Figures are medians of 5 runs of wall-clock time per frame over >= 0.3 s of
// frames, after warm-up. The last table: the host's time a frame by where the frames lie (pinned,
// device, pageable with either staging copy).
//   bench_stream [--host-calls] [--banks] [--large] [--lanes N] [--lanes-ab] [--engine-pair]
//                [--fft-product-ab]
//                [--gemm-templates auto|unsigned|zero-mean]
//                [--fft-peak-handoff | --fft-peak-scan]
//   --lanes N: EngineOptions::cudaMatchingLanes of the engines (default: the library's);
//   --lanes-ab: instead of the table, a 1-lane engine against an N-lane one (default 2), 2 frames
//   in flight;
//   --engine-pair: instead of the table, one engine with 2 frames in flight against two engines of
//   the same bank taking alternate frames (pairMicrosPerFrame);
//   --fft-product-ab: instead of the table, the float fft path's conjugate product by its kernel
//   against the product in the inverse transform's load (CudaEngine::setFftProductInLoad), 2
//   frames in flight;
//   --host-calls: that table only; --banks: only the banks of 16 or more templates, --large: only
//   the single templates of 128² and 256² (issue 12's rows, and 2560x1440 frames between the two
//   sizes; either leaves the host-calls table out); --gemm-templates:
//   EngineOptions::cudaGemmTemplates of the engines; --fft-peak-handoff / --fft-peak-scan:
//   float-fft templates' peaks from their score kernels' hand-off or from a scan of the map
//   (CudaEngine::setFftPeakHandoff), whatever the size plan picks (the default).
#include <cuda_runtime_api.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "bench_check.hpp"
#include "cuda/engine/cuda_engine.hpp"
#include "median.hpp"
#include "nccmatch/engine.hpp"
#include "nccmatch/host_memory.hpp"

namespace {

using namespace nccmatch;
using nccmatch::bench::median;

void check(const Status& s, const char* what) {
  if (!s.ok()) {
    std::fprintf(stderr, "%s: %s\n", what, s.message().c_str());
    std::exit(1);
  }
}

constexpr int kFrames = 4;
constexpr int kRuns = 5;

struct RunTimes {
  double perFrame = 0;  // wall clock per frame
  double submit = 0;    // of which the host spends in submit() (enqueueing the frame's work)
};

// Calls step(done) until it has run >= 20 times and >= 0.3 s have passed; microseconds per call.
template <typename Step>
double timedMicrosPerStep(Step step) {
  using Clock = std::chrono::steady_clock;
  const auto begin = Clock::now();
  int done = 0;
  double elapsed = 0;
  while (done < 20 || elapsed < 3e5) {
    step(done);
    ++done;
    elapsed = std::chrono::duration<double, std::micro>(Clock::now() - begin).count();
  }
  return elapsed / done;
}

// Microseconds per frame over one run of >= 0.3 s, keeping `depth` frames in flight
// (depth 0: match() per frame).
RunTimes runMicrosPerFrame(Engine& e, const std::vector<FrameView>& frames, const MatchParams& p, int depth) {
  using Clock = std::chrono::steady_clock;
  FrameResult r;
  int submitted = 0;
  std::size_t next = 0;
  double inSubmit = 0;
  const double perFrame = timedMicrosPerStep([&](int) {
    if (depth == 0) {
      check(e.match(frames[next++ % frames.size()], p, &r), "match");
      return;
    }
    while (e.framesInFlight() < depth) {
      const auto a = Clock::now();
      check(e.submit(frames[next++ % frames.size()], p), "submit");
      inSubmit += std::chrono::duration<double, std::micro>(Clock::now() - a).count();
      ++submitted;
    }
    check(e.collect(&r), "collect");
  });
  while (e.framesInFlight() > 0) check(e.collect(&r), "collect");
  return RunTimes{perFrame, submitted > 0 ? inSubmit / submitted : 0.0};
}

// `count` random templates of side x side, the first pasted at (200, 100) into every frame (whose
// memory the caller owns) so that each frame reports a match.
std::vector<TemplateImage> randomBankInFrames(int count, int side, const std::vector<FrameView>& frames,
                                              std::mt19937& gen) {
  std::vector<TemplateImage> templates;
  for (int i = 0; i < count; ++i) {
    TemplateImage t;
    t.name = "t" + std::to_string(i);
    t.width = t.height = side;
    t.pixels.resize(std::size_t(side) * side);
    for (auto& v : t.pixels) v = uint8_t(gen());
    templates.push_back(t);
  }
  for (const FrameView& f : frames)
    for (int y = 0; y < side; ++y)
      std::memcpy(const_cast<uint8_t*>(f.data) + std::size_t(y + 100) * f.stride + 200,
                  templates[0].pixels.data() + std::size_t(y) * side, std::size_t(side));
  return templates;
}

// The host's time in submit() and in collect() a frame, 2 in flight, when the frames come slower
// than the engine matches them (`paceMicros` apart, as from a producer slower than the engine:
// the element behind a decoder or a camera): collect() then finds the frame done, so both are the
// calls' own host cost (enqueueing; reading and decoding the results), not a wait for the GPU.
struct HostCalls {
  double submit = 0, collect = 0;
};

HostCalls pacedHostMicros(Engine& e, const std::vector<FrameView>& frames, const MatchParams& p, double paceMicros) {
  using Clock = std::chrono::steady_clock;
  const auto micros = [](Clock::time_point a, Clock::time_point b) {
    return std::chrono::duration<double, std::micro>(b - a).count();
  };
  FrameResult r;
  std::vector<double> submit, collect;
  auto due = Clock::now();
  for (int n = 0; n < 400; ++n) {
    while (Clock::now() < due) {
    }
    due += std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double, std::micro>(paceMicros));
    auto a = Clock::now();
    check(e.submit(frames[std::size_t(n) % frames.size()], p), "submit");
    auto b = Clock::now();
    if (n >= 20) submit.push_back(micros(a, b));  // the first frames warm up
    if (e.framesInFlight() == 2) {
      a = Clock::now();
      check(e.collect(&r), "collect");
      b = Clock::now();
      if (n >= 20) collect.push_back(micros(a, b));
    }
  }
  while (e.framesInFlight() > 0) check(e.collect(&r), "collect");
  return HostCalls{median(submit), median(collect)};
}

// Microseconds per frame over >= 0.3 s with two engines of the same bank taking alternate frames,
// one frame in flight in each: each engine matches on its own streams with its own scratch, so one
// frame's latency-bound kernels (peaks, rescoring) can run beside the other's transforms. What
// one engine with 2 frames in flight would gain if its frames' matching did not share one
// compute stream.
double pairMicrosPerFrame(Engine& a, Engine& b, const std::vector<FrameView>& frames, const MatchParams& p) {
  FrameResult r;
  Engine* engines[2] = {&a, &b};
  std::size_t next = 0;
  for (Engine* e : engines) check(e->submit(frames[next++ % frames.size()], p), "submit");
  const double perFrame = timedMicrosPerStep([&](int done) {
    Engine& e = *engines[done % 2];
    check(e.collect(&r), "collect");
    check(e.submit(frames[next++ % frames.size()], p), "submit");
  });
  for (Engine* e : engines)
    while (e->framesInFlight() > 0) check(e->collect(&r), "collect");
  return perFrame;
}

// Two ways of running the same frames and bank, each warmed once, then alternating run by run in
// the same process (kRuns each): their medians, microseconds per frame.
template <typename RunA, typename RunB>
std::pair<double, double> alternatingMedians(RunA runA, RunB runB) {
  runA();
  runB();
  std::vector<double> a, b;
  for (int i = 0; i < kRuns; ++i) {
    a.push_back(runA());
    b.push_back(runB());
  }
  return {median(a), median(b)};
}

RunTimes medianMicrosPerFrame(Engine& e, const std::vector<FrameView>& frames, const MatchParams& p, int depth) {
  runMicrosPerFrame(e, frames, p, depth);  // warm-up: plans, buffers, clocks
  std::vector<double> perFrame, submit;
  for (int i = 0; i < kRuns; ++i) {
    const RunTimes t = runMicrosPerFrame(e, frames, p, depth);
    perFrame.push_back(t.perFrame);
    submit.push_back(t.submit);
  }
  return RunTimes{median(perFrame), median(submit)};
}

// One frame's host-to-device copy from pinned memory alone, CUDA events, median of 50.
double uploadMicros(const uint8_t* host, std::size_t bytes) {
  void* dev = nullptr;
  cudaStream_t stream = nullptr;
  cudaEvent_t a = nullptr, b = nullptr;
  BENCH_CUDA_CHECK(cudaMalloc(&dev, bytes));
  BENCH_CUDA_CHECK(cudaStreamCreate(&stream));
  BENCH_CUDA_CHECK(cudaEventCreate(&a));
  BENCH_CUDA_CHECK(cudaEventCreate(&b));
  std::vector<double> t;
  for (int i = 0; i < 55; ++i) {
    BENCH_CUDA_CHECK(cudaEventRecord(a, stream));
    BENCH_CUDA_CHECK(cudaMemcpyAsync(dev, host, bytes, cudaMemcpyHostToDevice, stream));
    BENCH_CUDA_CHECK(cudaEventRecord(b, stream));
    BENCH_CUDA_CHECK(cudaEventSynchronize(b));
    float ms = 0;
    BENCH_CUDA_CHECK(cudaEventElapsedTime(&ms, a, b));
    if (i >= 5) t.push_back(ms * 1000.0);
  }
  cudaEventDestroy(a);
  cudaEventDestroy(b);
  cudaStreamDestroy(stream);
  cudaFree(dev);
  return median(t);
}

// What the host pays a frame, by where the frames lie, 1080p, 1 x 64² and 16 x 32², 2 in flight and
// paced as above: pinned (the element's pool), device (a decoder's CUDA frames: no upload, but
// no captured graph either: CudaEngine::graphable takes only the slot's own upload buffer), and
// pageable (a producer that refuses the pool)
// with the staging copy made by the calling thread or by a host function on the slot's staging
// stream (EngineOptions::cudaStagingCopy).
void hostCallsTable(std::mt19937& gen) {
  const int W = 1920, H = 1080;
  const std::size_t bytes = std::size_t(W) * H;
  std::vector<std::vector<uint8_t>> pageable(kFrames, std::vector<uint8_t>(bytes));
  std::vector<void*> pinned(kFrames, nullptr), device(kFrames, nullptr);
  std::vector<FrameView> pageableFrames, pinnedFrames, deviceFrames;
  for (int f = 0; f < kFrames; ++f) {
    for (auto& v : pageable[f]) v = uint8_t(gen());
    pageableFrames.push_back(FrameView{pageable[f].data(), W, H, std::size_t(W), MemoryKind::Host});
    check(allocatePinnedHost(bytes, &pinned[f]), "pinned frame");
    pinnedFrames.push_back(FrameView{static_cast<uint8_t*>(pinned[f]), W, H, std::size_t(W), MemoryKind::Host});
    BENCH_CUDA_CHECK(cudaMalloc(&device[f], bytes));
    deviceFrames.push_back(FrameView{static_cast<uint8_t*>(device[f]), W, H, std::size_t(W), MemoryKind::Device});
  }
  std::printf("\nthe host's time a 1920x1080 frame by where the frames lie (2 in flight; paced: frames 2x that apart)\n\n"
              "| bank | frames | staging copy | 2 in flight | submit (host) | paced submit (host) | paced collect (host) |\n"
              "|---|---|---|---|---|---|---|\n");
  for (auto [count, side] : {std::pair{1, 64}, std::pair{16, 32}}) {
    const std::vector<TemplateImage> templates = randomBankInFrames(count, side, pageableFrames, gen);
    for (int f = 0; f < kFrames; ++f) {  // the same pixels (the pasted template) in every kind
      std::memcpy(pinned[f], pageable[f].data(), bytes);
      BENCH_CUDA_CHECK(cudaMemcpy(device[f], pageable[f].data(), bytes, cudaMemcpyHostToDevice));
    }
    struct Kind {
      const char* name;
      const std::vector<FrameView>* frames;
      CudaStagingCopy staging;
    };
    const Kind kinds[] = {{"pinned", &pinnedFrames, CudaStagingCopy::CallerThread},
                          {"device", &deviceFrames, CudaStagingCopy::CallerThread},
                          {"pageable", &pageableFrames, CudaStagingCopy::CallerThread},
                          {"pageable", &pageableFrames, CudaStagingCopy::HostFunction}};
    for (const Kind& kind : kinds) {
      EngineOptions o;
      o.backend = Backend::Cuda;
      o.cudaStagingCopy = kind.staging;
      std::unique_ptr<Engine> e;
      check(Engine::create(o, &e), "engine");
      check(e->setTemplates(templates), "templates");
      MatchParams p;
      p.threshold = 0.9;
      const RunTimes streamed = medianMicrosPerFrame(*e, *kind.frames, p, 2);
      const HostCalls paced = pacedHostMicros(*e, *kind.frames, p, 2.0 * streamed.perFrame);
      std::printf("| %d x %d² | %s | %s | %.1f | %.1f | %.1f | %.1f |\n", count, side, kind.name,
                  kind.frames == &pageableFrames ? cudaStagingCopyName(kind.staging) : "none", streamed.perFrame,
                  streamed.submit, paced.submit, paced.collect);
      std::fflush(stdout);
    }
  }
  for (int f = 0; f < kFrames; ++f) {
    freePinnedHost(pinned[f]);
    cudaFree(device[f]);
  }
}

}  // namespace

int main(int argc, char** argv) {
  bool hostCallsOnly = false, banksOnly = false, largeOnly = false, enginePair = false, lanesAb = false,
       productAb = false;
  std::optional<int> lanesAsked;  // --lanes; unset: the library's default (2 for --lanes-ab)
  std::optional<bool> fftPeakHandoff;  // unset: the size plan's choice
  CudaGemmTemplates gemmTemplates = CudaGemmTemplates::Auto;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    const std::string next = i + 1 < argc ? argv[i + 1] : "";
    if (a == "--host-calls") {
      hostCallsOnly = true;
    } else if (a == "--banks") {
      banksOnly = true;
    } else if (a == "--large") {
      largeOnly = true;
    } else if (a == "--engine-pair") {
      enginePair = true;
    } else if (a == "--lanes-ab") {
      lanesAb = true;
    } else if (a == "--fft-product-ab") {
      productAb = true;
    } else if (a == "--lanes" && !next.empty() && next.find_first_not_of("0123456789") == std::string::npos) {
      lanesAsked = std::atoi(next.c_str());
      ++i;
    } else if (a == "--fft-peak-handoff") {
      fftPeakHandoff = true;
    } else if (a == "--fft-peak-scan") {
      fftPeakHandoff = false;
    } else if (a == "--gemm-templates" && (next == "auto" || next == "unsigned" || next == "zero-mean")) {
      gemmTemplates = next == "zero-mean" ? CudaGemmTemplates::ZeroMean
                      : next == "unsigned" ? CudaGemmTemplates::Unsigned
                                           : CudaGemmTemplates::Auto;
      ++i;
    } else {
      if (a == "--gemm-templates")
        std::fprintf(stderr, "bench_stream: --gemm-templates takes auto, unsigned or zero-mean\n");
      else
        std::fprintf(stderr, "bench_stream: unknown argument '%s'\n", a.c_str());
      std::fprintf(stderr,
                   "usage: bench_stream [--host-calls] [--banks] [--large] [--lanes N] [--lanes-ab] [--engine-pair]\n"
                   "                    [--fft-product-ab]\n"
                   "                    [--gemm-templates auto|unsigned|zero-mean]\n"
                   "                    [--fft-peak-handoff | --fft-peak-scan]\n"
                   "  --host-calls: only the host's time by frame memory; --banks: only the banks of 16 or\n"
                   "  more templates; --large: only single templates of 128 and 256; --gemm-templates: how\n"
                   "  GEMM-bank groups hold their templates; --lanes N: the engines' matching lanes; --lanes-ab:\n"
                   "  1 lane against N, 2 in flight; --engine-pair: one engine, 2 in flight, against two\n"
                   "  engines taking alternate frames; --fft-product-ab: the fft product by its kernel against\n"
                   "  in the inverse transform's load; --fft-peak-handoff / --fft-peak-scan: float-fft\n"
                   "  peaks handed over / scanned, whatever the size plan picks\n");
      return 2;
    }
  }
  const int lanes = lanesAsked ? *lanesAsked : lanesAb ? 2 : EngineOptions{}.cudaMatchingLanes;
  std::string why;
  if (!cudaAvailable(&why)) {
    std::printf("no GPU: %s\n", why.c_str());
    return 0;
  }
  cudaDeviceProp prop{};
  BENCH_CUDA_CHECK(cudaGetDeviceProperties(&prop, 0));
  std::printf("GPU: %s, matching lanes %d, GEMM-bank templates %s, float-fft peaks %s\n\nccoeff-normed, automatic numerator, microseconds per frame (median of %d runs, wall clock);\n"
              "match: one frame at a time; k in flight: submit/collect keeping k frames in flight; upload: one\n"
              "frame's host-to-device copy alone (events), the floor of a stream that uploads its frames;\n"
              "submit (host): time the host spends enqueueing one frame's work, 2 in flight;\n"
              "paced submit / collect (host): medians of each call's time, 2 in flight, frames coming 2x the\n"
              "2-in-flight time apart (a producer slower than the engine: collect finds its frame done).\n\n",
              prop.name, lanes, cudaGemmTemplatesName(gemmTemplates),
              !fftPeakHandoff ? "as the size plan picks" : *fftPeakHandoff ? "handed over" : "map scan",
              kRuns);
  std::mt19937 gen(12345);
  if (hostCallsOnly) {
    hostCallsTable(gen);
    return 0;
  }
  if (enginePair)
    std::printf("| frame | bank | one engine, 2 in flight | two engines, alternate frames, 1 in flight each | two / one |\n"
                "|---|---|---|---|---|\n");
  else if (lanesAb)
    std::printf("| frame | bank | 1 lane, 2 in flight | %d lanes, 2 in flight | %d lanes / 1 |\n|---|---|---|---|---|\n",
                lanes, lanes);
  else if (productAb)
    std::printf("| frame | bank | fft product kernel, 2 in flight | product in the inverse's load, 2 in flight | load / "
                "kernel |\n|---|---|---|---|---|\n");
  else
    std::printf("| frame | bank | match | 1 in flight | 2 in flight | 3 in flight | upload | submit (host) "
                "| paced submit (host) | paced collect (host) | match / best |\n"
                "|---|---|---|---|---|---|---|---|---|---|---|\n");
  struct Bank {
    int count, side;
  };
  const Bank banks[] = {{1, 8},   {1, 16},  {1, 32},  {1, 64},   {1, 128},
                       {1, 256}, {16, 32}, {64, 32}, {64, 16}, {256, 16}, {16, 64}, {1024, 16}};
  for (auto [W, H] : {std::pair{1920, 1080}, std::pair{2560, 1440}, std::pair{3840, 2160}}) {
    if (W == 2560 && !largeOnly) continue;  // between the hand-off's two measured sizes
    const std::size_t bytes = std::size_t(W) * H;
    std::vector<void*> blocks;
    std::vector<FrameView> frames;
    for (int f = 0; f < kFrames; ++f) {
      void* block = nullptr;
      check(allocatePinnedHost(bytes, &block), "pinned frame");
      auto* px = static_cast<uint8_t*>(block);
      for (std::size_t i = 0; i < bytes; ++i) px[i] = uint8_t(gen());
      blocks.push_back(block);
      frames.push_back(FrameView{px, W, H, std::size_t(W), MemoryKind::Host});
    }
    const double upload = uploadMicros(frames[0].data, bytes);
    for (const Bank& bank : banks) {
      // Every template of a bank keeps a map of doubles: the largest banks at 1080p only.
      if (bank.count > 64 && W > 1920) continue;
      const bool large = bank.count == 1 && bank.side >= 128;
      if ((banksOnly || largeOnly) && !((banksOnly && bank.count >= 16) || (largeOnly && large))) continue;
      const std::vector<TemplateImage> templates = randomBankInFrames(bank.count, bank.side, frames, gen);
      EngineOptions o;
      o.backend = Backend::Cuda;
      o.cudaGemmTemplates = gemmTemplates;
      o.cudaMatchingLanes = lanes;
      std::unique_ptr<Engine> e;
      check(Engine::create(o, &e), "engine");
      if (auto* cudaEngine = dynamic_cast<cuda::CudaEngine*>(e.get()); cudaEngine && fftPeakHandoff)
        cudaEngine->setFftPeakHandoff(*fftPeakHandoff);
      check(e->setTemplates(templates), "templates");
      MatchParams p;
      p.threshold = 0.9;
      if (enginePair || lanesAb || productAb) {
        // enginePair: one engine with 2 in flight against two engines taking alternate frames;
        // lanesAb: one lane against `lanes`, 2 in flight; productAb: the fft product by its kernel
        // (the second engine) against in the inverse's load. The second engine has the same bank.
        EngineOptions second = o;
        if (lanesAb) second.cudaMatchingLanes = 1;
        std::unique_ptr<Engine> other;
        check(Engine::create(second, &other), "engine");
        if (auto* cudaOther = dynamic_cast<cuda::CudaEngine*>(other.get())) {
          if (fftPeakHandoff) cudaOther->setFftPeakHandoff(*fftPeakHandoff);
          if (productAb) cudaOther->setFftProductInLoad(false);
        }
        check(other->setTemplates(templates), "templates");
        const auto runOne = [&](Engine& engine) { return runMicrosPerFrame(engine, frames, p, 2).perFrame; };
        const auto [base, tried] =
            enginePair ? alternatingMedians([&] { return runOne(*e); },
                                            [&] { return pairMicrosPerFrame(*e, *other, frames, p); })
                       : alternatingMedians([&] { return runOne(*other); }, [&] { return runOne(*e); });
        std::printf("| %dx%d | %dx %dx%d | %.1f | %.1f | %.2f |\n", W, H, bank.count, bank.side, bank.side, base,
                    tried, tried / base);
        if (auto* cudaEngine = dynamic_cast<cuda::CudaEngine*>(e.get()); cudaEngine && productAb &&
                                                                         !cudaEngine->fftProductInLoadRefusal().empty())
          std::printf("(product in the load refused: %s)\n", cudaEngine->fftProductInLoadRefusal().c_str());
        std::fflush(stdout);
        continue;
      }
      const double single = medianMicrosPerFrame(*e, frames, p, 0).perFrame;
      double inFlight[3], submit = 0;
      for (int k = 1; k <= 3; ++k) {
        const RunTimes t = medianMicrosPerFrame(*e, frames, p, k);
        inFlight[k - 1] = t.perFrame;
        if (k == 2) submit = t.submit;
      }
      const double best = *std::min_element(inFlight, inFlight + 3);
      const HostCalls paced = pacedHostMicros(*e, frames, p, 2.0 * inFlight[1]);
      std::printf("| %dx%d | %dx %dx%d | %.1f | %.1f | %.1f | %.1f | %.1f | %.1f | %.1f | %.1f | %.2fx |\n", W, H,
                  bank.count, bank.side, bank.side, single, inFlight[0], inFlight[1], inFlight[2], upload, submit,
                  paced.submit, paced.collect, single / best);
      std::fflush(stdout);
    }
    for (void* b : blocks) freePinnedHost(b);
  }
  if (!banksOnly && !largeOnly && !enginePair && !lanesAb && !productAb) hostCallsTable(gen);
  return 0;
}
