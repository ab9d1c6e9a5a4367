// Full per-frame cost of the CUDA engine (pinned upload + SAT + numerator + score + peaks, until
// the matches are on the host), ccoeff-normed, 1920x1080 and 3840x2160, square templates 8..256:
// each numerator alone and the automatic choice, beside NPP's nppiCrossCorrValid_NormLevel
// measured in the same run (OpenCV: bench/opencv_matchtemplate.py, run by the same command).
// Our figures are wall-clock medians of the synchronous match() (it ends in the frame's one
// synchronisation); upload, SAT and NPP alone are CUDA-event medians. All after warm-up.
#include <cuda_runtime.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "bench_check.hpp"
#include "median.hpp"
#include "cuda/engine/cost_model.hpp"
#include "cuda/engine/cuda_engine.hpp"
#include "cuda/numerator/numerator_fft.hpp"
#include "cuda/numerator/numerator_spatial.hpp"
#include "cuda/peaks/peaks_kernels.hpp"
#include "cuda/score/score_kernels.hpp"
#include "cuda/numerator/spatial_scores.hpp"
#include <cufft.h>
#include "nccmatch/engine.hpp"
#include "nccmatch/sat_cuda.hpp"
#include "npp_runtime.hpp"

using namespace nccmatch;
using nccmatch::bench::median;

