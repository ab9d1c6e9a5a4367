#include "cuda/numerator/gemm_bank.hpp"

#include <algorithm>
#include <cfloat>
#include <climits>
#include <cmath>

#include "common/integer_math.hpp"
#include "cuda/cuda_check.hpp"
#include "cuda/numerator/gemm_epilogue.cuh"
#include "cuda/numerator/gemm_mainloop.cuh"
#include "cuda/numerator/gemm_tile_load.cuh"
#include "cuda/numerator/image_tile.cuh"
#include "rules/score_rules.hpp"

// Where a tile's time goes, measured without counters (bench/gemm_stages.sh): a bench-only build
// of this file with NCC_GEMM_REPEAT_STAGE set does one stage of every tile twice, with the same
// outputs (each repeat is idempotent), and the difference from the build without repeats is that
// stage's time. Every library build leaves it 0: no stage is repeated.
#ifndef NCC_GEMM_REPEAT_STAGE
#define NCC_GEMM_REPEAT_STAGE 0
#endif
// What a screen change does to the exact scoring behind it (bench_bank_pushes): a bench-only build
// with NCC_GEMM_COUNT_PUSHES 1 adds, per tile and chunk screened, the pairs pushed to exact scoring
// into device counters (gemmBankPushTally reads them). Every library build leaves it 0.
#ifndef NCC_GEMM_COUNT_PUSHES
#define NCC_GEMM_COUNT_PUSHES 0
#endif

