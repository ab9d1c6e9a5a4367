// The GEMM bank kernel's second tier (gemm_bank.cu): the main loop, the numerator of one slab
// into each lane's accumulators, by mma.sync with ldmatrix (sm_90 and other targets) or by wgmma
// with shared-memory descriptors (sm_90a); and where each accumulator lies in the tile (placeOf),
// which the epilogues (gemm_epilogue.cuh) read.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include "cuda/numerator/gemm_tile_load.cuh"
#include "cuda/numerator/mma_u8.cuh"
#include "cuda/numerator/wgmma_u8.cuh"

namespace nccmatch::cuda::gemm_tiles {

// A lane's accumulators: kMTiles x kNTiles fragments of 4 (placeOf says where each lies).
constexpr int kMTiles = kGemmTileWidth / 16;

#if !NCC_GEMM_WGMMA
__device__ __forceinline__ void ldmatrixX4(uint32_t (&r)[4], uint32_t address) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(address));
}
#endif

// Where each k-step's A operand lies in the Hankel rows (buildHankel), from the output row's first
// entry, as a running offset (no division a step): where rowChunks is 1 a step's two slices are
// two neighbouring rows (`neighbour` = a row on) and a step moves two rows; else a row holds
// rowChunks / 2 steps, 512 bytes (two chunks) apart, its two slices 256 bytes apart, and the
// step after a row's last starts the next row.
struct HankelSteps {
  uint32_t rowBytes, neighbour, rowAdvance;
  int stepsPerRow;
  uint32_t offset = 0;  // the current step's first slice
  int inRow = 0;
  __device__ explicit HankelSteps(int rowChunks)
      : rowBytes(uint32_t(hankelRowEntries(rowChunks)) * 16),
        neighbour(rowChunks == 1 ? rowBytes : 256),
        rowAdvance(rowChunks == 1 ? 2 * rowBytes : rowBytes - uint32_t(rowChunks / 2 - 1) * 512),
        stepsPerRow(rowChunks == 1 ? 1 : rowChunks / 2) {}
  __device__ void next() {
    if (++inRow == stepsPerRow) {
      inRow = 0;
      offset += rowAdvance;
    } else {
      offset += 512;
    }
  }
};

#if !NCC_GEMM_WGMMA
// The numerator of one warp's output row over one slab: kMTiles x 16 positions times kNTiles x
// 8 templates, `steps` k-steps of two slices; kSignedB: the templates are s8 (zero-mean, the
// accumulators then hold sum I*(T - r)). Lane (q, i) = (lane / 8, lane % 8) addresses row i
// of ldmatrix matrix q: for A, position 16m + i + 8(q & 1) of the step's slice q >> 1 (a.x..a.w
// as mma wants them); for B, template 8(n + (q >> 1)) + i of slice 2k + (q & 1) (b0, b1 of two
// n-tiles). A slab's missing last slice (rowChunks 1, an odd number of rows) reads the step's
// first slice again against zero templates.

template <int kNTiles, bool kSignedB>
__device__ __forceinline__ void mainLoop(const GemmShared& s, int rowChunks, int stepBase, int steps, int lastSlice,
                                         uint32_t (&acc)[kMTiles][kNTiles][4]) {
  constexpr int kChunk = 8 * kNTiles;
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, q = lane >> 3, i = lane & 7;
  HankelSteps walk(rowChunks);
  const uint32_t hankel =
      uint32_t(__cvta_generic_to_shared(s.hankel)) + uint32_t(warp) * walk.rowBytes + uint32_t((i + 8 * (q & 1)) * 16);
  const uint32_t fragments = uint32_t(__cvta_generic_to_shared(s.fragments)) +
                             uint32_t((stepBase * 2 * kChunk + (q & 1) * kChunk + 8 * (q >> 1) + i) * 16);
#pragma unroll 1
  for (int step = 0; step < steps; ++step, walk.next()) {
    const bool second = (q >> 1) != 0 && 2 * step + 1 <= lastSlice;
    const uint32_t aAddress = hankel + walk.offset + (second ? walk.neighbour : 0u);
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
        mmaU8<kSignedB>(acc[m][n], make_uint4(a[m][0], a[m][1], a[m][2], a[m][3]), b[0], b[1]);
        mmaU8<kSignedB>(acc[m][n + 1], make_uint4(a[m][0], a[m][1], a[m][2], a[m][3]), b[2], b[3]);
      }
    }
  }
}

