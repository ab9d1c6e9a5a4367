// The GEMM bank kernel's first tier (gemm_bank.cu): the block's shared memory and what fills it
// before the main loop. Once per block the chunk's B operand (the templates in slice order) and
// its templates' descriptors; per tile and slab the Hankel rows (the A operand) from the image
// tile, which image_tile.cuh loads with its window sums. The main loop (gemm_mainloop.cuh) and
// the epilogues (gemm_epilogue.cuh) read what this carves.
#pragma once

#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>

#include "cuda/numerator/gemm_bank.hpp"
#include "cuda/numerator/wgmma_u8.cuh"
#include "cuda/peaks/peaks_kernels.hpp"
#include "rules/score_rules.hpp"
#include "rules/score_screen.hpp"
#include "rules/zero_mean_screen.hpp"

// The numerator's instructions in this compilation pass: wgmma where the code is for sm_90a
// (Hopper's own instructions), mma.sync elsewhere. Both fill the same accumulators (placeOf in
// gemm_mainloop.cuh). Defined here, before any tier that branches on it.
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
#define NCC_GEMM_WGMMA 1
#else
#define NCC_GEMM_WGMMA 0
#endif

namespace nccmatch::cuda::gemm_tiles {

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
  uint32_t* frameFloor;  // sparse launches (FusedBankTemplate::frameFloor)
  TemplateStats stats;
  NormedConstants normed;
  ScreenTemplate screen;  // for the launch's method: set by each block as it loads the chunk
};

// The image tile's row: the Hankel chunk of position x, column chunk j reads bytes x + 16j ..
// x + 16j + 15 through whole words (up to 3 bytes more).
__host__ __device__ constexpr int tileChunksPerRow(int rowChunks) {
  return (kGemmTileWidth + 16 * rowChunks + 3 + 15) / 16;
}

// Entries of a Hankel row (buildHankel): entry p holds the row's 16 image bytes from p, so position
// x's column chunk j is entry x + 16j and the tile's positions need kGemmTileWidth + 16 (rowChunks
// - 1) of them, not rowChunks x kGemmTileWidth.
__host__ __device__ constexpr int hankelRowEntries(int rowChunks) { return kGemmTileWidth + 16 * (rowChunks - 1); }

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
  // its place (template << 16 | tile row << 8 | column), cross sum c and screened ceiling. Per
  // template, the best of its pairs whose screened goodness is their exact one and equals the
  // floor (flat windows or a flat template, ties by the thousand on flat content), kept as one
  // key (rankedKey) instead of pushed each.
  int* floorBits;
  int* candidateCount;
  uint32_t* where;
  uint32_t* cross;
  float* ceiling;
  unsigned long long* tieKeys;
  // Per template, the tile best among its scored candidates (scoreCandidates): the highest
  // goodness as a key (goodnessKey), then the earliest index of it (INT_MAX: no candidate).
  unsigned long long* bestKeys;
  int* bestIndex;
  // Zero-mean banks only (rules/zero_mean_screen.hpp; null otherwise): the chunk's templates'
  // constants, and the tile's windows for that screen, over the same memory as `folded`.
  ZeroMeanTemplate* zeroMean;
  ZeroMeanWindow* zeroMeanFolded;
};

struct SharedLayout {
  std::size_t fragments, hankel, image, prefix, desc, best, candidates, zeroMean;
  std::size_t folded;  // a group's folded windows in their own memory (0: over the Hankel rows)
  __host__ __device__ std::size_t total() const {
    return fragments + hankel + image + 2 * prefix + desc + best + candidates + zeroMean + folded;
  }
};

// The tile epilogue's candidate list holds as many pairs as the row epilogue's bests.
__host__ __device__ constexpr int candidateCapacity(int chunkTemplates) { return kGemmTileRows * chunkTemplates; }

// zeroMean: a zero-mean bank's, with room for its templates' screen constants at the end.
// groupChunks: the chunks a block holds (fragments, descriptors and constants for each); more
// than one keeps the tile's folded windows apart from the Hankel rows, for every chunk to read.
__host__ __device__ inline SharedLayout sharedLayout(int kSteps, int chunkTemplates, int slabRows, int rowChunks,
                                                     int h, bool zeroMean = false, int groupChunks = 1) {
  SharedLayout l;
  l.fragments = std::size_t(groupChunks) * kSteps * 2 * chunkTemplates * 16;
  l.hankel = std::size_t(slabRows + kGemmTileRows - 1) * hankelRowEntries(rowChunks) * 16;
  l.image = std::size_t(kGemmTileRows + h - 1) * tileChunksPerRow(rowChunks) * 16;
  l.prefix = std::size_t(kGemmTileRows) * kPrefixPitch * 4;
  l.desc = std::size_t(groupChunks) * chunkTemplates * sizeof(MemberDesc);
  l.best = std::size_t(kGemmTileRows) * chunkTemplates * sizeof(Ranked);
  l.candidates = (std::size_t(chunkTemplates) * 4 + 16 + std::size_t(candidateCapacity(chunkTemplates)) * 12 +
                  std::size_t(chunkTemplates) * (8 + 8 + 4) + 15) /
                 16 * 16;
  l.zeroMean = zeroMean ? (std::size_t(groupChunks) * chunkTemplates * sizeof(ZeroMeanTemplate) + 15) / 16 * 16 : 0;
  l.folded = groupChunks > 1 ? std::size_t(kGemmTileRows) * kGemmTileWidth * sizeof(ScreenFoldedWindow) : 0;
  return l;
}
static_assert(sizeof(ZeroMeanWindow) == sizeof(ScreenFoldedWindow), "either screen's windows fill the same memory");
static_assert((kGemmTileRows * kPrefixPitch * 4) % 16 == 0, "the prefix arrays keep 16-byte alignment");
static_assert(kGemmTileRows * kGemmTileWidth * sizeof(ScreenFoldedWindow) <=
                  std::size_t(kGemmTileRows) * hankelRowEntries(1) * 16,
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
  // 8-byte aligned: the floors (a multiple of 8 ints), 4 ints, then 3 x capacity words (capacity a
  // multiple of 8).
  s.tieKeys = reinterpret_cast<unsigned long long*>(s.ceiling + capacity);
  s.bestKeys = s.tieKeys + capacity / kGemmTileRows;
  s.bestIndex = reinterpret_cast<int*>(s.bestKeys + capacity / kGemmTileRows);
  p += l.candidates;
  s.zeroMean = l.zeroMean > 0 ? reinterpret_cast<ZeroMeanTemplate*>(p) : nullptr;
  p += l.zeroMean;
  if (l.folded > 0) s.folded = reinterpret_cast<ScreenFoldedWindow*>(p);  // apart from the Hankel rows
  s.zeroMeanFolded = reinterpret_cast<ZeroMeanWindow*>(s.folded);
  return s;
}

