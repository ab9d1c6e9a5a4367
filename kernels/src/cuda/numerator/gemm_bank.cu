#include "cuda/numerator/gemm_bank.hpp"

#include <algorithm>
#include <cfloat>
#include <cmath>

#include "common/integer_math.hpp"
#include "cuda/cuda_check.hpp"
#include "cuda/numerator/image_tile.cuh"
#include "cuda/numerator/mma_u8.cuh"
#include "cuda/numerator/wgmma_u8.cuh"
#include "cuda/peaks/peaks_device.cuh"
#include "rules/score_rules.hpp"
#include "rules/score_screen.hpp"

namespace nccmatch::cuda {

// The numerator's instructions in this compilation pass: wgmma where the code is for sm_90a
// (Hopper's own instructions), mma.sync elsewhere. Both fill the same accumulators (placeOf).
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
#define NCC_GEMM_WGMMA 1
#else
#define NCC_GEMM_WGMMA 0
#endif

namespace {

// Column sums of up to kGemmTileWidth + 63 columns, one thread each, stored one place to the right.
constexpr int kPrefixColumns = 128;
constexpr int kPrefixPitch = kPrefixColumns + 1;
static_assert(kGemmTileWidth + kGemmMaxSide - 1 <= kPrefixColumns, "a tile's windows fit the prefix rows");

// One template as the kernel sees it: statistics and outputs.
struct alignas(16) MemberDesc {
  double* map;
  Ranked* blockBest;
  int* above;
  int* aboveCount;
  uint32_t* aboveBits;
  TemplateStats stats;
  NormedConstants normed;
  ScreenTemplate screen;  // for the launch's method: set by each block as it loads the chunk
};

// What every block of a launch shares: the frame, the group's size and layout, the band of
// output rows and the image tile's geometry.
struct GemmGrid {
  const uint8_t* image;
  std::size_t pitch;
  int width, height;
  bool chunkAligned;  // image and pitch 16-byte aligned: the tile loads by cp.async
  float goodEnoughFloor;  // rule.goodEnough rounded down to a float
  int count;          // templates in the group
  int w, h, rowChunks, slabRows, slabSteps;
  int rowBegin, rowEnd;
  int chunksPerRow, pitchWords;  // the image tile: 16-byte chunks a row, words a row
};

// The image tile's row: the Hankel chunk of position x, column chunk j reads bytes x + 16j ..
// x + 16j + 15 through whole words (up to 3 bytes more).
__host__ __device__ constexpr int tileChunksPerRow(int rowChunks) {
  return (kGemmTileWidth + 16 * rowChunks + 3 + 15) / 16;
}

// The block's shared memory: the chunk's B operand, the Hankel rows of one slab, the image tile,
// the prefix sums of the column sums of I and I^2 per output row, the chunk's descriptors and
// each warp's best per template.
struct GemmShared {
  uint8_t* fragments;
  uint4* hankel;
  uint32_t* image;
  uint32_t* p1;
  uint32_t* p2;
  ScreenFoldedWindow* folded;  // the tile's windows for the screen (tile epilogue), row-major, over hankel
  MemberDesc* desc;
  Ranked* best;  // kGemmTileRows x chunkTemplates; the candidates' exact scores in the tile epilogue
  // The tile epilogue's candidates (capacity kGemmTileRows x chunkTemplates): per template the
  // running floor under its exact tile best (orderedBits), the number pushed, and per candidate
  // its place (template << 16 | tile row << 8 | column), cross sum c and screened ceiling.
  int* floorBits;
  int* candidateCount;
  uint32_t* where;
  uint32_t* cross;
  float* ceiling;
};

struct SharedLayout {
  std::size_t fragments, hankel, image, prefix, desc, best, candidates;
  __host__ __device__ std::size_t total() const {
    return fragments + hankel + image + 2 * prefix + desc + best + candidates;
  }
};

// The tile epilogue's candidate list holds as many pairs as the row epilogue's bests.
__host__ __device__ constexpr int candidateCapacity(int chunkTemplates) { return kGemmTileRows * chunkTemplates; }

__host__ __device__ inline SharedLayout sharedLayout(int kSteps, int chunkTemplates, int slabRows, int rowChunks,
                                                     int h) {
  SharedLayout l;
  l.fragments = std::size_t(kSteps) * 2 * chunkTemplates * 16;
  l.hankel = std::size_t(slabRows + kGemmTileRows - 1) * rowChunks * kGemmTileWidth * 16;
  l.image = std::size_t(kGemmTileRows + h - 1) * tileChunksPerRow(rowChunks) * 16;
  l.prefix = std::size_t(kGemmTileRows) * kPrefixPitch * 4;
  l.desc = std::size_t(chunkTemplates) * sizeof(MemberDesc);
  l.best = std::size_t(kGemmTileRows) * chunkTemplates * sizeof(Ranked);
  l.candidates = (std::size_t(chunkTemplates) * 4 + 16 + std::size_t(candidateCapacity(chunkTemplates)) * 12 + 15) /
                 16 * 16;
  return l;
}
static_assert((kGemmTileRows * kPrefixPitch * 4) % 16 == 0, "the prefix arrays keep 16-byte alignment");
static_assert(kGemmTileRows * kGemmTileWidth * sizeof(ScreenFoldedWindow) <= std::size_t(kGemmTileRows) * kGemmTileWidth * 16,
              "the folded windows fit the smallest Hankel slab (8 rows of one chunk)");
static_assert(kGemmTileRows == 8 && kGemmThreads == 256 && kGemmTileWidth == 64,
              "wgmma: two warpgroups of four rows, one m64 product a row (placeOf)");

__device__ inline GemmShared carve(uint8_t* shared, const SharedLayout& l) {
  GemmShared s;
  uint8_t* p = shared;
  s.fragments = p;
  p += l.fragments;
  s.hankel = reinterpret_cast<uint4*>(p);
  s.folded = reinterpret_cast<ScreenFoldedWindow*>(p);  // over the Hankel rows, once they are done
  p += l.hankel;
  s.image = reinterpret_cast<uint32_t*>(p);
  p += l.image;
  s.p1 = reinterpret_cast<uint32_t*>(p);
  p += l.prefix;
  s.p2 = reinterpret_cast<uint32_t*>(p);
  p += l.prefix;
  s.desc = reinterpret_cast<MemberDesc*>(p);
  p += l.desc;
  s.best = reinterpret_cast<Ranked*>(p);
  p += l.best;
  const int capacity = int(l.best / sizeof(Ranked));
  s.floorBits = reinterpret_cast<int*>(p);
  s.candidateCount = s.floorBits + l.best / (kGemmTileRows * sizeof(Ranked));
  s.where = reinterpret_cast<uint32_t*>(s.candidateCount + 4);
  s.cross = s.where + capacity;
  s.ceiling = reinterpret_cast<float*>(s.cross + capacity);
  return s;
}

// Once per block: the chunk's B operand (cp.async) and its descriptors with the screening
// constants of the launch's method.
__device__ __forceinline__ void loadChunk(const GemmShared& s, const uint8_t* fragments, const MemberDesc* descs,
                                          std::size_t chunkBytes, int chunkTemplates, int count, Method method) {
  const uint8_t* src = fragments + std::size_t(blockIdx.y) * chunkBytes;
  for (std::size_t i = threadIdx.x; i < chunkBytes / 16; i += kGemmThreads)
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16;\n" ::"r"(
                     uint32_t(__cvta_generic_to_shared(s.fragments + 16 * i))),
                 "l"(src + 16 * i));
  for (int i = threadIdx.x; i < count; i += kGemmThreads) {
    MemberDesc d = descs[blockIdx.y * chunkTemplates + i];
    d.screen = screenTemplate(method, d.stats);
    s.desc[i] = d;
  }
  asm volatile("cp.async.wait_all;\n" ::: "memory");
#if NCC_GEMM_WGMMA
  fenceSharedForTensorCores();  // wgmma reads the B operand
#endif
  __syncthreads();
}