namespace nccmatch::cuda {

namespace {

using namespace gemm_tiles;  // the kernel's tiers: tile load, main loop, epilogues

// The stages a bench build may repeat (NCC_GEMM_REPEAT_STAGE's values; gemm_stages.sh names them).
enum class RepeatStage {
  None = 0,
  TileLoad = 1,    // the image tile from global memory
  WindowSums = 2,  // the tile's window sums
  Hankel = 3,      // the Hankel rows of a slab
  Products = 4,    // the first slab's products (accumulators zeroed in between)
  Fold = 5,        // the folded windows of the tile epilogue (u8 or zero-mean screen's)
  Screen = 6,      // the tile epilogue's screen and pushes (the list emptied in between; either screen)
};
constexpr RepeatStage kRepeat = RepeatStage(NCC_GEMM_REPEAT_STAGE);
static_assert(int(kRepeat) >= 0 && int(kRepeat) <= 6, "NCC_GEMM_REPEAT_STAGE names no stage");

constexpr bool kCountPushes = NCC_GEMM_COUNT_PUSHES != 0;
// NCC_GEMM_COUNT_PUSHES: pairs pushed, (tile, chunk)s screened, of those whose list overflowed.
__device__ unsigned long long gemmPushCounters[3];

// A slab's products into the accumulators: wgmma where the code is for sm_90a, mma.sync elsewhere;
// kSignedB for a zero-mean bank's s8 templates.
template <int kNTiles, bool kSignedB = false>
__device__ __forceinline__ void mainLoopOf(const GemmShared& s, int rowChunks, int stepBase, int slices,
                                           uint32_t (&acc)[kMTiles][kNTiles][4]) {
#if NCC_GEMM_WGMMA
  mainLoopWgmma<kNTiles, kSignedB>(s, rowChunks, stepBase, ceilDiv(slices, 2), acc);
#else
  mainLoop<kNTiles, kSignedB>(s, rowChunks, stepBase, ceilDiv(slices, 2), slices - 1, acc);
#endif
}

// A zero-mean kernel's row epilogue (every score written, or a tile whose candidates overflow)
// apart, its accumulators a copy on the stack: inlined, its registers spill through the whole
// kernel (cubin census: ~500 LDL), the tile epilogue's hot path included.
template <int kNTiles>
struct Accumulators {
  uint32_t v[kMTiles][kNTiles][4];
};
template <int kNTiles>
__device__ __noinline__ void zeroMeanRowEpilogue(const Accumulators<kNTiles> acc, const GemmShared s, int count, int w,
                                                 int pixels, const TileGeometry tile, Method method,
                                                 const FusedBankRule rule, float goodEnoughFloor, Ranked* bestRow) {
  epilogue<kNTiles, true>(acc.v, s, count, w, pixels, tile, method, rule, goodEnoughFloor, bestRow);
}

// A zero-mean tile takes one bound for all its pairs while its windows' largest condition kappa is
// at most 128 (ordinary content: below 32; nearly flat content: about 100, bench_screen_study);
// beyond, the per-pair screen (screenCandidates on c'' + r S1).
constexpr float kZeroMeanKappaSqLimit = 128.0f * 128.0f;

// What every block of a launch shares: the frame, the group's size and layout, the band of
// output rows and the image tile's geometry.
struct GemmGrid {
  const uint8_t* image;
  std::size_t pitch;
  int width, height;
  bool chunkAligned;  // image and pitch 16-byte aligned: the tile loads by cp.async
  float goodEnoughFloor;  // rule.goodEnough rounded down to a float
  int count;          // templates in the size group
  int groupChunks;    // chunks a block holds (GemmBankShape::groupChunks)
  int w, h, rowChunks, slabRows, slabSteps;
  int rowBegin, rowEnd;
  int chunksPerRow, pitchWords;  // the image tile: 16-byte chunks a row, words a row
};

// The tile epilogue's screen in the form of the launch's method (centred or not).
template <int kNTiles>
__device__ __forceinline__ void screenTile(const uint32_t (&acc)[kMTiles][kNTiles][4], const GemmShared& s, int count,
                                           const GemmGrid& g, const TileGeometry& geometry, Method method,
                                           const FusedBankRule& rule) {
  if (screenCentred(method))
    screenCandidates<kNTiles, true>(acc, s, count, g.w, g.w * g.h, geometry, method, rule, g.goodEnoughFloor);
  else
    screenCandidates<kNTiles, false>(acc, s, count, g.w, g.w * g.h, geometry, method, rule, g.goodEnoughFloor);
}

// The tile's folded windows for the sparse screens, between barriers (the caller's before it: the
// window sums done, or, where the windows lie over the Hankel rows, every product done; one here
// after it). The zero-mean kernel folds its own where its windows' condition allows one bound a
// tile (returns true, *kappa the tile's), else, like every other kernel, the u8 screen's.
template <bool kZeroMean>
__device__ __forceinline__ bool foldTile(const GemmShared& s, const GemmGrid& g, const TileGeometry& geometry,
                                         Method method, const FusedBankRule& rule, float* kappa) {
  if constexpr (kZeroMean) {
    foldZeroMeanWindows(s, g.w, g.w * g.h, geometry, s.candidateCount + 1);
    if constexpr (kRepeat == RepeatStage::Fold) foldZeroMeanWindows(s, g.w, g.w * g.h, geometry, s.candidateCount + 1);
    __syncthreads();
    const float kappaSqMax = __int_as_float(__shfl_sync(0xffffffffu, s.candidateCount[1], 0));
    if (kappaSqMax <= kZeroMeanKappaSqLimit) {
      *kappa = zeroMeanTileKappa(kappaSqMax);
      return true;
    }
  }
  foldTileWindows(s, g.w, g.w * g.h, method, float(rule.sign), geometry);
  if constexpr (!kZeroMean && kRepeat == RepeatStage::Fold)
    foldTileWindows(s, g.w, g.w * g.h, method, float(rule.sign), geometry);
  __syncthreads();
  return false;
}

// Persistent blocks: blockIdx.y is the group of chunks of templates (their B operands stay in
// shared memory), blockIdx.x walks the band's tiles of kGemmTileRows x kGemmTileWidth outputs: load
// the image tile and the window sums (and, for a group, the folded windows) once, then for each
// chunk of the group: per slab the Hankel rows (kept from the first chunk where the template is one
// slab and the group's folded windows lie apart) and the numerator (warp w: output row w), the
// epilogue, the tile's best per template.
//
// kZeroMean (a zero-mean bank's ccoeff-normed launch, rules/zero_mean_screen.hpp): the fragments
// are the s8 templates T - r, the accumulators sum I*(T - r), the tile epilogue screens with one
// bound a template where the tile's windows allow it, and every exact score takes c'' + r S1.
template <int kNTiles, bool kZeroMean = false>
__global__ void __launch_bounds__(kGemmThreads, kNTiles <= 4 ? 2 : 1)
    gemmBankKernel(const GemmGrid g, const MemberDesc* __restrict__ descs, const uint8_t* __restrict__ fragments,
                   const ZeroMeanTemplate* __restrict__ zeroMean, Method method, FusedBankRule rule) {
  constexpr int kChunk = 8 * kNTiles;
  extern __shared__ __align__(16) uint8_t shared[];
  const int kSteps = (g.h / g.slabRows) * g.slabSteps + ceilDiv((g.h % g.slabRows) * g.rowChunks, 2);
  const SharedLayout layout = sharedLayout(kSteps, kChunk, g.slabRows, g.rowChunks, g.h, kZeroMean, g.groupChunks);
  const GemmShared s = carve(shared, layout);
  const std::size_t chunkBytes = layout.fragments / std::size_t(g.groupChunks);  // one chunk's B operand
  const int firstChunk = int(blockIdx.y) * g.groupChunks;
  const int groupCount = min(g.groupChunks * kChunk, g.count - firstChunk * kChunk);  // the block's templates
  const int chunksHere = ceilDiv(groupCount, kChunk);
  loadChunks(s, fragments, descs, zeroMean, chunkBytes, firstChunk, chunksHere, kChunk, groupCount, method);
  // A group's windows are folded once a tile, apart from the Hankel rows; then a template of one
  // slab keeps its Hankel rows for every chunk of the tile.
  const bool foldedApart = layout.folded > 0;
  const bool hankelKept = foldedApart && g.slabRows >= g.h;

  const int mapWidth = g.width - g.w + 1, mapHeight = g.height - g.h + 1;
  const int rowLimit = min(g.rowEnd, mapHeight);
  const int tilesX = ceilDiv(mapWidth, kGemmTileWidth), firstTileRow = g.rowBegin / kGemmTileRows;
  const int tiles = tilesX * (ceilDiv(rowLimit, kGemmTileRows) - firstTileRow);
  const int warp = threadIdx.x >> 5;
  for (int tile = blockIdx.x; tile < tiles; tile += gridDim.x) {
    const int ty = firstTileRow + tile / tilesX, tx = tile % tilesX;
    const int x0 = tx * kGemmTileWidth, y0 = ty * kGemmTileRows;
    if constexpr (kZeroMean)
      if (threadIdx.x == 0) s.candidateCount[1] = 0;  // the tile's largest kappa^2 (float bits)
    image_tile::load<kGemmThreads>(g.image, g.pitch, g.width, g.height, g.chunkAligned, x0, y0,
                                   kGemmTileRows + g.h - 1, g.chunksPerRow, g.pitchWords, s.image);
    if constexpr (kRepeat == RepeatStage::TileLoad)
      image_tile::load<kGemmThreads>(g.image, g.pitch, g.width, g.height, g.chunkAligned, x0, y0,
                                     kGemmTileRows + g.h - 1, g.chunksPerRow, g.pitchWords, s.image);
    image_tile::windowSums<kGemmThreads, kGemmTileRows, kPrefixColumns>(
        s.image, g.pitchWords, g.h, kGemmTileWidth + g.w - 1, kPrefixPitch, s.p1, s.p2);
    if constexpr (kRepeat == RepeatStage::WindowSums)
      image_tile::windowSums<kGemmThreads, kGemmTileRows, kPrefixColumns>(
          s.image, g.pitchWords, g.h, kGemmTileWidth + g.w - 1, kPrefixPitch, s.p1, s.p2);
    const TileGeometry geometry{x0, y0, rowLimit, mapWidth};
    bool zeroMeanTile = false;  // the zero-mean screen with one bound (foldTile)
    float kappa = 1.0f;
    if (foldedApart && !rule.everyScore) {
      __syncthreads();  // the window sums are in place
      zeroMeanTile = foldTile<kZeroMean>(s, g, geometry, method, rule, &kappa);
    }
    for (int c = 0; c < chunksHere; ++c) {
      const GemmShared sc = chunkOf(s, c, chunkBytes, kChunk);
      const int count = min(kChunk, groupCount - c * kChunk);
      // A sparse launch starts each template's tile floor at its frame floor: only pairs that can
      // still be the frame's best are pushed and scored (most tiles push none).
      const bool frameFloors = !rule.everyScore;
      int floorSeen = orderedBits(-INFINITY);  // thread t < count: template t's, as read here
      if (frameFloors && int(threadIdx.x) < count) floorSeen = frameFloorBits(sc.desc[threadIdx.x].frameFloor);
      if (int(threadIdx.x) < kChunk) {
        s.floorBits[threadIdx.x] = floorSeen;
        s.tieKeys[threadIdx.x] = 0;  // no tie
        s.bestKeys[threadIdx.x] = 0;  // no candidate scored
        s.bestIndex[threadIdx.x] = INT_MAX;
      }
      if (threadIdx.x == 0) s.candidateCount[0] = 0;
      uint32_t acc[kMTiles][kNTiles][4] = {};
      for (int r0 = 0, stepBase = 0; r0 < g.h; r0 += g.slabRows, stepBase += g.slabSteps) {
        const int rows = min(g.slabRows, g.h - r0);
        if (!(hankelKept && c > 0)) {
          if (r0 > 0 || c > 0) __syncthreads();  // every warp is past the previous slab's Hankel rows
          buildHankel(s, g.pitchWords, g.rowChunks, r0, rows);
          if constexpr (kRepeat == RepeatStage::Hankel) buildHankel(s, g.pitchWords, g.rowChunks, r0, rows);
        }
        __syncthreads();  // the Hankel rows and the chunk's reset floors are in place
        const int slices = rows * g.rowChunks;
        // The first slab starts from zero accumulators: its products done twice from zero give the
        // same sums.
        if constexpr (kRepeat == RepeatStage::Products) {
          if (r0 == 0) {
            mainLoopOf<kNTiles, kZeroMean>(sc, g.rowChunks, stepBase, slices, acc);
#pragma unroll
            for (int a = 0; a < kMTiles; ++a)
#pragma unroll
              for (int n = 0; n < kNTiles; ++n)
#pragma unroll
                for (int i = 0; i < 4; ++i) acc[a][n][i] = 0;
          }
        }
        mainLoopOf<kNTiles, kZeroMean>(sc, g.rowChunks, stepBase, slices, acc);
      }
      if (!rule.everyScore) {
        if (!foldedApart) {
          __syncthreads();  // every product is done: the Hankel rows' memory takes the folded windows
          zeroMeanTile = foldTile<kZeroMean>(s, g, geometry, method, rule, &kappa);
        }
        // The zero-mean kernels screen from the s8 products (one bound a tile, or the per-pair
        // screen on c'' + r S1); the others from the u8 ones (if constexpr: no kernel carries the
        // other's screen). A second screen meets the floors the first raised: it pushes a subset
        // of the first's list (emptied in between), and the scoring keeps the same candidates.
        const auto screen = [&] {
          if constexpr (kZeroMean) {
            if (zeroMeanTile)
              screenZeroMeanCandidates<kNTiles>(acc, sc, count, g.w, geometry, rule, g.goodEnoughFloor, kappa);
            else
              screenCandidates<kNTiles, true, true>(acc, sc, count, g.w, g.w * g.h, geometry, method, rule,
                                                     g.goodEnoughFloor);
          } else {
            screenTile<kNTiles>(acc, sc, count, g, geometry, method, rule);
          }
        };
        if constexpr (kRepeat == RepeatStage::Screen) {
          screen();
          __syncthreads();
          if (threadIdx.x == 0) *s.candidateCount = 0;
          __syncthreads();
        }
        screen();
        __syncthreads();
        // The tile's floors that rose above the frame's raise it (the tile then reports a best at
        // least as good, scored below or by the row epilogue).
        if (frameFloors && int(threadIdx.x) < count && s.floorBits[threadIdx.x] > floorSeen)
          atomicMax(sc.desc[threadIdx.x].frameFloor, frameFloorKey(s.floorBits[threadIdx.x]));
        // The same for the whole block; read through a shuffle so the compiler sees it uniform
        // in the warp (wgmma stays unserialised only on uniform paths).
        const int candidates = __shfl_sync(0xffffffffu, *s.candidateCount, 0);
        if constexpr (kCountPushes) {
          if (threadIdx.x == 0) {
            atomicAdd(&gemmPushCounters[0], static_cast<unsigned long long>(candidates));
            atomicAdd(&gemmPushCounters[1], 1ull);
            if (candidates > candidateCapacity(kChunk)) atomicAdd(&gemmPushCounters[2], 1ull);
          }
        }
        if (candidates <= candidateCapacity(kChunk)) {
          scoreCandidates(sc, candidates, count, g.w, geometry, method, rule, g.goodEnoughFloor, ty * tilesX + tx);
          __syncthreads();  // the candidates are read before the next chunk's or tile's floors are reset
          continue;
        }
      }
      if constexpr (kZeroMean) {
        Accumulators<kNTiles> copy;
#pragma unroll
        for (int a = 0; a < kMTiles; ++a)
#pragma unroll
          for (int n = 0; n < kNTiles; ++n)
#pragma unroll
            for (int i = 0; i < 4; ++i) copy.v[a][n][i] = acc[a][n][i];
        zeroMeanRowEpilogue<kNTiles>(copy, sc, count, g.w, g.w * g.h, geometry, method, rule, g.goodEnoughFloor,
                                     s.best + warp * kChunk);
      } else {
        epilogue<kNTiles, false>(acc, sc, count, g.w, g.w * g.h, geometry, method, rule, g.goodEnoughFloor,
                                 s.best + warp * kChunk);
      }
      // Every warp is past its reads of the tile, the sums and the Hankel rows of this tile.
      __syncthreads();
      if (int(threadIdx.x) < count) {
        Ranked r = s.best[threadIdx.x];
        for (int row = 1; row < kGemmTileRows; ++row)
          if (better(s.best[row * kChunk + threadIdx.x], r)) r = s.best[row * kChunk + threadIdx.x];
        sc.desc[threadIdx.x].blockBest[ty * tilesX + tx] = r;
      }
      // The bests are read before the next chunk's epilogue writes them (a tile's next load is
      // past barriers of its own).
      if (c + 1 < chunksHere) __syncthreads();
    }
  }
}

__global__ void gemmBankPathProbe(int* usesWgmma) { *usesWgmma = NCC_GEMM_WGMMA; }

// Lets the kernel take `limit` bytes of shared memory (every bank's shape fits it, so banks of
// other sizes never see a smaller setting) and says how many blocks of `shared` bytes an SM holds.
template <int kNTiles, bool kZeroMean>
Status prepareKernel(std::size_t limit, std::size_t shared, int* blocksPerSm) {
  NCC_CUDA_CHECK(cudaFuncSetAttribute(gemmBankKernel<kNTiles, kZeroMean>, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                      int(limit)));
  NCC_CUDA_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(blocksPerSm, gemmBankKernel<kNTiles, kZeroMean>,
                                                               kGemmThreads, shared));
  if (*blocksPerSm < 1) return Status::error("GemmBank: the kernel does not fit an SM");
  return Status();
}

// The same for a bank's kernels: the zero-mean one too where the bank has it (the fewer blocks
// of the two).
template <int kNTiles>
Status prepare(std::size_t limit, std::size_t shared, bool zeroMean, int* blocksPerSm) {
  NCC_RETURN_IF_ERROR((prepareKernel<kNTiles, false>(limit, shared, blocksPerSm)));
  if (!zeroMean) return Status();
  int zeroMeanBlocks = 0;
  NCC_RETURN_IF_ERROR((prepareKernel<kNTiles, true>(limit, shared, &zeroMeanBlocks)));
  *blocksPerSm = std::min(*blocksPerSm, zeroMeanBlocks);
  return Status();
}

template <int kNTiles>
Status launch(const GemmGrid& g, const MemberDesc* descs, const uint8_t* fragments, const ZeroMeanTemplate* zeroMean,
              Method method, const FusedBankRule& rule, std::size_t shared, int groups, int blocksX,
              cudaStream_t stream) {
  if (zeroMean != nullptr)
    gemmBankKernel<kNTiles, true><<<dim3(blocksX, groups), kGemmThreads, shared, stream>>>(g, descs, fragments,
                                                                                           zeroMean, method, rule);
  else
    gemmBankKernel<kNTiles, false><<<dim3(blocksX, groups), kGemmThreads, shared, stream>>>(g, descs, fragments,
                                                                                            nullptr, method, rule);
  NCC_CUDA_CHECK(cudaGetLastError());
  return Status();
}

// The largest float not above v (-inf for -inf; FLT_MAX for v beyond it).
float floatAtMost(double v) {
  float f = float(v);
  if (double(f) > v) f = std::nextafter(f, -INFINITY);
  return f;
}

int roundUpPowerOfTwo(int v) {
  int p = 1;
  while (p < v) p <<= 1;
  return p;
}

}  // namespace

