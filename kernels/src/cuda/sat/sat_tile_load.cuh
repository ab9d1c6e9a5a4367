// The first phase of the fused SAT kernels: which tile a block builds (drawn from the ticket
// counter, so that a tile only waits on tiles already running) and its pixels, loaded into
// registers with zeros outside the image.
#pragma once

#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>

#include "cuda/sat/sat_lookback.cuh"

namespace nccmatch::cuda {

// A tile of the grid: its ticket (the row-major tile index) and its place in the grid.
struct TilePosition {
  uint32_t tile;
  int tx, ty;
  bool lastCol, lastRow;
};

// Thread 0 draws the block's ticket into `sTicket`; every thread returns the tile it names. Params
// is either kernel's parameters (ticket counter and tile grid).
template <typename Params>
__device__ __forceinline__ TilePosition claimTile(const Params& p, uint32_t& sTicket) {
  if (threadIdx.x == 0) sTicket = drawTicket(p.ticket, uint32_t(p.tilesX) * uint32_t(p.tilesY));
  __syncthreads();
  const uint32_t tile = sTicket;
  const int ty = int(tile / uint32_t(p.tilesX)), tx = int(tile % uint32_t(p.tilesX));
  return TilePosition{tile, tx, ty, tx == p.tilesX - 1, ty == p.tilesY - 1};
}

namespace narrow {

// The warp's rows yWarp .. yWarp+kRows-1 at columns x and x+1 (one pair per lane): pa the left
// pixel, pb the right one; one 16-bit load where both lie inside the image and `aligned`.
template <int kRows>
__device__ __forceinline__ void loadPixelPairs(const uint8_t* image, std::size_t pitch, int width, int height,
                                               bool aligned, int x, int yWarp, uint32_t (&pa)[kRows],
                                               uint32_t (&pb)[kRows]) {
#pragma unroll
  for (int i = 0; i < kRows; ++i) {
    pa[i] = pb[i] = 0;
    const int y = yWarp + i;
    if (y < height) {
      const uint8_t* row = image + std::size_t(y) * pitch;
      if (aligned && x + 1 < width) {
        const uint32_t v = __ldg(reinterpret_cast<const unsigned short*>(row + x));
        pa[i] = v & 0xffu;
        pb[i] = v >> 8;
      } else {
        if (x < width) pa[i] = __ldg(row + x);
        if (x + 1 < width) pb[i] = __ldg(row + x + 1);
      }
    }
  }
}

}  // namespace narrow

namespace wide {

// kPx adjacent pixels of a row (low byte first), zero outside the image.
template <int kPx>
__device__ __forceinline__ uint32_t loadPixels(const uint8_t* row, int x, int width, bool aligned) {
  if (aligned && x + kPx - 1 < width) {
    if constexpr (kPx == 4) return __ldg(reinterpret_cast<const unsigned int*>(row + x));
    else return __ldg(reinterpret_cast<const unsigned short*>(row + x));
  }
  uint32_t v = 0;
#pragma unroll
  for (int j = 0; j < kPx; ++j)
    if (x + j < width) v |= uint32_t(__ldg(row + x + j)) << (8 * j);
  return v;
}

// The warp's rows yWarp .. yWarp+kRows-1: the lane's kPx pixels of each chunk of 32 * kPx columns
// (the chunk's first column xTile + c * 32 * kPx), packed one word per row and chunk.
template <int kPx, int kChunks, int kRows>
__device__ __forceinline__ void loadPixelChunks(const uint8_t* image, std::size_t pitch, int width, int height,
                                                bool aligned, int xTile, int yWarp, int lane,
                                                uint32_t (&pix)[kRows][kChunks]) {
  constexpr int kChunkWidth = 32 * kPx;
#pragma unroll
  for (int i = 0; i < kRows; ++i) {
    const int y = yWarp + i;
    const uint8_t* row = image + std::size_t(y < height ? y : 0) * pitch;
#pragma unroll
    for (int c = 0; c < kChunks; ++c)
      pix[i][c] = y < height ? loadPixels<kPx>(row, xTile + c * kChunkWidth + kPx * lane, width, aligned) : 0u;
  }
}

}  // namespace wide

}  // namespace nccmatch::cuda
