#include "cuda/numerator/region_scores.hpp"

#include "cuda/block_arrival.cuh"
#include "cuda/copy/block_descriptor.cuh"
#include "cuda/cuda_check.hpp"
#include "cuda/dependent_launch.cuh"
#include "cuda/numerator/fused_spatial_tiles.cuh"
#include "cuda/peaks/peaks_device.cuh"
#include "cuda/peaks/region_handoff.cuh"
#include "cuda/peaks/region_peaks.hpp"
#include "rules/score_rules.hpp"

namespace nccmatch::cuda {

namespace {

using fused_spatial::kPrefixPitch;
using fused_spatial::SharedTile;
using RegionDescs = DescriptorParam<RegionScoreDesc, kInlineRegionDescs>;
// Every architecture and driver takes 4 KB of kernel parameters.
static_assert(sizeof(RegionDescs) + sizeof(RegionPeakJob) + sizeof(bool) <= 4096, "the region kernel's parameters");

// The wide block (fused_spatial::kWideThreads, 32 warps): warps 2r and 2r + 1 score tile row r,
// each one half of its columns.
constexpr int kThreads = fused_spatial::kWideThreads;
constexpr int kWarpsPerRow = kThreads / 32 / kFusedTileHeight;
static_assert(kWarpsPerRow == 2, "two warps an output row");
constexpr int kEpilogueOutputs = kFusedTileWidth / 32 / kWarpsPerRow;  // a lane's outputs

// A region template has at most kFusedMaxSide^2 pixels: its sums' products fit int64, so the
// scores take scoreFromSumsAs<int64_t> (the same doubles as scoreFromSums) and no 128-bit code.
static_assert(int64_t(kFusedMaxSide) * kFusedMaxSide <= kInt64SafePixels, "region templates' products fit int64");

// One position's score by the rules from int64 sums; ccoeff-normed with the template's constants
// taken once a block (ccoeffNormedScore: the same doubles as scoreFromSums).
template <Method kMethod>
__device__ __forceinline__ double regionScore(const TemplateStats& t, const NormedConstants& k, int64_t s1, int64_t s2,
                                              int64_t c) {
  if constexpr (kMethod == Method::CCoeffNormed)
    return ccoeffNormedScore(t, k, s1, s2, c);
  else
    return scoreFromSumsAs<int64_t>(kMethod, t, s1, s2, c);
}

// Writes the tile's scores into the region's map: warp w scores row w / 2 of the tile, lane l of
// its half (w % 2) outputs 64 (w % 2) + l + 32k, from the numerators and the prefix sums of the
// column sums (as the fused kernel's epilogue). With a peak job, also the thread's best position
// (returned) and every position reaching the threshold appended to the region's above list. All
// of a thread's scores are computed before any is stored: their divisions and square roots overlap
// instead of waiting on each other behind the stores and atomics (positions outside the map are
// computed from the tile's spare columns and dropped).
template <Method kMethod>
__device__ __forceinline__ Ranked storeTileScores(const SharedTile& s, const RegionScoreDesc& r, int outX0, int outY0,
                                                  int mapWidth, int mapHeight, bool peaks, const RegionPeakJob& job) {
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  const int row = warp / kWarpsPerRow, x0 = (warp % kWarpsPerRow) * (32 * kEpilogueOutputs) + lane;
  const int w = r.templateWidth;
  const NormedConstants normed = kMethod == Method::CCoeffNormed ? normedConstantsFor(r.stats) : NormedConstants();
  double scores[kEpilogueOutputs];
  const uint32_t* p1 = s.p1 + row * kPrefixPitch;
  const uint32_t* p2 = s.p2 + row * kPrefixPitch;
  const uint32_t* num = s.num + row * kFusedTileWidth;
#pragma unroll
  for (int q = 0; q < kEpilogueOutputs; ++q) {
    const int x = x0 + 32 * q;
    const int64_t s1 = int64_t(p1[x + w] - p1[x]), s2 = int64_t(p2[x + w] - p2[x]), c = int64_t(num[x]);
    scores[q] = regionScore<kMethod>(r.stats, normed, s1, s2, c);
  }
  Ranked best{0.0, -1};
  const int oy = outY0 + row;
  if (oy < mapHeight) {
#pragma unroll
    for (int q = 0; q < kEpilogueOutputs; ++q) {
      const int ox = outX0 + x0 + 32 * q;
      if (ox >= mapWidth) continue;
      const double score = scores[q];
      const int index = oy * mapWidth + ox;
      r.map[index] = score;
      if (peaks) {
        const Ranked here{job.sign * score, index};
        if (better(here, best)) best = here;
        if (job.collect && here.goodness >= job.goodEnough)
          r.above[atomicAdd(job.aboveCount + job.firstRegion + blockIdx.z, 1)] = index;
      }
    }
  }
  return best;
}

// With a peak job: each tile hands over its best; the block that finishes the region's last tile
// takes the best of the tiles' bests and tests the positions that reached the threshold with the
// local-peak rule (their neighbours are all written by then), so no block scans the whole map.
// The block's stores are ordered by a barrier before thread 0 fences and counts its tile
// (countBlockDone); the tile counters go back to zero for the next launch, and the region is
// handed to the host (region_handoff.cuh). Every thread of the block calls it.
__device__ __forceinline__ void finishRegionTile(const RegionScoreDesc& r, int mapWidth, int mapHeight,
                                                 const RegionPeakJob& job, Ranked threadBest) {
  __shared__ bool last;
  __shared__ int aboveCount;
  const int region = job.firstRegion + int(blockIdx.z);
  const int tilesX = ceilDiv(mapWidth, kFusedTileWidth);
  const int tiles = tilesX * ceilDiv(mapHeight, kFusedTileHeight);
  Ranked* tileBests = job.tileBests + std::size_t(region) * job.tileStride;
  const Ranked tileBest = blockBestInThread0(threadBest);  // its barrier follows every thread's stores
  if (threadIdx.x == 0) {
    tileBests[blockIdx.y * tilesX + blockIdx.x] = tileBest;
    last = countBlockDone(job.tilesDone + region, unsigned(tiles));
    aboveCount = last ? atomicAdd(job.aboveCount + region, 0) : 0;
  }
  __syncthreads();
  if (!last) return;
  Ranked best{0.0, -1};
  for (int t = threadIdx.x; t < tiles; t += kThreads) {
    const Ranked o{__ldcg(&tileBests[t].goodness), __ldcg(&tileBests[t].index)};
    if (better(o, best)) best = o;
  }
  best = blockBestInThread0(best);
  const GoodnessMap<int> good{r.map, mapWidth, mapHeight, job.sign};
  if (threadIdx.x == 0) {
    job.bests[region] = sampleRegionPeak(good, r.map, region, best.index % mapWidth, best.index / mapWidth);
    job.tilesDone[region] = 0;
    job.aboveCount[region] = 0;
  }
  // The positions that reached the threshold, one a thread a round; each round's local peaks handed
  // off together, the last round counting the region.
  const int rounds = max(1, ceilDiv(aboveCount, kThreads));
  for (int round = 0; round < rounds; ++round) {
    const int k = round * kThreads + int(threadIdx.x);
    bool found[1] = {false};
    int xs[1] = {0}, ys[1] = {0};
    if (k < aboveCount) {
      const int i = __ldcg(r.above + k);
      ys[0] = i / mapWidth;
      xs[0] = i - ys[0] * mapWidth;
      found[0] = isLocalPeak(good, xs[0], ys[0], good(xs[0], ys[0]));
    }
    handOffCandidates<kThreads>(job, good, r.map, region, found, xs, ys, round == rounds - 1);
  }
}

// Block (x, y) of region z, 32 warps: load the image tile, window sums, tensor-core numerator
// (template rows in eight parts), scores; with a peak job, the region's last tile also finds its
// peaks. Launched overlapping the gather that writes its pixels, it reads its descriptor while the
// gather runs and waits for the gather's end before anything else.
// One instance per method: a kernel holds one method's epilogue, not six (a short kernel's warps
// otherwise wait on instruction fetch).
template <Method kMethod>
__global__ void __launch_bounds__(kThreads, 1)
    fusedRegionKernel(const __grid_constant__ RegionDescs descs, RegionPeakJob job, bool peaks) {
  extern __shared__ uint32_t shared[];
  const RegionScoreDesc r = blockDescriptor(descs.at(int(blockIdx.z)));
  const int mapWidth = r.width - r.templateWidth + 1, mapHeight = r.height - r.templateHeight + 1;
  const int outX0 = blockIdx.x * kFusedTileWidth;
  const int outY0 = blockIdx.y * kFusedTileHeight;
  if (outX0 >= mapWidth || outY0 >= mapHeight) return;  // the whole block: no barrier is skipped by some
  waitForPreviousGrid();
  const SharedTile s = fused_spatial::carveSharedTile(shared);
  const int words = (r.templateWidth + 3) / 4;
  const int tileRows = kFusedTileHeight + r.templateHeight - 1;
  const int tileWords = max(kFusedTileWidth / 4 + words, 28 + 8 * fused_spatial::kStepsFor(r.templateWidth));
  const bool chunkAligned = (reinterpret_cast<std::uintptr_t>(r.image) % 16 == 0) && (r.pitch % 16 == 0);
  fused_spatial::loadImageTile<kThreads>(r.image, r.pitch, r.width, r.height, chunkAligned, outX0, outY0, tileRows,
                                         tileWords, s.image);
  fused_spatial::windowSums<kThreads>(s, r.templateHeight, tileWords);
  // Ends with a barrier.
  fused_spatial::tensorNumerator<fused_spatial::kWideSplits>(s, r.fragments, r.templateWidth, r.templateHeight);
  const Ranked best = storeTileScores<kMethod>(s, r, outX0, outY0, mapWidth, mapHeight, peaks, job);
  if (peaks) finishRegionTile(r, mapWidth, mapHeight, job, best);
}

template <Method kMethod>
Status launchRegionKernel(dim3 grid, int shared, const RegionDescs& descs, const RegionPeakJob& job, bool peaks,
                          bool overlapPrevious, cudaStream_t stream) {
  if (shared > fused_spatial::kStaticSharedLimit)
    NCC_CUDA_CHECK(cudaFuncSetAttribute(fusedRegionKernel<kMethod>, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                        fused_spatial::kMaxSharedBytes));
  return launchKernel(fusedRegionKernel<kMethod>, grid, dim3(kThreads), std::size_t(shared), stream, overlapPrevious,
                      descs, job, peaks);
}

}  // namespace

Status fusedRegionScores(const RegionScoreDesc* descs, const RegionScoreDesc* hostDescs, int count,
                         int maxTemplateHeight, int maxMapWidth, int maxMapHeight, Method method,
                         const RegionPeakJob* peaks, bool overlapPrevious, cudaStream_t stream) {
  if (count <= 0) return Status();
  if (descs == nullptr) return Status::error("fusedRegionScores: descriptors missing");
  if (peaks != nullptr) {
    NCC_RETURN_IF_ERROR(checkRegionPeakJob(*peaks));
    if (peaks->tilesDone == nullptr || peaks->aboveCount == nullptr || peaks->tileBests == nullptr ||
        peaks->tileStride < ceilDiv(maxMapWidth, kFusedTileWidth) * ceilDiv(maxMapHeight, kFusedTileHeight))
      return Status::error("fusedRegionScores: tile counters, above counts or tile bests missing");
  }
  if (maxTemplateHeight < 1 || maxTemplateHeight > kFusedMaxSide || maxMapWidth < 1 || maxMapHeight < 1)
    return Status::error("fusedRegionScores: bad template height or map size");
  if (count > 65535) return Status::error("fusedRegionScores: more than 65535 regions in one launch");
  const int shared = fused_spatial::sharedBytesFor(maxTemplateHeight);
  const dim3 grid(ceilDiv(maxMapWidth, kFusedTileWidth), ceilDiv(maxMapHeight, kFusedTileHeight), count);
  const RegionPeakJob job = peaks != nullptr ? *peaks : RegionPeakJob();
  const RegionDescs list = RegionDescs::of(descs, hostDescs, count);
  const bool withPeaks = peaks != nullptr;
  switch (method) {
    case Method::SqDiff:
      return launchRegionKernel<Method::SqDiff>(grid, shared, list, job, withPeaks, overlapPrevious, stream);
    case Method::SqDiffNormed:
      return launchRegionKernel<Method::SqDiffNormed>(grid, shared, list, job, withPeaks, overlapPrevious, stream);
    case Method::CCorr:
      return launchRegionKernel<Method::CCorr>(grid, shared, list, job, withPeaks, overlapPrevious, stream);
    case Method::CCorrNormed:
      return launchRegionKernel<Method::CCorrNormed>(grid, shared, list, job, withPeaks, overlapPrevious, stream);
    case Method::CCoeff:
      return launchRegionKernel<Method::CCoeff>(grid, shared, list, job, withPeaks, overlapPrevious, stream);
    case Method::CCoeffNormed:
      return launchRegionKernel<Method::CCoeffNormed>(grid, shared, list, job, withPeaks, overlapPrevious, stream);
  }
  return Status::error("fusedRegionScores: unknown method " + std::to_string(int(method)));
}

}  // namespace nccmatch::cuda
