// The carries of the wide-tile fused SAT kernel (sat_fused_wide.cuh), all self-stamped words
// (sat_lookback.cuh): one load per check, no fences; a poll that finds nothing new sleeps
// kBackoffNs before the next.
// - Horizontal (warp 0): a row of the image has few wide tiles (16 at 4096 columns for 256-column
//   tiles), so a tile sums the row aggregates of every tile to its left. Those are published as
//   soon as the tiles have scanned their pixels, so no tile ever waits on another's look-back.
// - Vertical (warps 1 .. kLookWarps): each step reads a window of kWindow tiles above at once
//   (prefix and aggregate words) and stops at the nearest prefix, so a chain of tiles that only
//   have aggregates costs one round trip per kWindow tiles instead of one per tile.
#pragma once

#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>

#include "cuda/sat/sat_fused_params.cuh"
#include "cuda/sat/sat_lookback.cuh"
#include "cuda/sat/sat_tile_load.cuh"
#include "cuda/sat/sat_tile_scans.cuh"

namespace nccmatch::cuda {

// Probes for bench_sat only (wrong tables by design, never in the library): leave a look-back out
// to measure what it costs. The library always builds with kNoSkip.
enum WideSkip : int { kNoSkip = 0, kSkipHorizontal = 1, kSkipVertical = 2 };

namespace wide {

__device__ __forceinline__ bool allStamped(const ulonglong2* w, int n, uint32_t stamp) {
  bool ok = true;
#pragma unroll 4
  for (int k = 0; k < n; ++k) ok &= hasStamp(w[k].x, stamp) & hasStamp(w[k].y, stamp);
  return ok;
}

// A row's sums in the tile, packed and published by lane 0 for the tiles to the right (none reads
// the last column's).
template <int kTileHeight, typename Out>
__device__ __forceinline__ void publishRowAggregate(const WideFusedParams<Out>& p, const TilePosition& t, int lane,
                                                    int row, uint32_t sum, uint32_t sumSq) {
  if (lane == 0 && !t.lastCol)
    storeStamped(p.aggH + std::size_t(t.tile) * kTileHeight + row, (uint64_t(sum) << tile_scans::kRowSumShift) | sumSq,
                 p.stamp);
}

// Row carries (warp 0) for rows kRowsPerLane*lane ..: the row aggregates of every tile to the left,
// a group of loads in flight at once.
template <int kRowsPerLane, int kTileHeight, int kBackoffNs, int kSkip, typename Out>
__device__ __forceinline__ void sumRowCarries(const WideFusedParams<Out>& p, const TilePosition& t, int lane,
                                              uint64_t (&carry)[kRowsPerLane]) {
#pragma unroll
  for (int k = 0; k < kRowsPerLane; ++k) carry[k] = 0;
  const uint64_t* rowBase = p.aggH + std::size_t(t.tile - uint32_t(t.tx)) * kTileHeight;
  constexpr int kGroup = 8;
  const int leftTiles = (kSkip & kSkipHorizontal) ? 0 : t.tx;
  for (int px0 = 0; px0 < leftTiles; px0 += kGroup) {
    uint64_t v[kGroup][kRowsPerLane];
    // Issue the group's loads first, then spin on any word not yet stamped by this build.
#pragma unroll
    for (int g = 0; g < kGroup; ++g)
#pragma unroll
      for (int k = 0; k < kRowsPerLane; ++k) {
        const int r = kRowsPerLane * lane + k;
        v[g][k] = 0;
        if (px0 + g < t.tx && r < kTileHeight) v[g][k] = loadWord(rowBase + std::size_t(px0 + g) * kTileHeight + r);
      }
#pragma unroll
    for (int g = 0; g < kGroup; ++g)
#pragma unroll
      for (int k = 0; k < kRowsPerLane; ++k) {
        const int r = kRowsPerLane * lane + k;
        if (px0 + g < t.tx && r < kTileHeight)
          while (!hasStamp(v[g][k], p.stamp)) {
            if constexpr (kBackoffNs > 0) __nanosleep(kBackoffNs);
            v[g][k] = loadWord(rowBase + std::size_t(px0 + g) * kTileHeight + r);
          }
        carry[k] += v[g][k] & kPayloadMask;
      }
  }
}

// Column aggregates HC(last) + L(x, last) (warp 0; rowTotal is HC(last), L(x, last) the column
// totals of every warp): kept in sColAgg for the column prefixes and published for the tiles
// below; the top row of tiles publishes them as prefixes, the bottom row not at all.
template <int kPx, int kChunks, int kWarps, int kTileWidth, typename Out>
__device__ __forceinline__ void publishColumnAggregates(const WideFusedParams<Out>& p, const TilePosition& t,
                                                        int lane, const MomentPair<Out>& rowTotal,
                                                        const uint2 (&sColTotal)[kWarps][kTileWidth],
                                                        MomentPair<Out>* sColAgg) {
  constexpr int kChunkWidth = 32 * kPx;
  const Out totS = rowTotal.s, totQ = rowTotal.q;
#pragma unroll
  for (int c = 0; c < kChunks; ++c) {
    const int xt = c * kChunkWidth + kPx * lane;
    uint64_t* dst = (t.ty == 0 ? p.preV : p.aggV) + (std::size_t(t.tile) * kTileWidth + xt) * 2;
#pragma unroll
    for (int j = 0; j < kPx; ++j) {
      uint32_t tS = 0, tQ = 0;
#pragma unroll
      for (int w = 0; w < kWarps; ++w) {
        const uint2 s = sColTotal[w][xt + j];
        tS += s.x;
        tQ += s.y;
      }
      const MomentPair<Out> a{Out(totS + Out(tS)), Out(totQ + Out(tQ))};
      sColAgg[xt + j] = a;
      if (!t.lastRow) storeStampedPair(dst + 2 * j, uint64_t(a.s), uint64_t(a.q), p.stamp);
    }
  }
}

// Vertical look-back for this lane's columns of the warp's chunks (warps 1 .. kLookWarps) into
// sColCarry: each step reads the words of kWindow tiles above at once and stops at the nearest
// prefix. It runs after the tile's own scans: run before them (to overlap the pixel loads) it
// made every column aggregate wait for the tiles above, a serial chain, 6x slower
// (bench/RESULTS.md).
template <int kPx, int kChunks, int kTileWidth, int kLookWarps, int kWindow, int kBackoffNs, int kSkip, typename Out>
__device__ __forceinline__ void sumColumnCarries(const WideFusedParams<Out>& p, const TilePosition& t, int warp,
                                                 int lane, MomentPair<Out>* sColCarry) {
  constexpr int kChunkWidth = 32 * kPx;
  for (int c = warp - 1; c < kChunks; c += kLookWarps) {
    const int xt = c * kChunkWidth + kPx * lane;
    Out vs[kPx], vq[kPx];
#pragma unroll
    for (int j = 0; j < kPx; ++j) vs[j] = vq[j] = 0;
    for (int qy = (kSkip & kSkipVertical) ? -1 : t.ty - 1; qy >= 0;) {
      ulonglong2 pre[kWindow][kPx], agg[kWindow][kPx];
#pragma unroll
      for (int k = 0; k < kWindow; ++k) {
        if (qy - k >= 0) {
          const std::size_t at =
              (std::size_t(t.tile - uint32_t(t.ty - (qy - k)) * uint32_t(p.tilesX)) * kTileWidth + xt) * 2;
#pragma unroll
          for (int j = 0; j < kPx; ++j) {
            pre[k][j] = loadStampedPair(p.preV + at + 2 * j);
            agg[k][j] = loadStampedPair(p.aggV + at + 2 * j);
          }
        }
      }
      bool found = false, blocked = false;
      int used = 0;
#pragma unroll
      for (int k = 0; k < kWindow; ++k) {
        if (found || blocked || qy - k < 0) continue;
        const bool isPrefix = allStamped(pre[k], kPx, p.stamp);
        if (!isPrefix && !allStamped(agg[k], kPx, p.stamp)) {
          blocked = true;  // nothing published yet: poll again from this tile
          continue;
        }
#pragma unroll
        for (int j = 0; j < kPx; ++j) {
          const ulonglong2 w = isPrefix ? pre[k][j] : agg[k][j];
          vs[j] += Out(w.x & kPayloadMask);
          vq[j] += Out(w.y & kPayloadMask);
        }
        if (isPrefix) found = true;
        else ++used;
      }
      if (found) break;
      qy -= used;
      // Polls that found nothing new back off, so that spinning tiles leave L2 to the stores.
      if (kBackoffNs > 0 && used == 0) __nanosleep(kBackoffNs);
    }
#pragma unroll
    for (int j = 0; j < kPx; ++j) sColCarry[xt + j] = MomentPair<Out>{vs[j], vq[j]};
  }
}

// Column prefixes VC(x) + HC(last) + L(x, last) of the warp's chunks for the tiles below (the
// look-back warps, after the barrier that follows both look-backs).
template <int kPx, int kChunks, int kTileWidth, int kLookWarps, typename Out>
__device__ __forceinline__ void publishColumnPrefixes(const WideFusedParams<Out>& p, const TilePosition& t, int warp,
                                                      int lane, const MomentPair<Out>* sColCarry,
                                                      const MomentPair<Out>* sColAgg) {
  constexpr int kChunkWidth = 32 * kPx;
  for (int c = warp - 1; c < kChunks; c += kLookWarps) {
    const int xt = c * kChunkWidth + kPx * lane;
    uint64_t* dst = p.preV + (std::size_t(t.tile) * kTileWidth + xt) * 2;
#pragma unroll
    for (int j = 0; j < kPx; ++j) {
      const MomentPair<Out> v = sColCarry[xt + j], a = sColAgg[xt + j];
      storeStampedPair(dst + 2 * j, uint64_t(Out(v.s + a.s)), uint64_t(Out(v.q + a.q)), p.stamp);
    }
  }
}

}  // namespace wide
}  // namespace nccmatch::cuda
