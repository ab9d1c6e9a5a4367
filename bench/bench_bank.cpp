// Banks of templates of one size on the H200: the GEMM bank numerator (gemm_bank.hpp) with a
// sparse map (screened scores, exact ones only near the tile bests and the threshold; the
// clearing of the map's bits timed with it) and with every score written, against the fused
// kernel's loop over the same templates (FusedSpatialBank, the path before it), each launch
// timed alone with CUDA events (median after warm-up), and the achieved integer tensor
// throughput of the sparse GEMM (2 ops per multiply-add of the template's w*h pixels, padding
// not counted) as a share of the H200's dense INT8 peak. The whole per-frame cost through the
// library is in bench_stream. --digest prints a hash of the sparse launch's outputs (each template's
// best over its tiles, the above-threshold counts and bits: the order-independent ones) per case, with which
// bench/gemm_stages.sh shows that its builds repeating a stage give the same results.
// --zero-mean gives the bank its zero-mean screen (GemmBank::set's zeroMeanScreen: ccoeff-normed
// from s8 templates with one bound a template and tile); its digests should be the plain bank's.
// --npp K adds NPP's loop as a baseline: nppiCrossCorrValid_NormLevel_8u32f (ccoeff-normed, a float
// map a template) over the bank's first K templates on the same device frame, timed with events
// (median of 3 runs of the K calls) and scaled to the whole bank (each call is independent of the
// others: the loop's time is linear in the templates). OpenCV's loop: bench/opencv_bank.py.
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <string>
#include <vector>

#include "bench_check.hpp"
#include "cuda/numerator/gemm_bank.hpp"
#include "npp_runtime.hpp"
#include "rules/peak_rules.hpp"
#include "cuda/numerator/spatial_scores.hpp"
#include "median.hpp"
#include "nccmatch/engine.hpp"
#include "rules/score_rules.hpp"

using namespace nccmatch;
using namespace nccmatch::cuda;

