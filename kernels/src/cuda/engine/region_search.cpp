#include "cuda/engine/region_search.hpp"

#include <algorithm>
#include <cstring>
#include <map>

#include "common/region_peaks.hpp"
#include "cuda/cuda_check.hpp"
#include "cuda/numerator/masked_scores.hpp"
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

// Where one region's inputs and outputs lie in the packed buffers. Fused regions (templates up to
// 64x64 without ignored pixels) take the fused kernel, the others the masked kernel.
struct ScoredRegion {
  std::size_t region;            // index in the caller's list
  const TemplateImage* image;    // its template
  bool fused = false;
  std::size_t pixelOffset = 0;   // host frames: its pixels in the packed upload
  std::size_t pitch = 0;
  std::size_t templateOffset = 0;  // own images: its fragments or masked layout in the packed upload
  std::vector<uint8_t> fragments;  // own images of fused regions: the first region naming the image
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
  std::vector<ScoredRegion> fused, masked;
  // Own images: one upload each (fragments or masked layout), however many regions name them.
  std::map<const TemplateImage*, std::size_t> ownLayouts, ownFragments;
  std::size_t pixelBytes = 0, templateBytes = 0, mapDoubles = 0;
  int boundX0 = frame.width, boundY0 = frame.height, boundX1 = 0, boundY1 = 0;  // the regions' bounding box
  int maxFusedHeight = 1, maxFusedMapW = 1, maxFusedMapH = 1;
  int maxMaskedW = 1, maxMaskedH = 1, maxMaskedMapW = 1, maxMaskedMapH = 1;
  for (std::size_t k = 0; k < regions.size(); ++k) {
    const RegionQuery& r = regions[k];
    const TemplateImage& t = r.image != nullptr ? *r.image : bank.image(r.templateIndex);
    if (t.width > r.width || t.height > r.height) continue;  // no position: no matches, no best
    ScoredRegion f;
    f.region = k;
    f.image = &t;
    f.fused = fusedSpatialFits(t.width, t.height) && !ignoresPixels(t);
    f.mapWidth = r.width - t.width + 1;
    f.mapHeight = r.height - t.height + 1;
    f.mapOffset = mapDoubles;
    mapDoubles += std::size_t(f.mapWidth) * f.mapHeight;
    if (hostFrame) {
      f.pitch = alignUp(std::size_t(r.width));
      f.pixelOffset = pixelBytes;
      pixelBytes += f.pitch * std::size_t(r.height);
      boundX0 = std::min(boundX0, r.x);
      boundY0 = std::min(boundY0, r.y);
      boundX1 = std::max(boundX1, r.x + r.width);
      boundY1 = std::max(boundY1, r.y + r.height);
    }
    if (f.fused) {
      if (r.image != nullptr) {
        const auto placed = ownFragments.emplace(r.image, templateBytes);
        if (placed.second) {  // the first region naming it carries its fragments
          f.fragments = fusedSpatialFragments(t.pixels.data(), t.width, t.height);
          templateBytes += alignUp(f.fragments.size());
        }
        f.templateOffset = placed.first->second;
      }
      maxFusedHeight = std::max(maxFusedHeight, t.height);
      maxFusedMapW = std::max(maxFusedMapW, f.mapWidth);
      maxFusedMapH = std::max(maxFusedMapH, f.mapHeight);
      fused.push_back(std::move(f));
    } else {
      if (r.image != nullptr) {
        const auto placed = ownLayouts.emplace(r.image, templateBytes);
        if (placed.second) templateBytes += alignUp(maskedLayoutBytes(t.width, t.height));
        f.templateOffset = placed.first->second;
      }
      maxMaskedW = std::max(maxMaskedW, t.width);
      maxMaskedH = std::max(maxMaskedH, t.height);
      maxMaskedMapW = std::max(maxMaskedMapW, f.mapWidth);
      maxMaskedMapH = std::max(maxMaskedMapH, f.mapHeight);
      masked.push_back(std::move(f));
    }
  }
  if (fused.empty() && masked.empty()) return Status();
  // Host frames: each region's rows packed, or, where the regions overlap so much that the
  // rectangle holding them all is smaller (a coarse-to-fine refinement: thousands of regions
  // around a few places), that rectangle once.
  const std::size_t boundPitch = alignUp(std::size_t(std::max(0, boundX1 - boundX0)));
  const std::size_t boundBytes = boundPitch * std::size_t(std::max(0, boundY1 - boundY0));
  const bool uploadBound = hostFrame && boundBytes < pixelBytes;
  if (uploadBound) pixelBytes = boundBytes;
  // One list for the peaks: the fused regions, then the masked ones.
  std::vector<ScoredRegion> scored = std::move(fused);
  const std::size_t fusedCount = scored.size();
  for (ScoredRegion& f : masked) scored.push_back(std::move(f));
  const std::size_t maskedCount = scored.size() - fusedCount;