// The Hankel rows of a slab: for tile rows r0 .. r0 + rows + kGemmTileRows - 2, every position x
// of the tile and column chunk j, the 16 bytes from x + 16j, stored at ((row * rowChunks + j) *
// kGemmTileWidth + x) * 16: 8 neighbouring positions are 128 neighbouring bytes (one ldmatrix
// matrix, no bank conflicts).
__device__ __forceinline__ void buildHankel(const GemmShared& s, int pitchWords, int rowChunks, int r0, int rows) {
  // Thread (x, lane group): position x of rows r, r + 4, ...; its chunks j share words (chunk
  // j + 1 starts 4 words after chunk j).
  constexpr int kRowStep = kGemmThreads / kGemmTileWidth;
  const int x = threadIdx.x % kGemmTileWidth;
  const uint32_t shift = 8 * (x & 3);
  for (int row = threadIdx.x / kGemmTileWidth; row < rows + kGemmTileRows - 1; row += kRowStep) {
    const uint32_t* w = s.image + (r0 + row) * pitchWords + (x >> 2);
    uint4* dst = s.hankel + row * rowChunks * kGemmTileWidth + x;
    uint32_t w0 = w[0];
    for (int j = 0; j < rowChunks; ++j) {
      const uint32_t w1 = w[4 * j + 1], w2 = w[4 * j + 2], w3 = w[4 * j + 3], w4 = w[4 * j + 4];
      dst[j * kGemmTileWidth] = make_uint4(__funnelshift_r(w0, w1, shift), __funnelshift_r(w1, w2, shift),
                                           __funnelshift_r(w2, w3, shift), __funnelshift_r(w3, w4, shift));
      w0 = w4;
    }
  }
#if NCC_GEMM_WGMMA
  fenceSharedForTensorCores();  // wgmma reads the Hankel rows after the caller's barrier
#endif
}

// A lane's accumulators: kMTiles x kNTiles fragments of 4 (placeOf says where each lies).
constexpr int kMTiles = kGemmTileWidth / 16;

#if !NCC_GEMM_WGMMA
__device__ __forceinline__ void ldmatrixX4(uint32_t (&r)[4], uint32_t address) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(address));
}

// The numerator of one warp's output row over one slab: kMTiles x 16 positions times kNTiles x
// 8 templates, `steps` k-steps of two slices. Lane (q, i) = (lane / 8, lane % 8) addresses row i
// of ldmatrix matrix q: for A, position 16m + i + 8(q & 1) of slice 2k + (q >> 1) (a.x..a.w as
// mma wants them); for B, template 8(n + (q >> 1)) + i of slice 2k + (q & 1) (b0, b1 of two
// n-tiles). A slab's missing last slice reads a real slice against zero templates.

