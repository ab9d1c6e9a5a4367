// The wide-tile fused SAT kernel: both tables in one pass over tiles of 32*kPx*kChunks columns by
// kWarps*kRowsPerWarp rows (included by sat_fused.cu, which compiles its configurations).
//
// Same decomposition as the 64-column kernel, S(x, y) = VC(x) + HC(y) + L(x, y), but the look-backs
// are shaped so that no tile waits on a long chain of its neighbours (sat_wide_lookback.cuh). Each
// lane owns kPx adjacent columns of each chunk of 32 * kPx columns: its pixels come in one load, its
// in-row prefix is serial, and the warp scan (the shuffles) is shared by kPx pixels; its table
// stores are 16-byte vectors (kPx = 4 with uint32 tables: one 16-byte store per lane and row).
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include "cuda/sat/sat_fused_params.cuh"
#include "cuda/sat/sat_lookback.cuh"
#include "cuda/sat/sat_tile_load.cuh"
#include "cuda/sat/sat_tile_scans.cuh"
#include "cuda/sat/sat_tile_stores.cuh"
#include "cuda/sat/sat_wide_lookback.cuh"

namespace nccmatch::cuda {

// The phases: load the warp's rows, scan them (publishing row aggregates), sum the row carries
// (warp 0, then HC and the column aggregates) while warps 1 .. kLookWarps look back up, publish
// the column prefixes, store both tables.
template <typename Out, int kPx, int kChunks, int kWarps, int kRowsPerWarp, int kWindow, int kMinBlocks,
          int kBackoffNs, bool kStreaming, int kSkip = kNoSkip>
__global__ void __launch_bounds__(kWarps * 32, kMinBlocks) wideFusedSatKernel(const WideFusedParams<Out> p) {
  constexpr int kTileWidth = 32 * kPx * kChunks;
  constexpr int kTileHeight = kWarps * kRowsPerWarp;
  constexpr int kRowsPerLane = (kTileHeight + 31) / 32;  // rows each lane of warp 0 carries
  constexpr int kLookWarps = kWarps - 1 < kChunks ? kWarps - 1 : kChunks;  // vertical look-back warps
  static_assert(kPx == 2 || kPx == 4, "pixels per lane");
  static_assert(kWarps >= 2 && kChunks >= 1 && kWindow >= 1, "tile shape");
  // L(x, y) is kept in uint32: the tile's whole sum of squares must stay below 2^32.
  static_assert(uint64_t(kTileWidth) * kTileHeight * 255 * 255 < (uint64_t(1) << 32), "tile too large");

  __shared__ uint32_t sTicket;
  __shared__ uint2 sColTotal[kWarps][kTileWidth];       // per warp and column: {s, q} over its rows
  __shared__ MomentPair<Out> sRowCarry[kTileHeight];    // HC(y)
  __shared__ MomentPair<Out> sColCarry[kTileWidth];     // VC(x)
  __shared__ MomentPair<Out> sColAgg[kTileWidth];       // HC(last) + L(x, last)

  const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
  const TilePosition t = claimTile(p, sTicket);
  const int xTile = t.tx * kTileWidth;
  const int yWarp = t.ty * kTileHeight + warp * kRowsPerWarp;

  uint32_t pix[kRowsPerWarp][kChunks];
  wide::loadPixelChunks<kPx>(p.image, p.pitch, p.width, p.height, p.alignedLoads, xTile, yWarp, lane, pix);
  wide::WarpPrefix<kRowsPerWarp, kChunks, kPx> L;
  wide::scanPixelChunks(pix, lane, L, sColTotal[warp], [&](int i, uint32_t sum, uint32_t sumSq) {
    wide::publishRowAggregate<kTileHeight>(p, t, lane, warp * kRowsPerWarp + i, sum, sumSq);
  });
  __syncthreads();

  if (warp == 0) {
    uint64_t carry[kRowsPerLane];
    wide::sumRowCarries<kRowsPerLane, kTileHeight, kBackoffNs, kSkip>(p, t, lane, carry);
    const MomentPair<Out> rowTotal =
        tile_scans::rowCarryRunningSums<Out, kRowsPerLane, kTileHeight>(carry, lane, sRowCarry);
    wide::publishColumnAggregates<kPx, kChunks>(p, t, lane, rowTotal, sColTotal, sColAgg);
  } else if (warp - 1 < kLookWarps) {
    wide::sumColumnCarries<kPx, kChunks, kTileWidth, kLookWarps, kWindow, kBackoffNs, kSkip>(p, t, warp, lane,
                                                                                          sColCarry);
  }
  __syncthreads();

  if (t.ty > 0 && !t.lastRow && warp >= 1 && warp - 1 < kLookWarps)
    wide::publishColumnPrefixes<kPx, kChunks, kTileWidth, kLookWarps>(p, t, warp, lane, sColCarry, sColAgg);
  wide::storeTables<kStreaming, kPx, kChunks>(p, warp, lane, xTile, yWarp, L, sColTotal,
                                              sRowCarry + warp * kRowsPerWarp, sColCarry);
}

}  // namespace nccmatch::cuda