namespace {

// NCC_BENCH_QUICK=1: no NPP, no cuFFT table, 0.1 s of samples a figure (iteration runs).
const bool kQuick = std::getenv("NCC_BENCH_QUICK") != nullptr;
std::chrono::milliseconds sampleWindow() { return std::chrono::milliseconds(kQuick ? 100 : 250); }

// Repeats until ~0.25 s or 40 samples (at least 3), after `warm` untimed calls.
double medianWallMicros(const std::function<void()>& f, int warm = 2) {
  for (int i = 0; i < warm; ++i) f();
  std::vector<double> t;
  auto begin = std::chrono::steady_clock::now();
  while (t.size() < 3 || (t.size() < 40 && std::chrono::steady_clock::now() - begin < sampleWindow())) {
    auto a = std::chrono::steady_clock::now();
    f();
    auto b = std::chrono::steady_clock::now();
    t.push_back(std::chrono::duration<double, std::micro>(b - a).count());
  }
  return median(t);
}

double medianEventMicros(cudaStream_t stream, const std::function<void()>& f, int warm = 2) {
  cudaEvent_t a, b;
  BENCH_CUDA_CHECK(cudaEventCreate(&a));
  BENCH_CUDA_CHECK(cudaEventCreate(&b));
  for (int i = 0; i < warm; ++i) f();
  BENCH_CUDA_CHECK(cudaStreamSynchronize(stream));
  std::vector<double> t;
  auto begin = std::chrono::steady_clock::now();
  while (t.size() < 3 || (t.size() < 40 && std::chrono::steady_clock::now() - begin < sampleWindow())) {
    BENCH_CUDA_CHECK(cudaEventRecord(a, stream));
    f();
    BENCH_CUDA_CHECK(cudaEventRecord(b, stream));
    BENCH_CUDA_CHECK(cudaEventSynchronize(b));
    float ms = 0;
    BENCH_CUDA_CHECK(cudaEventElapsedTime(&ms, a, b));
    t.push_back(ms * 1000.0);
  }
  BENCH_CUDA_CHECK(cudaEventDestroy(a));
  BENCH_CUDA_CHECK(cudaEventDestroy(b));
  return median(t);
}


std::string fmt(double us) {
  char b[32];
  if (us < 0) return "-";
  if (us >= 10000) std::snprintf(b, sizeof b, "%.1f ms", us / 1000.0);
  else std::snprintf(b, sizeof b, "%.1f", us);
  return b;
}

// A bank of 16 templates of 32x32 (the element's 16-template target): the fused kernel as one
// bank launch against 16 launches one after another (CUDA events), and the engine's whole
// match() for the bank (wall clock, pinned host frame).
void benchFusedBank(const uint8_t* dev, int W, int H, const uint8_t* host, cudaStream_t stream,
                    std::mt19937& gen) {
  constexpr int kTemplates = 16, kSide = 32;
  const int mapW = W - kSide + 1, mapH = H - kSide + 1;
  const std::size_t positions = std::size_t(mapW) * mapH;
  const int blocks = cuda::fusedSpatialBlocks(mapW, mapH);
  std::vector<TemplateImage> bank;
  std::vector<cuda::FusedBankTemplate> descs;
  std::vector<void*> buffers;
  auto deviceAlloc = [&](std::size_t bytes) {
    void* p = nullptr;
    BENCH_CUDA_CHECK(cudaMalloc(&p, bytes));
    buffers.push_back(p);
    return p;
  };
  for (int k = 0; k < kTemplates; ++k) {
    TemplateImage t;
    t.width = t.height = kSide;
    t.pixels.resize(kSide * kSide);
    const int px = int(gen() % (W - kSide)), py = int(gen() % (H - kSide));
    for (int y = 0; y < kSide; ++y)
      for (int x = 0; x < kSide; ++x) t.pixels[y * kSide + x] = host[std::size_t(py + y) * W + px + x];
    const std::vector<uint8_t> frags = cuda::fusedSpatialFragments(t.pixels.data(), kSide, kSide);
    cuda::FusedBankTemplate d;
    d.packedTemplate = static_cast<uint8_t*>(deviceAlloc(frags.size()));
    BENCH_CUDA_CHECK(cudaMemcpy(const_cast<uint8_t*>(d.packedTemplate), frags.data(), frags.size(), cudaMemcpyHostToDevice));
    d.templateWidth = d.templateHeight = kSide;
    d.stats = templateStats(t);
    d.map = static_cast<double*>(deviceAlloc(positions * sizeof(double)));
    d.blockBest = static_cast<cuda::Ranked*>(deviceAlloc(blocks * sizeof(cuda::Ranked)));
    d.above = static_cast<int*>(deviceAlloc(positions * sizeof(int)));
    d.aboveCount = static_cast<int*>(deviceAlloc(kTemplates * sizeof(int)));
    descs.push_back(d);
    bank.push_back(std::move(t));
  }
  cuda::FusedSpatialBank fused;
  if (!fused.set(descs, cuda::FusedNumerator::TensorCores).ok()) std::exit(1);
  cuda::FusedBankRule rule;
  rule.goodEnough = 0.9;
  rule.collect = true;
  const double tBank = medianEventMicros(stream, [&] {
    for (const auto& d : descs) cudaMemsetAsync(d.aboveCount, 0, sizeof(int), stream);
    fused.score(dev, W, W, H, Method::CCoeffNormed, rule, 0, mapH, stream);
  });
  const double tSingles = medianEventMicros(stream, [&] {
    for (const auto& d : descs) {
      cudaMemsetAsync(d.aboveCount, 0, sizeof(int), stream);
      cuda::FusedSpatialArgs a;
      a.image = dev; a.pitch = W; a.width = W; a.height = H; a.packedTemplate = d.packedTemplate;
      a.templateWidth = a.templateHeight = kSide; a.stats = d.stats; a.method = Method::CCoeffNormed;
      a.map = d.map;
      cuda::PeakHandoff h;
      h.blockBest = d.blockBest; h.above = d.above; h.aboveCount = d.aboveCount;
      h.goodEnough = rule.goodEnough; h.collect = true;
      cuda::fusedSpatialScores(a, 0, mapH, h, stream);
    }
  });
  EngineOptions o;
  o.backend = Backend::Cuda;
  std::unique_ptr<Engine> e;
  MatchParams params;
  params.threshold = 0.9;
  params.maxMatches = 4;
  FrameResult r;
  const FrameView hostFrame{host, W, H, std::size_t(W), MemoryKind::Host};
  if (!Engine::create(o, &e).ok() || !e->setTemplates(bank).ok() || !e->match(hostFrame, params, &r).ok()) std::exit(1);
  const double tEngine = medianWallMicros([&] { e->match(hostFrame, params, &r); });
  std::printf("bank %dx%d 16 x 32x32 (us): fused bank launch %.1f | 16 fused launches %.1f | engine match() %.1f (%zu matches)\n",
              W, H, tBank, tSingles, tEngine, r.matches.size());
  for (void* p : buffers) cudaFree(p);
}

}  // namespace