template <int kNTiles>
__device__ __forceinline__ void mainLoop(const GemmShared& s, int rowChunks, int stepBase, int steps, int lastSlice,
                                         uint32_t (&acc)[kMTiles][kNTiles][4]) {
  constexpr int kChunk = 8 * kNTiles;
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, q = lane >> 3, i = lane & 7;
  const uint32_t hankel = uint32_t(__cvta_generic_to_shared(s.hankel)) +
                          uint32_t((warp * rowChunks * kGemmTileWidth + i + 8 * (q & 1)) * 16);
  const uint32_t fragments = uint32_t(__cvta_generic_to_shared(s.fragments)) +
                             uint32_t((stepBase * 2 * kChunk + (q & 1) * kChunk + 8 * (q >> 1) + i) * 16);
#pragma unroll 1
  for (int step = 0; step < steps; ++step) {
    const int slice = min(2 * step + (q >> 1), lastSlice);
    const uint32_t aAddress = hankel + uint32_t(slice * kGemmTileWidth * 16);
    const uint32_t bAddress = fragments + uint32_t(step * 2 * kChunk * 16);
    uint32_t a[kMTiles][4];
#pragma unroll
    for (int m = 0; m < kMTiles; ++m) ldmatrixX4(a[m], aAddress + m * 16 * 16);
#pragma unroll
    for (int n = 0; n < kNTiles; n += 2) {
      uint32_t b[4];
      ldmatrixX4(b, bAddress + n * 8 * 16);
#pragma unroll
      for (int m = 0; m < kMTiles; ++m) {
        mmaU8(acc[m][n], make_uint4(a[m][0], a[m][1], a[m][2], a[m][3]), b[0], b[1]);
        mmaU8(acc[m][n + 1], make_uint4(a[m][0], a[m][1], a[m][2], a[m][3]), b[2], b[3]);
      }
    }
  }
}

#else
// The same with wgmma (sm_90a): warpgroup q computes output rows 4q .. 4q + 3, one
// m64 x (8 kNTiles) x k32 product per row and k-step, A the row's Hankel slices (64 positions,
// core matrices of 8 positions x 16 bytes: 128 bytes apart along M, 1024 along K) and B the
// k-step's templates (8 templates x 16 bytes: 128 apart along N, 16 kChunk along K). A slab's
// missing last slice reads the next 1024 bytes of shared memory against zero templates. Waits
// for the products before it returns (the caller reads the accumulators or rebuilds the rows).
template <int kNTiles>
__device__ __forceinline__ void mainLoopWgmma(const GemmShared& s, int rowChunks, int stepBase, int steps,
                                              uint32_t (&acc)[kMTiles][kNTiles][4]) {
  constexpr int kChunk = 8 * kNTiles;
  constexpr uint32_t kSliceBytes = kGemmTileWidth * 16;
  // The warpgroup's index through a shuffle: the compiler then knows it uniform in the warp
  // (thread-dependent descriptors would serialise the products).
  const int firstRow = 4 * __shfl_sync(0xffffffffu, int(threadIdx.x >> 7), 0);
  const uint32_t hankel = uint32_t(__cvta_generic_to_shared(s.hankel));
  const uint32_t fragments = uint32_t(__cvta_generic_to_shared(s.fragments)) + uint32_t(stepBase * 2 * kChunk * 16);
  // The trip count through a shuffle too: a loop the compiler cannot prove uniform serialises
  // the products (ptxas C7520).
  const int uniformSteps = __shfl_sync(0xffffffffu, steps, 0);
  // Descriptors formed once; a k-step moves A by two slices and B by two slices of the chunk.
  // Only the low word changes (the address field counts 16 bytes; shared addresses stay below its
  // 256 KB, so no carry leaves it): 32-bit offsets from the loop counter, no 64-bit adds.
  constexpr uint32_t kStepA = 2 * kSliceBytes / 16, kStepB = 2 * kChunk * 16 / 16;
  const uint64_t descB = wgmmaDescriptor(fragments, kChunk * 16, 128);
  uint64_t descA[kMTiles];
#pragma unroll
  for (int a = 0; a < kMTiles; ++a)
    descA[a] = wgmmaDescriptor(hankel + uint32_t((firstRow + a) * rowChunks) * kSliceBytes, kSliceBytes, 128);
  auto moved = [](uint64_t d, uint32_t by) { return (d & 0xffffffff00000000ull) | uint32_t(uint32_t(d) + by); };
  wgmmaFence();
#pragma unroll 1
  for (int step = 0; step < uniformSteps; ++step) {
    const uint64_t b = moved(descB, uint32_t(step) * kStepB);
#pragma unroll
    for (int a = 0; a < kMTiles; ++a) {
      uint32_t(&d)[kNTiles * 4] = reinterpret_cast<uint32_t(&)[kNTiles * 4]>(acc[a]);
      const uint64_t descAt = moved(descA[a], uint32_t(step) * kStepA);
      if constexpr (kNTiles == 2) wgmmaU8N16(d, descAt, b);
      else if constexpr (kNTiles == 4) wgmmaU8N32(d, descAt, b);
      else wgmmaU8N64(d, descAt, b);
    }
  }
  wgmmaCommitAndWait();
}

#endif

// One (position, template) score by the rules. Not inlined: the epilogue calls it from 2 * 16
// unrolled places per n-tile, and one copy keeps the kernel's code (and binaries) small.
__device__ __noinline__ double scoreOf(Method method, const TemplateStats& stats, const NormedConstants& normed,
                                       int64_t s1, int64_t s2, int64_t c) {
  return method == Method::CCoeffNormed && stats.n <= kInt64SafePixels ? ccoeffNormedScore(stats, normed, s1, s2, c)
                                                                       : scoreFromSums(method, stats, s1, s2, c);
}

// One exact score of the epilogue: the pair's score by the rules; the map gets it where every
// score is written or it reaches the threshold; reaching the threshold also enters the above
// list (and, for a sparse map, the bit).
__device__ __forceinline__ Ranked exactPair(const MemberDesc& e, Method method, const FusedBankRule& rule,
                                            int64_t s1, int64_t s2, uint32_t c, int index) {
  const double score = scoreOf(method, e.stats, e.normed, s1, s2, int64_t(c));
  const Ranked here{rule.sign * score, index};
  const bool reaches = rule.collect && here.goodness >= rule.goodEnough;
  if (rule.everyScore || reaches) e.map[index] = score;
  if (reaches) {
    e.above[atomicAdd(e.aboveCount, 1)] = index;
    if (!rule.everyScore) atomicOr(e.aboveBits + (index >> 5), 1u << (index & 31));
  }
  return here;
}

