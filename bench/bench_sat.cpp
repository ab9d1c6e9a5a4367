// Times the GPU SAT builds (both tables) against a device-to-device copy of the same byte count
// and, where the library is present, NPP's integral pair; all in one run, CUDA events, medians.
//
// Usage: bench_sat [--samples N] [--quick]
// Bytes counted per pixel: 1 read + 8 + 8 written (17), or 1 + 4 + 4 (9) for fused32.
#include <cuda_runtime_api.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <functional>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "bench_check.hpp"
#include "median.hpp"
#include "cuda/sat/sat_fused.hpp"
#include "nccmatch/sat_cuda.hpp"
#include "npp_runtime.hpp"
#include "sat_probes.hpp"

namespace {

using nccmatch::cuda::SatBuild;
using nccmatch::cuda::SatBuilder;

struct CudaFree {
  void operator()(void* p) const { cudaFree(p); }
};
using DevicePtr = std::unique_ptr<void, CudaFree>;
DevicePtr deviceAlloc(std::size_t bytes) {
  void* p = nullptr;
  BENCH_CUDA_CHECK(cudaMalloc(&p, bytes));
  return DevicePtr(p);
}

// Median over `samples` samples of the mean time of `batch` back-to-back launches, in ms. The
// batch is sized so that one sample lasts about a millisecond: launch gaps then do not count.
double medianMs(const std::function<void()>& launch, int samples, cudaStream_t stream) {
  cudaEvent_t a, b;
  BENCH_CUDA_CHECK(cudaEventCreate(&a));
  BENCH_CUDA_CHECK(cudaEventCreate(&b));
  for (int i = 0; i < 5; ++i) launch();  // warm-up
  BENCH_CUDA_CHECK(cudaEventRecord(a, stream));
  for (int i = 0; i < 3; ++i) launch();
  BENCH_CUDA_CHECK(cudaEventRecord(b, stream));
  BENCH_CUDA_CHECK(cudaEventSynchronize(b));
  float probe = 0;
  BENCH_CUDA_CHECK(cudaEventElapsedTime(&probe, a, b));
  const int batch = std::clamp(int(1.0 / std::max(probe / 3.0, 1e-4)), 1, 50);
  std::vector<double> times;
  for (int s = 0; s < samples; ++s) {
    BENCH_CUDA_CHECK(cudaEventRecord(a, stream));
    for (int i = 0; i < batch; ++i) launch();
    BENCH_CUDA_CHECK(cudaEventRecord(b, stream));
    BENCH_CUDA_CHECK(cudaEventSynchronize(b));
    float ms = 0;
    BENCH_CUDA_CHECK(cudaEventElapsedTime(&ms, a, b));
    times.push_back(double(ms) / batch);
  }
  BENCH_CUDA_CHECK(cudaGetLastError());
  BENCH_CUDA_CHECK(cudaEventDestroy(a));
  BENCH_CUDA_CHECK(cudaEventDestroy(b));
  return nccmatch::bench::median(times);
}

using IntegralCtx = int (*)(const uint8_t*, int, int32_t*, int, NppiSize, int32_t, NppStreamContext);
using SqrIntegralCtx = int (*)(const uint8_t*, int, int32_t*, int, double*, int, NppiSize, int32_t,
                               double, NppStreamContext);
using Integral = int (*)(const uint8_t*, int, int32_t*, int, NppiSize, int32_t);
using SqrIntegral = int (*)(const uint8_t*, int, int32_t*, int, double*, int, NppiSize, int32_t, double);

struct Npp {
  IntegralCtx integralCtx = nullptr;
  SqrIntegralCtx sqrIntegralCtx = nullptr;
  Integral integral = nullptr;
  SqrIntegral sqrIntegral = nullptr;
  std::string from;
  bool found() const { return (integralCtx && sqrIntegralCtx) || (integral && sqrIntegral); }
};

Npp loadNpp() {
  Npp npp;
  openNppist(
      [&](void* lib) {
        npp.integralCtx = reinterpret_cast<IntegralCtx>(dlsym(lib, "nppiIntegral_8u32s_C1R_Ctx"));
        npp.sqrIntegralCtx = reinterpret_cast<SqrIntegralCtx>(dlsym(lib, "nppiSqrIntegral_8u32s64f_C1R_Ctx"));
        npp.integral = reinterpret_cast<Integral>(dlsym(lib, "nppiIntegral_8u32s_C1R"));
        npp.sqrIntegral = reinterpret_cast<SqrIntegral>(dlsym(lib, "nppiSqrIntegral_8u32s64f_C1R"));
        return npp.found();
      },
      &npp.from);
  return npp.from.empty() ? Npp{} : npp;
}

struct Row {
  std::string name;
  double ms;
  double bytesPerPixel;
};

struct SizeResult {
  int width, height;
  double copyMs;
  std::vector<Row> rows;
  double npPms = -1;
};

double gbps(double bytes, double ms) { return bytes / (ms * 1e6); }

const Row* findRow(const SizeResult& r, const std::string& name) {
  for (const Row& row : r.rows)
    if (row.name == name) return &row;
  return nullptr;
}

// Tile columns x rows / warps / store and carry flavour; "win N" marks the wide kernel and its
// vertical look-back window; the old 64x64 default is the baseline.
std::string configName(const nccmatch::cuda::FusedSatConfig& c) {
  std::string name = std::to_string(c.tileWidth) + "x" + std::to_string(c.warps * c.rowsPerWarp) + "/" +
                     std::to_string(c.warps) + "w" + (c.streamingStores ? "/cs" : "") +
                     (c.stampedWords ? "/stamped" : "/flags");
  if (c.window > 0) name += "/win" + std::to_string(c.window);
  if (c.pollBackoffNs > 0) name += "/sleep" + std::to_string(c.pollBackoffNs);
  if (c.window > 0) name += "/" + std::to_string(c.pixelsPerLane) + "px";
  const auto& b = nccmatch::cuda::kNarrowFusedSatConfig;
  if (c.window == b.window && c.tileWidth == b.tileWidth && c.warps == b.warps && c.rowsPerWarp == b.rowsPerWarp &&
      c.streamingStores == b.streamingStores && c.stampedWords == b.stampedWords)
    name += " (baseline: old default)";
  return name;
}

}  // namespace