// Chunk c of a block's group: its B operand, descriptors and zero-mean constants (each chunk's
// chunkTemplates entries after the previous chunk's); the rest of the shared memory is the block's.
__device__ __forceinline__ GemmShared chunkOf(const GemmShared& s, int c, std::size_t chunkBytes, int chunkTemplates) {
  GemmShared v = s;
  v.fragments = s.fragments + std::size_t(c) * chunkBytes;
  v.desc = s.desc + c * chunkTemplates;
  if (s.zeroMean != nullptr) v.zeroMean = s.zeroMean + c * chunkTemplates;
  return v;
}

// Once per block: its group's B operands (cp.async), chunks firstChunk .. firstChunk + chunks - 1
// (contiguous in global memory as in shared), and the descriptors of its `count` templates with the
// screening constants of the launch's method (and a zero-mean bank's template constants).
__device__ __forceinline__ void loadChunks(const GemmShared& s, const uint8_t* fragments, const MemberDesc* descs,
                                           const ZeroMeanTemplate* zeroMean, std::size_t chunkBytes, int firstChunk,
                                           int chunks, int chunkTemplates, int count, Method method) {
  const uint8_t* src = fragments + std::size_t(firstChunk) * chunkBytes;
  const std::size_t bytes = std::size_t(chunks) * chunkBytes;
  for (std::size_t i = threadIdx.x; i < bytes / 16; i += kGemmThreads)
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16;\n" ::"r"(
                     uint32_t(__cvta_generic_to_shared(s.fragments + 16 * i))),
                 "l"(src + 16 * i));
  for (int i = threadIdx.x; i < count; i += kGemmThreads) {
    MemberDesc d = descs[firstChunk * chunkTemplates + i];
    d.screen = screenTemplate(method, d.stats);
    // Chunk by chunk as chunkOf finds them (a chunk's templates are chunkTemplates apart).
    s.desc[i] = d;
    if (s.zeroMean != nullptr) s.zeroMean[i] = zeroMean[firstChunk * chunkTemplates + i];
  }
  asm volatile("cp.async.wait_all;\n" ::: "memory");
#if NCC_GEMM_WGMMA
  fenceSharedForTensorCores();  // wgmma reads the B operand
#endif
  __syncthreads();
}

// The Hankel rows of a slab: for tile rows r0 .. r0 + rows + kGemmTileRows - 2, entry p of the
// row (hankelRowEntries) is its 16 image bytes from p, stored at (row * entries + p) * 16. Position
// x's column chunk j is entry x + 16j: 8 neighbouring positions are 128 neighbouring bytes (one
// ldmatrix matrix or wgmma core matrix, no bank conflicts), and the next chunk of a row (K) 256
// bytes on. A k-step's two chunks lie in one row where rowChunks is even (GemmBankShape pads it so
// above 1), in two neighbouring rows where it is 1 (entries = kGemmTileWidth: 1024 bytes on).
__device__ __forceinline__ void buildHankel(const GemmShared& s, int pitchWords, int rowChunks, int r0, int rows) {
  // Thread (x, lane group): entries x, x + kGemmTileWidth of rows r, r + 4, ...
  constexpr int kRowStep = kGemmThreads / kGemmTileWidth;
  const int x = threadIdx.x % kGemmTileWidth, entries = hankelRowEntries(rowChunks);
  for (int row = threadIdx.x / kGemmTileWidth; row < rows + kGemmTileRows - 1; row += kRowStep) {
    const uint32_t* w = s.image + (r0 + row) * pitchWords;
    uint4* dst = s.hankel + row * entries;
    for (int p = x; p < entries; p += kGemmTileWidth) {
      const uint32_t* at = w + (p >> 2);
      const uint32_t shift = 8 * (p & 3);
      const uint32_t w0 = at[0], w1 = at[1], w2 = at[2], w3 = at[3], w4 = at[4];
      dst[p] = make_uint4(__funnelshift_r(w0, w1, shift), __funnelshift_r(w1, w2, shift),
                          __funnelshift_r(w2, w3, shift), __funnelshift_r(w3, w4, shift));
    }
  }
#if NCC_GEMM_WGMMA
  fenceSharedForTensorCores();  // wgmma reads the Hankel rows after the caller's barrier
#endif
}

}  // namespace nccmatch::cuda::gemm_tiles
