#include "cuda/numerator/region_scores.hpp"

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
static_assert(sizeof(RegionDescs) + sizeof(RegionPeakJob) <= 4096, "the region kernel's parameters");

// The wide block (fused_spatial::kWideThreads, 32 warps): warps 2r and 2r + 1 score tile row r,
// each one half of its columns.
constexpr int kThreads = fused_spatial::kWideThreads;
constexpr int kWarpsPerRow = kThreads / 32 / kFusedTileHeight;
static_assert(kWarpsPerRow == 2, "two warps an output row");
constexpr int kEpilogueOutputs = kFusedTileWidth / 32 / kWarpsPerRow;  // a lane's outputs
// The window sums (their column pass two threads a column of fused_spatial::kPrefixColumns, each
// half the output rows) by warps 0-11 beside the numerator by the other 20, the template rows in
// five parts: the two phases read the same tile and write apart (session 40's timelines: 1.8 and
// 2.4 µs one after the other; side by side with one thread a column and six parts, 3.2 for the
// sums, the numerator done before them).
constexpr int kSumColumnThreads = 2;
constexpr int kSumThreads = fused_spatial::kPrefixColumns * kSumColumnThreads;
constexpr int kNumeratorSplits = (kThreads - kSumThreads) / 32 / fused_spatial::kRowGroups;
static_assert(kNumeratorSplits == 5, "20 numerator warps: four row groups in five parts");
constexpr int kSumBarrier = 1, kNumeratorBarrier = 2;  // named barriers of the two groups

// A thread's outputs in the tile's epilogue: warp w takes output row w / 2, lane l of its half
// (w % 2) the columns x0 + 32k, x0 = 64 (w % 2) + l. scoreTile and handOffTile share it.
struct EpiloguePlace {
  int row, x0;
};
__device__ __forceinline__ EpiloguePlace epiloguePlace() {
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  return {warp / kWarpsPerRow, (warp % kWarpsPerRow) * (32 * kEpilogueOutputs) + lane};
}

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

// Where block (bx, by) lies in its region's map: the tile it owns, [ownX0, ownX1) x [ownY0, ownY1),
// and the kFusedTileWidth x kFusedTileHeight outputs it scores from (outX0, outY0), which hold the
// tile and every neighbour of it inside the map.
struct RegionTile {
  int ownX0, ownY0, ownX1, ownY1, outX0, outY0;
  __device__ RegionTile(int bx, int by, int mapWidth, int mapHeight)
      : ownX0(bx * kRegionTileWidth),
        ownY0(by * kRegionTileHeight),
        ownX1(min(ownX0 + kRegionTileWidth, mapWidth)),
        ownY1(min(ownY0 + kRegionTileHeight, mapHeight)),
        outX0(max(0, ownX0 - 1)),
        outY0(max(0, ownY0 - 1)) {}
  __device__ bool owns(int x, int y) const { return x >= ownX0 && x < ownX1 && y >= ownY0 && y < ownY1; }
};

// The block's scores (kFusedTileHeight x kFusedTileWidth doubles in its shared memory, output
// (outX0, outY0) first) read as the region map's goodness at map positions; width and height are
// the map's, so the rules never read a neighbour outside it (RegionTile: nor outside the tile).
struct TileGoodness {
  const double* scores;
  int outX0, outY0, width, height;
  double sign;
  __device__ double score(int x, int y) const { return scores[(y - outY0) * kFusedTileWidth + (x - outX0)]; }
  __device__ double operator()(int x, int y) const { return sign * score(x, y); }
};