Status gemmBankUsesWgmma(bool* out) {
  DeviceBuffer flag;
  NCC_RETURN_IF_ERROR(flag.reserve(sizeof(int)));
  gemmBankPathProbe<<<1, 1>>>(flag.as<int>());
  NCC_CUDA_CHECK(cudaGetLastError());
  int value = 0;
  NCC_CUDA_CHECK(cudaMemcpy(&value, flag.as<int>(), sizeof(int), cudaMemcpyDeviceToHost));
  *out = value != 0;
  return Status();
}

Status gemmBankPushTally(GemmPushTally* out, bool reset) {
  *out = GemmPushTally();
  if constexpr (kCountPushes) {
    unsigned long long v[3] = {};
    NCC_CUDA_CHECK(cudaMemcpyFromSymbol(v, gemmPushCounters, sizeof v));
    *out = GemmPushTally{true, v[0], v[1], v[2]};
    if (reset) {
      const unsigned long long zero[3] = {};
      NCC_CUDA_CHECK(cudaMemcpyToSymbol(gemmPushCounters, zero, sizeof zero));
    }
  }
  return Status();
}

std::size_t GemmBankShape::sharedBytes() const {
  return sharedLayout(kSteps, chunkTemplates, slabRows, rowChunks, height, zeroMean, groupChunks).total();
}