namespace {

constexpr double kInt8PeakTops = 1979.0;  // H200 dense INT8
constexpr int kRuns = 15;
constexpr int kWarmUps = 3;  // timeLaunch's runs before the timed ones

struct Outputs {
  double* maps = nullptr;
  Ranked* best = nullptr;
  int *above = nullptr, *counts = nullptr;
  uint32_t* bits = nullptr;
};

// FNV-1a over bytes.
uint64_t fnv1a(const void* data, std::size_t bytes, uint64_t hash = 1469598103934665603ull) {
  const auto* p = static_cast<const uint8_t*>(data);
  for (std::size_t i = 0; i < bytes; ++i) hash = (hash ^ p[i]) * 1099511628211ull;
  return hash;
}

// The hash of a device buffer's bytes, continuing `hash`.
uint64_t deviceDigest(const void* device, std::size_t bytes, uint64_t hash) {
  std::vector<uint8_t> host(bytes);
  BENCH_CUDA_CHECK(cudaMemcpy(host.data(), device, bytes, cudaMemcpyDeviceToHost));
  return fnv1a(host.data(), bytes, hash);
}

// Median microseconds of `launch` (kRuns after kWarmUps warm-up runs).
template <typename Launch>
double timeLaunch(Launch launch) {
  cudaEvent_t a, b;
  BENCH_CUDA_CHECK(cudaEventCreate(&a));
  BENCH_CUDA_CHECK(cudaEventCreate(&b));
  std::vector<double> t;
  for (int i = 0; i < kRuns + kWarmUps; ++i) {
    BENCH_CUDA_CHECK(cudaEventRecord(a));
    bench::exitOnError(launch());
    BENCH_CUDA_CHECK(cudaEventRecord(b));
    BENCH_CUDA_CHECK(cudaEventSynchronize(b));
    float ms = 0;
    BENCH_CUDA_CHECK(cudaEventElapsedTime(&ms, a, b));
    if (i >= kWarmUps) t.push_back(ms * 1000.0);
  }
  cudaEventDestroy(a);
  cudaEventDestroy(b);
  return bench::median(t);
}

// NPP's loop over the first k templates (ccoeff-normed, valid region, one float map reused): the
// median of 3 event-timed runs of the k calls, after one warm-up call. Exits on an NPP error.
double nppLoopMicros(const NppCrossCorr& npp, const cudaDeviceProp& prop, const uint8_t* dFrame, int W, int H,
                     const std::vector<std::vector<uint8_t>>& pixels, int side, int k) {
  k = std::min<int>(k, int(pixels.size()));
  const NppStreamContext ctx = makeNppContext(nullptr, 0, prop);
  const int mapW = W - side + 1, mapH = H - side + 1;
  std::size_t bytes = 0;
  if (npp.bufferSize(NppiSize{W, H}, &bytes, ctx) != 0) {
    std::fprintf(stderr, "bench_bank: NPP's buffer size query failed\n");
    std::exit(1);
  }
  uint8_t *buffer = nullptr, *templates = nullptr;
  float* map = nullptr;
  const std::size_t tplBytes = std::size_t(side) * side;
  BENCH_CUDA_CHECK(cudaMalloc(&buffer, std::max<std::size_t>(bytes, 1)));
  BENCH_CUDA_CHECK(cudaMalloc(&templates, tplBytes * k));
  BENCH_CUDA_CHECK(cudaMalloc(&map, std::size_t(mapW) * mapH * sizeof(float)));
  for (int i = 0; i < k; ++i)
    BENCH_CUDA_CHECK(cudaMemcpy(templates + tplBytes * i, pixels[i].data(), tplBytes, cudaMemcpyHostToDevice));
  int status = 0;
  const auto one = [&](int i) {
    status |= npp.corr(dFrame, W, NppiSize{W, H}, templates + tplBytes * i, side, NppiSize{side, side}, map,
                       mapW * int(sizeof(float)), buffer, ctx);
  };
  one(0);  // warm-up
  cudaEvent_t a, b;
  BENCH_CUDA_CHECK(cudaEventCreate(&a));
  BENCH_CUDA_CHECK(cudaEventCreate(&b));
  std::vector<double> t;
  for (int run = 0; run < 3; ++run) {
    BENCH_CUDA_CHECK(cudaEventRecord(a));
    for (int i = 0; i < k; ++i) one(i);
    BENCH_CUDA_CHECK(cudaEventRecord(b));
    BENCH_CUDA_CHECK(cudaEventSynchronize(b));
    float ms = 0;
    BENCH_CUDA_CHECK(cudaEventElapsedTime(&ms, a, b));
    t.push_back(ms * 1000.0);
  }
  cudaEventDestroy(a);
  cudaEventDestroy(b);
  cudaFree(buffer);
  cudaFree(templates);
  cudaFree(map);
  if (status != 0) {
    std::fprintf(stderr, "bench_bank: NPP returned status %d\n", status);
    std::exit(1);
  }
  return bench::median(t);
}

}  // namespace