// The tile's scores into the block's shared memory (over the numerators and prefix sums, which they
// are computed from first): each thread its epiloguePlace's outputs, from the numerators and the
// prefix sums of the column sums (as the fused kernel's epilogue). A thread's scores are all
// computed before any is stored, so their divisions and square roots overlap. Returns the block's
// scores; ends with a barrier.
template <Method kMethod>
__device__ __forceinline__ const double* scoreTile(const SharedTile& s, const RegionScoreDesc& r,
                                                   double (&scores)[kEpilogueOutputs]) {
  const auto [row, x0] = epiloguePlace();
  const int w = r.templateWidth;
  const NormedConstants normed = kMethod == Method::CCoeffNormed ? normedConstantsFor(r.stats) : NormedConstants();
  const uint32_t* p1 = s.p1 + row * kPrefixPitch;
  const uint32_t* p2 = s.p2 + row * kPrefixPitch;
  const uint32_t* num = s.num + row * kFusedTileWidth;
#pragma unroll
  for (int q = 0; q < kEpilogueOutputs; ++q) {
    const int x = x0 + 32 * q;
    const int64_t s1 = int64_t(p1[x + w] - p1[x]), s2 = int64_t(p2[x + w] - p2[x]);
    const int64_t c = int64_t(num[fused_spatial::numeratorSlot(x)]);
    scores[q] = regionScore<kMethod>(r.stats, normed, s1, s2, c);
  }
  static_assert(kFusedTileHeight * kFusedTileWidth * sizeof(double) <=
                    sizeof(uint32_t) * (kFusedTileHeight * kFusedTileWidth + 2 * kFusedTileHeight * kPrefixPitch),
                "the scores fit over the numerators and prefix sums");
  double* tileScores = reinterpret_cast<double*>(s.num);
  __syncthreads();  // every thread has read its numerators and sums
#pragma unroll
  for (int q = 0; q < kEpilogueOutputs; ++q) tileScores[row * kFusedTileWidth + x0 + 32 * q] = scores[q];
  __syncthreads();
  return tileScores;
}

// The tile's peaks, handed to the host by the block alone: its best owned position (thread 0, into
// the job's tile bests, the region's from firstTile on), every owned position that reaches the
// threshold and passes the local-peak rule (each warp its own, region_handoff.cuh) and the tile's
// candidate count (thread 0, the unit counts' entry of its tile best), each sampled with its
// neighbours from the block's scores. Every thread of the block calls it, after scoreTile; one
// barrier.
__device__ __forceinline__ void handOffTile(const RegionTile& tile, const TileGoodness& good,
                                            const double (&scores)[kEpilogueOutputs], int firstTile,
                                            const RegionPeakJob& job) {
  const auto [row, x0] = epiloguePlace();
  const int region = job.firstRegion + int(blockIdx.z);
  Ranked best{0.0, -1};
  bool found[kEpilogueOutputs];
  int xs[kEpilogueOutputs], ys[kEpilogueOutputs];
#pragma unroll
  for (int q = 0; q < kEpilogueOutputs; ++q) {
    xs[q] = good.outX0 + x0 + 32 * q;
    ys[q] = good.outY0 + row;
    found[q] = false;
    if (!tile.owns(xs[q], ys[q])) continue;
    const Ranked here{job.sign * scores[q], ys[q] * good.width + xs[q]};
    if (better(here, best)) best = here;
    found[q] = job.collect && here.goodness >= job.goodEnough && isLocalPeak(good, xs[q], ys[q], here.goodness);
  }
  int before = 0, tileCount = 0;
  const int warpCount = warpCandidateCount(found, &before);
  best = blockBestAndCountInThread0(best, warpCount, &tileCount);
  const auto sample = [&](int x, int y) { return sampleRegionPeakAt(good, good.score(x, y), region, x, y); };
  if (threadIdx.x == 0) {
    const int x = best.index % good.width, y = best.index / good.width;
    const int unit = firstTile + int(blockIdx.y) * regionTilesAcross(good.width) + int(blockIdx.x);
    job.tileBests[unit] = sample(x, y);
    publishUnitCount(job, unit, tileCount);
  }
  storeWarpCandidates(job, sample, found, xs, ys, before, warpCount);
}