GemmBankShape gemmBankShape(int width, int height, int count, std::size_t sharedLimit, int maxNTiles, bool zeroMean,
                            int maxGroupChunks) {
  GemmBankShape s;
  if (!gemmBankFits(width, height) || count < 1) return s;
  s.zeroMean = zeroMean;
  s.width = width;
  s.height = height;
  // Even above 1, so that a k-step's two chunks lie in one Hankel row (buildHankel); the padded
  // chunk's B is zeros (gemmBankFragments writes the template's own columns only).
  s.rowChunks = ceilDiv(width, 16);
  if (s.rowChunks > 1 && s.rowChunks % 2 != 0) ++s.rowChunks;
  s.tileWidth = kGemmTileWidth;
  const std::size_t twoBlocks = std::min(sharedLimit / 2, kGemmSharedLimitTwoBlocks);
  auto cut = [&](int nTiles, int slabRows, std::size_t limit) {
    s.nTiles = nTiles;
    s.chunkTemplates = 8 * nTiles;
    s.chunks = ceilDiv(count, s.chunkTemplates);
    s.groupChunks = 1;
    s.slabRows = slabRows;
    s.slabSteps = ceilDiv(slabRows * s.rowChunks, 2);
    s.kSteps = (height / slabRows) * s.slabSteps + ceilDiv((height % slabRows) * s.rowChunks, 2);
    return s.sharedBytes() <= limit;
  };
  // The widest n-tiles the bank fills whose B operand and Hankel slab (at least 8 template rows,
  // or the whole template: fewer rebuild the Hankel too often) fit, two blocks an SM for 4 or 2
  // n-tiles; then, for large templates, 4 or 2 n-tiles alone on an SM, 2 with slabs down to one
  // row where nothing else fits; the largest slab for those. A bank of one 2-n-tile chunk (16
  // templates or fewer) keeps two blocks an SM with slabs down to one row: 16 x 64² on the H200
  // (session 33, bench/gemm_ab.sh) 699 -> 652 µs at 1080p, 2797 -> 2578 at 2160p with slabs of 5
  // rows, where 64 x 64² as 2 n-tiles in slabs of 5 lost to 4 n-tiles alone (1986 -> 2528).
  const int wanted = std::min(std::max(2, maxNTiles), std::max(2, roundUpPowerOfTwo(ceilDiv(count, 8))));
  // Then the most chunks a block (the largest divisor of chunks: every group as long) that keep the
  // shape within its limit; a group's folded windows take memory of their own.
  const auto group = [&](std::size_t limit) {
    for (int g = std::min(s.chunks, std::max(1, maxGroupChunks)); g >= 2; --g) {
      if (s.chunks % g != 0) continue;
      GemmBankShape grouped = s;
      grouped.groupChunks = g;
      if (grouped.sharedBytes() <= limit) return grouped;
    }
    return s;
  };
  for (int pass = 0; pass < 2; ++pass)
    for (int nTiles = wanted; nTiles >= 2; nTiles /= 2) {
      if (pass == 1 && nTiles == 8) continue;
      const std::size_t limit = nTiles == 8 || pass == 1 ? sharedLimit : twoBlocks;
      const int leastSlab = nTiles == 2 && (pass == 1 || count <= 16) ? 1 : std::min(height, 8);
      for (int slabRows = height; slabRows >= leastSlab; --slabRows)
        if (cut(nTiles, slabRows, limit)) return group(limit);
    }
  return GemmBankShape();
}