// The epilogue of one warp's output row y, one n-tile at a time: each lane screens its 16 pairs
// (8 positions x 2 templates) in float (score_screen.hpp), the lanes holding a template agree on
// a floor under its exact row best, and only pairs that can reach that floor or the threshold
// (every pair where the map takes every score) get their exact score. Lanes work through their
// own pairs together, so a warp pays for the most any lane has. The row's exact best per template
// goes to bestRow.
// Where a lane's accumulator fragment (a, half) lies in the tile (kGemmTileRows x
// kGemmTileWidth). mma.sync: warp w computes output row w, a is its m-tile (columns 16a ..
// 16a + 15); wgmma: warpgroup q computes rows 4q .. 4q + 3 (a is the row), warp w % 4 of it
// columns 16(w % 4) .. 16(w % 4) + 15. Either way the lane holds columns +g and +8+g (half).
struct Place {
  int row, column;
};
__device__ __forceinline__ Place placeOf(int a, int half) {
  const int warp = threadIdx.x >> 5, g = (threadIdx.x & 31) >> 2;
#if NCC_GEMM_WGMMA
  return {4 * (warp >> 2) + a, 16 * (warp & 3) + 8 * half + g};
#else
  return {warp, 16 * a + 8 * half + g};
#endif
}

// The tile's place in the map: its first output (x0, y0), the rows below rowLimit and columns
// below mapWidth that exist.
struct TileGeometry {
  int x0, y0, rowLimit, mapWidth;
  __device__ bool holds(const Place& p) const { return y0 + p.row < rowLimit && x0 + p.column < mapWidth; }
  __device__ int index(const Place& p) const { return (y0 + p.row) * mapWidth + x0 + p.column; }
};

// The window sums of a place (prefix rows of image_tile::windowSums).
__device__ __forceinline__ void windowSumsAt(const GemmShared& s, const Place& p, int w, int64_t* s1, int64_t* s2) {
  const uint32_t* p1 = s.p1 + p.row * kPrefixPitch;
  const uint32_t* p2 = s.p2 + p.row * kPrefixPitch;
  *s1 = int64_t(p1[p.column + w] - p1[p.column]);
  *s2 = int64_t(p2[p.column + w] - p2[p.column]);
}

// The screening part of the windows a lane holds.
__device__ __forceinline__ void screenWindows(const GemmShared& s, int w, int pixels, Method method,
                                              ScreenWindow (&windows)[kMTiles][2]) {
#pragma unroll
  for (int m = 0; m < kMTiles; ++m)
#pragma unroll
    for (int half = 0; half < 2; ++half) {
      int64_t s1, s2;
      windowSumsAt(s, placeOf(m, half), w, &s1, &s2);
      windows[m][half] = screenWindow(method, pixels, int32_t(s1), int32_t(s2));
    }
  __syncwarp();  // the flat-window tests branch
}

// A lane's screened pairs of n-tile n, template j of its two: per pair the ceiling of its exact
// goodness (-inf: no pair); returned, the highest floor under one of them (its screened goodness
// less its bound; -inf: none).
template <int kNTiles>
__device__ __forceinline__ float screenTemplatePairs(const uint32_t (&acc)[kMTiles][kNTiles][4], int n, int j,
                                                     const ScreenMethod& screenRule, const ScreenTemplate& screen,
                                                     const ScreenWindow (&windows)[kMTiles][2], float sign,
                                                     bool memberValid, const TileGeometry& tile,
                                                     float (&ceiling)[kMTiles][2]) {
  float top = -INFINITY;
#pragma unroll
  for (int m = 0; m < kMTiles; ++m)
#pragma unroll
    for (int half = 0; half < 2; ++half) {
      const bool valid = memberValid && tile.holds(placeOf(m, half));
      const ScreenedPair p = screenPair(screenRule, screen, windows[m][half], acc[m][n][2 * half + j]);
      const float good = sign * p.score;
      ceiling[m][half] = valid ? good + p.bound : -INFINITY;
      top = fmaxf(top, valid ? good - p.bound : -INFINITY);
    }
  return top;
}

