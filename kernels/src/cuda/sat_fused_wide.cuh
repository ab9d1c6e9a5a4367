// The wide-tile fused SAT kernel: both tables in one pass over tiles of 64*kChunks columns by
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
// Throughput of a tiled look-back is about one tile row per vertical hop; wide, tall tiles move
// more bytes per hop. Carries are self-stamped words (sat_lookback.cuh): one load per check, no
// fences. Each lane owns two adjacent columns of each 64-column chunk, so every table store is a
// coalesced 16-byte (int64) or 8-byte (uint32) vector per lane.
#pragma once

#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>

#include "cuda/sat_lookback.cuh"
#include "cuda/sat_tile_stores.cuh"

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
  bool alignedLoads;  // image and pitch even: two pixels per 16-bit load
  bool vectorStores;  // tables aligned to a pair of entries
};

namespace wide {
constexpr unsigned kFullMask = 0xffffffffu;
constexpr uint64_t kRowSumShift = 30;
constexpr uint64_t kRowSqMask = (uint64_t(1) << kRowSumShift) - 1;
}  // namespace wide

template <typename Out, int kChunks, int kWarps, int kRowsPerWarp, int kWindow, int kMinBlocks, bool kStreaming>
__global__ void __launch_bounds__(kWarps * 32, kMinBlocks) wideFusedSatKernel(const WideFusedParams<Out> p) {
  using wide::kFullMask;
  using wide::kRowSumShift;
  using wide::kRowSqMask;
  constexpr int kTileWidth = 64 * kChunks;
  constexpr int kTileHeight = kWarps * kRowsPerWarp;
  constexpr int kRowsPerLane = (kTileHeight + 31) / 32;  // rows each lane of warp 0 carries
  constexpr int kLookWarps = kWarps - 1 < kChunks ? kWarps - 1 : kChunks;  // vertical look-back warps
  static_assert(kWarps >= 2 && kChunks >= 1 && kWindow >= 1, "tile shape");
  // L(x, y) is kept in uint32: the tile's whole sum of squares must stay below 2^32.
  static_assert(uint64_t(kTileWidth) * kTileHeight * 255 * 255 < (uint64_t(1) << 32), "tile too large");

  __shared__ uint32_t sTicket;
  __shared__ uint4 sColTotal[kWarps][kChunks * 32];     // per warp and lane: {s0, q0, s1, q1} of its rows
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

  // Pixels: per row and chunk, two adjacent pixels (low byte first), zero outside the image.
  uint32_t pix[kRowsPerWarp][kChunks];
#pragma unroll
  for (int i = 0; i < kRowsPerWarp; ++i) {
    const int y = yWarp + i;
    const uint8_t* row = p.image + std::size_t(y < p.height ? y : 0) * p.pitch;
#pragma unroll
    for (int c = 0; c < kChunks; ++c) {
      const int x = xTile + c * 64 + 2 * lane;
      uint32_t v = 0;
      if (y < p.height) {
        if (p.alignedLoads && x + 1 < p.width) {
          v = __ldg(reinterpret_cast<const unsigned short*>(row + x));
        } else {
          if (x < p.width) v = __ldg(row + x);
          if (x + 1 < p.width) v |= uint32_t(__ldg(row + x + 1)) << 8;
        }
      }
      pix[i][c] = v;
    }
  }

  // Row scans (chunk by chunk, chained by the chunk totals), then running column sums down the
  // warp's rows: the warp-local 2D prefix.
  uint32_t ls0[kRowsPerWarp][kChunks], ls1[kRowsPerWarp][kChunks];
  uint32_t lq0[kRowsPerWarp][kChunks], lq1[kRowsPerWarp][kChunks];
  uint32_t runS0[kChunks], runS1[kChunks], runQ0[kChunks], runQ1[kChunks];
#pragma unroll
  for (int c = 0; c < kChunks; ++c) runS0[c] = runS1[c] = runQ0[c] = runQ1[c] = 0;
#pragma unroll
  for (int i = 0; i < kRowsPerWarp; ++i) {
    uint32_t offS = 0, offQ = 0;
#pragma unroll
    for (int c = 0; c < kChunks; ++c) {
      const uint32_t a = pix[i][c] & 0xffu, b = pix[i][c] >> 8, bb = b * b;
      uint32_t is = a + b, iq = a * a + bb;
#pragma unroll
      for (int d = 1; d < 32; d <<= 1) {
        const uint32_t ts = __shfl_up_sync(kFullMask, is, d);
        const uint32_t tq = __shfl_up_sync(kFullMask, iq, d);
        if (lane >= d) {
          is += ts;
          iq += tq;
        }
      }
      const uint32_t totS = __shfl_sync(kFullMask, is, 31), totQ = __shfl_sync(kFullMask, iq, 31);
      const uint32_t r1s = offS + is, r1q = offQ + iq;
      runS0[c] += r1s - b;
      runS1[c] += r1s;
      runQ0[c] += r1q - bb;
      runQ1[c] += r1q;
      ls0[i][c] = runS0[c];
      ls1[i][c] = runS1[c];
      lq0[i][c] = runQ0[c];
      lq1[i][c] = runQ1[c];
      offS += totS;
      offQ += totQ;
    }
    if (lane == 0) {
      const int r = warp * kRowsPerWarp + i;
      const uint64_t packed = (uint64_t(offS) << kRowSumShift) | offQ;
      if (!lastCol) storeStamped(p.aggH + std::size_t(tile) * kTileHeight + r, packed, p.stamp);
    }
  }
#pragma unroll
  for (int c = 0; c < kChunks; ++c) sColTotal[warp][c * 32 + lane] = make_uint4(runS0[c], runQ0[c], runS1[c], runQ1[c]);
  __syncthreads();

  if (warp == 0) {
    // Row carries: the row aggregates of every tile to the left, all loads of a group in flight.
    uint64_t carry[kRowsPerLane];
#pragma unroll
    for (int k = 0; k < kRowsPerLane; ++k) carry[k] = 0;
    const uint64_t* rowBase = p.aggH + std::size_t(tile - uint32_t(tx)) * kTileHeight;
    constexpr int kGroup = 8;
    for (int px0 = 0; px0 < tx; px0 += kGroup) {
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
            while (!hasStamp(v[g][k], p.stamp)) v[g][k] = loadWord(rowBase + std::size_t(px0 + g) * kTileHeight + r);
          carry[k] += v[g][k] & kPayloadMask;
        }
    }

    // HC(y): running sum of the row carries down the tile.
    Out cs[kRowsPerLane], cq[kRowsPerLane];
    Out accS = 0, accQ = 0;
#pragma unroll
    for (int k = 0; k < kRowsPerLane; ++k) {
      accS += Out(carry[k] >> kRowSumShift);
      accQ += Out(carry[k] & kRowSqMask);
      cs[k] = accS;
      cq[k] = accQ;
    }
    Out incS = accS, incQ = accQ;
#pragma unroll
    for (int d = 1; d < 32; d <<= 1) {
      const Out ts = __shfl_up_sync(kFullMask, incS, d);
      const Out tq = __shfl_up_sync(kFullMask, incQ, d);
      if (lane >= d) {
        incS += ts;
        incQ += tq;
      }
    }
    const Out exS = incS - accS, exQ = incQ - accQ;
#pragma unroll
    for (int k = 0; k < kRowsPerLane; ++k)
      if (kRowsPerLane * lane + k < kTileHeight)
        sRowCarry[kRowsPerLane * lane + k] = MomentPair<Out>{exS + cs[k], exQ + cq[k]};
    const Out totS = __shfl_sync(kFullMask, incS, 31), totQ = __shfl_sync(kFullMask, incQ, 31);

    // Column aggregates HC(last) + L(x, last); the top tile row publishes them as prefixes.
#pragma unroll
    for (int c = 0; c < kChunks; ++c) {
      uint32_t tS0 = 0, tS1 = 0, tQ0 = 0, tQ1 = 0;
#pragma unroll
      for (int w = 0; w < kWarps; ++w) {
        const uint4 t = sColTotal[w][c * 32 + lane];
        tS0 += t.x;
        tQ0 += t.y;
        tS1 += t.z;
        tQ1 += t.w;
      }
      const MomentPair<Out> a0{Out(totS + Out(tS0)), Out(totQ + Out(tQ0))};
      const MomentPair<Out> a1{Out(totS + Out(tS1)), Out(totQ + Out(tQ1))};
      const int xt = c * 64 + 2 * lane;
      sColAgg[xt] = a0;
      sColAgg[xt + 1] = a1;
      if (!lastRow) {
        uint64_t* dst = (ty == 0 ? p.preV : p.aggV) + (std::size_t(tile) * kTileWidth + xt) * 2;
        storeStampedPair(dst, uint64_t(a0.s), uint64_t(a0.q), p.stamp);
        storeStampedPair(dst + 2, uint64_t(a1.s), uint64_t(a1.q), p.stamp);
      }
    }
  } else if (warp - 1 < kLookWarps) {
    // Vertical look-back for columns 2*lane, 2*lane+1 of this warp's chunks: each step reads the
    // words of kWindow tiles above at once and stops at the nearest prefix.
    for (int c = warp - 1; c < kChunks; c += kLookWarps) {
      const int xt = c * 64 + 2 * lane;
      Out s0 = 0, q0 = 0, s1 = 0, q1 = 0;
      for (int qy = ty - 1; qy >= 0;) {
        ulonglong2 pre[kWindow][2], agg[kWindow][2];
#pragma unroll
        for (int k = 0; k < kWindow; ++k) {
          if (qy - k >= 0) {
            const std::size_t at =
                (std::size_t(tile - uint32_t(ty - (qy - k)) * uint32_t(p.tilesX)) * kTileWidth + xt) * 2;
            pre[k][0] = loadStampedPair(p.preV + at);
            pre[k][1] = loadStampedPair(p.preV + at + 2);
            agg[k][0] = loadStampedPair(p.aggV + at);
            agg[k][1] = loadStampedPair(p.aggV + at + 2);
          }
        }
        bool found = false, blocked = false;
        int used = 0;
#pragma unroll
        for (int k = 0; k < kWindow; ++k) {
          if (found || blocked || qy - k < 0) continue;
          ulonglong2 w0, w1;
          if (hasStamp(pre[k][0].x, p.stamp) && hasStamp(pre[k][0].y, p.stamp) &&
              hasStamp(pre[k][1].x, p.stamp) && hasStamp(pre[k][1].y, p.stamp)) {
            w0 = pre[k][0];
            w1 = pre[k][1];
            found = true;
          } else if (hasStamp(agg[k][0].x, p.stamp) && hasStamp(agg[k][0].y, p.stamp) &&
                     hasStamp(agg[k][1].x, p.stamp) && hasStamp(agg[k][1].y, p.stamp)) {
            w0 = agg[k][0];
            w1 = agg[k][1];
            ++used;
          } else {
            blocked = true;  // nothing published yet: poll again from this tile
            continue;
          }
          s0 += Out(w0.x & kPayloadMask);
          q0 += Out(w0.y & kPayloadMask);
          s1 += Out(w1.x & kPayloadMask);
          q1 += Out(w1.y & kPayloadMask);
        }
        if (found) break;
        qy -= used;
      }
      sColCarry[xt] = MomentPair<Out>{s0, q0};
      sColCarry[xt + 1] = MomentPair<Out>{s1, q1};
    }
  }
  __syncthreads();

  // Column prefixes for the tiles below: VC(x) + HC(last) + L(x, last).
  if (ty > 0 && !lastRow && warp - 1 < kLookWarps && warp >= 1) {
    for (int c = warp - 1; c < kChunks; c += kLookWarps) {
      const int xt = c * 64 + 2 * lane;
      const MomentPair<Out> v0 = sColCarry[xt], v1 = sColCarry[xt + 1];
      const MomentPair<Out> a0 = sColAgg[xt], a1 = sColAgg[xt + 1];
      uint64_t* dst = p.preV + (std::size_t(tile) * kTileWidth + xt) * 2;
      storeStampedPair(dst, uint64_t(Out(v0.s + a0.s)), uint64_t(Out(v0.q + a0.q)), p.stamp);
      storeStampedPair(dst + 2, uint64_t(Out(v1.s + a1.s)), uint64_t(Out(v1.q + a1.q)), p.stamp);
    }
  }

  // Column offsets of this warp's rows inside the tile: totals of the warps above it.
  // S(x, y) = VC(x) + HC(y) + offset(x) + L_warp(x, y).