std::vector<uint8_t> gemmBankFragments(const std::vector<const uint8_t*>& pixels, const GemmBankShape& shape,
                                       const std::vector<int>* offsets) {
  std::vector<uint8_t> out(std::size_t(shape.chunks) * shape.chunkBytes(), 0);
  const int count = int(pixels.size());
  for (int chunk = 0; chunk < shape.chunks; ++chunk)
    for (int step = 0; step < shape.kSteps; ++step) {
      const int slab = step / shape.slabSteps, r0 = slab * shape.slabRows;
      const int rows = std::min(shape.slabRows, shape.height - r0);
      for (int half = 0; half < 2; ++half) {
        const int slice = 2 * (step - slab * shape.slabSteps) + half;
        if (slice >= rows * shape.rowChunks) continue;  // the slab's padding: zeros
        const int r = r0 + slice / shape.rowChunks, c0 = 16 * (slice % shape.rowChunks);
        for (int n = 0; n < shape.chunkTemplates; ++n) {
          const int member = chunk * shape.chunkTemplates + n;
          if (member >= count) break;
          uint8_t* dst = out.data() + std::size_t(chunk) * shape.chunkBytes() +
                         ((std::size_t(step) * 2 + half) * shape.chunkTemplates + n) * 16;
          const int offset = offsets != nullptr ? (*offsets)[member] : 0;
          for (int c = c0; c < std::min(c0 + 16, shape.width); ++c)
            dst[c - c0] = uint8_t(int(pixels[member][std::size_t(r) * shape.width + c]) - offset);  // s8 where offset
        }
      }
    }
  return out;
}