int main() {
  cudaDeviceProp prop{};
  BENCH_CUDA_CHECK(cudaGetDeviceProperties(&prop, 0));
  std::printf("GPU: %s, %d SMs\n", prop.name, prop.multiProcessorCount);
  NppCrossCorr npp = kQuick ? NppCrossCorr{} : loadNppCrossCorr();
  std::printf("NPP: %s\n", npp.corr ? npp.from.c_str() : "not found (column skipped)");
  cudaStream_t stream;
  BENCH_CUDA_CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  std::mt19937 gen(12345);

  std::printf("\nccoeff-normed, per frame, microseconds (median). auto/spatial/fft: match() on a pinned host\n"
              "frame; auto-dev: the same frame already on the device; upload, SAT: those stages alone;\n"
              "pred sp/fft: the cost model's numerator predictions.\n\n");
  std::printf("| frame | template | auto (pick) | auto-dev | spatial | fft | upload | SAT (%s) | pred sp / fft | NPP | NPP / auto |\n",
              "build");
  std::printf("|---|---|---|---|---|---|---|---|---|---|---|\n");
  for (auto size : {std::pair{1920, 1080}, std::pair{3840, 2160}}) {
    const int W = size.first, H = size.second;
    uint8_t* host = nullptr;
    BENCH_CUDA_CHECK(cudaMallocHost(&host, std::size_t(W) * H));
    for (std::size_t i = 0; i < std::size_t(W) * H; ++i) host[i] = uint8_t(gen());
    uint8_t* dev = nullptr;
    BENCH_CUDA_CHECK(cudaMalloc(&dev, std::size_t(W) * H));
    BENCH_CUDA_CHECK(cudaMemcpy(dev, host, std::size_t(W) * H, cudaMemcpyHostToDevice));
    const FrameView hostFrame{host, W, H, std::size_t(W), MemoryKind::Host};
    const FrameView devFrame{dev, W, H, std::size_t(W), MemoryKind::Device};
    const double upload = medianEventMicros(stream, [&] {
      BENCH_CUDA_CHECK(cudaMemcpy2DAsync(dev, W, host, W, W, H, cudaMemcpyHostToDevice, stream));
    });
    for (int side : {8, 16, 32, 64, 128, 256}) {
      TemplateImage t;
      t.width = t.height = side;
      t.pixels.resize(std::size_t(side) * side);
      const int px = W / 3, py = H / 2;
      for (int y = 0; y < side; ++y)
        for (int x = 0; x < side; ++x) t.pixels[std::size_t(y) * side + x] = host[std::size_t(py + y) * W + px + x];
      MatchParams params;
      params.method = Method::CCoeffNormed;
      params.threshold = 0.9;
      params.maxMatches = 4;
      double times[3] = {0, 0, 0};
      double autoDev = 0;
      std::string pick;
      cuda::SatBuild satKind = cuda::SatBuild::Fused;
      bool usesSat = true;
      int n = 0;
      for (CudaNumerator num : {CudaNumerator::Auto, CudaNumerator::Spatial, CudaNumerator::Fft}) {
        EngineOptions o;
        o.backend = Backend::Cuda;
        o.cudaNumerator = num;
        std::unique_ptr<Engine> e;
        Status s = Engine::create(o, &e);
        if (s.ok()) s = e->setTemplates({t});
        FrameResult r;
        if (s.ok()) s = e->match(hostFrame, params, &r);
        if (!s.ok()) {
          std::fprintf(stderr, "engine failed: %s\n", s.message().c_str());
          return 1;
        }
        if (r.matches.empty() || r.matches[0].x != px || r.matches[0].y != py) {
          std::fprintf(stderr, "wrong match for %dx%d template %d (%s)\n", W, H, side, cudaNumeratorName(num));
          return 1;
        }
        times[n++] = medianWallMicros([&] { e->match(hostFrame, params, &r); });
        if (num == CudaNumerator::Auto) {
          autoDev = medianWallMicros([&] { e->match(devFrame, params, &r); });
          auto* ce = dynamic_cast<cuda::CudaEngine*>(e.get());
          pick = cudaNumeratorName(ce->numeratorFor(0));
          satKind = ce->satBuild();
          usesSat = ce->usesSat();
        }
      }
      // The SAT alone, with the build the engine picked.
      std::unique_ptr<cuda::SatBuilder> sb;
      double sat = -1;
      if (cuda::SatBuilder::create(satKind, W, H, &sb).ok()) {
        void *s1 = nullptr, *s2 = nullptr;
        BENCH_CUDA_CHECK(cudaMalloc(&s1, std::size_t(W) * H * cuda::satEntryBytes(satKind)));
        BENCH_CUDA_CHECK(cudaMalloc(&s2, std::size_t(W) * H * cuda::satEntryBytes(satKind)));
        sat = medianEventMicros(stream, [&] { sb->build(dev, W, W, H, s1, s2, stream); });
        cudaFree(s1);
        cudaFree(s2);
      }
      const cuda::NumeratorCosts pred = cuda::predictNumeratorCosts(side, side, W, H, prop.multiProcessorCount);
      double nppUs = -1;
      if (npp.corr) {
        const NppStreamContext ctx = makeNppContext(stream, 0, prop);
        const int mapW = W - side + 1, mapH = H - side + 1;
        std::size_t bytes = 0;
        npp.bufferSize(NppiSize{W, H}, &bytes, ctx);
        uint8_t *buffer = nullptr, *tpl = nullptr;
        float* out = nullptr;
        BENCH_CUDA_CHECK(cudaMalloc(&buffer, std::max<std::size_t>(bytes, 1)));
        BENCH_CUDA_CHECK(cudaMalloc(&tpl, t.pixels.size()));
        BENCH_CUDA_CHECK(cudaMalloc(&out, std::size_t(mapW) * mapH * sizeof(float)));
        BENCH_CUDA_CHECK(cudaMemcpy(tpl, t.pixels.data(), t.pixels.size(), cudaMemcpyHostToDevice));
        int status = 0;
        nppUs = medianEventMicros(stream, [&] {
          status |= npp.corr(dev, W, NppiSize{W, H}, tpl, side, NppiSize{side, side}, out, mapW * 4, buffer, ctx);
        }, side >= 128 ? 1 : 2);
        if (status != 0) std::fprintf(stderr, "NPP returned status %d\n", status);
        cudaFree(buffer);
        cudaFree(tpl);
        cudaFree(out);
      }
      char predText[64];
      std::snprintf(predText, sizeof predText, "%.0f / %.0f", pred.spatialMicros, pred.fftMicros);
      std::printf("| %dx%d | %d | %s (%s) | %s | %s | %s | %s | %s (%s) | %s | %s | %.1fx |\n", W, H, side,
                  fmt(times[0]).c_str(), pick.c_str(), fmt(autoDev).c_str(), fmt(times[1]).c_str(),
                  fmt(times[2]).c_str(), fmt(upload).c_str(), fmt(sat).c_str(), usesSat ? cuda::satBuildName(satKind) : "not used",
                  predText, fmt(nppUs).c_str(), nppUs > 0 ? nppUs / times[0] : 0.0);
      std::fflush(stdout);
    }
    // Where the time goes: each stage alone (CUDA events), with the int64->fused32 SAT.
    {
      std::unique_ptr<cuda::SatBuilder> sb;
      if (!cuda::SatBuilder::create(cuda::SatBuild::Fused32, W, H, &sb).ok()) return 1;
      void *s1 = nullptr, *s2 = nullptr;
      int64_t* num = nullptr;
      double* map = nullptr;
      void* res = nullptr;
      BENCH_CUDA_CHECK(cudaMalloc(&s1, std::size_t(W) * H * 4));
      BENCH_CUDA_CHECK(cudaMalloc(&s2, std::size_t(W) * H * 4));
      BENCH_CUDA_CHECK(cudaMalloc(&num, std::size_t(W) * H * 8));
      BENCH_CUDA_CHECK(cudaMalloc(&map, std::size_t(W) * H * 8));
      BENCH_CUDA_CHECK(cudaMalloc(&res, 4096));
      sb->build(dev, W, W, H, s1, s2, stream);
      cuda::FftCorrelator fft;
      if (!fft.configure(W, H, stream, cuda::FftPrecision::Float).ok()) return 1;
      int* recompute = nullptr;
      BENCH_CUDA_CHECK(cudaMalloc(&recompute, std::size_t(W) * H * sizeof(int) + sizeof(int)));
      int* recomputeCount = recompute + std::size_t(W) * H;
      for (int side : {8, 16, 32, 64, 128}) {
        std::vector<uint8_t> px(std::size_t(side) * side);
        for (auto& v : px) v = uint8_t(gen());
        uint8_t *tplDev = nullptr, *packedDev = nullptr;
        const cuda::SpatialLayout l = cuda::spatialLayout(side, side);
        const std::vector<uint8_t> packed = cuda::spatialPack(px.data(), l);
        BENCH_CUDA_CHECK(cudaMalloc(&tplDev, px.size()));
        BENCH_CUDA_CHECK(cudaMalloc(&packedDev, packed.size()));
        BENCH_CUDA_CHECK(cudaMemcpy(tplDev, px.data(), px.size(), cudaMemcpyHostToDevice));
        BENCH_CUDA_CHECK(cudaMemcpy(packedDev, packed.data(), packed.size(), cudaMemcpyHostToDevice));
        int slot = -1;
        if (!fft.addTemplate(tplDev, side, side, 127.5, &slot).ok()) return 1;
        cuda::ScoreInputs in;
        in.sum = s1; in.sumSq = s2; in.sat32 = true; in.frameWidth = W; in.frameHeight = H;
        in.templateWidth = side; in.templateHeight = side;
        in.stats = templateStats(TemplateImage{"", side, side, px, {}});
        in.smCount = prop.multiProcessorCount;
        const int mapW = W - side + 1, mapH = H - side + 1;
        MatchParams params;
        params.threshold = 0.9;
        params.maxMatches = 4;
        cuda::PeakFinder peaks;
        auto* dm = static_cast<cuda::DeviceMatch*>(res);
        const float* centred = nullptr;
        const double tSat = medianEventMicros(stream, [&] { sb->build(dev, W, W, H, s1, s2, stream); });
        const double tSpatial = medianEventMicros(stream, [&] { cuda::spatialNumerator(dev, W, W, H, packedDev, l, num, stream); });
        const double tExact = medianEventMicros(stream, [&] { cuda::scoreFromExactNumerator(in, num, map, stream); });
        // The float fft path as the engine runs it: forward with the frame's own mean, product +
        // inverse, scores with the rounding bound, then the (here empty) exact recomputation.
        const double tForward = medianEventMicros(stream, [&] { fft.transformFrame(dev, W); });
        const double tCorrelate = medianEventMicros(stream, [&] { fft.correlate(slot, &centred); });
        const double norm = std::sqrt(double(in.stats.centredSq()) / double(in.stats.n));
        const double tCentred = medianEventMicros(stream, [&] {
          cudaMemsetAsync(recomputeCount, 0, sizeof(int), stream);
          cuda::scoreFromFloatCentredNumerator(in, centred, fft.fftWidth(), fft.errorScale(), fft.frameNormSq(), norm, map, recompute, recomputeCount, stream);
          cuda::recomputeExactScores(in, dev, W, tplDev, recompute, recomputeCount, map, stream);
        });
        int recomputed = -1;
        BENCH_CUDA_CHECK(cudaMemcpy(&recomputed, recomputeCount, sizeof(int), cudaMemcpyDeviceToHost));
        const double tPeaks = medianEventMicros(stream, [&] { peaks.find({map, mapW, mapH, side, side}, params, {dm, dm + 1, reinterpret_cast<int*>(dm + 8)}, stream); });
        // The fused spatial kernel (numerator + window sums + score + handoff) and the peaks
        // from its handoff, where the template fits it.
        double tFused = -1, tFusedDp4a = -1, tFusedCcorr = -1, tHandoffPeaks = -1;
        for (cuda::FusedNumerator kind : {cuda::FusedNumerator::Dp4a, cuda::FusedNumerator::TensorCores}) {
          if (!cuda::fusedSpatialFits(side, side)) break;
          const std::vector<uint8_t> words = kind == cuda::FusedNumerator::TensorCores
                                                 ? cuda::fusedSpatialFragments(px.data(), side, side)
                                                 : cuda::fusedSpatialPack(px.data(), side, side);
          uint8_t* wordsDev = nullptr;
          cuda::Ranked* blockBest = nullptr;
          int *above = nullptr, *aboveCount = nullptr;
          BENCH_CUDA_CHECK(cudaMalloc(&wordsDev, words.size()));
          BENCH_CUDA_CHECK(cudaMemcpy(wordsDev, words.data(), words.size(), cudaMemcpyHostToDevice));
          BENCH_CUDA_CHECK(cudaMalloc(&blockBest, sizeof(cuda::Ranked) * cuda::fusedSpatialBlocks(mapW, mapH)));
          BENCH_CUDA_CHECK(cudaMalloc(&above, sizeof(int) * std::size_t(mapW) * mapH));
          BENCH_CUDA_CHECK(cudaMalloc(&aboveCount, sizeof(int)));
          cuda::FusedSpatialArgs a;
          a.image = dev; a.pitch = W; a.width = W; a.height = H; a.packedTemplate = wordsDev;
          a.templateWidth = side; a.templateHeight = side; a.stats = in.stats; a.method = Method::CCoeffNormed; a.map = map;
          a.numerator = kind;
          cuda::PeakHandoff h;
          h.blockBest = blockBest; h.above = above; h.aboveCount = aboveCount; h.sign = 1.0;
          h.goodEnough = params.threshold; h.collect = true;
          (kind == cuda::FusedNumerator::Dp4a ? tFusedDp4a : tFused) = medianEventMicros(stream, [&] {
            cudaMemsetAsync(aboveCount, 0, sizeof(int), stream);
            cuda::fusedSpatialScores(a, 0, mapH, h, stream);
          });
          if (kind == cuda::FusedNumerator::TensorCores) {
            // The same launch with ccorr's trivial score and no above-threshold list: what the
            // double arithmetic costs. Then the ccoeff-normed launch again for the peaks below.
            a.method = Method::CCorr;
            h.collect = false;
            tFusedCcorr = medianEventMicros(stream, [&] { cuda::fusedSpatialScores(a, 0, mapH, h, stream); });
            a.method = Method::CCoeffNormed;
            h.collect = true;
            cudaMemsetAsync(aboveCount, 0, sizeof(int), stream);
            cuda::fusedSpatialScores(a, 0, mapH, h, stream);
          }
          tHandoffPeaks = medianEventMicros(stream, [&] {
            peaks.findFromHandoff({map, mapW, mapH, side, side}, params, h, cuda::fusedSpatialBlocks(mapW, mapH), {dm, dm + 1, reinterpret_cast<int*>(dm + 8)}, stream);
          });
          cudaFree(wordsDev); cudaFree(blockBest); cudaFree(above); cudaFree(aboveCount);
        }
        std::printf("stages %dx%d template %d (us): upload %.1f | SAT fused32 %.1f | spatial numerator %.1f | exact score %.1f | "
                    "float fft forward %.1f | fft product+inverse %.1f | centred score+recompute %.1f (%d recomputed) | peaks %.1f | fused spatial scores tensor %s dp4a %s (tensor, ccorr: %s) | peaks from handoff %s\n",
                    W, H, side, upload, tSat, tSpatial, tExact, tForward, tCorrelate, tCentred, recomputed, tPeaks, fmt(tFused).c_str(), fmt(tFusedDp4a).c_str(), fmt(tFusedCcorr).c_str(), fmt(tHandoffPeaks).c_str());
        cudaFree(tplDev);
        cudaFree(packedDev);
      }
      cudaFree(s1); cudaFree(s2); cudaFree(num); cudaFree(map); cudaFree(res); cudaFree(recompute);
    }
    benchFusedBank(dev, W, H, host, stream, gen);
    cudaFreeHost(host);
    cudaFree(dev);
  }

  // cuFFT alone by padded size and precision: forward R2C + inverse C2R of one plane, to pick
  // the padding and the precision of the fft numerator.
  if (kQuick) return 0;
  std::printf("\ncuFFT forward+inverse of one plane (us, CUDA events):\n| size | float R2C | float C2R | double D2Z | double Z2D |\n|---|---|---|---|---|\n");
  for (auto size : {std::pair{1920, 1080}, std::pair{1920, 1120}, std::pair{1920, 1152}, std::pair{2048, 1080},
                    std::pair{2048, 1152}, std::pair{2000, 1100}, std::pair{3840, 2160}, std::pair{3840, 2240},
                    std::pair{4096, 2160}, std::pair{4096, 2304}, std::pair{4000, 2200}}) {
    const int fw = size.first, fh = size.second;
    const std::size_t real = std::size_t(fw) * fh, cplx = std::size_t(fh) * (fw / 2 + 1);
    void *r = nullptr, *c = nullptr;
    BENCH_CUDA_CHECK(cudaMalloc(&r, real * sizeof(double)));
    BENCH_CUDA_CHECK(cudaMalloc(&c, cplx * sizeof(cufftDoubleComplex)));
    BENCH_CUDA_CHECK(cudaMemset(r, 0, real * sizeof(double)));
    BENCH_CUDA_CHECK(cudaMemset(c, 0, cplx * sizeof(cufftDoubleComplex)));
    double t[4] = {-1, -1, -1, -1};
    const cufftType types[4] = {CUFFT_R2C, CUFFT_C2R, CUFFT_D2Z, CUFFT_Z2D};
    for (int k = 0; k < 4; ++k) {
      cufftHandle plan;
      if (cufftPlan2d(&plan, fh, fw, types[k]) != CUFFT_SUCCESS) continue;
      cufftSetStream(plan, stream);
      t[k] = medianEventMicros(stream, [&] {
        switch (k) {
          case 0: cufftExecR2C(plan, static_cast<cufftReal*>(r), static_cast<cufftComplex*>(c)); break;
          case 1: cufftExecC2R(plan, static_cast<cufftComplex*>(c), static_cast<cufftReal*>(r)); break;
          case 2: cufftExecD2Z(plan, static_cast<cufftDoubleReal*>(r), static_cast<cufftDoubleComplex*>(c)); break;
          default: cufftExecZ2D(plan, static_cast<cufftDoubleComplex*>(c), static_cast<cufftDoubleReal*>(r)); break;
        }
      });
      cufftDestroy(plan);
    }
    std::printf("| %dx%d | %.1f | %.1f | %.1f | %.1f |\n", fw, fh, t[0], t[1], t[2], t[3]);
    cudaFree(r);
    cudaFree(c);
  }
  return 0;
}
