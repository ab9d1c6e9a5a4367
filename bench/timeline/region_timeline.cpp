// The timeline of one pinned matchRegions call (issue 13): 16 windows of 128x128 on a pinned 1080p
// frame (or, with "device" after CALLS, a device one: no gather), 16 templates of 32x32, CALLS calls
// (default 6); after each of the last four it reads the
// instrumented library's stamps (region-timeline.patch: globaltimer at every gather block's start and
// end, every region block's start, wait, scores and end; steady_clock at RegionSearch::run's host
// phases) and prints them as TL lines for region_timeline.py. Built by build.sh only, never by meson:
// it needs the patched library.
#include <cuda_runtime_api.h>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <string>
#include <vector>
#include "nccmatch/engine.hpp"
using namespace nccmatch;
extern "C" void nccTimelineGather(unsigned long long* out, int blocks);
extern "C" void nccTimelineRegion(unsigned long long* out, int blocks);
extern "C" void nccTimelineHost(long long* out);
int main(int argc, char** argv) {
  const int calls = argc > 1 ? std::atoi(argv[1]) : 6;
  // "device": the frame in device memory (no gather: the region kernel reads it in place).
  const bool deviceFrame = argc > 2 && std::string(argv[2]) == "device";
  const int W = 1920, H = 1080;
  uint8_t* frame = nullptr;
  if (cudaMallocHost(reinterpret_cast<void**>(&frame), std::size_t(W) * H) != cudaSuccess) return 1;
  std::mt19937 g(7);
  for (int i = 0; i < W * H; ++i) frame[i] = uint8_t(g() & 0xff);
  std::vector<TemplateImage> bank;
  std::vector<RegionQuery> windows;
  for (int k = 0; k < 16; ++k) {
    const int x = 150 + (k % 4) * 420, y = 100 + (k / 4) * 230;
    TemplateImage t;
    t.name = "t" + std::to_string(k);
    t.width = t.height = 32;
    for (int r = 0; r < 32; ++r)
      for (int c = 0; c < 32; ++c) t.pixels.push_back(frame[std::size_t(y + 48 + r) * W + x + 48 + c]);
    bank.push_back(t);
    windows.push_back(RegionQuery{x, y, 128, 128, uint32_t(k)});
  }
  EngineOptions o;
  o.backend = Backend::Cuda;
  std::unique_ptr<Engine> e;
  Status st = Engine::create(o, &e);
  if (!st.ok()) return std::fprintf(stderr, "%s\n", st.message().c_str()), 1;
  if (!(st = e->setTemplates(bank)).ok()) return std::fprintf(stderr, "%s\n", st.message().c_str()), 1;
  MatchParams p;
  p.threshold = 0.8;
  p.maxMatches = 1;
  uint8_t* onDevice = nullptr;
  if (deviceFrame && (cudaMalloc(reinterpret_cast<void**>(&onDevice), std::size_t(W) * H) != cudaSuccess ||
                      cudaMemcpy(onDevice, frame, std::size_t(W) * H, cudaMemcpyHostToDevice) != cudaSuccess))
    return std::fprintf(stderr, "device frame: %s\n", cudaGetErrorString(cudaGetLastError())), 1;
  const FrameView view = deviceFrame ? FrameView{onDevice, W, H, std::size_t(W), MemoryKind::Device}
                                     : FrameView{frame, W, H, std::size_t(W), MemoryKind::Host};
  for (int c = 0; c < calls; ++c) {
    std::vector<RegionResult> out;
    const auto t0 = std::chrono::steady_clock::now();
    if (!(st = e->matchRegions(view, windows, p, &out)).ok()) return std::fprintf(stderr, "%s\n", st.message().c_str()), 1;
    const double us = std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count();
    if (c < calls - 4) continue;  // the clocks up first: only the last four calls printed
    long long h[8];
    nccTimelineHost(h);
    const long long c0 = std::chrono::duration_cast<std::chrono::nanoseconds>(t0.time_since_epoch()).count();
    std::printf("CALL %d host_us %.1f phases_us(run entry, before launches, gather launched, region launched, synced, counts read, grouped, run end):", c, us);
    for (int i : {0, 1, 2, 3, 4, 6, 7, 5}) std::printf(" %.1f", (h[i] - c0) / 1000.0);
    std::printf("\n");
    std::vector<unsigned long long> g(2 * 256), r(8 * 112);
    nccTimelineGather(g.data(), 256);
    nccTimelineRegion(r.data(), 112);
    for (int b = 0; b < (deviceFrame ? 0 : 256); ++b) std::printf("TL G %d %d sm 0 %llu %llu\n", b % 16, b / 16, g[2 * b], g[2 * b + 1]);
    for (int b = 0; b < 112; ++b)
      std::printf("TL R 0 %d %d sm 0 %llu %llu %llu %llu %llu %llu %llu %llu\n", b % 7, b / 7, r[8 * b], r[8 * b + 1],
                  r[8 * b + 2], r[8 * b + 3], r[8 * b + 4], r[8 * b + 5], r[8 * b + 6], r[8 * b + 7]);
  }
  return 0;
}