int gemmBankTiles(int mapWidth, int mapHeight) {
  return ceilDiv(mapWidth, kGemmTileWidth) * ceilDiv(mapHeight, kGemmTileRows);
}

Status GemmBank::set(const std::vector<const uint8_t*>& pixels, int width, int height,
                     const std::vector<FusedBankTemplate>& members, int smCount, int maxNTiles, bool zeroMeanScreen,
                     int maxGroupChunks) {
  count_ = 0;
  if (members.empty() || pixels.size() != members.size())
    return Status::error("GemmBank::set: empty bank, or pixels and members differ in number");
  if (!gemmBankFits(width, height)) return Status::error("GemmBank::set: template size outside 1..64");
  int device = 0, optin = 0;
  NCC_CUDA_CHECK(cudaGetDevice(&device));
  NCC_CUDA_CHECK(cudaDeviceGetAttribute(&optin, cudaDevAttrMaxSharedMemoryPerBlockOptin, device));
  const std::size_t sharedLimit = std::min(kGemmSharedLimit, std::size_t(optin));
  const GemmBankShape shape =
      gemmBankShape(width, height, int(members.size()), sharedLimit, maxNTiles, zeroMeanScreen, maxGroupChunks);
  if (shape.kSteps == 0)
    return Status::error("GemmBank::set: " + std::to_string(width) + "x" + std::to_string(height) +
                         " templates do not fit the device's shared memory");
  std::vector<MemberDesc> descs;
  bool collect = true, sparse = true, floors = true;
  for (std::size_t i = 0; i < members.size(); ++i) {
    const FusedBankTemplate& t = members[i];
    if (t.templateWidth != width || t.templateHeight != height || pixels[i] == nullptr)
      return Status::error("GemmBank::set: every template of a group must be " + std::to_string(width) + "x" +
                           std::to_string(height) + " with pixels");
    if (t.map == nullptr || t.blockBest == nullptr)
      return Status::error("GemmBank::set: map or tile-best buffer missing");
    descs.push_back(MemberDesc{t.map, t.blockBest, t.above, t.aboveCount, t.aboveBits, t.frameFloor, t.stats,
                               normedConstantsFor(t.stats), ScreenTemplate()});
    collect = collect && t.above != nullptr && t.aboveCount != nullptr;
    sparse = sparse && t.aboveBits != nullptr;
    floors = floors && t.frameFloor != nullptr;
  }
  const std::vector<uint8_t> fragments = gemmBankFragments(pixels, shape);
  NCC_RETURN_IF_ERROR(fragments_.reserve(fragments.size()));
  NCC_CUDA_CHECK(cudaMemcpy(fragments_.as<void>(), fragments.data(), fragments.size(), cudaMemcpyHostToDevice));
  const std::size_t bytes = descs.size() * sizeof(MemberDesc);
  NCC_RETURN_IF_ERROR(descriptors_.reserve(bytes));
  NCC_CUDA_CHECK(cudaMemcpy(descriptors_.as<void>(), descs.data(), bytes, cudaMemcpyHostToDevice));
  if (zeroMeanScreen) {
    // The s8 templates T - r and each one's screen constants (rules/zero_mean_screen.hpp), padded
    // to whole chunks like the fragments.
    std::vector<ZeroMeanTemplate> constants(std::size_t(shape.chunks) * shape.chunkTemplates);
    std::vector<int> offsets(members.size());
    for (std::size_t i = 0; i < members.size(); ++i) {
      constants[i] = zeroMeanTemplate(pixels[i], int64_t(width) * height);
      offsets[i] = constants[i].offset;
    }
    const std::vector<uint8_t> zeroMeanFragments = gemmBankFragments(pixels, shape, &offsets);
    NCC_RETURN_IF_ERROR(zeroMeanFragments_.reserve(zeroMeanFragments.size()));
    NCC_CUDA_CHECK(cudaMemcpy(zeroMeanFragments_.as<void>(), zeroMeanFragments.data(), zeroMeanFragments.size(),
                              cudaMemcpyHostToDevice));
    const std::size_t constantBytes = constants.size() * sizeof(ZeroMeanTemplate);
    NCC_RETURN_IF_ERROR(zeroMeanTemplates_.reserve(constantBytes));
    NCC_CUDA_CHECK(cudaMemcpy(zeroMeanTemplates_.as<void>(), constants.data(), constantBytes, cudaMemcpyHostToDevice));
  }
  const std::size_t shared = shape.sharedBytes();
  switch (shape.nTiles) {
    case 8: NCC_RETURN_IF_ERROR(prepare<8>(sharedLimit, shared, zeroMeanScreen, &blocksPerSm_)); break;
    case 4: NCC_RETURN_IF_ERROR(prepare<4>(sharedLimit, shared, zeroMeanScreen, &blocksPerSm_)); break;
    default: NCC_RETURN_IF_ERROR(prepare<2>(sharedLimit, shared, zeroMeanScreen, &blocksPerSm_)); break;
  }
  shape_ = shape;
  count_ = int(members.size());
  smCount_ = std::max(1, smCount);
  canCollect_ = collect;
  canSparse_ = collect && sparse;
  hasFrameFloors_ = floors;
  return Status();
}

