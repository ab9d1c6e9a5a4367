#include "cuda/engine/region_search.hpp"

#include <algorithm>
#include <cstring>
#include <map>
#include <string>

#include "common/integer_math.hpp"
#include "common/region_peaks.hpp"
#include "cuda/copy/window_gather.hpp"
#include "cuda/cuda_check.hpp"
#include "cuda/dependent_launch.cuh"
#include "cuda/engine/host_memory.hpp"
#include "cuda/numerator/masked_scores.hpp"
#include "cuda/numerator/region_scores.hpp"
#include "cuda/numerator/spatial_scores.hpp"
#include "cuda/peaks/peaks_kernels.hpp"
#include "cuda/peaks/region_peaks.hpp"
#include "rules/masked_score_rules.hpp"

namespace nccmatch::cuda {

static_assert(kFusedNumerator == FusedNumerator::TensorCores,
              "the region kernel reads the bank's fused layout as tensor-core fragments");

namespace {

constexpr std::size_t kAlign = kRegionTemplateAlign;  // region rows and blocks start 16-byte aligned (cp.async)
// The kernels write this many candidates into the host copy (with the count and the bests); more
// take a copy back.
constexpr std::size_t kFirstCandidates = 256;  // 14 KB: a tracker's windows have a few each

std::size_t alignUp(std::size_t n) { return (n + kAlign - 1) / kAlign * kAlign; }

// One call's work area, one layout of offsets for its pinned host copy and its device copy. Both
// copies: the packed pixels of a pageable frame (uploaded, unless the kernels read them in the
// host copy; a mapped frame's gather writes them on the device), own templates (uploaded), and
// the descriptors (every region's, the masked kernel's, the gather's window copies), which the
// kernels read in the host copy over the bus, so that nothing goes up for a call that has no
// pixels or own templates to upload. Host copy only, written there by the kernels (no copy back):
// each hand-off unit's candidate count, each masked region's best, each fused tile's best, the
// first candidates.
// Device copy only: the other candidates.
struct WorkLayout {
  std::size_t pixels = 0, descs = 0, maskedDescs = 0, copies = 0, templates = 0, unitCounts = 0, bests = 0,
              tileBests = 0, hostCandidates = 0, hostEnd = 0, candidates = 0, end = 0;
};

WorkLayout workLayout(std::size_t regions, std::size_t maskedRegions, std::size_t windowCopies, std::size_t pixelBytes,
                      std::size_t templateBytes, std::size_t capacity, std::size_t tileBests, std::size_t units) {
  WorkLayout l;
  l.descs = alignUp(pixelBytes);
  l.maskedDescs = l.descs + alignUp(regions * sizeof(RegionScoreDesc));
  l.copies = l.maskedDescs + alignUp(maskedRegions * sizeof(MaskedScoreDesc));
  l.templates = l.copies + alignUp(windowCopies * sizeof(WindowCopy));
  l.unitCounts = l.templates + alignUp(templateBytes);
  l.bests = l.unitCounts + alignUp(units * sizeof(int));
  l.tileBests = l.bests + alignUp(regions * sizeof(RegionPeak));
  l.hostCandidates = l.tileBests + alignUp(tileBests * sizeof(RegionPeak));
  l.hostEnd = l.hostCandidates + std::min(capacity, kFirstCandidates) * sizeof(RegionPeak);
  l.candidates = alignUp(l.hostEnd);
  l.end = l.candidates + capacity * sizeof(RegionPeak);
  return l;
}

// Where one region's inputs and outputs lie in the packed buffers, and its template as the
// kernels read it. Fused regions (templates up to 64x64 without ignored pixels) take the fused
// kernel, the others the masked kernel.
struct ScoredRegion {
  std::size_t region;            // index in the caller's list
  int templateWidth = 0, templateHeight = 0;
  bool fused = false;
  const uint8_t* layout = nullptr;     // bank or set template: its device fragments or masked layout
  TemplateStats stats;                 // bank or set template
  const TemplateImage* own = nullptr;  // own image: laid out this call (OwnTemplate)
  std::size_t pixelOffset = 0;   // packed frames (pageable or gathered): its pixels in the work area's pixels
  std::size_t pitch = 0;
  std::size_t mapOffset = 0;     // doubles
  int mapWidth = 0, mapHeight = 0;
  int firstTile = 0;             // fused: its first tile's slot among the call's tile bests
};

// An own image, laid out once a call however many regions name it: its layout, its place in the
// upload's template area and, once written, its statistics.
struct OwnTemplate {
  RegionTemplateLayout layout;
  std::size_t offset = 0;
  TemplateStats stats;
};

// A region's rows into the upload area, 16 bytes at a time by fixed-size copies the compiler turns
// into vector moves: a tracker's 128-pixel rows (2048 a frame) otherwise pay a library call each.
// A row's tail past its last whole 16 bytes is the row's last 16 bytes copied again (overlapping
// what the chunks wrote, with the same bytes), so odd widths pay no call either.
void copyRegionRows(uint8_t* dst, std::size_t dstPitch, const uint8_t* src, std::size_t srcPitch, std::size_t width,
                    int rows) {
  const std::size_t chunks = width / 16, tail = width % 16;
  for (int y = 0; y < rows; ++y) {
    uint8_t* d = dst + std::size_t(y) * dstPitch;
    const uint8_t* s = src + std::size_t(y) * srcPitch;
    if (chunks == 0) {
      std::memcpy(d, s, width);
      continue;
    }
    for (std::size_t c = 0; c < chunks; ++c) std::memcpy(d + 16 * c, s + 16 * c, 16);
    if (tail != 0) std::memcpy(d + width - 16, s + width - 16, 16);
  }
}

// Where the device reads a host frame in pinned or registered memory mapped into its address
// space (zero-copy: nothing packed or uploaded by the CPU); null for a pageable one.
const uint8_t* mappedHostFrame(const FrameView& frame) {
  return hostRange(frame.data, (std::size_t(frame.height) - 1) * frame.stride + std::size_t(frame.width)).device;
}

// Zeroes the first `bytes` of `buffer` on `stream`; where that fails the buffer is released, so
// that the next call allocates and zeroes it again instead of using it unzeroed.
Status zeroOrRelease(DeviceBuffer* buffer, std::size_t bytes, cudaStream_t stream) {
  const Status zeroed = [&]() -> Status {
    NCC_CUDA_CHECK(cudaMemsetAsync(buffer->as<void>(), 0, bytes, stream));
    return Status();
  }();
  if (!zeroed.ok()) buffer->release();
  return zeroed;
}

void toFrame(const RegionQuery& r, Match* m) {
  m->x += r.x;
  m->y += r.y;
  m->subX += r.x;
  m->subY += r.y;
}

}  // namespace

Status RegionSearch::reserveCounters(cudaStream_t stream) {
  if (counters_.capacity() >= 2 * sizeof(unsigned)) return Status();
  counterParity_ = 0;
  NCC_RETURN_IF_ERROR(counters_.reserve(2 * sizeof(unsigned)));
  return zeroOrRelease(&counters_, 2 * sizeof(unsigned), stream);
}

Status RegionSearch::run(const TemplateBank& bank, const RegionTemplateSets<PreparedRegionTemplates>& sets,
                         const FrameView& frame, const std::vector<RegionQuery>& regions, const MatchParams& params,
                         cudaStream_t stream, std::vector<RegionResult>* results) {
  // Each region's result emptied, its matches' memory kept: a caller that reuses its results (the
  // tracker, frame after frame) allocates nothing for them once warm.
  results->resize(regions.size());
  for (RegionResult& r : *results) {
    r.matches.clear();
    r.best.reset();
  }
  // A device frame is read in place, and so is a mapped host frame with CudaMappedFrames::InPlace;
  // the windows of any other host frame are packed into the work area: by the CPU (pageable), or
  // by the gather kernel (mapped).
  const uint8_t* mapped = frame.memory == MemoryKind::Device ? nullptr : mappedHostFrame(frame);
  const bool gathered = mapped != nullptr && mappedFrames_ == CudaMappedFrames::Gather;
  const uint8_t* inPlace = frame.memory == MemoryKind::Device ? frame.data : gathered ? nullptr : mapped;
  const bool packed = inPlace == nullptr;
  std::vector<ScoredRegion> fused, masked;
  fused.reserve(regions.size());  // one allocation, not one a doubling
  // Own images: one layout each, however many regions name them.
  std::map<const TemplateImage*, OwnTemplate> own;
  std::size_t pixelBytes = 0, templateBytes = 0, positions = 0;
  int boundX0 = frame.width, boundY0 = frame.height, boundX1 = 0, boundY1 = 0;  // the regions' bounding box
  int maxFusedHeight = 1, maxFusedMapW = 1, maxFusedMapH = 1;
  int maxMaskedW = 1, maxMaskedH = 1, maxMaskedMapW = 1, maxMaskedMapH = 1;
  std::size_t mapDoubles = 0;
  for (std::size_t k = 0; k < regions.size(); ++k) {
    const RegionQuery& r = regions[k];
    ScoredRegion f;
    f.region = k;
    if (!r.set.empty()) {  // a prepared set's template: laid out on the device already
      const PreparedRegionTemplates& set = sets.at(r.set);
      const PreparedRegionTemplates::Entry& e = set.entries[r.setIndex];
      f.templateWidth = e.width;
      f.templateHeight = e.height;
      f.fused = e.fused;
      f.layout = set.layout(r.setIndex);
      f.stats = e.stats;
    } else if (r.image != nullptr) {
      f.templateWidth = r.image->width;
      f.templateHeight = r.image->height;
      f.own = r.image;
    } else {  // the bank's
      const PreparedTemplate& p = bank.prepared(r.templateIndex);
      f.templateWidth = bank.image(r.templateIndex).width;
      f.templateHeight = bank.image(r.templateIndex).height;
      f.fused = fusedSpatialFits(f.templateWidth, f.templateHeight) && !p.masked;
      f.layout = f.fused ? p.fusedPacked.as<uint8_t>() : p.maskedLayout.as<uint8_t>();
      f.stats = p.stats;
    }
    if (f.templateWidth > r.width || f.templateHeight > r.height) continue;  // no position: no matches, no best
    if (f.own != nullptr) {
      auto placed = own.find(f.own);
      if (placed == own.end()) {  // the first region naming it: laid out (the others share it)
        placed = own.emplace(f.own, OwnTemplate{RegionTemplateLayout(*f.own), templateBytes, TemplateStats()}).first;
        templateBytes += alignUp(placed->second.layout.bytes());
      }
      f.fused = placed->second.layout.fused();
    }
    f.mapWidth = r.width - f.templateWidth + 1;
    f.mapHeight = r.height - f.templateHeight + 1;
    positions += std::size_t(f.mapWidth) * f.mapHeight;
    if (packed) {
      f.pitch = alignUp(std::size_t(r.width));
      f.pixelOffset = pixelBytes;
      pixelBytes += f.pitch * std::size_t(r.height);
      boundX0 = std::min(boundX0, r.x);
      boundY0 = std::min(boundY0, r.y);
      boundX1 = std::max(boundX1, r.x + r.width);
      boundY1 = std::max(boundY1, r.y + r.height);
    }
    if (f.fused) {
      maxFusedHeight = std::max(maxFusedHeight, f.templateHeight);
      maxFusedMapW = std::max(maxFusedMapW, f.mapWidth);
      maxFusedMapH = std::max(maxFusedMapH, f.mapHeight);
      fused.push_back(f);
    } else {
      f.mapOffset = mapDoubles;  // the masked kernel's maps (the fused kernel keeps its scores)
      mapDoubles += std::size_t(f.mapWidth) * f.mapHeight;
      maxMaskedW = std::max(maxMaskedW, f.templateWidth);
      maxMaskedH = std::max(maxMaskedH, f.templateHeight);
      maxMaskedMapW = std::max(maxMaskedMapW, f.mapWidth);
      maxMaskedMapH = std::max(maxMaskedMapH, f.mapHeight);
      masked.push_back(f);
    }
  }
  if (fused.empty() && masked.empty()) return Status();
  // Packed frames: each region's rows, or, where the regions overlap so much that the
  // rectangle holding them all is smaller (a coarse-to-fine refinement: thousands of regions
  // around a few places), that rectangle once.
  const std::size_t boundPitch = alignUp(std::size_t(std::max(0, boundX1 - boundX0)));
  const std::size_t boundBytes = boundPitch * std::size_t(std::max(0, boundY1 - boundY0));
  const bool uploadBound = packed && boundBytes < pixelBytes;
  if (uploadBound) pixelBytes = boundBytes;
  // One list for the peaks: the fused regions, then the masked ones.
  std::vector<ScoredRegion> scored = std::move(fused);
  const std::size_t fusedCount = scored.size();
  for (ScoredRegion& f : masked) scored.push_back(std::move(f));
  const std::size_t maskedCount = scored.size() - fusedCount;

  // Every position may be a candidate at most once: room for all of them. The call's counter
  // takes the candidate slots in 32 bits (RegionPeakJob::callCounter).
  const std::size_t capacity = positions;
  if (capacity >= (std::size_t(1) << 31))
    return Status::error("matchRegions: " + std::to_string(capacity) +
                         " score positions in one call, at most 2147483647: split the regions over calls");
  // Each fused tile hands over its best (the regions' tiles one after another in the tile bests)
  // and its candidate count, each masked region its count after them.
  std::size_t tiles = 0;
  for (std::size_t i = 0; i < fusedCount; ++i) {
    scored[i].firstTile = int(tiles);
    tiles += std::size_t(regionTileCount(scored[i].mapWidth, scored[i].mapHeight));
  }
  const std::size_t handOffs = tiles + maskedCount;
  const std::size_t windowCopies = !gathered ? 0 : uploadBound ? 1 : scored.size();
  const WorkLayout layout = workLayout(scored.size(), maskedCount, windowCopies, pixelBytes, templateBytes, capacity,
                                       tiles, handOffs);
  NCC_RETURN_IF_ERROR(maps_.reserve(mapDoubles * sizeof(double)));
  if (layout.end > work_.capacity()) {
    NCC_RETURN_IF_ERROR(work_.reserve(layout.end));
    // The copy back of the candidates past the host's slots reads whole RegionPeaks, their padding
    // included, which no kernel writes: zeroed once, so it never reads bytes nothing wrote
    // (compute-sanitizer initcheck).
    NCC_RETURN_IF_ERROR(zeroOrRelease(&work_, work_.capacity(), stream));
  }
  NCC_RETURN_IF_ERROR(reserveCounters(stream));
  NCC_RETURN_IF_ERROR(hostWork_.reserve(layout.hostEnd));
  uint8_t* host = hostWork_.as<uint8_t>();
  // Where the kernels read and write the host copy (pinned memory is mapped: UVA).
  if (mappedHostWork_.first != host) {
    const uint8_t* at = hostRange(host, hostWork_.capacity()).device;
    if (at == nullptr)
      return Status::error("matchRegions: the pinned work area is not mapped into the device's address space");
    mappedHostWork_ = {host, const_cast<uint8_t*>(at)};
  }
  uint8_t* hostMapped = mappedHostWork_.second;
  uint8_t* device = work_.as<uint8_t>();
  // Packed pixels: gathered on the device, uploaded, or (CudaPackedWindows::Mapped) read by the
  // kernels in the host copy where the CPU packed them.
  const uint8_t* packedMapped =
      packed && !gathered && packedWindows_ == CudaPackedWindows::Mapped ? hostMapped + layout.pixels : nullptr;
  const bool uploadPixels = packed && !gathered && packedMapped == nullptr;
  const uint8_t* packedPixels = uploadPixels || gathered ? device + layout.pixels : packedMapped;
  WindowCopy* copies = reinterpret_cast<WindowCopy*>(host + layout.copies);
  int maxCopyHeight = 0;
  const auto gather = [&](std::size_t k, int x, int y, int width, int height, std::size_t offset, std::size_t pitch) {
    copies[k] = WindowCopy{mapped + std::size_t(y) * frame.stride + std::size_t(x), frame.stride,
                           device + layout.pixels + offset, pitch, width, height};
    maxCopyHeight = std::max(maxCopyHeight, height);
  };
  // The pinned buffers may still feed the previous call's copies: that call synchronised.
  RegionScoreDesc* descs = reinterpret_cast<RegionScoreDesc*>(host + layout.descs);
  MaskedScoreDesc* maskedDescs = reinterpret_cast<MaskedScoreDesc*>(host + layout.maskedDescs);
  // Own images into the upload, each once, their statistics with them.
  for (auto& [image, t] : own) t.stats = t.layout.writeTo(*image, host + layout.templates + t.offset);
  for (std::size_t i = 0; i < scored.size(); ++i) {
    const ScoredRegion& f = scored[i];
    const RegionQuery& r = regions[f.region];
    RegionScoreDesc d;
    if (uploadBound) {
      d.image = packedPixels + std::size_t(r.y - boundY0) * boundPitch + std::size_t(r.x - boundX0);
      d.pitch = boundPitch;
    } else if (packed) {
      if (gathered)
        gather(i, r.x, r.y, r.width, r.height, f.pixelOffset, f.pitch);
      else
        copyRegionRows(host + layout.pixels + f.pixelOffset, f.pitch,
                       frame.data + std::size_t(r.y) * frame.stride + std::size_t(r.x), frame.stride,
                       std::size_t(r.width), r.height);
      d.image = packedPixels + f.pixelOffset;
      d.pitch = f.pitch;
    } else {
      d.image = inPlace + std::size_t(r.y) * frame.stride + std::size_t(r.x);
      d.pitch = frame.stride;
    }
    d.width = r.width;
    d.height = r.height;
    d.templateWidth = f.templateWidth;
    d.templateHeight = f.templateHeight;
    d.firstTile = f.firstTile;
    d.map = f.fused ? nullptr : maps_.as<double>() + f.mapOffset;
    const uint8_t* templateLayout = f.layout;
    d.stats = f.stats;
    if (f.own != nullptr) {
      const OwnTemplate& t = own.at(f.own);
      templateLayout = device + layout.templates + t.offset;
      d.stats = t.stats;
    }
    if (f.fused) {
      d.fragments = templateLayout;
    } else {
      MaskedScoreDesc m;
      m.image = d.image;
      m.pitch = d.pitch;
      m.width = d.width;
      m.height = d.height;
      m.map = d.map;
      m.t = MaskedTemplateDevice::at(templateLayout, f.templateWidth, f.templateHeight, d.stats);
      maskedDescs[i - fusedCount] = m;
    }
    descs[i] = d;
  }
  if (uploadBound && gathered)
    gather(0, boundX0, boundY0, boundX1 - boundX0, boundY1 - boundY0, 0, boundPitch);
  else if (uploadBound)
    for (int y = boundY0; y < boundY1; ++y)
      std::memcpy(host + layout.pixels + std::size_t(y - boundY0) * boundPitch,
                  frame.data + std::size_t(y) * frame.stride + std::size_t(boundX0), std::size_t(boundX1 - boundX0));
  // Up in one copy, only where there is something to upload: the packed pixels and own templates
  // (the descriptors between them are read in the host copy). The fused regions scored with their
  // peaks in one launch, the masked ones scored then their peaks found; the unit counts, the bests
  // and the first candidates come back in the host copy, written by the kernels.
  const std::size_t upFrom = uploadPixels ? layout.pixels : layout.templates;
  if (layout.unitCounts > upFrom && (uploadPixels || templateBytes > 0))
    NCC_CUDA_CHECK(
        cudaMemcpyAsync(device + upFrom, host + upFrom, layout.unitCounts - upFrom, cudaMemcpyHostToDevice, stream));
  int* unitCounts = reinterpret_cast<int*>(host + layout.unitCounts);
  std::fill(unitCounts, unitCounts + handOffs, -1);  // until each unit's hand-off writes its count
  std::size_t count = 0;
  const Status enqueued = [&]() -> Status {
    // The scoring kernel overlaps the gather where the device can (it reads its descriptors while
    // the windows come over the bus).
    if (gathered && !overlapGather_) {
      bool supported = false;
      NCC_RETURN_IF_ERROR(dependentLaunchSupported(&supported));
      overlapGather_ = supported;
    }
    const bool overlapGather = gathered && *overlapGather_;
    if (gathered) {
      NCC_RETURN_IF_ERROR(gatherWindows(reinterpret_cast<const WindowCopy*>(hostMapped + layout.copies), copies,
                                        int(windowCopies), maxCopyHeight, stream));
    }
    const RegionScoreDesc* mappedDescs = reinterpret_cast<const RegionScoreDesc*>(hostMapped + layout.descs);
    RegionPeakJob job;
    job.sign = goodnessSign(params.method);
    job.goodEnough = job.sign * params.threshold;
    job.collect = params.maxMatches > 0;
    job.candidates = reinterpret_cast<RegionPeak*>(device + layout.candidates);
    job.capacity = int(std::min<std::size_t>(capacity, 1u << 30));
    job.hostCandidates = reinterpret_cast<RegionPeak*>(hostMapped + layout.hostCandidates);
    job.hostCandidateSlots = int(std::min<std::size_t>(std::size_t(job.capacity), kFirstCandidates));
    job.unitCounts = reinterpret_cast<int*>(hostMapped + layout.unitCounts);
    job.bests = reinterpret_cast<RegionPeak*>(hostMapped + layout.bests);
    job.tileBests = reinterpret_cast<RegionPeak*>(hostMapped + layout.tileBests);
    job.callCounter = counters_.as<unsigned>() + counterParity_;
    job.nextCounter = counters_.as<unsigned>() + (1 - counterParity_);
    NCC_RETURN_IF_ERROR(fusedRegionScores(mappedDescs, descs, int(fusedCount), maxFusedHeight, maxFusedMapW,
                                          maxFusedMapH, params.method, job, overlapGather, stream));
    if (maskedCount > 0) {
      NCC_RETURN_IF_ERROR(maskedRegionScores(reinterpret_cast<const MaskedScoreDesc*>(hostMapped + layout.maskedDescs),
                                             int(maskedCount), maxMaskedW, maxMaskedH, maxMaskedMapW, maxMaskedMapH,
                                             params.method, stream));
      RegionPeakJob maskedJob = job;
      maskedJob.firstRegion = int(fusedCount);
      maskedJob.unitCounts += tiles;
      NCC_RETURN_IF_ERROR(findRegionPeaks(mappedDescs + fusedCount, int(maskedCount), maskedJob, stream));
    }
    NCC_CUDA_CHECK(cudaStreamSynchronize(stream));
    for (std::size_t k = 0; k < handOffs; ++k) {
      const int n = static_cast<volatile const int*>(unitCounts)[k];
      if (n < 0) return Status::error("matchRegions: the region kernels did not finish every region (internal error)");
      count += std::size_t(n);
    }
    return Status();
  }();
  // Neither counter may be zero after a failed call: the next call zeroes new ones.
  if (!enqueued.ok()) counters_.release();
  NCC_RETURN_IF_ERROR(enqueued);
  counterParity_ = 1 - counterParity_;  // the units zeroed the other

  if (count > capacity) return Status::error("matchRegions: more peak candidates than positions (internal error)");
  const RegionPeak* hostBests = reinterpret_cast<const RegionPeak*>(host + layout.bests);
  const RegionPeak* hostTileBests = reinterpret_cast<const RegionPeak*>(host + layout.tileBests);
  const double sign = goodnessSign(params.method);
  const RegionPeak* first = reinterpret_cast<const RegionPeak*>(host + layout.hostCandidates);
  // The candidates grouped by region (RegionCandidates: no allocation a call once warm); past the
  // host's slots (many positions pass: a low threshold, rare) all of them in one buffer made for
  // the call, the rest copied back behind the first.
  const RegionPeak* handed = first;
  std::vector<RegionPeak> copiedBack;
  if (count > kFirstCandidates) {
    copiedBack.resize(count);
    std::memcpy(copiedBack.data(), first, kFirstCandidates * sizeof(RegionPeak));
    NCC_CUDA_CHECK(cudaMemcpy(copiedBack.data() + kFirstCandidates,
                              device + layout.candidates + kFirstCandidates * sizeof(RegionPeak),
                              (count - kFirstCandidates) * sizeof(RegionPeak), cudaMemcpyDeviceToHost));
    handed = copiedBack.data();
  }
  if (!candidates_.group(handed, count, scored.size()))
    return Status::error("matchRegions: a peak candidate names no region of the call (internal error)");
  for (std::size_t i = 0; i < scored.size(); ++i) {
    const ScoredRegion& f = scored[i];
    const RegionQuery& r = regions[f.region];
    RegionResult& out = (*results)[f.region];
    const RegionPeak best =
        i < fusedCount ? bestOfTiles(hostTileBests + f.firstTile,
                                     std::size_t(regionTileCount(f.mapWidth, f.mapHeight)), sign)
                       : hostBests[i];
    finishRegionPeaks(candidates_.of(i), candidates_.count(i), best, f.mapWidth, f.mapHeight, f.templateWidth,
                      f.templateHeight, r.templateIndex, params, &out);
    for (Match& m : out.matches) toFrame(r, &m);
    if (out.best) toFrame(r, &*out.best);
  }
  candidates_.trim();
  return Status();
}

}  // namespace nccmatch::cuda