int main(int argc, char** argv) {
  int samples = 60;
  bool quick = false;
  for (int i = 1; i < argc; ++i) {
    if (!std::strcmp(argv[i], "--samples") && i + 1 < argc) samples = std::max(50, std::atoi(argv[++i]));
    else if (!std::strcmp(argv[i], "--quick")) quick = true;
  }
  int devices = 0;
  if (cudaGetDeviceCount(&devices) != cudaSuccess || devices == 0) {
    std::printf("bench_sat: no CUDA device, nothing to time\n");
    return 0;
  }
  cudaDeviceProp prop{};
  BENCH_CUDA_CHECK(cudaGetDeviceProperties(&prop, 0));
  std::printf("GPU: %s, %d SMs, L2 %d MB\n", prop.name, prop.multiProcessorCount, prop.l2CacheSize >> 20);
  Npp npp = loadNpp();
  std::printf("NPP: %s\n", npp.found() ? npp.from.c_str() : "not found (column skipped)");
  cudaStream_t stream;
  BENCH_CUDA_CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));

  std::vector<std::pair<int, int>> sizes = {{1024, 1024}, {2048, 2048}, {4096, 4096}, {8192, 8192}, {1920, 1080}};
  if (quick) sizes = {{4096, 4096}};
  std::mt19937_64 gen(std::random_device{}());
  std::vector<SizeResult> results;
  for (auto [w, h] : sizes) {
    SizeResult res{w, h, 0, {}, -1};
    const std::size_t px = std::size_t(w) * h;
    std::vector<uint8_t> host(px);
    for (auto& v : host) v = uint8_t(gen());
    DevicePtr image = deviceAlloc(px);
    BENCH_CUDA_CHECK(cudaMemcpy(image.get(), host.data(), px, cudaMemcpyHostToDevice));
    DevicePtr sum = deviceAlloc(px * 8), sumSq = deviceAlloc(px * 8);

    // Ceiling: a copy moving the same 17 bytes per pixel (8.5 read, 8.5 written).
    const std::size_t copyBytes = px * 17 / 2;
    DevicePtr src = deviceAlloc(copyBytes), dst = deviceAlloc(copyBytes);
    BENCH_CUDA_CHECK(cudaMemset(src.get(), 1, copyBytes));
    res.copyMs = medianMs([&] { cudaMemcpyAsync(dst.get(), src.get(), copyBytes, cudaMemcpyDeviceToDevice, stream); },
                          samples, stream);

    auto timeBuilder = [&](const std::string& name, SatBuilder* b, double bytesPerPixel) {
      nccmatch::Status st = b->build(static_cast<const uint8_t*>(image.get()), w, w, h, sum.get(), sumSq.get(), stream);
      if (!st.ok()) {
        std::printf("%s: %s\n", name.c_str(), st.message().c_str());
        std::exit(1);
      }
      const double ms = medianMs([&] { b->build(static_cast<const uint8_t*>(image.get()), w, w, h, sum.get(), sumSq.get(), stream); },
                                 samples, stream);
      res.rows.push_back({name, ms, bytesPerPixel});
    };
    for (SatBuild build : {SatBuild::Naive, SatBuild::Cub, SatBuild::Dlb, SatBuild::Fused, SatBuild::Fused32}) {
      if (quick && (build == SatBuild::Naive)) continue;
      std::unique_ptr<SatBuilder> b;
      nccmatch::Status st = SatBuilder::create(build, w, h, &b);
      if (!st.ok()) {
        std::printf("create %s: %s\n", nccmatch::cuda::satBuildName(build), st.message().c_str());
        return 1;
      }
      timeBuilder(nccmatch::cuda::satBuildName(build), b.get(), build == SatBuild::Fused32 ? 9 : 17);
    }
    // Every compiled tile shape of the fused builds, for the RESULTS notes.
    for (const auto& config : nccmatch::cuda::fusedSatConfigs()) {
      for (SatBuild build : {SatBuild::Fused, SatBuild::Fused32}) {
        std::unique_ptr<SatBuilder> b;
        nccmatch::Status st = nccmatch::cuda::createFusedSatBuilderWithConfig(build, w, h, config, &b);
        if (!st.ok()) return 1;
        timeBuilder(std::string(nccmatch::cuda::satBuildName(build)) + "[" + configName(config) + "]", b.get(),
                    build == SatBuild::Fused32 ? 9 : 17);
      }
    }
    // Where the time goes: the default wide build with a look-back left out, and the traffic floor.
    {
      nccmatch::bench::SatProbes probes(static_cast<const uint8_t*>(image.get()), w, h, sum.get(), sumSq.get(), stream);
      for (const auto& probe : probes.probes()) {
        probe.launch();
        res.rows.push_back({probe.name, medianMs(probe.launch, samples, stream), probe.bytesPerPixel});
      }
    }
    if (npp.found()) {
      const int step32 = (w + 1) * 4, step64 = (w + 1) * 8;
      DevicePtr i1 = deviceAlloc(std::size_t(step32) * (h + 1)), i2 = deviceAlloc(std::size_t(step32) * (h + 1)),
                sq = deviceAlloc(std::size_t(step64) * (h + 1));
      const NppStreamContext ctx = makeNppContext(stream, 0, prop);
      const NppiSize roi{w, h};
      auto* img8 = static_cast<const uint8_t*>(image.get());
      int status = 0;
      auto pair = [&] {
        if (npp.integralCtx) {
          status |= npp.integralCtx(img8, w, static_cast<int32_t*>(i1.get()), step32, roi, 0, ctx);
          status |= npp.sqrIntegralCtx(img8, w, static_cast<int32_t*>(i2.get()), step32,
                                       static_cast<double*>(sq.get()), step64, roi, 0, 0.0, ctx);
        } else {
          status |= npp.integral(img8, w, static_cast<int32_t*>(i1.get()), step32, roi, 0);
          status |= npp.sqrIntegral(img8, w, static_cast<int32_t*>(i2.get()), step32,
                                    static_cast<double*>(sq.get()), step64, roi, 0, 0.0);
        }
      };
      if (!npp.integralCtx) BENCH_CUDA_CHECK(cudaStreamSynchronize(stream));  // legacy calls use stream 0
      res.npPms = medianMs(pair, samples, npp.integralCtx ? stream : nullptr);
      if (status != 0) {
        std::printf("NPP returned status %d at %dx%d; column skipped\n", status, w, h);
        res.npPms = -1;
      }
    }
    results.push_back(res);
  }

  std::printf("\nBoth tables; median of %d samples (each the mean of a batch of launches sized to ~1 ms), "
              "CUDA events after warm-up.\nGB/s counts W*H*17 bytes (W*H*9 for fused32); copy = D2D copy of "
              "the same bytes in this run.\n\n", samples);
  std::printf("| size | build | ms | GB/s | %% of copy | vs cub | vs NPP |\n|---|---|---|---|---|---|---|\n");
  for (const SizeResult& r : results) {
    const double px = double(r.width) * r.height;
    const Row* cub = findRow(r, "cub");
    std::printf("| %dx%d | copy (ceiling) | %.4f | %.0f | 100%% | | |\n", r.width, r.height, r.copyMs,
                gbps(px * 17, r.copyMs));
    if (r.npPms > 0)
      std::printf("| %dx%d | NPP Integral + SqrIntegral | %.4f | %.0f | %.0f%% | | 1.00x |\n", r.width, r.height,
                  r.npPms, gbps(px * 17, r.npPms), 100 * r.copyMs / r.npPms);
    for (const Row& row : r.rows) {
      const double bw = gbps(px * row.bytesPerPixel, row.ms);
      const double copyBw = gbps(px * 17, r.copyMs);
      char vsCub[32] = "", vsNpp[32] = "";
      if (cub) std::snprintf(vsCub, sizeof vsCub, "%.2fx", cub->ms / row.ms);
      if (r.npPms > 0) std::snprintf(vsNpp, sizeof vsNpp, "%.2fx", r.npPms / row.ms);
      std::printf("| %dx%d | %s | %.4f | %.0f | %.0f%% | %s | %s |\n", r.width, r.height, row.name.c_str(),
                  row.ms, bw, 100 * bw / copyBw, vsCub, vsNpp);
    }
  }
  std::printf("\nTargets (H200):\n");
  for (const SizeResult& r : results) {
    if (!((r.width == 4096 && r.height == 4096) || (r.width == 8192 && r.height == 8192))) continue;
    const Row* fused = findRow(r, "fused");
    const Row* fused32 = findRow(r, "fused32");
    const Row* cub = findRow(r, "cub");
    const double px = double(r.width) * r.height;
    const double pct = 100 * gbps(px * 17, fused->ms) / gbps(px * 17, r.copyMs);
    std::printf("  %dx%d fused: %.0f%% of copy (target >= 80%%: %s)", r.width, r.height, pct, pct >= 80 ? "met" : "MISSED");
    if (cub) std::printf(", %.2fx cub (>= 5.7x: %s)", cub->ms / fused->ms, cub->ms / fused->ms >= 5.7 ? "met" : "MISSED");
    if (r.npPms > 0) std::printf(", %.2fx NPP (>= 12x: %s)", r.npPms / fused->ms, r.npPms / fused->ms >= 12 ? "met" : "MISSED");
    if (r.width == 4096)
      std::printf(", fused32 %.2fx fused (>= 1.7x: %s)", fused->ms / fused32->ms, fused->ms / fused32->ms >= 1.7 ? "met" : "MISSED");
    const Row* base = findRow(r, "fused[" + configName(nccmatch::cuda::kNarrowFusedSatConfig) + "]");
    const Row* base32 = findRow(r, "fused32[" + configName(nccmatch::cuda::kNarrowFusedSatConfig) + "]");
    if (base && base32)
      std::printf("; vs old 64x64 default: fused %.2fx, fused32 %.2fx", base->ms / fused->ms, base32->ms / fused32->ms);
    std::printf("\n");
    // Where the time goes (probes): the look-backs' share, and how close the bare traffic gets to copy.
    const Row* noLookbacks = findRow(r, "fused probe: no look-backs");
    const Row* floor64 = findRow(r, "streaming floor: read 1 B, write 16 B a pixel, no scan");
    const Row* floor32 = findRow(r, "streaming floor: read 1 B, write 8 B a pixel (uint32)");
    const Row* noLookbacks32 = findRow(r, "fused32 probe: no look-backs");
    if (noLookbacks && floor64 && floor32 && noLookbacks32)
      std::printf("    probes: look-backs %.0f%% of fused's time; fused without them %.0f%% of copy; streaming "
                  "floor %.0f%% of copy (17 B/px), uint32 floor %.2fx faster than int64's; fused32 without "
                  "look-backs %.2fx faster than fused without\n",
                  100 * (fused->ms - noLookbacks->ms) / fused->ms, 100 * r.copyMs / noLookbacks->ms,
                  100 * r.copyMs / floor64->ms, floor64->ms / floor32->ms, noLookbacks->ms / noLookbacks32->ms);
  }
  BENCH_CUDA_CHECK(cudaStreamDestroy(stream));
  return 0;
}