// Block (x, y) of region z, 32 warps: load the image tile, window sums, tensor-core numerator
// (template rows in eight parts), scores, then the tile's peaks handed to the host. Launched
// overlapping the gather that writes its pixels, it reads its descriptor while the gather runs and
// waits for the gather's end before anything else.
// One instance per method: a kernel holds one method's epilogue, not six (a short kernel's warps
// otherwise wait on instruction fetch).
template <Method kMethod>
__global__ void __launch_bounds__(kThreads, 1)
    fusedRegionKernel(const __grid_constant__ RegionDescs descs, RegionPeakJob job) {
  extern __shared__ uint32_t shared[];
  const RegionScoreDesc r = blockDescriptor(descs.at(int(blockIdx.z)));
  const int mapWidth = r.width - r.templateWidth + 1, mapHeight = r.height - r.templateHeight + 1;
  const RegionTile tile(int(blockIdx.x), int(blockIdx.y), mapWidth, mapHeight);
  if (tile.ownX0 >= mapWidth || tile.ownY0 >= mapHeight) return;  // the whole block: no barrier is skipped by some
  waitForPreviousGrid();
  const SharedTile s = fused_spatial::carveSharedTile(shared);
  const int words = (r.templateWidth + 3) / 4;
  const int tileRows = kFusedTileHeight + r.templateHeight - 1;
  const int tileWords = max(kFusedTileWidth / 4 + words, 28 + 8 * fused_spatial::kStepsFor(r.templateWidth));
  // cp.async needs 16-byte aligned chunks: the region's rows, and the tile's first column (a tile
  // right of the first starts one column before its own).
  const bool chunkAligned = (reinterpret_cast<std::uintptr_t>(r.image) % 16 == 0) && (r.pitch % 16 == 0) &&
                            tile.outX0 % 16 == 0;
  fused_spatial::loadImageTile<kThreads>(r.image, r.pitch, r.width, r.height, chunkAligned, tile.outX0, tile.outY0,
                                         tileRows, tileWords, s.image);
  // Side by side: the window sums by the first warps, the numerator by the others.
  if (int(threadIdx.x) < kSumThreads)
    fused_spatial::windowSums<kSumThreads, kSumBarrier, kSumColumnThreads>(s, r.templateHeight, tileWords);
  else
    fused_spatial::tensorNumeratorParts<kNumeratorSplits, kSumThreads / 32, kNumeratorBarrier>(
        s, r.fragments, r.templateWidth, r.templateHeight);
  __syncthreads();
  double scores[kEpilogueOutputs];
  const double* tileScores = scoreTile<kMethod>(s, r, scores);
  handOffTile(tile, TileGoodness{tileScores, tile.outX0, tile.outY0, mapWidth, mapHeight, job.sign}, scores,
              r.firstTile, job);
}

template <Method kMethod>
Status launchRegionKernel(dim3 grid, int shared, const RegionDescs& descs, const RegionPeakJob& job,
                          bool overlapPrevious, cudaStream_t stream) {
  if (shared > fused_spatial::kStaticSharedLimit)
    NCC_CUDA_CHECK(cudaFuncSetAttribute(fusedRegionKernel<kMethod>, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                        fused_spatial::kMaxSharedBytes));
  return launchKernel(fusedRegionKernel<kMethod>, grid, dim3(kThreads), std::size_t(shared), stream, overlapPrevious,
                      descs, job);
}

}  // namespace

Status fusedRegionScores(const RegionScoreDesc* descs, const RegionScoreDesc* hostDescs, int count,
                         int maxTemplateHeight, int maxMapWidth, int maxMapHeight, Method method,
                         const RegionPeakJob& peaks, bool overlapPrevious, cudaStream_t stream) {
  if (count <= 0) return Status();
  if (descs == nullptr) return Status::error("fusedRegionScores: descriptors missing");
  if (maxTemplateHeight < 1 || maxTemplateHeight > kFusedMaxSide || maxMapWidth < 1 || maxMapHeight < 1)
    return Status::error("fusedRegionScores: bad template height or map size");
  NCC_RETURN_IF_ERROR(checkRegionPeakJob(peaks));
  if (peaks.tileBests == nullptr) return Status::error("fusedRegionScores: tile bests missing");
  if (count > 65535) return Status::error("fusedRegionScores: more than 65535 regions in one launch");
  const int shared = fused_spatial::sharedBytesFor(maxTemplateHeight);
  const dim3 grid(regionTilesAcross(maxMapWidth), regionTilesDown(maxMapHeight), count);
  const RegionDescs list = RegionDescs::of(descs, hostDescs, count);
  switch (method) {
    case Method::SqDiff:
      return launchRegionKernel<Method::SqDiff>(grid, shared, list, peaks, overlapPrevious, stream);
    case Method::SqDiffNormed:
      return launchRegionKernel<Method::SqDiffNormed>(grid, shared, list, peaks, overlapPrevious, stream);
    case Method::CCorr:
      return launchRegionKernel<Method::CCorr>(grid, shared, list, peaks, overlapPrevious, stream);
    case Method::CCorrNormed:
      return launchRegionKernel<Method::CCorrNormed>(grid, shared, list, peaks, overlapPrevious, stream);
    case Method::CCoeff:
      return launchRegionKernel<Method::CCoeff>(grid, shared, list, peaks, overlapPrevious, stream);
    case Method::CCoeffNormed:
      return launchRegionKernel<Method::CCoeffNormed>(grid, shared, list, peaks, overlapPrevious, stream);
  }
  return Status::error("fusedRegionScores: unknown method " + std::to_string(int(method)));
}

}  // namespace nccmatch::cuda