#else
// The same with wgmma (sm_90a): warpgroup q computes output rows 4q .. 4q + 3, one
// m64 x (8 kNTiles) x k32 product per row and k-step, A the row's Hankel entries (64 positions,
// core matrices of 8 positions x 16 bytes: 128 bytes apart along M; along K the step's second
// slice, HankelSteps::neighbour on) and B the k-step's templates (8 templates x 16 bytes: 128
// apart along N, 16 kChunk along K). A slab's missing last slice (rowChunks 1) reads the next row
// of shared memory against zero templates. Waits for the products before it returns (the caller
// reads the accumulators or rebuilds the rows).
template <int kNTiles, bool kSignedB>
__device__ __forceinline__ void mainLoopWgmma(const GemmShared& s, int rowChunks, int stepBase, int steps,
                                              uint32_t (&acc)[kMTiles][kNTiles][4]) {
  constexpr int kChunk = 8 * kNTiles;
  // The warpgroup's index through a shuffle: the compiler then knows it uniform in the warp
  // (thread-dependent descriptors would serialise the products).
  const int firstRow = 4 * __shfl_sync(0xffffffffu, int(threadIdx.x >> 7), 0);
  const uint32_t hankel = uint32_t(__cvta_generic_to_shared(s.hankel));
  const uint32_t fragments = uint32_t(__cvta_generic_to_shared(s.fragments)) + uint32_t(stepBase * 2 * kChunk * 16);
  // The trip count and the row's chunks through a shuffle too: a loop or an address the compiler
  // cannot prove uniform serialises the products (ptxas C7520).
  const int uniformSteps = __shfl_sync(0xffffffffu, steps, 0);
  HankelSteps walk(__shfl_sync(0xffffffffu, rowChunks, 0));
  // Descriptors kept in uniform registers: their low words (address, leading offset) formed once
  // a slab and read through a shuffle, which ptxas knows uniform; their high word (the stride) a
  // constant. A k-step moves B by two slices of the chunk (the loop counter times a constant) and
  // A by the walk's offset, added to each low word (the address field counts 16 bytes, shared
  // addresses stay below its 256 KB, so no carry leaves it).
  constexpr uint32_t kStepB = 2 * kChunk * 16 / 16;
  const uint32_t descB = __shfl_sync(0xffffffffu, wgmmaDescriptorLow(fragments, kChunk * 16), 0);
  uint32_t descA[kMTiles];
#pragma unroll
  for (int a = 0; a < kMTiles; ++a)
    descA[a] = __shfl_sync(
        0xffffffffu, wgmmaDescriptorLow(hankel + uint32_t(firstRow + a) * walk.rowBytes, walk.neighbour), 0);
  wgmmaFence();
#pragma unroll 1  // unrolled by 2: 41 instructions for two k-steps, hardly fewer, and a remainder copy
  for (int step = 0; step < uniformSteps; ++step, walk.next()) {
    const uint64_t b = wgmmaDescriptor(descB + uint32_t(step) * kStepB, 128);
#pragma unroll
    for (int a = 0; a < kMTiles; ++a) {
      uint32_t(&d)[kNTiles * 4] = reinterpret_cast<uint32_t(&)[kNTiles * 4]>(acc[a]);
      const uint64_t descAt = wgmmaDescriptor(descA[a] + (walk.offset >> 4), 128);
      if constexpr (kNTiles == 2) wgmmaU8N16<kSignedB>(d, descAt, b);
      else if constexpr (kNTiles == 4) wgmmaU8N32<kSignedB>(d, descAt, b);
      else wgmmaU8N64<kSignedB>(d, descAt, b);
    }
  }
  wgmmaCommitAndWait();
}

#endif

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

}  // namespace nccmatch::cuda::gemm_tiles