int main(int argc, char** argv) {
  std::string why;
  if (!cudaAvailable(&why)) {
    std::printf("no GPU: %s\n", why.c_str());
    return 0;
  }
  // Options: --gemm-only (no fused loop), --method NAME (default ccoeff-normed), --case N (one row),
  // --sliced (also the sparse GEMM launched in slices of GemmBank::sliceRows, as an engine does
  // while another engine of the process shares the device: the cost of slicing), --flat-frame (a
  // black frame instead of noise: every window flat, as a camera's black or saturated areas, where
  // a normed method scores every pair of a template the same constant).
  bool withLoop = true;
  Method method = Method::CCoeffNormed;
  int onlyCase = -1;
  int maxNTiles = 4;  // the widest n-tiles the GEMM may take (8: one block an SM; 4, 2: two)
  int maxGroupChunks = cuda::kGemmMaxGroupChunks;  // chunks a block may hold (1: one, as before groups)
  bool sliced = false;
  bool flatFrame = false;
  bool digest = false;
  bool zeroMean = false;
  int nppTemplates = 0;  // --npp K: NPP's loop over the first K templates, scaled to the bank
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--gemm-only") withLoop = false;
    else if (a == "--method" && i + 1 < argc && parseMethod(argv[i + 1], &method)) ++i;
    else if (a == "--case" && i + 1 < argc) onlyCase = std::atoi(argv[++i]);
    else if (a == "--max-n-tiles" && i + 1 < argc) maxNTiles = std::atoi(argv[++i]);
    else if (a == "--max-group-chunks" && i + 1 < argc) maxGroupChunks = std::atoi(argv[++i]);
    else if (a == "--sliced") sliced = true;
    else if (a == "--flat-frame") flatFrame = true;
    else if (a == "--digest") digest = true;
    else if (a == "--zero-mean") zeroMean = true;
    else if (a == "--npp" && i + 1 < argc && std::atoi(argv[i + 1]) > 0) nppTemplates = std::atoi(argv[++i]);
    else {
      std::fprintf(stderr,
                   "bench_bank: unknown or incomplete argument '%s'\n"
                   "usage: bench_bank [--gemm-only] [--method NAME] [--case N] [--max-n-tiles 8|4|2] [--max-group-chunks N] [--sliced] "
                   "[--flat-frame] [--digest] [--zero-mean] [--npp K]\n",
                   a.c_str());
      return 2;
    }
  }
  NppCrossCorr npp;
  if (nppTemplates > 0) {
    if (method != Method::CCoeffNormed) {
      std::fprintf(stderr, "bench_bank: --npp compares ccoeff-normed only (NPP's NormLevel), not %s\n",
                   methodName(method));
      return 2;
    }
    npp = loadNppCrossCorr();
    std::printf("NPP: %s\n", npp.corr ? npp.from.c_str() : "libnppist not found (NPP column not run)");
  }
  cudaDeviceProp prop{};
  BENCH_CUDA_CHECK(cudaGetDeviceProperties(&prop, 0));
  bool wgmma = false;
  bench::exitOnError(gemmBankUsesWgmma(&wgmma));
  std::printf("GPU: %s, %d SMs, GEMM n-tiles at most %d, GEMM numerator %s%s, %s frame\n\n%s, threshold 0.9, one launch over the whole map, microseconds (median of %d);\n"
              "TOPS: 2 x count x w x h x positions / time; share of %.0f TOPS dense INT8.\n\n",
              prop.name, prop.multiProcessorCount, maxNTiles, wgmma ? "wgmma (sm_90a)" : "mma.sync",
              zeroMean ? ", zero-mean screen" : "",
              flatFrame ? "black (flat)" : "noise", methodName(method), kRuns, kInt8PeakTops);
  std::printf("| frame | bank | fused loop | GEMM, every score | GEMM, sparse | speed-up (sparse vs loop) | GEMM TOPS | share of peak "
              "| NPP loop (scaled from K templates) | NPP / sparse |\n"
              "|---|---|---|---|---|---|---|---|---|---|\n");
  struct Case {
    int W, H, count, side;
  };
  const Case cases[] = {{1920, 1080, 16, 16}, {1920, 1080, 64, 16}, {1920, 1080, 256, 16}, {1920, 1080, 1024, 16},
                        {1920, 1080, 16, 32}, {1920, 1080, 64, 32},  {1920, 1080, 256, 32}, {1920, 1080, 16, 64},
                        {1920, 1080, 64, 64}, {3840, 2160, 64, 32},  {3840, 2160, 16, 64}};
  std::mt19937 gen(2026);
  for (int ci = 0; ci < int(sizeof(cases) / sizeof(cases[0])); ++ci) {
    if (onlyCase >= 0 && ci != onlyCase) continue;
    const Case& c = cases[ci];
    const std::size_t frameBytes = std::size_t(c.W) * c.H;
    std::vector<uint8_t> frame(frameBytes);
    for (auto& v : frame) v = flatFrame ? 0 : uint8_t(gen());
    uint8_t* dFrame = nullptr;
    BENCH_CUDA_CHECK(cudaMalloc(&dFrame, frameBytes));
    BENCH_CUDA_CHECK(cudaMemcpy(dFrame, frame.data(), frameBytes, cudaMemcpyHostToDevice));
    const int mapW = c.W - c.side + 1, mapH = c.H - c.side + 1;
    const std::size_t positions = std::size_t(mapW) * mapH;
    const std::size_t partials =
        std::size_t(std::max(gemmBankTiles(mapW, mapH), fusedSpatialBlocks(mapW, mapH)));
    Outputs o;
    BENCH_CUDA_CHECK(cudaMalloc(&o.maps, positions * c.count * sizeof(double)));
    BENCH_CUDA_CHECK(cudaMalloc(&o.above, positions * c.count * sizeof(int)));
    BENCH_CUDA_CHECK(cudaMalloc(&o.best, partials * c.count * sizeof(Ranked)));
    BENCH_CUDA_CHECK(cudaMalloc(&o.counts, c.count * sizeof(int)));
    // Per template its bits, then its frame floor (FusedBankTemplate::frameFloor): zeroed together.
    const std::size_t bitWords = (positions + 31) / 32 + 1;
    BENCH_CUDA_CHECK(cudaMalloc(&o.bits, bitWords * c.count * sizeof(uint32_t)));
    std::vector<std::vector<uint8_t>> pixels(c.count, std::vector<uint8_t>(std::size_t(c.side) * c.side));
    std::vector<const uint8_t*> pixelPtrs;
    std::vector<uint8_t*> fragments(c.count, nullptr);
    std::vector<FusedBankTemplate> members;
    for (int i = 0; i < c.count; ++i) {
      for (auto& v : pixels[i]) v = uint8_t(gen());
      pixelPtrs.push_back(pixels[i].data());
      const std::vector<uint8_t> f = fusedSpatialFragments(pixels[i].data(), c.side, c.side);
      BENCH_CUDA_CHECK(cudaMalloc(&fragments[i], f.size()));
      BENCH_CUDA_CHECK(cudaMemcpy(fragments[i], f.data(), f.size(), cudaMemcpyHostToDevice));
      TemplateImage t;
      t.width = t.height = c.side;
      t.pixels = pixels[i];
      FusedBankTemplate m;
      m.packedTemplate = fragments[i];
      m.templateWidth = m.templateHeight = c.side;
      m.stats = templateStats(t);
      m.map = o.maps + positions * i;
      m.blockBest = o.best + partials * i;
      m.above = o.above + positions * i;
      m.aboveCount = o.counts + i;
      m.aboveBits = o.bits + bitWords * i;
      m.frameFloor = m.aboveBits + bitWords - 1;
      members.push_back(m);
    }
    FusedBankRule rule;
    rule.sign = lowerIsBetter(method) ? -1.0 : 1.0;
    rule.goodEnough = method == Method::CCoeffNormed || method == Method::CCorrNormed ? 0.9 : 1e300;  // raw scores: nothing collected
    rule.collect = true;
    GemmBank gemm;
    bench::exitOnError(gemm.set(pixelPtrs, c.side, c.side, members, prop.multiProcessorCount, maxNTiles, zeroMean,
                                maxGroupChunks));
    const double denseMicros = timeLaunch([&] {
      BENCH_CUDA_CHECK(cudaMemsetAsync(o.counts, 0, c.count * sizeof(int)));
      return gemm.score(dFrame, c.W, c.W, c.H, method, rule, 0, mapH, nullptr);
    });
    FusedBankRule sparse = rule;
    sparse.everyScore = false;
    GemmPushTally pushes;
    bench::exitOnError(gemmBankPushTally(&pushes, true));  // from zero for the sparse launches
    const double gemmMicros = timeLaunch([&] {
      BENCH_CUDA_CHECK(cudaMemsetAsync(o.counts, 0, c.count * sizeof(int)));
      BENCH_CUDA_CHECK(cudaMemsetAsync(o.bits, 0, bitWords * c.count * sizeof(uint32_t)));
      return gemm.score(dFrame, c.W, c.W, c.H, method, sparse, 0, mapH, nullptr);
    });
    // bench_bank_pushes: the screens' pushes to exact scoring, a sparse launch (timeLaunch's
    // kRuns + kWarmUps of them).
    bench::exitOnError(gemmBankPushTally(&pushes, false));
    if (pushes.counted) {
      const double launches = kRuns + kWarmUps;
      std::printf("pushes case %d: %.0f pairs a launch, %.0f (tile, chunk)s screened, %.0f overflowed\n", ci,
                  double(pushes.pushes) / launches, double(pushes.screened) / launches,
                  double(pushes.overflows) / launches);
    }
    // The last sparse launch's outputs (the above lists' order varies from run to run: their
    // counts and bits do not).
    uint64_t sparseDigest = 0;
    if (digest) {
      BENCH_CUDA_CHECK(cudaDeviceSynchronize());
      sparseDigest = deviceDigest(o.counts, c.count * sizeof(int), fnv1a(nullptr, 0));
      sparseDigest = deviceDigest(o.bits, bitWords * c.count * sizeof(uint32_t), sparseDigest);
      // Each template's best over its tiles (a sparse launch leaves the tiles that cannot hold it
      // empty), its fields, not its padding (no kernel writes that).
      std::vector<Ranked> best(gemmBankTiles(mapW, mapH));
      for (int i = 0; i < c.count; ++i) {
        BENCH_CUDA_CHECK(cudaMemcpy(best.data(), o.best + partials * i, best.size() * sizeof(Ranked),
                                    cudaMemcpyDeviceToHost));
        Ranked top{0.0, -1};
        for (const Ranked& r : best)
          if (r.index >= 0 && (top.index < 0 || rankedBefore(r.goodness, r.index, top.goodness, top.index))) top = r;
        sparseDigest = fnv1a(&top.goodness, sizeof top.goodness, sparseDigest);
        sparseDigest = fnv1a(&top.index, sizeof top.index, sparseDigest);
      }
    }
    double slicedMicros = 0;
    const int sliceRows = gemm.sliceRows(c.W);
    if (sliced)
      slicedMicros = timeLaunch([&] {
        BENCH_CUDA_CHECK(cudaMemsetAsync(o.counts, 0, c.count * sizeof(int)));
        BENCH_CUDA_CHECK(cudaMemsetAsync(o.bits, 0, bitWords * c.count * sizeof(uint32_t)));
        for (int y = 0; y < mapH; y += sliceRows) {
          const Status st = gemm.score(dFrame, c.W, c.W, c.H, method, sparse, y, std::min(mapH, y + sliceRows), nullptr);
          if (!st.ok()) return st;
        }
        return Status();
      });
    double loopMicros = 0;
    if (withLoop) {
      FusedSpatialBank loop;
      bench::exitOnError(loop.set(members, FusedNumerator::TensorCores));
      loopMicros = timeLaunch([&] {
        BENCH_CUDA_CHECK(cudaMemsetAsync(o.counts, 0, c.count * sizeof(int)));
        return loop.score(dFrame, c.W, c.W, c.H, method, rule, 0, mapH, nullptr);
      });
    }
    char nppCell[48] = "not run", nppRatioCell[32] = "-";
    if (npp.corr) {
      const double nppMicros = nppLoopMicros(npp, prop, dFrame, c.W, c.H, pixels, c.side, nppTemplates);
      const int k = std::min(nppTemplates, c.count);
      std::snprintf(nppCell, sizeof nppCell, "%.1f (%d of %d)", nppMicros * c.count / k, k, c.count);
      std::snprintf(nppRatioCell, sizeof nppRatioCell, "%.1fx", nppMicros * c.count / k / gemmMicros);
    }
    const double tops = 2.0 * c.count * double(c.side) * c.side * double(positions) / (gemmMicros * 1e-6) / 1e12;
    // --gemm-only: the loop's cells say it did not run.
    char loopCell[32] = "not run", speedUpCell[32] = "-";
    if (withLoop) {
      std::snprintf(loopCell, sizeof loopCell, "%.1f", loopMicros);
      std::snprintf(speedUpCell, sizeof speedUpCell, "%.2fx", loopMicros / gemmMicros);
    }
    std::printf("| %dx%d | %d x %dx%d | %s | %.1f | %.1f | %s | %.0f | %.1f%% | %s | %s |\n", c.W, c.H, c.count, c.side,
                c.side, loopCell, denseMicros, gemmMicros, speedUpCell, tops, 100.0 * tops / kInt8PeakTops, nppCell,
                nppRatioCell);
    if (digest)
      std::printf("digest case %d: %016llx (n-tiles %d, slabs of %d template rows: %d, chunks a block %d)\n", ci,
                  static_cast<unsigned long long>(sparseDigest), gemm.shape().nTiles, gemm.shape().slabRows,
                  (c.side + gemm.shape().slabRows - 1) / gemm.shape().slabRows, gemm.shape().groupChunks);
    if (sliced)
      std::printf("|  | sliced: %d launches of %d rows | | | %.1f (%+.1f%%) | | | | | |\n", (mapH + sliceRows - 1) / sliceRows,
                  sliceRows, slicedMicros, 100.0 * (slicedMicros / gemmMicros - 1.0));
    std::fflush(stdout);
    for (uint8_t* f : fragments) cudaFree(f);
    cudaFree(o.maps);
    cudaFree(o.above);
    cudaFree(o.best);
    cudaFree(o.counts);
    cudaFree(o.bits);
    cudaFree(dFrame);
  }
  return 0;
}