#pragma unroll
  for (int c = 0; c < kChunks; ++c) {
    uint32_t oS0 = 0, oS1 = 0, oQ0 = 0, oQ1 = 0;
#pragma unroll
    for (int w = 0; w < kWarps; ++w) {
      if (w < warp) {
        const uint4 t = sColTotal[w][c * 32 + lane];
        oS0 += t.x;
        oQ0 += t.y;
        oS1 += t.z;
        oQ1 += t.w;
      }
    }
    const int xt = c * 64 + 2 * lane;
    const int x = xTile + xt;
    const MomentPair<Out> vc0 = sColCarry[xt], vc1 = sColCarry[xt + 1];
#pragma unroll
    for (int i = 0; i < kRowsPerWarp; ++i) {
      const int y = yWarp + i;
      if (y < p.height) {
        const MomentPair<Out> hc = sRowCarry[warp * kRowsPerWarp + i];
        const std::size_t rowStart = std::size_t(y) * std::size_t(p.width);
        const bool vector = p.vectorStores && (rowStart & 1) == 0;
        storeRowPair<kStreaming>(p.S + rowStart, x, p.width, vector, Out(vc0.s + hc.s + Out(oS0 + ls0[i][c])),
                                 Out(vc1.s + hc.s + Out(oS1 + ls1[i][c])));
        storeRowPair<kStreaming>(p.Q + rowStart, x, p.width, vector, Out(vc0.q + hc.q + Out(oQ0 + lq0[i][c])),
                                 Out(vc1.q + hc.q + Out(oQ1 + lq1[i][c])));
      }
    }
  }
}

}  // namespace nccmatch::cuda
