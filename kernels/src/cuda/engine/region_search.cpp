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
// The peaks buffer: the candidate count, then one best per region, then the candidates. The first
// copy back brings this many candidates with the count and the bests; more take a second copy.
constexpr std::size_t kCountBytes = 64;
constexpr std::size_t kFirstCandidates = 256;  // 14 KB: a tracker's windows have a few each

std::size_t alignUp(std::size_t n) { return (n + kAlign - 1) / kAlign * kAlign; }

// Where one fused region's inputs and outputs lie in the packed buffers.
struct FusedRegion {
  std::size_t region;            // index in the caller's list
  const TemplateImage* image;    // its template
  std::size_t pixelOffset = 0;   // host frames: its pixels in the packed upload
  std::size_t pitch = 0;
  std::size_t fragmentOffset = 0;  // own images: its fragments in the packed upload
  std::vector<uint8_t> fragments;  // own images only
  std::size_t mapOffset = 0;     // doubles
  int mapWidth = 0, mapHeight = 0;
};

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
  std::size_t capacity = 0, bestsBytes = 0, firstCopyBytes = 0;
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

  if (!fused.empty()) {
    // Inputs: the regions' pixels (host frames), the own templates' fragments, the descriptors.
    NCC_RETURN_IF_ERROR(descs_.reserve(fused.size() * sizeof(RegionScoreDesc)));
    NCC_RETURN_IF_ERROR(hostDescs_.reserve(fused.size() * sizeof(RegionScoreDesc)));
    NCC_RETURN_IF_ERROR(maps_.reserve(mapDoubles * sizeof(double)));
    // Every position may be a candidate at most once: room for all of them.
    capacity = mapDoubles;
    bestsBytes = fused.size() * sizeof(RegionPeak);
    firstCopyBytes = kCountBytes + bestsBytes + std::min(capacity, kFirstCandidates) * sizeof(RegionPeak);
    const std::size_t peakBytes = kCountBytes + bestsBytes + capacity * sizeof(RegionPeak);
    if (peakBytes > peaks_.capacity()) {
      NCC_RETURN_IF_ERROR(peaks_.reserve(peakBytes));
      // The first copy-back takes kFirstCandidates slots whatever the count: zeroed once, so it
      // never reads bytes nothing wrote (compute-sanitizer initcheck). Not zeroed: dropped, so
      // that the next call zeroes it.
      const auto zero = [&]() -> Status {
        NCC_CUDA_CHECK(cudaMemsetAsync(peaks_.as<void>(), 0, peaks_.capacity(), stream));
        return Status();
      };
      const Status zeroed = zero();
      if (!zeroed.ok()) peaks_.release();
      NCC_RETURN_IF_ERROR(zeroed);
    }
    NCC_RETURN_IF_ERROR(hostPeaks_.reserve(firstCopyBytes));
    if (pixelBytes > 0) {
      NCC_RETURN_IF_ERROR(pixels_.reserve(pixelBytes));
      NCC_RETURN_IF_ERROR(hostPixels_.reserve(pixelBytes));
    }
    if (fragmentBytes > 0) {
      NCC_RETURN_IF_ERROR(fragments_.reserve(fragmentBytes));
      NCC_RETURN_IF_ERROR(hostFragments_.reserve(fragmentBytes));
    }
    // The pinned buffers may still feed the previous call's copies: that call synchronised.
    RegionScoreDesc* descs = hostDescs_.as<RegionScoreDesc>();
    for (std::size_t i = 0; i < fused.size(); ++i) {
      const FusedRegion& f = fused[i];
      const RegionQuery& r = regions[f.region];
      RegionScoreDesc d;
      if (hostFrame) {
        uint8_t* dst = hostPixels_.as<uint8_t>() + f.pixelOffset;
        for (int y = 0; y < r.height; ++y)
          std::memcpy(dst + std::size_t(y) * f.pitch, frame.data + std::size_t(r.y + y) * frame.stride + r.x,
                      std::size_t(r.width));
        d.image = pixels_.as<uint8_t>() + f.pixelOffset;
        d.pitch = f.pitch;
      } else {
        d.image = frame.data + std::size_t(r.y) * frame.stride + std::size_t(r.x);
        d.pitch = frame.stride;
      }
      d.width = r.width;
      d.height = r.height;
      if (r.image != nullptr) {
        std::memcpy(hostFragments_.as<uint8_t>() + f.fragmentOffset, f.fragments.data(), f.fragments.size());
        d.fragments = fragments_.as<uint8_t>() + f.fragmentOffset;
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
    if (pixelBytes > 0)
      NCC_CUDA_CHECK(cudaMemcpyAsync(pixels_.as<void>(), hostPixels_.as<void>(), pixelBytes, cudaMemcpyHostToDevice,
                                     stream));
    if (fragmentBytes > 0)
      NCC_CUDA_CHECK(cudaMemcpyAsync(fragments_.as<void>(), hostFragments_.as<void>(), fragmentBytes,
                                     cudaMemcpyHostToDevice, stream));
    NCC_CUDA_CHECK(cudaMemcpyAsync(descs_.as<void>(), descs, fused.size() * sizeof(RegionScoreDesc),
                                   cudaMemcpyHostToDevice, stream));
    NCC_RETURN_IF_ERROR(fusedRegionScores(descs_.as<RegionScoreDesc>(), int(fused.size()), maxHeight, maxMapW, maxMapH,
                                          params.method, stream));
    // The peaks where the maps lie; only their samples come back.
    uint8_t* peaks = peaks_.as<uint8_t>();
    int* candidateCount = reinterpret_cast<int*>(peaks);
    RegionPeak* bests = reinterpret_cast<RegionPeak*>(peaks + kCountBytes);
    RegionPeak* candidates = reinterpret_cast<RegionPeak*>(peaks + kCountBytes + bestsBytes);
    const double sign = goodnessSign(params.method);
    NCC_CUDA_CHECK(cudaMemsetAsync(candidateCount, 0, sizeof(int), stream));
    NCC_RETURN_IF_ERROR(findRegionPeaks(descs_.as<RegionScoreDesc>(), int(fused.size()), sign, sign * params.threshold,
                                        params.maxMatches > 0, candidates, int(std::min<std::size_t>(capacity, 1u << 30)),
                                        candidateCount, bests, stream));
    NCC_CUDA_CHECK(cudaMemcpyAsync(hostPeaks_.as<void>(), peaks, firstCopyBytes, cudaMemcpyDeviceToHost, stream));
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
  const uint8_t* host = hostPeaks_.as<uint8_t>();
  const std::size_t count = std::size_t(*reinterpret_cast<const int*>(host));
  if (count > capacity) return Status::error("matchRegions: more peak candidates than positions (internal error)");
  const RegionPeak* bests = reinterpret_cast<const RegionPeak*>(host + kCountBytes);
  const RegionPeak* first = reinterpret_cast<const RegionPeak*>(host + kCountBytes + bestsBytes);
  std::vector<std::vector<RegionPeak>> candidates(fused.size());
  for (std::size_t k = 0; k < std::min(count, kFirstCandidates); ++k) candidates[first[k].region].push_back(first[k]);
  if (count > kFirstCandidates) {  // many positions pass (a low threshold): the rest in a second copy
    std::vector<RegionPeak> rest(count - kFirstCandidates);
    NCC_CUDA_CHECK(cudaMemcpy(rest.data(), peaks_.as<uint8_t>() + kCountBytes + bestsBytes +
                                               kFirstCandidates * sizeof(RegionPeak),
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