// The row epilogue (every score written, or a tile whose candidates overflow the list).
template <int kNTiles>
__device__ __forceinline__ void epilogue(const uint32_t (&acc)[kMTiles][kNTiles][4], const GemmShared& s,
                                         int count, int w, int pixels, const TileGeometry& tile, Method method,
                                         const FusedBankRule& rule, float goodEnoughFloor, Ranked* bestRow) {
  const int lane = threadIdx.x & 31, g = lane >> 2, t = lane & 3;
  const ScreenMethod screenRule = screenMethod(method, pixels);
  const float sign = float(rule.sign);
  ScreenWindow windows[kMTiles][2];
  screenWindows(s, w, pixels, method, windows);
#pragma unroll  // acc stays in registers only where every index is a constant
  for (int n = 0; n < kNTiles; ++n) {
    // Per pair the ceiling of its exact goodness (-inf: no pair); per template a floor under the
    // row's exact best.
    float ceiling[2][kMTiles][2], floorOfBest[2];
#pragma unroll
    for (int j = 0; j < 2; ++j) {
      const int member = 8 * n + 2 * t + j;
      float top = screenTemplatePairs(acc, n, j, screenRule, s.desc[min(member, count - 1)].screen, windows, sign,
                                      member < count, tile, ceiling[j]);
      for (int offset = 4; offset < 32; offset <<= 1) top = fmaxf(top, __shfl_xor_sync(0xffffffffu, top, offset));
      floorOfBest[j] = top;
    }
    // Bit 8j + 2m + half: the pair needs its exact score.
    uint32_t wanted = 0;
#pragma unroll
    for (int j = 0; j < 2; ++j)
#pragma unroll
      for (int m = 0; m < kMTiles; ++m)
#pragma unroll
        for (int half = 0; half < 2; ++half) {
          const float ceil = ceiling[j][m][half];
          if (ceil != -INFINITY &&
              (rule.everyScore || ceil >= floorOfBest[j] || (rule.collect && ceil >= goodEnoughFloor)))
            wanted |= 1u << (8 * j + 2 * m + half);
        }
    Ranked best[2] = {{0.0, -1}, {0.0, -1}};
    // The whole warp turns the loop together (a lane done early waits with its predicate off), so
    // it leaves converged: a divergent exit does not reconverge reliably around the call.
    while (__any_sync(0xffffffffu, wanted != 0)) {
      if (wanted != 0) {
        const int bit = __ffs(wanted) - 1;
        wanted &= wanted - 1;
        uint32_t c = 0;
#pragma unroll
        for (int j = 0; j < 2; ++j)
#pragma unroll
          for (int m = 0; m < kMTiles; ++m)
#pragma unroll
            for (int half = 0; half < 2; ++half)
              if (bit == 8 * j + 2 * m + half) c = acc[m][n][2 * half + j];
        const int j = bit >> 3;
        const Place place = placeOf((bit >> 1) & 3, bit & 1);
        int64_t s1, s2;
        windowSumsAt(s, place, w, &s1, &s2);
        const Ranked here = exactPair(s.desc[8 * n + 2 * t + j], method, rule, s1, s2, c, tile.index(place));
        if (j == 0 && better(here, best[0])) best[0] = here;
        if (j == 1 && better(here, best[1])) best[1] = here;
      }
      __syncwarp();
    }
#pragma unroll
    for (int j = 0; j < 2; ++j) {
      Ranked r = best[j];
      for (int offset = 4; offset < 32; offset <<= 1) {
        Ranked o;
        o.goodness = __shfl_xor_sync(0xffffffffu, r.goodness, offset);
        o.index = __shfl_xor_sync(0xffffffffu, r.index, offset);
        if (better(o, r)) r = o;
      }
      if (g == 0) bestRow[8 * n + 2 * t + j] = r;
    }
  }
}

// The tile's windows folded for the screen (score_screen.hpp), once per position: two a thread.
// Read after the next barrier.
__device__ __forceinline__ void foldTileWindows(const GemmShared& s, int w, int pixels, Method method, float sign,
                                                const TileGeometry& tile) {
  const ScreenMethod screenRule = screenMethod(method, pixels);
  for (int i = threadIdx.x; i < kGemmTileRows * kGemmTileWidth; i += kGemmThreads) {
    const Place place{i / kGemmTileWidth, i % kGemmTileWidth};
    int64_t s1, s2;
    windowSumsAt(s, place, w, &s1, &s2);
    s.folded[i] = screenFoldWindow(screenRule, screenWindow(method, pixels, int32_t(s1), int32_t(s2)), sign,
                                   tile.holds(place));
  }
}

// A float's bits as an int ordered as the floats are (NaN aside): atomicMax on them is a max.
__device__ __forceinline__ int orderedBits(float f) {
  const int i = __float_as_int(f);
  return i >= 0 ? i : i ^ 0x7fffffff;
}
__device__ __forceinline__ float orderedFloat(int i) { return __int_as_float(i >= 0 ? i : i ^ 0x7fffffff); }

// The tile epilogue (sparse maps), first tier: each warp screens its row's pairs, raises the
// tile's running floor under each template's exact best (the highest screened goodness less its
// bound, in floorBits) and pushes each pair whose ceiling reaches the floor it sees then, or the
// threshold, onto the tile's candidate list. A pair left out cannot be its template's tile best:
// the tile's final floor is at least the one it was compared with. Pushes beyond the capacity are
// only counted (the tile then takes the row epilogue).
template <int kNTiles, bool kCentred>
__device__ __forceinline__ void screenCandidates(const uint32_t (&acc)[kMTiles][kNTiles][4], const GemmShared& s,
                                                 int count, int w, int pixels, const TileGeometry& tile,
                                                 Method method, const FusedBankRule& rule, float goodEnoughFloor) {
  constexpr int kCapacity = candidateCapacity(8 * kNTiles);
  const int lane = threadIdx.x & 31, g = lane >> 2, t = lane & 3;
  const ScreenMethod screenRule = screenMethod(method, pixels);
  const float sign = float(rule.sign);
  const float lowest = screenLowestGoodness(screenRule, sign);
#pragma unroll
  for (int n = 0; n < kNTiles; ++n) {
    float ceiling[2][kMTiles][2];
#pragma unroll
    for (int j = 0; j < 2; ++j) {
      const int member = 8 * n + 2 * t + j;
      const ScreenTemplate screen = s.desc[min(member, count - 1)].screen;
      const bool flatTemplate = screenFlatTemplate(screenRule, screen);
      const float flatGoodness = sign * screenRule.flatTemplateScore;
      float top = -INFINITY;
      if (flatTemplate || member >= count) {  // rare (a lane's own branch): constants, or no pairs
#pragma unroll
        for (int m = 0; m < kMTiles; ++m)
#pragma unroll
          for (int half = 0; half < 2; ++half) {
            const Place place = placeOf(m, half);
            const bool pair = member < count && s.folded[place.row * kGemmTileWidth + place.column].offset != -INFINITY;
            ceiling[j][m][half] = pair ? flatGoodness : -INFINITY;
            top = fmaxf(top, ceiling[j][m][half]);
          }
      } else {
#pragma unroll
        for (int m = 0; m < kMTiles; ++m)
#pragma unroll
          for (int half = 0; half < 2; ++half) {
            const Place place = placeOf(m, half);
            const ScreenFoldedWindow f = s.folded[place.row * kGemmTileWidth + place.column];  // few live registers
            const ScreenedRange r = screenFoldedPairOf<kCentred>(screenRule, screen, f, lowest, acc[m][n][2 * half + j]);
            ceiling[j][m][half] = r.ceiling;
            top = fmaxf(top, r.floor);
          }
      }
      if (top != -INFINITY) top = fmaxf(top, lowest);  // no exact goodness is below it
      for (int offset = 4; offset < 32; offset <<= 1) top = fmaxf(top, __shfl_xor_sync(0xffffffffu, top, offset));
      if (g == 0 && member < count && top != -INFINITY) atomicMax(s.floorBits + member, orderedBits(top));
    }
    __syncwarp();  // the row's own floors are in place
#pragma unroll
    for (int j = 0; j < 2; ++j) {
      const int member = 8 * n + 2 * t + j;
      // A candidate reaches the floor seen now or the threshold; a pair that is none (ceiling
      // -inf) never does.
      float reach = member < count ? orderedFloat(*(volatile const int*)(s.floorBits + member)) : INFINITY;
      if (rule.collect) reach = fminf(reach, goodEnoughFloor);
      reach = fmaxf(reach, -FLT_MAX);
#pragma unroll
      for (int m = 0; m < kMTiles; ++m)
#pragma unroll
        for (int half = 0; half < 2; ++half) {
          const float ceil = ceiling[j][m][half];
          if (ceil >= reach) {
            const int slot = atomicAdd(s.candidateCount, 1);
            if (slot < kCapacity) {
              const Place place = placeOf(m, half);
              s.where[slot] = uint32_t(member) << 16 | uint32_t(place.row) << 8 | uint32_t(place.column);
              s.cross[slot] = acc[m][n][2 * half + j];
              s.ceiling[slot] = ceil;
            }
          }
        }
    }
  }
}