int GemmBank::sliceRows(int width) const {
  const int tilesX = std::max(1, ceilDiv(width - shape_.width + 1, shape_.tileWidth));
  const int resident = std::max(1, blocksPerSm_ * smCount_ / shape_.groups());
  return std::max(1, kGemmSliceRounds * resident / tilesX) * kGemmTileRows;
}

Status GemmBank::score(const uint8_t* image, std::size_t pitch, int width, int height, Method method,
                       const FusedBankRule& rule, int rowBegin, int rowEnd, cudaStream_t stream) const {
  if (count_ == 0) return Status::error("GemmBank::score: no templates set");
  if (shape_.width > width || shape_.height > height)
    return Status::error("GemmBank::score: the templates are larger than the frame");
  const int mapWidth = width - shape_.width + 1, mapHeight = height - shape_.height + 1;
  if (rowBegin < 0 || rowBegin % kGemmTileRows != 0 || rowEnd > mapHeight)
    return Status::error("GemmBank::score: bad band of output rows");
  if (rowEnd <= rowBegin) return Status();
  if (rule.collect && !canCollect_) return Status::error("GemmBank::score: above-threshold buffers missing");
  if (!rule.everyScore && rule.collect && !canSparse_)
    return Status::error("GemmBank::score: a sparse map needs every template's aboveBits");
  if (!rule.everyScore && !hasFrameFloors_)
    return Status::error("GemmBank::score: a sparse map needs every template's frameFloor");
  GemmGrid g{};
  g.image = image;
  g.pitch = pitch;
  g.width = width;
  g.height = height;
  g.chunkAligned = reinterpret_cast<std::uintptr_t>(image) % 16 == 0 && pitch % 16 == 0;
  g.goodEnoughFloor = floatAtMost(rule.goodEnough);
  g.count = count_;
  g.groupChunks = shape_.groupChunks;
  g.w = shape_.width;
  g.h = shape_.height;
  g.rowChunks = shape_.rowChunks;
  g.slabRows = shape_.slabRows;
  g.slabSteps = shape_.slabSteps;
  g.rowBegin = rowBegin;
  g.rowEnd = rowEnd;
  g.chunksPerRow = tileChunksPerRow(shape_.rowChunks);
  g.pitchWords = 4 * g.chunksPerRow;
  const int tiles = ceilDiv(mapWidth, shape_.tileWidth) *
                    (ceilDiv(rowEnd, kGemmTileRows) - rowBegin / kGemmTileRows);
  // The resident blocks of every SM, shared between the groups of chunks: one wave (a block beyond
  // it would walk its tiles after the others, doubling the time).
  const int blocksX = std::max(1, std::min(tiles, blocksPerSm_ * smCount_ / shape_.groups()));
  const MemberDesc* descs = descriptors_.as<MemberDesc>();
  // A zero-mean bank screens ccoeff-normed from its s8 templates; every other method, and every
  // bank without them, from the u8 ones.
  const bool zeroMeanLaunch = shape_.zeroMean && method == Method::CCoeffNormed;
  // The zero-mean screen ranks by the score itself (ccoeff-normed's sign, +1).
  if (zeroMeanLaunch && rule.sign != 1.0)
    return Status::error("GemmBank::score: a ccoeff-normed launch ranks with sign +1, got " + std::to_string(rule.sign));
  const uint8_t* fragments = zeroMeanLaunch ? zeroMeanFragments_.as<uint8_t>() : fragments_.as<uint8_t>();
  const ZeroMeanTemplate* zeroMean = zeroMeanLaunch ? zeroMeanTemplates_.as<ZeroMeanTemplate>() : nullptr;
  const std::size_t shared = shape_.sharedBytes();
  switch (shape_.nTiles) {
    case 8: return launch<8>(g, descs, fragments, zeroMean, method, rule, shared, shape_.groups(), blocksX, stream);
    case 4: return launch<4>(g, descs, fragments, zeroMean, method, rule, shared, shape_.groups(), blocksX, stream);
    default: return launch<2>(g, descs, fragments, zeroMean, method, rule, shared, shape_.groups(), blocksX, stream);
  }
}

}  // namespace nccmatch::cuda
