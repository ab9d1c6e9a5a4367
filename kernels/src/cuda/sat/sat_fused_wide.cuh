// The wide-tile fused SAT kernel: both tables in one pass over tiles of 32*kPx*kChunks columns by
// kWarps*kRowsPerWarp rows (included by sat_fused.cu, which compiles its configurations).
//
// Same decomposition as the 64-column kernel, S(x, y) = VC(x) + HC(y) + L(x, y), but the look-backs
// are shaped so that no tile waits on a long chain of its neighbours:
// - Horizontal: a row of the image has few wide tiles (16 at 4096 columns for 256-column tiles),
//   so a tile sums the row aggregates of every tile to its left. Those are published as soon as
//   the tiles have loaded their pixels, so no tile ever waits on another tile's look-back.
// - Vertical: each look-back step reads a window of kWindow tiles above at once (prefix and
//   aggregate words) and stops at the nearest prefix, so a chain of tiles that only have
//   aggregates costs one round trip per kWindow tiles instead of one per tile.
// Carries are self-stamped words (sat_lookback.cuh): one load per check, no
// fences; a poll that finds nothing new sleeps kBackoffNs before the next. Each lane owns kPx
// adjacent columns of each chunk of 32 * kPx columns: its pixels come in one load, its in-row prefix
// is serial, and the warp scan (the shuffles) is shared by kPx pixels; its table stores are
// 16-byte vectors (kPx = 4 with uint32 tables: one 16-byte store per lane and row).
#pragma once

#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>

#include "cuda/sat/sat_lookback.cuh"
#include "cuda/sat/sat_tile_scans.cuh"
#include "cuda/sat/sat_tile_stores.cuh"

namespace nccmatch::cuda {

template <typename Out>
struct WideFusedParams {
  const uint8_t* image;
  std::size_t pitch;
  int width, height, tilesX, tilesY;
  Out* S;
  Out* Q;
  uint32_t* ticket;
  uint64_t* aggH;  // per tile, per row: packed row sums of the tile (sum << 30 | sumSq), stamped
  uint64_t* aggV;  // per tile, per column, {s, q}: HC(last) + L(x, last), stamped
  uint64_t* preV;  // per tile, per column, {s, q}: S and Q on the tile's last row, stamped
  uint32_t stamp;
  bool alignedLoads;  // image and pitch aligned to kPx bytes: a lane's pixels in one load
  bool vectorStores;  // tables aligned to a pair of entries
  bool quadStores;    // tables 16-byte aligned (uint32: four entries per store)
};

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

__device__ __forceinline__ bool allStamped(const ulonglong2* w, int n, uint32_t stamp) {
  bool ok = true;
#pragma unroll 4
  for (int k = 0; k < n; ++k) ok &= hasStamp(w[k].x, stamp) & hasStamp(w[k].y, stamp);
  return ok;
}
}  // namespace wide

// Probes for bench_sat only (wrong tables by design, never in the library): leave a look-back out
// to measure what it costs. The library always builds with kNoSkip.
enum WideSkip : int { kNoSkip = 0, kSkipHorizontal = 1, kSkipVertical = 2 };

template <typename Out, int kPx, int kChunks, int kWarps, int kRowsPerWarp, int kWindow, int kMinBlocks,
          int kBackoffNs, bool kStreaming, int kSkip = kNoSkip>
