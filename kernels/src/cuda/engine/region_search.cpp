#include "cuda/engine/region_search.hpp"

#include <algorithm>
#include <cstring>

#include "common/region_peaks.hpp"
#include "cuda/cuda_check.hpp"
#include "cuda/numerator/region_scores.hpp"
#include "cuda/numerator/spatial_scores.hpp"
#include "cuda/peaks/region_peaks.hpp"
#include "rules/masked_score_rules.hpp"

namespace nccmatch::cuda {

static_assert(kFusedNumerator == FusedNumerator::TensorCores,
              "the region kernel reads the bank's fused layout as tensor-core fragments");

namespace {

constexpr std::size_t kAlign = 16;  // region rows and blocks start 16-byte aligned (cp.async)
// The first copy back brings this many candidates with the counters and the bests; more take a
// second copy.
constexpr std::size_t kFirstCandidates = 256;  // 14 KB: a tracker's windows have a few each

std::size_t alignUp(std::size_t n) { return (n + kAlign - 1) / kAlign * kAlign; }

// Where one fused region's inputs and outputs lie in the packed buffers.
struct FusedRegion {
  std::size_t region;            // index in the caller's list
  const TemplateImage* image;    // its template
  std::size_t pixelOffset = 0;   // host frames: its pixels in the work area
  std::size_t pitch = 0;
  std::size_t fragmentOffset = 0;  // own images: its fragments in the work area
  std::vector<uint8_t> fragments;  // own images only
  std::size_t mapOffset = 0;     // doubles
  int mapWidth = 0, mapHeight = 0;
};

// One call's work area, the same layout in pinned host memory and on the device: what goes up in
// one copy (descriptors, host frames' region pixels, own templates' fragments, and the zeroed
// counters: the candidate count and each region's finished tiles), then what comes back in one
// copy (the counters again, each region's best, the first candidates), then the other candidates.
struct WorkLayout {
  std::size_t descs = 0, pixels = 0, fragments = 0, counters = 0, bests = 0, candidates = 0, end = 0;
  std::size_t upBytes() const { return bests; }
  std::size_t downBytes(std::size_t capacity) const {
    return candidates - counters + std::min(capacity, kFirstCandidates) * sizeof(RegionPeak);
  }
};

WorkLayout workLayout(std::size_t regions, std::size_t pixelBytes, std::size_t fragmentBytes, std::size_t capacity) {
  WorkLayout l;
  l.descs = 0;
  l.pixels = alignUp(regions * sizeof(RegionScoreDesc));
  l.fragments = l.pixels + alignUp(pixelBytes);
  l.counters = l.fragments + alignUp(fragmentBytes);
  l.bests = l.counters + alignUp(sizeof(int) + regions * sizeof(unsigned));
  l.candidates = l.bests + alignUp(regions * sizeof(RegionPeak));
  l.end = l.candidates + capacity * sizeof(RegionPeak);
  return l;
}

void toFrame(const RegionQuery& r, Match* m) {
  m->x += r.x;
  m->y += r.y;
  m->subX += r.x;
  m->subY += r.y;
}

}  // namespace

Status RegionSearch::run(const TemplateBank& bank, const FrameView& frame, const std::vector<RegionQuery>& regions,
                         const MatchParams& params, cudaStream_t stream, std::vector<RegionResult>* results) {
  results->assign(regions.size(), RegionResult());
  const bool hostFrame = frame.memory == MemoryKind::Host;
  std::vector<FusedRegion> fused;
  std::vector<std::size_t> onCpu;
  std::size_t pixelBytes = 0, fragmentBytes = 0, mapDoubles = 0;
  std::size_t capacity = 0;
  int maxHeight = 1, maxMapW = 1, maxMapH = 1;
  for (std::size_t k = 0; k < regions.size(); ++k) {
    const RegionQuery& r = regions[k];
    const TemplateImage& t = r.image != nullptr ? *r.image : bank.image(r.templateIndex);
    if (t.width > r.width || t.height > r.height) continue;  // no position: no matches, no best
    // The fused region kernel has no mask: masked templates take the exact CPU path.
    if (!fusedSpatialFits(t.width, t.height) || ignoresPixels(t)) {
      onCpu.push_back(k);
      continue;
    }
    FusedRegion f;
    f.region = k;
    f.image = &t;
    f.mapWidth = r.width - t.width + 1;
    f.mapHeight = r.height - t.height + 1;
    f.mapOffset = mapDoubles;
    mapDoubles += std::size_t(f.mapWidth) * f.mapHeight;
    if (hostFrame) {
      f.pitch = alignUp(std::size_t(r.width));
      f.pixelOffset = pixelBytes;
      pixelBytes += f.pitch * std::size_t(r.height);
    }
    if (r.image != nullptr) {
      f.fragments = fusedSpatialFragments(t.pixels.data(), t.width, t.height);
      f.fragmentOffset = fragmentBytes;
      fragmentBytes += alignUp(f.fragments.size());
    }
    maxHeight = std::max(maxHeight, t.height);
    maxMapW = std::max(maxMapW, f.mapWidth);
    maxMapH = std::max(maxMapH, f.mapHeight);
    fused.push_back(std::move(f));
  }

  WorkLayout layout;
  if (!fused.empty()) {
    // Every position may be a candidate at most once: room for all of them.
    capacity = mapDoubles;
    layout = workLayout(fused.size(), pixelBytes, fragmentBytes, capacity);
    NCC_RETURN_IF_ERROR(maps_.reserve(mapDoubles * sizeof(double)));
    if (layout.end > work_.capacity()) {
      NCC_RETURN_IF_ERROR(work_.reserve(layout.end));
      // The copy back takes kFirstCandidates slots whatever the count: zeroed once, so it never
      // reads bytes nothing wrote (compute-sanitizer initcheck). Not zeroed: dropped, so that the
      // next call zeroes it.
      const auto zero = [&]() -> Status {
        NCC_CUDA_CHECK(cudaMemsetAsync(work_.as<void>(), 0, work_.capacity(), stream));
        return Status();
      };
      const Status zeroed = zero();
      if (!zeroed.ok()) work_.release();
      NCC_RETURN_IF_ERROR(zeroed);
    }
    NCC_RETURN_IF_ERROR(hostWork_.reserve(layout.bests + layout.downBytes(capacity)));
    // The pinned area may still feed the previous call's copies: that call synchronised.
    uint8_t* host = hostWork_.as<uint8_t>();
    uint8_t* device = work_.as<uint8_t>();
    RegionScoreDesc* descs = reinterpret_cast<RegionScoreDesc*>(host + layout.descs);
    for (std::size_t i = 0; i < fused.size(); ++i) {
      const FusedRegion& f = fused[i];
      const RegionQuery& r = regions[f.region];
      RegionScoreDesc d;
      if (hostFrame) {
        uint8_t* dst = host + layout.pixels + f.pixelOffset;
        for (int y = 0; y < r.height; ++y)
          std::memcpy(dst + std::size_t(y) * f.pitch, frame.data + std::size_t(r.y + y) * frame.stride + r.x,
                      std::size_t(r.width));
        d.image = device + layout.pixels + f.pixelOffset;
        d.pitch = f.pitch;
      } else {
        d.image = frame.data + std::size_t(r.y) * frame.stride + std::size_t(r.x);
        d.pitch = frame.stride;
      }
      d.width = r.width;
      d.height = r.height;
      if (r.image != nullptr) {
        std::memcpy(host + layout.fragments + f.fragmentOffset, f.fragments.data(), f.fragments.size());
        d.fragments = device + layout.fragments + f.fragmentOffset;
        d.stats = templateStats(*r.image);
      } else {
        d.fragments = bank.prepared(r.templateIndex).fusedPacked.as<uint8_t>();
        d.stats = bank.prepared(r.templateIndex).stats;
      }
      d.templateWidth = f.image->width;
      d.templateHeight = f.image->height;
      d.map = maps_.as<double>() + f.mapOffset;
      descs[i] = d;
    }
    std::memset(host + layout.counters, 0, layout.bests - layout.counters);
    // Up in one copy, scores and peaks in one launch, the samples back in one copy.
    NCC_CUDA_CHECK(cudaMemcpyAsync(device, host, layout.upBytes(), cudaMemcpyHostToDevice, stream));
    RegionPeakJob job;
    job.sign = goodnessSign(params.method);
    job.goodEnough = job.sign * params.threshold;
    job.collect = params.maxMatches > 0;
    job.candidates = reinterpret_cast<RegionPeak*>(device + layout.candidates);
    job.capacity = int(std::min<std::size_t>(capacity, 1u << 30));
    job.candidateCount = reinterpret_cast<int*>(device + layout.counters);
    job.tilesDone = reinterpret_cast<unsigned*>(device + layout.counters + sizeof(int));
    job.bests = reinterpret_cast<RegionPeak*>(device + layout.bests);
    NCC_RETURN_IF_ERROR(fusedRegionScores(reinterpret_cast<const RegionScoreDesc*>(device + layout.descs),
                                          int(fused.size()), maxHeight, maxMapW, maxMapH, params.method, &job,
                                          stream));
    NCC_CUDA_CHECK(cudaMemcpyAsync(host + layout.counters, device + layout.counters, layout.downBytes(capacity),
                                   cudaMemcpyDeviceToHost, stream));
  }
  // The CPU's regions meanwhile (large templates), then the GPU's maps.
  if (!onCpu.empty()) {
    const Status cpu = runOnCpu(bank, frame, regions, onCpu, params, results);
    if (!cpu.ok()) {
      cudaStreamSynchronize(stream);
      return cpu;
    }
  }
  if (fused.empty()) return Status();
  NCC_CUDA_CHECK(cudaStreamSynchronize(stream));
  const uint8_t* host = hostWork_.as<uint8_t>();
  const std::size_t count = std::size_t(*reinterpret_cast<const int*>(host + layout.counters));
  if (count > capacity) return Status::error("matchRegions: more peak candidates than positions (internal error)");
  const RegionPeak* bests = reinterpret_cast<const RegionPeak*>(host + layout.bests);
  const RegionPeak* first = reinterpret_cast<const RegionPeak*>(host + layout.candidates);
  std::vector<std::vector<RegionPeak>> candidates(fused.size());
  for (std::size_t k = 0; k < std::min(count, kFirstCandidates); ++k) candidates[first[k].region].push_back(first[k]);
  if (count > kFirstCandidates) {  // many positions pass (a low threshold): the rest in a second copy
    std::vector<RegionPeak> rest(count - kFirstCandidates);
    NCC_CUDA_CHECK(cudaMemcpy(rest.data(), work_.as<uint8_t>() + layout.candidates + kFirstCandidates * sizeof(RegionPeak),
                              rest.size() * sizeof(RegionPeak), cudaMemcpyDeviceToHost));
    for (const RegionPeak& p : rest) candidates[p.region].push_back(p);
  }
  for (std::size_t i = 0; i < fused.size(); ++i) {
    const FusedRegion& f = fused[i];
    const RegionQuery& r = regions[f.region];
    RegionResult& out = (*results)[f.region];
    finishRegionPeaks(std::move(candidates[i]), bests[i], f.mapWidth, f.mapHeight, f.image->width, f.image->height,
                      r.templateIndex, params, &out);
    for (Match& m : out.matches) toFrame(r, &m);
    if (out.best) toFrame(r, &*out.best);
  }
  return Status();
}

Status RegionSearch::runOnCpu(const TemplateBank& bank, const FrameView& frame,
                              const std::vector<RegionQuery>& regions, const std::vector<std::size_t>& which,
                              const MatchParams& params, std::vector<RegionResult>* results) {
  if (!cpu_) {
    // One worker a core: the regions are spread over them (a coarse-to-fine refinement of masked
    // rotated variants is hundreds of regions, 23 ms a 1080p frame on one thread of the H200 host).
    EngineOptions options;
    options.backend = Backend::Cpu;
    options.threads = 0;
    options.cpuPath = CpuPath::Direct;
    NCC_RETURN_IF_ERROR(Engine::create(options, &cpu_));
  }
  // The rectangle holding every region, on the host: the frame's own rows, or one copy of that
  // rectangle from the device.
  int x0 = frame.width, y0 = frame.height, x1 = 0, y1 = 0;
  for (std::size_t k : which) {
    const RegionQuery& r = regions[k];
    x0 = std::min(x0, r.x);
    y0 = std::min(y0, r.y);
    x1 = std::max(x1, r.x + r.width);
    y1 = std::max(y1, r.y + r.height);
  }
  if (x1 <= x0 || y1 <= y0) return Status();
  std::vector<uint8_t> copy;
  FrameView view;
  view.width = x1 - x0;
  view.height = y1 - y0;
  if (frame.memory == MemoryKind::Host) {
    view.data = frame.data + std::size_t(y0) * frame.stride + std::size_t(x0);
    view.stride = frame.stride;
  } else {
    copy.resize(std::size_t(view.width) * view.height);
    NCC_CUDA_CHECK(cudaMemcpy2D(copy.data(), std::size_t(view.width),
                                frame.data + std::size_t(y0) * frame.stride + std::size_t(x0), frame.stride,
                                std::size_t(view.width), std::size_t(view.height), cudaMemcpyDeviceToHost));
    view.data = copy.data();
    view.stride = std::size_t(view.width);
  }
  // Each region in the rectangle's coordinates, with its template as its own image (the CPU
  // engine holds no bank); one call spreads them over the workers.
  std::vector<RegionQuery> queries;
  for (std::size_t k : which) {
    RegionQuery r = regions[k];
    r.x -= x0;
    r.y -= y0;
    if (r.image == nullptr) r.image = &bank.image(r.templateIndex);
    queries.push_back(r);
  }
  std::vector<RegionResult> found;
  NCC_RETURN_IF_ERROR(cpu_->matchRegions(view, queries, params, &found));
  const RegionQuery origin{x0, y0, 0, 0, 0, nullptr};
  for (std::size_t i = 0; i < which.size(); ++i) {
    RegionResult& out = (*results)[which[i]];
    out = std::move(found[i]);
    for (Match& m : out.matches) toFrame(origin, &m);
    if (out.best) toFrame(origin, &*out.best);
  }
  return Status();
}

}  // namespace nccmatch::cuda
