// The phases of the fused spatial kernel (spatial_scores.cu), one device function each: load the
// image tile into shared memory, the window sums sum(I) and sum(I^2) from its column sums, and the
// numerator sum(I*T) by integer tensor-core MMA or by __dp4a. The epilogue (score and peak handoff)
// stays beside the score rules in spatial_scores.cu.
//
// Shared memory of a block: the numerators of the output tile, then per output row the prefix
// sums of the column sums of I (< 2^32: 192 * 64 * 255) and I^2 (192 * 64 * 255^2 < 2^32), then
// the image tile, sized for the largest template of the launch.
#pragma once

#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>

#include "cuda/numerator/image_tile.cuh"
#include "cuda/numerator/mma_u8.cuh"
#include "cuda/numerator/spatial_scores.hpp"
#include "common/integer_math.hpp"

namespace nccmatch::cuda::fused_spatial {

// 256 threads (8 warps) per 128 x 16 output tile. Tensor cores: warp (group, half) forms output
// rows 4*group..4*group+3 over one half of the template rows, with four independent
// accumulators: each A fragment is loaded once per template row and used for all four rows, and
// each frame row's B fragments are loaded once and slid down the four (output row v and template
// row r read frame row v + r). The two halves' partial sums meet in shared memory. Epilogue:
// warp w scores rows 2w and 2w+1, lane l outputs l + 32k (coalesced stores), window sums from
// per-row prefix sums of the column sums, so their cost does not grow with the template width.
constexpr int kThreads = 256;
constexpr int kWarps = kThreads / 32;
constexpr int kRowsPerWarp = 4;
constexpr int kRowGroups = kFusedTileHeight / kRowsPerWarp;
static_assert(kWarps / kRowGroups == 2, "the template rows are split in two halves");
// The region kernel's blocks (region_scores.cu): the same tile with four times the warps, the
// window sums and the numerator side by side (each by its own warps, the template rows split in
// parts) and two warps an output row in the epilogue. A tracker's launch has about one block an
// SM (16 windows x 7 tiles on 132 SMs), so a block's latency is the launch's: more warps a block
// shorten its longest phases, the numerator and the epilogue (16 warps: 22.2 -> 18.4 µs under
// ncu against 8; session 35's ncu of 16: 0.56 eligible warps a scheduler, nothing busy).
constexpr int kWideThreads = 1024;
constexpr int kEpilogueRows = kFusedTileHeight / kWarps;
constexpr int kEpilogueOutputs = kFusedTileWidth / 32;
static_assert(kEpilogueRows == 2 && kEpilogueOutputs == 4, "the epilogue is written for 2 x 4");
constexpr int kMaxTemplateWords = kFusedMaxSide / 4;
// Words a tile row needs: dp4a 32 + w/4 (outputs, template, look-ahead); tensor cores
// 28 + 8 * kSteps (the last group of 16 outputs starts at byte 112 and reads K bytes), loaded in
// whole 16-byte chunks. Every warp reads within one row at a time, so rows may share banks.
constexpr int kMaxKSteps = (kFusedMaxSide + 15 + 31) / 32;
constexpr int kTilePitchWords = 56;
static_assert(kTilePitchWords % 4 == 0, "rows start on 16-byte boundaries");
static_assert(kTilePitchWords >= kFusedTileWidth / 4 + kMaxTemplateWords + 1, "dp4a tile row");
static_assert(kTilePitchWords >= (28 + 8 * kMaxKSteps + 3) / 4 * 4, "tensor-core tile row");
// Column sums (then their prefix sums) of 192 columns (>= 128 + 63, six per lane), stored one
// place to the right so that entry 0 is the empty prefix.
constexpr int kPrefixColumns = 192;
constexpr int kPrefixPitch = kPrefixColumns + 1;
static_assert(kPrefixColumns >= kFusedTileWidth + kFusedMaxSide - 1 && kPrefixColumns % 32 == 0 &&
                  kPrefixColumns <= kThreads,
              "one thread per column, whole lanes in the scan");
constexpr int kFixedSharedWords = kFusedTileHeight * kFusedTileWidth + 2 * kFusedTileHeight * kPrefixPitch;
static_assert(kFixedSharedWords % 4 == 0, "the image tile starts on a 16-byte boundary");
constexpr int kMaxSharedBytes =
    4 * (kFixedSharedWords + (kFusedTileHeight + kFusedMaxSide - 1) * kTilePitchWords);
constexpr int kStaticSharedLimit = 48 * 1024;

__host__ __device__ inline int kStepsFor(int w) { return (w + 15 + 31) / 32; }

// Shared memory of a launch whose tallest template has maxHeight rows.
inline int sharedBytesFor(int maxHeight) {
  return 4 * (kFixedSharedWords + (kFusedTileHeight + maxHeight - 1) * kTilePitchWords);
}

// Where output x of a numerator row lies in it: x with bits 3-4 flipped by bits 5-6 (a swizzle of
// each 32-word quarter of the 128-word row). The tensor-core warps store (and, in the region
// kernel's template-row parts, add) a lane's outputs 32t + g (+8, +16, +24) for t < 4, g < 8: laid out
// plainly, four lanes hit each bank (4-way conflicts a store); swizzled, the 32 lanes hit 32
// banks. The epilogues read outputs x + 32k of consecutive x, one quarter a warp: still 32 banks.
__host__ __device__ constexpr int numeratorSlot(int x) { return x ^ (((x >> 5) & 3) << 3); }
static_assert(kFusedTileWidth == 128, "numeratorSlot swizzles a row of four 32-word quarters");

// The block's shared memory, carved as described at the top.
struct SharedTile {
  uint32_t* num;    // kFusedTileHeight x kFusedTileWidth numerators, each row by numeratorSlot
  uint32_t* p1;     // per output row: prefix sums of the column sums of I (kPrefixPitch apart)
  uint32_t* p2;     // the same of I^2
  uint32_t* image;  // the image tile, kTilePitchWords per row
};

__device__ __forceinline__ SharedTile carveSharedTile(uint32_t* shared) {
  SharedTile s;
  s.num = shared;
  s.p1 = s.num + kFusedTileHeight * kFusedTileWidth;
  s.p2 = s.p1 + kFusedTileHeight * kPrefixPitch;
  s.image = s.p2 + kFusedTileHeight * kPrefixPitch;
  return s;
}

// Frame rows outY0 .. outY0+tileRows-1, columns from outX0, into sImage (image_tile::load), by a
// block of kBlockThreads threads.
template <int kBlockThreads = kThreads>
__device__ __forceinline__ void loadImageTile(const uint8_t* __restrict__ image, std::size_t pitch, int width,
                                              int height, bool chunkAligned, int outX0, int outY0, int tileRows,
                                              int tileWords, uint32_t* sImage) {
  image_tile::load<kBlockThreads>(image, pitch, width, height, chunkAligned, outX0, outY0, tileRows,
                                  (tileWords + 3) / 4, kTilePitchWords, sImage);
}

// Window sums for templates of height h (image_tile::windowSums over the output tile's rows), by
// the block's first kSumThreads threads, kColumnThreads a column, kBarrier their barrier
// (image_tile::groupBarrier).
template <int kSumThreads = kThreads, int kBarrier = 0, int kColumnThreads = 1>
__device__ __forceinline__ void windowSums(const SharedTile& s, int h, int tileWords) {
  image_tile::windowSums<kSumThreads, kFusedTileHeight, kPrefixColumns, kBarrier, kColumnThreads>(
      s.image, kTilePitchWords, h, 4 * tileWords, kPrefixPitch, s.p1, s.p2);
}

// Template rows [rBegin, rEnd) applied to output rows v0..v0+3 (tile rows), K in S32 steps of
// 32 and, with HALF, one of 16. B fragments of frame row y: lane (g, t) holds frame bytes
// 16g + 32s + 4t (and +16), B's column g, rows 4t..4t+3 (and +16) of step s. The window b[j]
// holds frame row v0 + r + j.
template <int S32, bool HALF>
__device__ inline void mmaFourRows(const uint32_t* sImage, const uint8_t* frags, int v0, int rBegin,
                                   int rEnd, uint32_t (&d)[kRowsPerWarp][4]) {
  if (rBegin >= rEnd) return;
  constexpr int kRowBytes = S32 * 512 + (HALF ? 256 : 0);
  constexpr int kRegs = 2 * S32 + (HALF ? 1 : 0);  // B registers of one frame row
  const int lane = threadIdx.x & 31, g = lane >> 2, t = lane & 3;
  const uint32_t* base = sImage + 4 * g + t;
  auto loadRow = [&](int y, uint32_t (&dst)[kRegs]) {
    const uint32_t* row = base + y * kTilePitchWords;
#pragma unroll
    for (int s = 0; s < S32; ++s) {
      dst[2 * s] = row[8 * s];
      dst[2 * s + 1] = row[8 * s + 4];
    }
    if (HALF) dst[kRegs - 1] = row[8 * S32];
  };
  uint32_t b[kRowsPerWarp][kRegs];
#pragma unroll
  for (int j = 0; j < kRowsPerWarp - 1; ++j) loadRow(v0 + rBegin + j, b[j]);
#pragma unroll 2
  for (int r = rBegin; r < rEnd; ++r) {
    loadRow(v0 + r + kRowsPerWarp - 1, b[kRowsPerWarp - 1]);
    const uint8_t* rowFrags = frags + std::size_t(r) * kRowBytes;
    uint4 a[S32 > 0 ? S32 : 1];
#pragma unroll
    for (int s = 0; s < S32; ++s) a[s] = __ldg(reinterpret_cast<const uint4*>(rowFrags + s * 512) + lane);
    uint2 aHalf = make_uint2(0, 0);
    if (HALF) aHalf = __ldg(reinterpret_cast<const uint2*>(rowFrags + S32 * 512) + lane);
#pragma unroll
    for (int s = 0; s < S32; ++s)
#pragma unroll
      for (int j = 0; j < kRowsPerWarp; ++j) mmaU8(d[j], a[s], b[j][2 * s], b[j][2 * s + 1]);
    if (HALF)
#pragma unroll
      for (int j = 0; j < kRowsPerWarp; ++j) mmaU8K16(d[j], aHalf, b[j][kRegs - 1]);
#pragma unroll
    for (int j = 0; j < kRowsPerWarp - 1; ++j)
#pragma unroll
      for (int q = 0; q < kRegs; ++q) b[j][q] = b[j + 1][q];
  }
}

// The numerator by tensor cores, by the kRowGroups * kSplits warps from kFirstWarp on: warp
// (group, split) forms output rows 4*group..4*group+3 over part `split` of kSplits of the template
// rows; the last part's partial sums go to sNum first, the others' are added to them after
// barrier kBarrier among those warps (image_tile::groupBarrier; plain adds with two parts, shared
// atomics with more: integer sums, the same whatever the order). The caller's next barrier orders
// the sums before their reads.
template <int kSplits, int kFirstWarp, int kBarrier>
__device__ __forceinline__ void tensorNumeratorParts(const SharedTile& s, const uint8_t* frags, int w, int h) {
  const int lane = threadIdx.x & 31, warp = int(threadIdx.x >> 5) - kFirstWarp;
  const int group = warp % kRowGroups, split = warp / kRowGroups;
  const int v0 = group * kRowsPerWarp;
  // Part k: template rows ceil(k h / kSplits) .. ceil((k + 1) h / kSplits) - 1 (two parts: the
  // first takes the middle row of an odd h).
  const int rBegin = (split * h + kSplits - 1) / kSplits, rEnd = ((split + 1) * h + kSplits - 1) / kSplits;
  uint32_t d[kRowsPerWarp][4];
#pragma unroll
  for (int j = 0; j < kRowsPerWarp; ++j) d[j][0] = d[j][1] = d[j][2] = d[j][3] = 0;
  const FusedKSteps k = fusedKSteps(w);
  switch (k.steps32 * 2 + (k.step16 ? 1 : 0)) {  // the five shapes w = 1..64 takes
    case 1: mmaFourRows<0, true>(s.image, frags, v0, rBegin, rEnd, d); break;
    case 2: mmaFourRows<1, false>(s.image, frags, v0, rBegin, rEnd, d); break;
    case 3: mmaFourRows<1, true>(s.image, frags, v0, rBegin, rEnd, d); break;
    case 4: mmaFourRows<2, false>(s.image, frags, v0, rBegin, rEnd, d); break;
    default: mmaFourRows<2, true>(s.image, frags, v0, rBegin, rEnd, d); break;
  }
  // D[m][n] is output 16n + m: lane (g, t) holds m = g, g+8 and n = 2t, 2t+1.
  const int g = lane >> 2, t = lane & 3;
  if (split == kSplits - 1) {
#pragma unroll
    for (int j = 0; j < kRowsPerWarp; ++j) {
      uint32_t* out = s.num + (v0 + j) * kFusedTileWidth;
      out[numeratorSlot(32 * t + g)] = d[j][0];
      out[numeratorSlot(32 * t + 16 + g)] = d[j][1];
      out[numeratorSlot(32 * t + 8 + g)] = d[j][2];
      out[numeratorSlot(32 * t + 24 + g)] = d[j][3];
    }
  }
  image_tile::groupBarrier<kBarrier, 32 * kRowGroups * kSplits>();
  if (split < kSplits - 1) {
#pragma unroll
    for (int j = 0; j < kRowsPerWarp; ++j) {
      uint32_t* out = s.num + (v0 + j) * kFusedTileWidth;
      if constexpr (kSplits == 2) {
        out[numeratorSlot(32 * t + g)] += d[j][0];
        out[numeratorSlot(32 * t + 16 + g)] += d[j][1];
        out[numeratorSlot(32 * t + 8 + g)] += d[j][2];
        out[numeratorSlot(32 * t + 24 + g)] += d[j][3];
      } else {
        atomicAdd(out + numeratorSlot(32 * t + g), d[j][0]);
        atomicAdd(out + numeratorSlot(32 * t + 16 + g), d[j][1]);
        atomicAdd(out + numeratorSlot(32 * t + 8 + g), d[j][2]);
        atomicAdd(out + numeratorSlot(32 * t + 24 + g), d[j][3]);
      }
    }
  }
}

// The same by the whole block (kFirstWarp 0, every barrier the block's). Ends with a barrier.
template <int kSplits = 2>
__device__ __forceinline__ void tensorNumerator(const SharedTile& s, const uint8_t* frags, int w, int h) {
  static_assert(kRowGroups * kSplits * 32 == kThreads, "the whole block's warps");
  tensorNumeratorParts<kSplits, 0, 0>(s, frags, w, h);
  __syncthreads();
}

// The numerator by __dp4a: warp w forms rows 2w and 2w+1, four neighbouring outputs per lane.
// Ends with a barrier.
__device__ __forceinline__ void dp4aNumerator(const SharedTile& s, const uint32_t* packed, int w, int h) {
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  const int words = (w + 3) / 4;
  for (int k = 0; k < kEpilogueRows; ++k) {
    const int oy = warp * kEpilogueRows + k;
    uint32_t acc[4] = {0, 0, 0, 0};
    for (int r = 0; r < h; ++r) {
      const uint32_t* row = s.image + (oy + r) * kTilePitchWords + lane;
      const uint32_t* trow = packed + r * words;
      uint32_t a = row[0];
#pragma unroll 4
      for (int j = 0; j < words; ++j) {
        const uint32_t b = row[j + 1];
        const uint32_t tw = __ldg(trow + j);
        // Output k needs image bytes k..k+3 of the eight in (a, b).
        acc[0] = __dp4a(a, tw, acc[0]);
        acc[1] = __dp4a(__byte_perm(a, b, 0x4321), tw, acc[1]);
        acc[2] = __dp4a(__byte_perm(a, b, 0x5432), tw, acc[2]);
        acc[3] = __dp4a(__byte_perm(a, b, 0x6543), tw, acc[3]);
        a = b;
      }
    }
    uint32_t* out = s.num + oy * kFusedTileWidth;
#pragma unroll
    for (int q = 0; q < 4; ++q) out[numeratorSlot(4 * lane + q)] = acc[q];
  }
  __syncthreads();
}

}  // namespace nccmatch::cuda::fused_spatial