__global__ void __launch_bounds__(kWarps * 32, kMinBlocks) wideFusedSatKernel(const WideFusedParams<Out> p) {
  using tile_scans::kFullMask;
  using tile_scans::kRowSumShift;
  constexpr int kChunkWidth = 32 * kPx;
  constexpr int kTileWidth = kChunkWidth * kChunks;
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
  if (threadIdx.x == 0) sTicket = drawTicket(p.ticket, uint32_t(p.tilesX) * uint32_t(p.tilesY));
  __syncthreads();
  const uint32_t tile = sTicket;
  const int ty = int(tile / uint32_t(p.tilesX)), tx = int(tile % uint32_t(p.tilesX));
  const bool lastCol = tx == p.tilesX - 1, lastRow = ty == p.tilesY - 1;
  const int xTile = tx * kTileWidth;
  const int yWarp = ty * kTileHeight + warp * kRowsPerWarp;

  // Vertical look-back for this lane's columns of the warp's chunks (warps 1 .. kLookWarps): each
  // step reads the words of kWindow tiles above at once and stops at the nearest prefix. It runs
  // after the tile's own scans: run before them (to overlap the pixel loads) it made every column
  // aggregate wait for the tiles above, a serial chain, 6x slower (bench/RESULTS.md).
  auto verticalLookback = [&]() {
      for (int c = warp - 1; c < kChunks; c += kLookWarps) {
      const int xt = c * kChunkWidth + kPx * lane;
      Out vs[kPx], vq[kPx];
#pragma unroll
      for (int j = 0; j < kPx; ++j) vs[j] = vq[j] = 0;
      for (int qy = (kSkip & kSkipVertical) ? -1 : ty - 1; qy >= 0;) {
        ulonglong2 pre[kWindow][kPx], agg[kWindow][kPx];
#pragma unroll
        for (int k = 0; k < kWindow; ++k) {
          if (qy - k >= 0) {
            const std::size_t at =
                (std::size_t(tile - uint32_t(ty - (qy - k)) * uint32_t(p.tilesX)) * kTileWidth + xt) * 2;
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
          const bool isPrefix = wide::allStamped(pre[k], kPx, p.stamp);
          if (!isPrefix && !wide::allStamped(agg[k], kPx, p.stamp)) {
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
  };

  uint32_t pix[kRowsPerWarp][kChunks];
#pragma unroll
  for (int i = 0; i < kRowsPerWarp; ++i) {
    const int y = yWarp + i;
    const uint8_t* row = p.image + std::size_t(y < p.height ? y : 0) * p.pitch;
#pragma unroll
    for (int c = 0; c < kChunks; ++c)
      pix[i][c] = y < p.height ? wide::loadPixels<kPx>(row, xTile + c * kChunkWidth + kPx * lane, p.width, p.alignedLoads)
                               : 0u;
  }

  // Row prefixes (serial inside the lane, one warp scan per chunk, chunks chained by their totals),
  // then running column sums down the warp's rows: the warp-local 2D prefix.
  uint32_t ls[kRowsPerWarp][kChunks][kPx], lq[kRowsPerWarp][kChunks][kPx];
  uint32_t runS[kChunks][kPx], runQ[kChunks][kPx];
#pragma unroll
  for (int c = 0; c < kChunks; ++c)
#pragma unroll
    for (int j = 0; j < kPx; ++j) runS[c][j] = runQ[c][j] = 0;
#pragma unroll
  for (int i = 0; i < kRowsPerWarp; ++i) {
    uint32_t offS = 0, offQ = 0;
#pragma unroll
    for (int c = 0; c < kChunks; ++c) {
      uint32_t ps[kPx], pq[kPx], accS = 0, accQ = 0;
#pragma unroll
      for (int j = 0; j < kPx; ++j) {
        const uint32_t a = (pix[i][c] >> (8 * j)) & 0xffu;
        accS += a;
        accQ += a * a;
        ps[j] = accS;
        pq[j] = accQ;
      }
      uint32_t is = accS, iq = accQ;
      tile_scans::warpInclusiveScan2(is, iq, lane);
      const uint32_t totS = __shfl_sync(kFullMask, is, 31), totQ = __shfl_sync(kFullMask, iq, 31);
      const uint32_t baseS = offS + is - accS, baseQ = offQ + iq - accQ;
#pragma unroll
      for (int j = 0; j < kPx; ++j) {
        runS[c][j] += baseS + ps[j];
        runQ[c][j] += baseQ + pq[j];
        ls[i][c][j] = runS[c][j];
        lq[i][c][j] = runQ[c][j];
      }
      offS += totS;
      offQ += totQ;
    }
    if (lane == 0 && !lastCol) {
      const int r = warp * kRowsPerWarp + i;
      storeStamped(p.aggH + std::size_t(tile) * kTileHeight + r, (uint64_t(offS) << kRowSumShift) | offQ, p.stamp);
    }
  }
#pragma unroll
  for (int c = 0; c < kChunks; ++c)
#pragma unroll
    for (int j = 0; j < kPx; ++j) sColTotal[warp][c * kChunkWidth + kPx * lane + j] = make_uint2(runS[c][j], runQ[c][j]);
  __syncthreads();

  if (warp == 0) {
    // Row carries: the row aggregates of every tile to the left, a group of loads in flight at once.
    uint64_t carry[kRowsPerLane];
#pragma unroll
    for (int k = 0; k < kRowsPerLane; ++k) carry[k] = 0;
    const uint64_t* rowBase = p.aggH + std::size_t(tile - uint32_t(tx)) * kTileHeight;
    constexpr int kGroup = 8;
    const int leftTiles = (kSkip & kSkipHorizontal) ? 0 : tx;
    for (int px0 = 0; px0 < leftTiles; px0 += kGroup) {
      uint64_t v[kGroup][kRowsPerLane];
      // Issue the group's loads first, then spin on any word not yet stamped by this build.
#pragma unroll
      for (int g = 0; g < kGroup; ++g)
#pragma unroll
        for (int k = 0; k < kRowsPerLane; ++k) {
          const int r = kRowsPerLane * lane + k;
          v[g][k] = 0;
          if (px0 + g < tx && r < kTileHeight) v[g][k] = loadWord(rowBase + std::size_t(px0 + g) * kTileHeight + r);
        }
#pragma unroll
      for (int g = 0; g < kGroup; ++g)
#pragma unroll
        for (int k = 0; k < kRowsPerLane; ++k) {
          const int r = kRowsPerLane * lane + k;
          if (px0 + g < tx && r < kTileHeight)
            while (!hasStamp(v[g][k], p.stamp)) {
              if constexpr (kBackoffNs > 0) __nanosleep(kBackoffNs);
              v[g][k] = loadWord(rowBase + std::size_t(px0 + g) * kTileHeight + r);
            }
          carry[k] += v[g][k] & kPayloadMask;
        }
    }

    // HC(y): running sum of the row carries down the tile.
    const MomentPair<Out> rowTotal =
        tile_scans::rowCarryRunningSums<Out, kRowsPerLane, kTileHeight>(carry, lane, sRowCarry);
    const Out totS = rowTotal.s, totQ = rowTotal.q;

    // Column aggregates HC(last) + L(x, last); the top tile row publishes them as prefixes.
#pragma unroll
    for (int c = 0; c < kChunks; ++c) {
      const int xt = c * kChunkWidth + kPx * lane;
      uint64_t* dst = (ty == 0 ? p.preV : p.aggV) + (std::size_t(tile) * kTileWidth + xt) * 2;
#pragma unroll
      for (int j = 0; j < kPx; ++j) {
        uint32_t tS = 0, tQ = 0;
#pragma unroll
        for (int w = 0; w < kWarps; ++w) {
          const uint2 t = sColTotal[w][xt + j];
          tS += t.x;
          tQ += t.y;
        }
        const MomentPair<Out> a{Out(totS + Out(tS)), Out(totQ + Out(tQ))};
        sColAgg[xt + j] = a;
        if (!lastRow) storeStampedPair(dst + 2 * j, uint64_t(a.s), uint64_t(a.q), p.stamp);
      }
    }
  } else if (warp - 1 < kLookWarps) {
    verticalLookback();
  }
  __syncthreads();

  // Column prefixes for the tiles below: VC(x) + HC(last) + L(x, last).
  if (ty > 0 && !lastRow && warp >= 1 && warp - 1 < kLookWarps) {
    for (int c = warp - 1; c < kChunks; c += kLookWarps) {
      const int xt = c * kChunkWidth + kPx * lane;
      uint64_t* dst = p.preV + (std::size_t(tile) * kTileWidth + xt) * 2;
#pragma unroll
      for (int j = 0; j < kPx; ++j) {
        const MomentPair<Out> v = sColCarry[xt + j], a = sColAgg[xt + j];
        storeStampedPair(dst + 2 * j, uint64_t(Out(v.s + a.s)), uint64_t(Out(v.q + a.q)), p.stamp);
      }
    }
  }

  // S(x, y) = VC(x) + HC(y) + offset(x) + L_warp(x, y), offset(x) the column totals of the warps above.
#pragma unroll
  for (int c = 0; c < kChunks; ++c) {
    const int xt = c * kChunkWidth + kPx * lane;
    const int x = xTile + xt;
    Out baseS[kPx], baseQ[kPx];
#pragma unroll
    for (int j = 0; j < kPx; ++j) {
      uint32_t oS = 0, oQ = 0;
#pragma unroll
      for (int w = 0; w < kWarps; ++w) {
        if (w < warp) {
          const uint2 t = sColTotal[w][xt + j];
          oS += t.x;
          oQ += t.y;
        }
      }
      const MomentPair<Out> vc = sColCarry[xt + j];
      // VC + offset, folded once per column; the uint32 offset and L stay exact (tile sums < 2^32).
      baseS[j] = vc.s + Out(oS);
      baseQ[j] = vc.q + Out(oQ);
    }
#pragma unroll
    for (int i = 0; i < kRowsPerWarp; ++i) {
      const int y = yWarp + i;
      if (y < p.height) {
        const MomentPair<Out> hc = sRowCarry[warp * kRowsPerWarp + i];
        const std::size_t rowStart = std::size_t(y) * std::size_t(p.width);
        const bool vector = p.vectorStores && (rowStart & 1) == 0;
        const bool quad = sizeof(Out) == 8 ? vector : (p.quadStores && (rowStart & 3) == 0);
        Out s[kPx], q[kPx];
#pragma unroll
        for (int j = 0; j < kPx; ++j) {
          s[j] = Out(baseS[j] + hc.s + Out(ls[i][c][j]));
          q[j] = Out(baseQ[j] + hc.q + Out(lq[i][c][j]));
        }
        if constexpr (kPx == 4) {
          storeRowQuad<kStreaming>(p.S + rowStart, x, p.width, vector, quad, s[0], s[1], s[2], s[3]);
          storeRowQuad<kStreaming>(p.Q + rowStart, x, p.width, vector, quad, q[0], q[1], q[2], q[3]);
        } else {
          storeRowPair<kStreaming>(p.S + rowStart, x, p.width, vector, s[0], s[1]);
          storeRowPair<kStreaming>(p.Q + rowStart, x, p.width, vector, q[0], q[1]);
        }
      }
    }
  }
}

}  // namespace nccmatch::cuda