// The tile epilogue, second tier (after a barrier, every candidate on the list): the block
// scores exactly, one candidate a thread, those whose ceiling still reaches the template's final
// floor or the threshold (exactPair: map, above list and bits as the row epilogue writes them),
// then each template's tile best among them goes to its blockBest[tile].
__device__ __forceinline__ void scoreCandidates(const GemmShared& s, int candidates, int count, int w,
                                                const TileGeometry& tile, Method method, const FusedBankRule& rule,
                                                float goodEnoughFloor, int tileIndex) {
  Ranked* exact = s.best;
  for (int k = threadIdx.x; k < candidates; k += kGemmThreads) {
    const uint32_t where = s.where[k];
    const int member = int(where >> 16);
    const Place place{int(where >> 8) & 0xff, int(where & 0xff)};
    const float ceil = s.ceiling[k];
    Ranked r{0.0, -1};
    if (ceil >= orderedFloat(s.floorBits[member]) || (rule.collect && ceil >= goodEnoughFloor)) {
      int64_t s1, s2;
      windowSumsAt(s, place, w, &s1, &s2);
      r = exactPair(s.desc[member], method, rule, s1, s2, s.cross[k], tile.index(place));
    }
    exact[k] = r;
  }
  __syncthreads();
  // Each template's best: warp w takes templates w, w + 8, ..., its lanes the candidates in turn.
  const int lane = threadIdx.x & 31;
  for (int member = threadIdx.x >> 5; member < count; member += kGemmThreads / 32) {
    Ranked best{0.0, -1};
    for (int k = lane; k < candidates; k += 32)
      if (int(s.where[k] >> 16) == member && better(exact[k], best)) best = exact[k];
    best = warpBest(best);
    if (lane == 0) s.desc[member].blockBest[tileIndex] = best;
  }
}

