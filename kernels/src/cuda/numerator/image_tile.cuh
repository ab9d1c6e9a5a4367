// The first two tiers of the spatial kernels, shared by the fused kernel and the GEMM bank:
// a block loads a tile of the frame into shared memory, then forms the window sums sum(I) and
// sum(I^2) of every output of the tile from the tile's column sums.
#pragma once

#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>

#include "cuda/numerator/chunk_shift.hpp"

namespace nccmatch::cuda::image_tile {

// The 16-byte aligned block at `block` as four words, bytes outside [begin, end) zero: one vector
// load where the block lies whole inside, byte loads of its bytes inside otherwise (a load never
// touches a byte outside the row it was asked for).
__device__ __forceinline__ void loadBlock(const uint8_t* block, const uint8_t* begin, const uint8_t* end,
                                          uint32_t (&words)[4]) {
  if (block >= begin && block + 16 <= end) {
    const uint4 v = *reinterpret_cast<const uint4*>(block);
    words[0] = v.x;
    words[1] = v.y;
    words[2] = v.z;
    words[3] = v.w;
    return;
  }
#pragma unroll
  for (int k = 0; k < 4; ++k) words[k] = 0;
#pragma unroll
  for (int b = 0; b < 16; ++b)
    if (block + b >= begin && block + b < end) words[b >> 2] |= uint32_t(block[b]) << (8 * (b & 3));
}

// Bytes p .. p+15 of a row whose bytes are [begin, end) (begin <= p < end), those from end on
// zero: the one or two aligned blocks holding them (loadBlock), shifted into place. Not inlined:
// inlined, its words push the region kernel's SqDiff instance (64 registers) into spills.
static __device__ __noinline__ uint4 loadUnalignedChunk(const uint8_t* p, const uint8_t* begin, const uint8_t* end) {
  const unsigned shift = unsigned(reinterpret_cast<std::uintptr_t>(p) & 15);
  const uint8_t* block = p - shift;
  uint32_t lo[4], hi[4] = {0, 0, 0, 0}, out[4];
  loadBlock(block, begin, end, lo);
  if (shift != 0 && block + 16 < end) loadBlock(block + 16, begin, end, hi);
  shiftChunk(lo, hi, shift, out);
  return make_uint4(out[0], out[1], out[2], out[3]);
}

// Frame rows y0 .. y0+rows-1, columns from x0, into tile (pitchWords words a row) in 16-byte
// chunks, `chunks` a row: cp.async where the chunk lies whole in the frame and both sides are
// 16-byte aligned (every load in flight at once), elsewhere aligned vector loads shifted into
// place (loadUnalignedChunk), zeros beyond the frame. Ends with a barrier. x0 must be a multiple
// of 16 for the aligned path to apply. `image` may be host memory mapped under UVA (a pinned frame
// read in place): its addresses are global ones, which cp.async and the vector loads read alike.
template <int kThreads>
__device__ __forceinline__ void load(const uint8_t* __restrict__ image, std::size_t pitch, int width, int height,
                                     bool chunkAligned, int x0, int y0, int rows, int chunks, int pitchWords,
                                     uint32_t* tile) {
  for (int i = threadIdx.x; i < rows * chunks; i += kThreads) {
    const int r = i / chunks, q = i - r * chunks;
    const int gy = y0 + r, gx = x0 + 16 * q;
    uint32_t* dst = tile + r * pitchWords + 4 * q;
    const uint8_t* p = image + std::size_t(gy) * pitch + gx;
    if (chunkAligned && gy < height && gx + 15 < width) {
      asm volatile("cp.async.cg.shared.global [%0], [%1], 16;\n" ::"r"(
                       uint32_t(__cvta_generic_to_shared(dst))),
                   "l"(p));
    } else {
      const uint8_t* row = image + std::size_t(gy) * pitch;
      const uint4 chunk =
          gy < height && gx < width ? loadUnalignedChunk(p, row, row + width) : make_uint4(0, 0, 0, 0);
      *reinterpret_cast<uint4*>(dst) = chunk;
    }
  }
  asm volatile("cp.async.wait_all;\n" ::: "memory");
  __syncthreads();
}

// Hardware barrier kId, passed once kCount threads (whole warps) have arrived at it (0: the whole
// block's, __syncthreads), so that a group of warps can synchronise while the others do other
// work; each group takes its own id.
template <int kId, int kCount>
__device__ __forceinline__ void groupBarrier() {
  static_assert(kId >= 0 && kId < 16 && kCount % 32 == 0, "a hardware barrier of whole warps");
  if constexpr (kId == 0)
    __syncthreads();
  else
    asm volatile("bar.sync %0, %1;" ::"n"(kId), "n"(kCount) : "memory");
}

// Window sums of templates of height h for kOutputRows output rows: first each column's running
// sum over h tile rows, each column by kColumnThreads threads (each a consecutive share of the
// output rows, its first window summed whole, then slid; exact in uint32), stored one place to
// the right so that entry 0 of a row is the empty prefix; then, after a barrier, the prefix sums
// along each output row (kColumns / 32 columns per lane, then the lanes' totals). Columns at or
// beyond loadedColumns count as zero. p1, p2: kOutputRows rows, prefixPitch apart. The sum of
// window (x, row) is p[row][x + w] - p[row][x]. The caller's next barrier orders these writes
// before their reads. Done by the block's first kThreads threads; kBarrier the barrier between
// the two passes (groupBarrier: 0 when they are the whole block).
template <int kThreads, int kOutputRows, int kColumns, int kBarrier = 0, int kColumnThreads = 1>
__device__ __forceinline__ void windowSums(const uint32_t* tile, int pitchWords, int h, int loadedColumns,
                                           int prefixPitch, uint32_t* p1s, uint32_t* p2s) {
  static_assert(kColumns % 32 == 0 && kColumns * kColumnThreads <= kThreads,
                "kColumnThreads threads a column, whole lanes in the scan");
  static_assert(kOutputRows % kColumnThreads == 0, "the output rows shared evenly");
  constexpr int kWarps = kThreads / 32;
  constexpr int kPartRows = kOutputRows / kColumnThreads;
  const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
  // One thread a column (every kernel but the region kernel): the column is the thread's index.
  const int c = kColumnThreads == 1 ? tid : tid % kColumns;
  const int firstRow = kColumnThreads == 1 ? 0 : (tid / kColumns) * kPartRows;
  if (tid < kColumns * kColumnThreads) {
    uint32_t* p1 = p1s + firstRow * prefixPitch + c + 1;
    uint32_t* p2 = p2s + firstRow * prefixPitch + c + 1;
    if (c < loadedColumns) {
      const int pitchBytes = pitchWords * 4;
      const uint8_t* bytes = reinterpret_cast<const uint8_t*>(tile) + firstRow * pitchBytes + c;
      uint32_t s1 = 0, s2 = 0;
#pragma unroll 4
      for (int r = 0; r < h; ++r) {
        const uint32_t v = bytes[r * pitchBytes];
        s1 += v;
        s2 += v * v;
      }
      p1[0] = s1;
      p2[0] = s2;
#pragma unroll 4
      for (int oy = 1; oy < kPartRows; ++oy) {
        const uint32_t in = bytes[(oy + h - 1) * pitchBytes], out = bytes[(oy - 1) * pitchBytes];
        s1 = s1 + in - out;
        s2 = s2 + in * in - out * out;
        p1[oy * prefixPitch] = s1;
        p2[oy * prefixPitch] = s2;
      }
    } else {
      for (int oy = 0; oy < kPartRows; ++oy) p1[oy * prefixPitch] = p2[oy * prefixPitch] = 0;
    }
  }
  groupBarrier<kBarrier, kThreads>();
  for (int row = warp; row < kOutputRows; row += kWarps) {
    uint32_t* p1 = p1s + row * prefixPitch;
    uint32_t* p2 = p2s + row * prefixPitch;
    constexpr int kPerLane = kColumns / 32;
    uint32_t a1[kPerLane], a2[kPerLane];
#pragma unroll
    for (int j = 0; j < kPerLane; ++j) {
      a1[j] = p1[1 + lane * kPerLane + j] + (j > 0 ? a1[j - 1] : 0u);
      a2[j] = p2[1 + lane * kPerLane + j] + (j > 0 ? a2[j - 1] : 0u);
    }
    uint32_t t1 = a1[kPerLane - 1], t2 = a2[kPerLane - 1];
#pragma unroll
    for (int offset = 1; offset < 32; offset <<= 1) {
      const uint32_t u1 = __shfl_up_sync(0xffffffffu, t1, offset);
      const uint32_t u2 = __shfl_up_sync(0xffffffffu, t2, offset);
      if (lane >= offset) {
        t1 += u1;
        t2 += u2;
      }
    }
    t1 -= a1[kPerLane - 1];  // the lanes before this one
    t2 -= a2[kPerLane - 1];
#pragma unroll
    for (int j = 0; j < kPerLane; ++j) {
      p1[1 + lane * kPerLane + j] = a1[j] + t1;
      p2[1 + lane * kPerLane + j] = a2[j] + t2;
    }
    if (lane == 0) p1[0] = p2[0] = 0;
  }
}

}  // namespace nccmatch::cuda::image_tile