  // Inputs: the regions' pixels (host frames), the own templates' fragments and layouts, the
  // descriptors (every region's for the peaks, the masked kernel's of its regions).
  NCC_RETURN_IF_ERROR(descs_.reserve(scored.size() * sizeof(RegionScoreDesc)));
  NCC_RETURN_IF_ERROR(hostDescs_.reserve(scored.size() * sizeof(RegionScoreDesc)));
  if (maskedCount > 0) {
    NCC_RETURN_IF_ERROR(maskedDescs_.reserve(maskedCount * sizeof(MaskedScoreDesc)));
    NCC_RETURN_IF_ERROR(hostMaskedDescs_.reserve(maskedCount * sizeof(MaskedScoreDesc)));
  }
  NCC_RETURN_IF_ERROR(maps_.reserve(mapDoubles * sizeof(double)));
  // Every position may be a candidate at most once: room for all of them.
  const std::size_t capacity = mapDoubles;
  const std::size_t bestsBytes = scored.size() * sizeof(RegionPeak);
  const std::size_t firstCopyBytes =
      kCountBytes + bestsBytes + std::min(capacity, kFirstCandidates) * sizeof(RegionPeak);
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
  if (templateBytes > 0) {
    NCC_RETURN_IF_ERROR(ownTemplates_.reserve(templateBytes));
    NCC_RETURN_IF_ERROR(hostOwnTemplates_.reserve(templateBytes));
  }
  // The pinned buffers may still feed the previous call's copies: that call synchronised.
  RegionScoreDesc* descs = hostDescs_.as<RegionScoreDesc>();
  MaskedScoreDesc* maskedDescs = hostMaskedDescs_.as<MaskedScoreDesc>();
  std::map<std::size_t, TemplateStats> ownStats;  // by layout offset: packed once each
  for (std::size_t i = 0; i < scored.size(); ++i) {
    const ScoredRegion& f = scored[i];
    const RegionQuery& r = regions[f.region];
    RegionScoreDesc d;
    if (uploadBound) {
      d.image = pixels_.as<uint8_t>() + std::size_t(r.y - boundY0) * boundPitch + std::size_t(r.x - boundX0);
      d.pitch = boundPitch;
    } else if (hostFrame) {
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
    d.templateWidth = f.image->width;
    d.templateHeight = f.image->height;
    d.map = maps_.as<double>() + f.mapOffset;
    if (f.fused) {
      if (r.image != nullptr) {
        if (!f.fragments.empty())
          std::memcpy(hostOwnTemplates_.as<uint8_t>() + f.templateOffset, f.fragments.data(), f.fragments.size());
        d.fragments = ownTemplates_.as<uint8_t>() + f.templateOffset;
        d.stats = templateStats(*r.image);
      } else {
        d.fragments = bank.prepared(r.templateIndex).fusedPacked.as<uint8_t>();
        d.stats = bank.prepared(r.templateIndex).stats;
      }
    } else {
      MaskedScoreDesc m;
      m.image = d.image;
      m.pitch = d.pitch;
      m.width = d.width;
      m.height = d.height;
      m.map = d.map;
      if (r.image != nullptr) {
        auto known = ownStats.find(f.templateOffset);
        if (known == ownStats.end())
          known = ownStats.emplace(f.templateOffset,
                                   packMaskedTemplate(*r.image, hostOwnTemplates_.as<uint8_t>() + f.templateOffset))
                      .first;
        m.t = MaskedTemplateDevice::at(ownTemplates_.as<uint8_t>() + f.templateOffset, r.image->width,
                                       r.image->height, known->second);
      } else {
        m.t = bank.prepared(r.templateIndex).maskedDevice(*f.image);
      }
      d.stats = m.t.stats;
      maskedDescs[i - fusedCount] = m;
    }
    descs[i] = d;
  }
  if (uploadBound)
    for (int y = boundY0; y < boundY1; ++y)
      std::memcpy(hostPixels_.as<uint8_t>() + std::size_t(y - boundY0) * boundPitch,
                  frame.data + std::size_t(y) * frame.stride + std::size_t(boundX0), std::size_t(boundX1 - boundX0));
  if (pixelBytes > 0)
    NCC_CUDA_CHECK(cudaMemcpyAsync(pixels_.as<void>(), hostPixels_.as<void>(), pixelBytes, cudaMemcpyHostToDevice,
                                   stream));
  if (templateBytes > 0)
    NCC_CUDA_CHECK(cudaMemcpyAsync(ownTemplates_.as<void>(), hostOwnTemplates_.as<void>(), templateBytes,
                                   cudaMemcpyHostToDevice, stream));
  NCC_CUDA_CHECK(cudaMemcpyAsync(descs_.as<void>(), descs, scored.size() * sizeof(RegionScoreDesc),
                                 cudaMemcpyHostToDevice, stream));
  if (maskedCount > 0)
    NCC_CUDA_CHECK(cudaMemcpyAsync(maskedDescs_.as<void>(), maskedDescs, maskedCount * sizeof(MaskedScoreDesc),
                                   cudaMemcpyHostToDevice, stream));
  NCC_RETURN_IF_ERROR(fusedRegionScores(descs_.as<RegionScoreDesc>(), int(fusedCount), maxFusedHeight, maxFusedMapW,
                                        maxFusedMapH, params.method, stream));
  NCC_RETURN_IF_ERROR(maskedRegionScores(maskedDescs_.as<MaskedScoreDesc>(), int(maskedCount), maxMaskedW, maxMaskedH,
                                         maxMaskedMapW, maxMaskedMapH, params.method, stream));
  // The peaks where the maps lie; only their samples come back.
  uint8_t* peaks = peaks_.as<uint8_t>();
  int* candidateCount = reinterpret_cast<int*>(peaks);
  RegionPeak* bests = reinterpret_cast<RegionPeak*>(peaks + kCountBytes);
  RegionPeak* candidates = reinterpret_cast<RegionPeak*>(peaks + kCountBytes + bestsBytes);
  const double sign = goodnessSign(params.method);
  NCC_CUDA_CHECK(cudaMemsetAsync(candidateCount, 0, sizeof(int), stream));
  NCC_RETURN_IF_ERROR(findRegionPeaks(descs_.as<RegionScoreDesc>(), int(scored.size()), sign, sign * params.threshold,
                                      params.maxMatches > 0, candidates, int(std::min<std::size_t>(capacity, 1u << 30)),
                                      candidateCount, bests, stream));
  NCC_CUDA_CHECK(cudaMemcpyAsync(hostPeaks_.as<void>(), peaks, firstCopyBytes, cudaMemcpyDeviceToHost, stream));
  NCC_CUDA_CHECK(cudaStreamSynchronize(stream));

  const uint8_t* host = hostPeaks_.as<uint8_t>();
  const std::size_t count = std::size_t(*reinterpret_cast<const int*>(host));
  if (count > capacity) return Status::error("matchRegions: more peak candidates than positions (internal error)");
  const RegionPeak* hostBests = reinterpret_cast<const RegionPeak*>(host + kCountBytes);
  const RegionPeak* first = reinterpret_cast<const RegionPeak*>(host + kCountBytes + bestsBytes);
  std::vector<std::vector<RegionPeak>> found(scored.size());
  for (std::size_t k = 0; k < std::min(count, kFirstCandidates); ++k) found[first[k].region].push_back(first[k]);
  if (count > kFirstCandidates) {  // many positions pass (a low threshold): the rest in a second copy
    std::vector<RegionPeak> rest(count - kFirstCandidates);
    NCC_CUDA_CHECK(cudaMemcpy(rest.data(), peaks_.as<uint8_t>() + kCountBytes + bestsBytes +
                                               kFirstCandidates * sizeof(RegionPeak),
                              rest.size() * sizeof(RegionPeak), cudaMemcpyDeviceToHost));
    for (const RegionPeak& p : rest) found[p.region].push_back(p);
  }
  for (std::size_t i = 0; i < scored.size(); ++i) {
    const ScoredRegion& f = scored[i];
    const RegionQuery& r = regions[f.region];
    RegionResult& out = (*results)[f.region];
    finishRegionPeaks(std::move(found[i]), hostBests[i], f.mapWidth, f.mapHeight, f.image->width, f.image->height,
                      r.templateIndex, params, &out);
    for (Match& m : out.matches) toFrame(r, &m);
    if (out.best) toFrame(r, &*out.best);
  }
  return Status();
}

}  // namespace nccmatch::cuda