// Persistent blocks: blockIdx.y is the chunk of templates (its B operand stays in shared
// memory), blockIdx.x walks the band's tiles of kGemmTileRows x kGemmTileWidth outputs: load the
// image tile, the window sums, per slab the Hankel rows and the numerator (warp w: output row
// w), the epilogue, the tile's best per template.
template <int kNTiles>
__global__ void __launch_bounds__(kGemmThreads, kNTiles <= 4 ? 2 : 1)
    gemmBankKernel(const GemmGrid g, const MemberDesc* __restrict__ descs, const uint8_t* __restrict__ fragments,
                   Method method, FusedBankRule rule) {
  constexpr int kChunk = 8 * kNTiles;
  extern __shared__ __align__(16) uint8_t shared[];
  const int kSteps = (g.h / g.slabRows) * g.slabSteps + ceilDiv((g.h % g.slabRows) * g.rowChunks, 2);
  const SharedLayout layout = sharedLayout(kSteps, kChunk, g.slabRows, g.rowChunks, g.h);
  const GemmShared s = carve(shared, layout);
  const int count = min(kChunk, g.count - int(blockIdx.y) * kChunk);
  loadChunk(s, fragments, descs, layout.fragments, kChunk, count, method);

  const int mapWidth = g.width - g.w + 1, mapHeight = g.height - g.h + 1;
  const int rowLimit = min(g.rowEnd, mapHeight);
  const int tilesX = ceilDiv(mapWidth, kGemmTileWidth), firstTileRow = g.rowBegin / kGemmTileRows;
  const int tiles = tilesX * (ceilDiv(rowLimit, kGemmTileRows) - firstTileRow);
  const int warp = threadIdx.x >> 5;
  for (int tile = blockIdx.x; tile < tiles; tile += gridDim.x) {
    const int ty = firstTileRow + tile / tilesX, tx = tile % tilesX;
    const int x0 = tx * kGemmTileWidth, y0 = ty * kGemmTileRows;
    if (int(threadIdx.x) < kChunk) s.floorBits[threadIdx.x] = orderedBits(-INFINITY);
    if (threadIdx.x == 0) *s.candidateCount = 0;
    image_tile::load<kGemmThreads>(g.image, g.pitch, g.width, g.height, g.chunkAligned, x0, y0,
                                   kGemmTileRows + g.h - 1, g.chunksPerRow, g.pitchWords, s.image);
    image_tile::windowSums<kGemmThreads, kGemmTileRows, kPrefixColumns>(
        s.image, g.pitchWords, g.h, kGemmTileWidth + g.w - 1, kPrefixPitch, s.p1, s.p2);
    const TileGeometry geometry{x0, y0, rowLimit, mapWidth};
    uint32_t acc[kMTiles][kNTiles][4] = {};
    for (int r0 = 0, stepBase = 0; r0 < g.h; r0 += g.slabRows, stepBase += g.slabSteps) {
      const int rows = min(g.slabRows, g.h - r0);
      if (r0 > 0) __syncthreads();  // every warp is past the previous slab's Hankel rows
      buildHankel(s, g.pitchWords, g.rowChunks, r0, rows);
      __syncthreads();
      const int slices = rows * g.rowChunks;
#if NCC_GEMM_WGMMA
      mainLoopWgmma<kNTiles>(s, g.rowChunks, stepBase, ceilDiv(slices, 2), acc);
#else
      mainLoop<kNTiles>(s, g.rowChunks, stepBase, ceilDiv(slices, 2), slices - 1, acc);
#endif
    }
    if (!rule.everyScore) {
      __syncthreads();  // every product is done: the Hankel rows' memory takes the folded windows
      foldTileWindows(s, g.w, g.w * g.h, method, float(rule.sign), geometry);
      __syncthreads();
      if (screenCentred(method))
        screenCandidates<kNTiles, true>(acc, s, count, g.w, g.w * g.h, geometry, method, rule, g.goodEnoughFloor);
      else
        screenCandidates<kNTiles, false>(acc, s, count, g.w, g.w * g.h, geometry, method, rule, g.goodEnoughFloor);
      __syncthreads();
      // The same for the whole block; read through a shuffle so the compiler sees it uniform
      // in the warp (wgmma stays unserialised only on uniform paths).
      const int candidates = __shfl_sync(0xffffffffu, *s.candidateCount, 0);
      if (candidates <= candidateCapacity(kChunk)) {
        scoreCandidates(s, candidates, count, g.w, geometry, method, rule, g.goodEnoughFloor, ty * tilesX + tx);
        __syncthreads();  // the candidates are read before the next tile's floors are reset
        continue;
      }
    }
    epilogue<kNTiles>(acc, s, count, g.w, g.w * g.h, geometry, method, rule, g.goodEnoughFloor,
                      s.best + warp * kChunk);
    // Every warp is past its reads of the tile, the sums and the Hankel rows of this tile.
    __syncthreads();
    if (int(threadIdx.x) < count) {
      Ranked r = s.best[threadIdx.x];
      for (int row = 1; row < kGemmTileRows; ++row)
        if (better(s.best[row * kChunk + threadIdx.x], r)) r = s.best[row * kChunk + threadIdx.x];
      s.desc[threadIdx.x].blockBest[ty * tilesX + tx] = r;
    }
  }
}

__global__ void gemmBankPathProbe(int* usesWgmma) { *usesWgmma = NCC_GEMM_WGMMA; }

// Lets the kernel take `limit` bytes of shared memory (every bank's shape fits it, so banks of
// other sizes never see a smaller setting) and says how many blocks of `shared` bytes an SM holds.
template <int kNTiles>
Status prepare(std::size_t limit, std::size_t shared, int* blocksPerSm) {
  NCC_CUDA_CHECK(cudaFuncSetAttribute(gemmBankKernel<kNTiles>, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                      int(limit)));
  NCC_CUDA_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(blocksPerSm, gemmBankKernel<kNTiles>, kGemmThreads,
                                                               shared));
  if (*blocksPerSm < 1) return Status::error("GemmBank: the kernel does not fit an SM");
  return Status();
}

template <int kNTiles>
Status launch(const GemmGrid& g, const MemberDesc* descs, const uint8_t* fragments, Method method,
              const FusedBankRule& rule, std::size_t shared, int chunks, int blocksX, cudaStream_t stream) {
  gemmBankKernel<kNTiles><<<dim3(blocksX, chunks), kGemmThreads, shared, stream>>>(g, descs, fragments, method,
                                                                                   rule);
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

std::size_t GemmBankShape::sharedBytes() const {
  return sharedLayout(kSteps, chunkTemplates, slabRows, rowChunks, height).total();
}

GemmBankShape gemmBankShape(int width, int height, int count, std::size_t sharedLimit, int maxNTiles) {
  GemmBankShape s;
  if (!gemmBankFits(width, height) || count < 1) return s;
  s.width = width;
  s.height = height;
  s.rowChunks = ceilDiv(width, 16);
  s.tileWidth = kGemmTileWidth;
  const std::size_t twoBlocks = std::min(sharedLimit / 2, kGemmSharedLimitTwoBlocks);
  auto cut = [&](int nTiles, int slabRows, std::size_t limit) {
    s.nTiles = nTiles;
    s.chunkTemplates = 8 * nTiles;
    s.chunks = ceilDiv(count, s.chunkTemplates);
    s.slabRows = slabRows;
    s.slabSteps = ceilDiv(slabRows * s.rowChunks, 2);
    s.kSteps = (height / slabRows) * s.slabSteps + ceilDiv((height % slabRows) * s.rowChunks, 2);
    return s.sharedBytes() <= limit;
  };
  // The widest n-tiles the bank fills whose B operand and Hankel slab (at least 8 template rows,
  // or the whole template: fewer rebuild the Hankel too often) fit, two blocks an SM for 4 or 2
  // n-tiles; then, for large templates, 4 or 2 n-tiles alone on an SM; the largest slab for those.
  const int wanted = std::min(std::max(2, maxNTiles), std::max(2, roundUpPowerOfTwo(ceilDiv(count, 8))));
  for (int pass = 0; pass < 2; ++pass)
    for (int nTiles = wanted; nTiles >= 2; nTiles /= 2) {
      if (pass == 1 && nTiles == 8) continue;
      const std::size_t limit = nTiles == 8 || pass == 1 ? sharedLimit : twoBlocks;
      const int leastSlab = nTiles == 2 ? 1 : std::min(height, 8);
      for (int slabRows = height; slabRows >= leastSlab; --slabRows)
        if (cut(nTiles, slabRows, limit)) return s;
    }
  return GemmBankShape();
}

std::vector<uint8_t> gemmBankFragments(const std::vector<const uint8_t*>& pixels, const GemmBankShape& shape) {
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
          for (int c = c0; c < std::min(c0 + 16, shape.width); ++c)
            dst[c - c0] = pixels[member][std::size_t(r) * shape.width + c];
        }
      }
    }
  return out;
}

