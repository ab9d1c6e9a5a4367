// The carries of the 64-column fused SAT kernel (sat_fused.cu): what a tile publishes for the
// tiles to its right and below, and the look-backs that gather what the tiles to its left and
// above published. Warp 0 does the horizontal side (row carries, HC), warp 1 the vertical side
// (column carries, VC), concurrently. Two protocols: kStamped carries are self-stamped words
// (one load per look-back step, no fences), else per-tile flags published with release and read
// with acquire (sat_lookback.cuh).
#pragma once

#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>

#include "cuda/sat/sat_fused_params.cuh"
#include "cuda/sat/sat_lookback.cuh"
#include "cuda/sat/sat_tile_load.cuh"
#include "cuda/sat/sat_tile_scans.cuh"

namespace nccmatch::cuda::narrow {

constexpr int kTileWidth = 64;

// A row's packed sums in the tile: kept in shared memory for the row prefix, and published as
// the tile's row aggregate where a tile to the right may read it (the first column of tiles
// publishes its prefixes instead, and no tile reads the last column's).
template <bool kStamped, int kTileHeight, typename Out>
__device__ __forceinline__ void publishRowAggregate(const FusedParams<Out>& p, const TilePosition& t, int row,
                                                    uint64_t packed, uint64_t* sRowAgg) {
  sRowAgg[row] = packed;
  if (t.tx > 0 && !t.lastCol) {
    uint64_t* dst = p.aggH + std::size_t(t.tile) * kTileHeight + row;
    if constexpr (kStamped) storeStamped(dst, packed, p.stamp);
    else *dst = packed;
  }
}

// Horizontal look-back (warp 0) for rows kRowsPerLane*lane ..: the packed row sums of the tiles to
// the left, summed back to the nearest one that published its prefix. Each lane reads (and, with
// flags, acquires) its own rows.
template <bool kStamped, int kRowsPerLane, int kTileHeight, typename Out>
__device__ __forceinline__ void sumRowCarries(const FusedParams<Out>& p, const TilePosition& t, int lane,
                                              uint64_t (&carry)[kRowsPerLane]) {
#pragma unroll
  for (int k = 0; k < kRowsPerLane; ++k) carry[k] = 0;
  if constexpr (kStamped) {
    for (int px = t.tx - 1; px >= 0;) {
      const std::size_t base = std::size_t(t.tile - uint32_t(t.tx - px)) * kTileHeight + kRowsPerLane * lane;
      uint64_t v[kRowsPerLane];
      bool ready = true;
#pragma unroll
      for (int k = 0; k < kRowsPerLane; ++k) ready &= loadStamped(p.preH + base + k, p.stamp, &v[k]);
      if (ready) {
#pragma unroll
        for (int k = 0; k < kRowsPerLane; ++k) carry[k] += v[k];
        break;
      }
      ready = true;
#pragma unroll
      for (int k = 0; k < kRowsPerLane; ++k) ready &= loadStamped(p.aggH + base + k, p.stamp, &v[k]);
      if (ready) {
#pragma unroll
        for (int k = 0; k < kRowsPerLane; ++k) carry[k] += v[k];
        --px;
      }
    }
  }
  for (int px = kStamped ? -1 : t.tx - 1; px >= 0; --px) {
    const uint32_t t2 = t.tile - uint32_t(t.tx - px);
    const uint32_t state = waitForFlag(&p.flagH[t2], p.epoch);
    const uint64_t* src =
        (state == kFlagPrefix ? p.preH : p.aggH) + std::size_t(t2) * kTileHeight + kRowsPerLane * lane;
#pragma unroll
    for (int k = 0; k < kRowsPerLane; k += 2) {
      const ulonglong2 v = *reinterpret_cast<const ulonglong2*>(src + k);
      carry[k] += v.x;
      carry[k + 1] += v.y;
    }
    if (state == kFlagPrefix) break;
  }
}

// The tile's row prefixes (carries plus its own row sums) for the tiles to the right.
template <bool kStamped, int kRowsPerLane, int kTileHeight, typename Out>
__device__ __forceinline__ void publishRowPrefixes(const FusedParams<Out>& p, const TilePosition& t, int lane,
                                                   const uint64_t (&carry)[kRowsPerLane], const uint64_t* sRowAgg) {
  if (kStamped && !t.lastCol) {
    uint64_t* dst = p.preH + std::size_t(t.tile) * kTileHeight + kRowsPerLane * lane;
#pragma unroll
    for (int k = 0; k < kRowsPerLane; ++k)
      storeStamped(dst + k, carry[k] + sRowAgg[kRowsPerLane * lane + k], p.stamp);
  } else if (!t.lastCol) {
    uint64_t* dst = p.preH + std::size_t(t.tile) * kTileHeight + kRowsPerLane * lane;
#pragma unroll
    for (int k = 0; k < kRowsPerLane; k += 2)
      *reinterpret_cast<ulonglong2*>(dst + k) =
          make_ulonglong2(carry[k] + sRowAgg[kRowsPerLane * lane + k],
                          carry[k + 1] + sRowAgg[kRowsPerLane * lane + k + 1]);
    __syncwarp();
    if (lane == 0) publishFlag(&p.flagH[t.tile], p.epoch, kFlagPrefix);
  }
}

// Column aggregates HC(last) + L(x, last) of the lane's columns 2*lane, 2*lane+1 (rowTotal is
// HC(last), the column totals of every warp L(x, last)): kept in sColAgg for the column prefixes
// and published for the tiles below (the top row of tiles publishes prefixes instead, and no
// tile reads the bottom row's).
template <bool kStamped, int kWarps, typename Out>
__device__ __forceinline__ void publishColumnAggregates(const FusedParams<Out>& p, const TilePosition& t, int lane,
                                                        const MomentPair<Out>& rowTotal,
                                                        const uint4 (&sColTotal)[kWarps][32],
                                                        MomentPair<Out>* sColAgg) {
  const Out totS = rowTotal.s, totQ = rowTotal.q;
  uint32_t tS0 = 0, tS1 = 0, tQ0 = 0, tQ1 = 0;
  sumWarpColumnTotals(sColTotal, lane, kWarps, tS0, tQ0, tS1, tQ1);
  const MomentPair<Out> a0{totS + Out(tS0), totQ + Out(tQ0)};
  const MomentPair<Out> a1{totS + Out(tS1), totQ + Out(tQ1)};
  sColAgg[2 * lane] = a0;
  sColAgg[2 * lane + 1] = a1;
  if (kStamped && t.ty > 0 && !t.lastRow) {
    uint64_t* dst = p.aggVw + (std::size_t(t.tile) * kTileWidth + 2 * lane) * 2;
    storeStamped(dst + 0, uint64_t(a0.s), p.stamp);
    storeStamped(dst + 1, uint64_t(a0.q), p.stamp);
    storeStamped(dst + 2, uint64_t(a1.s), p.stamp);
    storeStamped(dst + 3, uint64_t(a1.q), p.stamp);
  } else if (t.ty > 0 && !t.lastRow) {
    MomentPair<Out>* dst = p.aggV + std::size_t(t.tile) * kTileWidth + 2 * lane;
    dst[0] = a0;
    dst[1] = a1;
    __syncwarp();
    if (lane == 0) publishFlag(&p.flagV[t.tile], p.epoch, kFlagAggregate);
  }
}

// Vertical look-back (warp 1) for columns 2*lane, 2*lane+1: VC(x), the column sums of the tiles
// above back to the nearest one that published its prefix, into sColCarry.
template <bool kStamped, typename Out>
__device__ __forceinline__ void sumColumnCarries(const FusedParams<Out>& p, const TilePosition& t, int lane,
                                                 MomentPair<Out>* sColCarry) {
  MomentPair<Out> c0{0, 0}, c1{0, 0};
  if constexpr (kStamped) {
    for (int qy = t.ty - 1; qy >= 0;) {
      const std::size_t base =
          (std::size_t(t.tile - uint32_t(t.ty - qy) * uint32_t(p.tilesX)) * kTileWidth + 2 * lane) * 2;
      uint64_t v[4];
      bool ready = true;
#pragma unroll
      for (int k = 0; k < 4; ++k) ready &= loadStamped(p.preVw + base + k, p.stamp, &v[k]);
      if (!ready) {
        ready = true;
#pragma unroll
        for (int k = 0; k < 4; ++k) ready &= loadStamped(p.aggVw + base + k, p.stamp, &v[k]);
        if (!ready) continue;  // nothing published yet: look again
        --qy;
      } else {
        qy = -1;  // a prefix ends the look-back
      }
      c0.s += Out(v[0]);
      c0.q += Out(v[1]);
      c1.s += Out(v[2]);
      c1.q += Out(v[3]);
    }
  }
  for (int qy = kStamped ? -1 : t.ty - 1; qy >= 0; --qy) {
    const uint32_t t2 = t.tile - uint32_t(t.ty - qy) * uint32_t(p.tilesX);
    const uint32_t state = waitForFlag(&p.flagV[t2], p.epoch);
    const MomentPair<Out>* src =
        (state == kFlagPrefix ? p.preV : p.aggV) + std::size_t(t2) * kTileWidth + 2 * lane;
    const MomentPair<Out> v0 = src[0], v1 = src[1];
    c0.s += v0.s;
    c0.q += v0.q;
    c1.s += v1.s;
    c1.q += v1.q;
    if (state == kFlagPrefix) break;
  }
  sColCarry[2 * lane] = c0;
  sColCarry[2 * lane + 1] = c1;
}

// The tile's column prefixes VC(x) + HC(last) + L(x, last) for the tiles below (warp 1, after the
// barrier that follows both look-backs).
template <bool kStamped, typename Out>
__device__ __forceinline__ void publishColumnPrefixes(const FusedParams<Out>& p, const TilePosition& t, int lane,
                                                      const MomentPair<Out>* sColCarry,
                                                      const MomentPair<Out>* sColAgg) {
  if constexpr (kStamped) {
    uint64_t* dst = p.preVw + (std::size_t(t.tile) * kTileWidth + 2 * lane) * 2;
#pragma unroll
    for (int k = 0; k < 2; ++k) {
      const MomentPair<Out> c = sColCarry[2 * lane + k], a = sColAgg[2 * lane + k];
      storeStamped(dst + 2 * k, uint64_t(Out(c.s + a.s)), p.stamp);
      storeStamped(dst + 2 * k + 1, uint64_t(Out(c.q + a.q)), p.stamp);
    }
  } else {
    MomentPair<Out>* dst = p.preV + std::size_t(t.tile) * kTileWidth + 2 * lane;
#pragma unroll
    for (int k = 0; k < 2; ++k) {
      const MomentPair<Out> c = sColCarry[2 * lane + k], a = sColAgg[2 * lane + k];
      dst[k] = MomentPair<Out>{c.s + a.s, c.q + a.q};
    }
    __syncwarp();
    if (lane == 0) publishFlag(&p.flagV[t.tile], p.epoch, kFlagPrefix);
  }
}

}  // namespace nccmatch::cuda::narrow