int gemmBankTiles(int mapWidth, int mapHeight) {
  return ceilDiv(mapWidth, kGemmTileWidth) * ceilDiv(mapHeight, kGemmTileRows);
}

Status GemmBank::set(const std::vector<const uint8_t*>& pixels, int width, int height,
                     const std::vector<FusedBankTemplate>& members, int smCount, int maxNTiles) {
  count_ = 0;
  if (members.empty() || pixels.size() != members.size())
    return Status::error("GemmBank::set: empty bank, or pixels and members differ in number");
  if (!gemmBankFits(width, height)) return Status::error("GemmBank::set: template size outside 1..64");
  int device = 0, optin = 0;
  NCC_CUDA_CHECK(cudaGetDevice(&device));
  NCC_CUDA_CHECK(cudaDeviceGetAttribute(&optin, cudaDevAttrMaxSharedMemoryPerBlockOptin, device));
  const std::size_t sharedLimit = std::min(kGemmSharedLimit, std::size_t(optin));
  const GemmBankShape shape = gemmBankShape(width, height, int(members.size()), sharedLimit, maxNTiles);
  if (shape.kSteps == 0)
    return Status::error("GemmBank::set: " + std::to_string(width) + "x" + std::to_string(height) +
                         " templates do not fit the device's shared memory");
  std::vector<MemberDesc> descs;
  bool collect = true, sparse = true;
  for (std::size_t i = 0; i < members.size(); ++i) {
    const FusedBankTemplate& t = members[i];
    if (t.templateWidth != width || t.templateHeight != height || pixels[i] == nullptr)
      return Status::error("GemmBank::set: every template of a group must be " + std::to_string(width) + "x" +
                           std::to_string(height) + " with pixels");
    if (t.map == nullptr || t.blockBest == nullptr)
      return Status::error("GemmBank::set: map or tile-best buffer missing");
    descs.push_back(MemberDesc{t.map, t.blockBest, t.above, t.aboveCount, t.aboveBits, t.stats,
                               normedConstantsFor(t.stats), ScreenTemplate()});
    collect = collect && t.above != nullptr && t.aboveCount != nullptr;
    sparse = sparse && t.aboveBits != nullptr;
  }
  const std::vector<uint8_t> fragments = gemmBankFragments(pixels, shape);
  NCC_RETURN_IF_ERROR(fragments_.reserve(fragments.size()));
  NCC_CUDA_CHECK(cudaMemcpy(fragments_.as<void>(), fragments.data(), fragments.size(), cudaMemcpyHostToDevice));
  const std::size_t bytes = descs.size() * sizeof(MemberDesc);
  NCC_RETURN_IF_ERROR(descriptors_.reserve(bytes));
  NCC_CUDA_CHECK(cudaMemcpy(descriptors_.as<void>(), descs.data(), bytes, cudaMemcpyHostToDevice));
  const std::size_t shared = shape.sharedBytes();
  switch (shape.nTiles) {
    case 8: NCC_RETURN_IF_ERROR(prepare<8>(sharedLimit, shared, &blocksPerSm_)); break;
    case 4: NCC_RETURN_IF_ERROR(prepare<4>(sharedLimit, shared, &blocksPerSm_)); break;
    default: NCC_RETURN_IF_ERROR(prepare<2>(sharedLimit, shared, &blocksPerSm_)); break;
  }
  shape_ = shape;
  count_ = int(members.size());
  smCount_ = std::max(1, smCount);
  canCollect_ = collect;
  canSparse_ = collect && sparse;
  return Status();
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
  GemmGrid g{};
  g.image = image;
  g.pitch = pitch;
  g.width = width;
  g.height = height;
  g.chunkAligned = reinterpret_cast<std::uintptr_t>(image) % 16 == 0 && pitch % 16 == 0;
  g.goodEnoughFloor = floatAtMost(rule.goodEnough);
  g.count = count_;
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
  // The resident blocks of every SM, shared between the chunks: one wave (a block beyond it
  // would walk its tiles after the others, doubling the time).
  const int blocksX = std::max(1, std::min(tiles, blocksPerSm_ * smCount_ / shape_.chunks));
  const MemberDesc* descs = descriptors_.as<MemberDesc>();
  const uint8_t* fragments = fragments_.as<uint8_t>();
  const std::size_t shared = shape_.sharedBytes();
  switch (shape_.nTiles) {
    case 8: return launch<8>(g, descs, fragments, method, rule, shared, shape_.chunks, blocksX, stream);
    case 4: return launch<4>(g, descs, fragments, method, rule, shared, shape_.chunks, blocksX, stream);
    default: return launch<2>(g, descs, fragments, method, rule, shared, shape_.chunks, blocksX, stream);
  }
}

}  // namespace nccmatch::cuda
