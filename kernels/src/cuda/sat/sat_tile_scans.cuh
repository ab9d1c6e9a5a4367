// Warp scans of the fused SAT kernels (64-column and wide tiles): the packed row-sum word both
// publish, the two-moment warp scan, each kernel's warp-local 2D prefix L of its rows, and HC(y),
// the running sum of a tile's row carries.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include "cuda/sat/sat_lookback.cuh"

namespace nccmatch::cuda::tile_scans {

constexpr unsigned kFullMask = 0xffffffffu;
// A row's sums in one word, sum of I above bit 30 and sum of I^2 below: over up to 16384 pixels
// the squares stay below 2^30 and the sum below 2^22, which leaves 12 bits for a build stamp.
constexpr uint64_t kRowSumShift = 30;
constexpr uint64_t kRowSqMask = (uint64_t(1) << kRowSumShift) - 1;

// Inclusive scan across the warp of both moments at once (shuffles interleaved).
template <typename T>
__device__ __forceinline__ void warpInclusiveScan2(T& s, T& q, int lane) {
#pragma unroll
  for (int d = 1; d < 32; d <<= 1) {
    const T ts = __shfl_up_sync(kFullMask, s, d);
    const T tq = __shfl_up_sync(kFullMask, q, d);
    if (lane >= d) {
      s += ts;
      q += tq;
    }
  }
}

// HC(y) for the rows of a tile: lane l holds the packed row carries of rows kRowsPerLane*l + k.
// Each row's running sums (carries of the rows above it included) go to rowCarry[row] for rows
// below kTileHeight; the tile's totals are returned to every lane.
template <typename Out, int kRowsPerLane, int kTileHeight>
__device__ __forceinline__ MomentPair<Out> rowCarryRunningSums(const uint64_t (&carry)[kRowsPerLane],
                                                               int lane, MomentPair<Out>* rowCarry) {
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
  warpInclusiveScan2(incS, incQ, lane);
  const Out exS = incS - accS, exQ = incQ - accQ;
#pragma unroll
  for (int k = 0; k < kRowsPerLane; ++k)
    if (kRowsPerLane * lane + k < kTileHeight)
      rowCarry[kRowsPerLane * lane + k] = MomentPair<Out>{exS + cs[k], exQ + cq[k]};
  return MomentPair<Out>{__shfl_sync(kFullMask, incS, 31), __shfl_sync(kFullMask, incQ, 31)};
}

}  // namespace nccmatch::cuda::tile_scans

namespace nccmatch::cuda::narrow {

// The warp-local 2D prefix L of a lane's two columns (x and x+1) on each of the warp's rows.
template <int kRows>
struct WarpPrefix {
  uint32_t s0[kRows], s1[kRows], q0[kRows], q1[kRows];
};

// Row scans across the warp, then running column sums down the warp's rows. Lane 31 hands each
// row's packed totals to rowTotal(i, packed); colTotal gets the lane's column totals over the
// warp's rows, {s0, q0, s1, q1}.
template <int kRows, typename RowTotal>
__device__ __forceinline__ void scanPixelPairs(const uint32_t (&pa)[kRows], const uint32_t (&pb)[kRows], int lane,
                                               WarpPrefix<kRows>& L, uint4& colTotal, RowTotal&& rowTotal) {
  uint32_t runS0 = 0, runS1 = 0, runQ0 = 0, runQ1 = 0;
#pragma unroll
  for (int i = 0; i < kRows; ++i) {
    const uint32_t a = pa[i], b = pb[i], bb = b * b;
    const uint32_t s = a + b, q = a * a + bb;
    uint32_t is = s, iq = q;
    tile_scans::warpInclusiveScan2(is, iq, lane);
    runS0 += is - b;
    runS1 += is;
    runQ0 += iq - bb;
    runQ1 += iq;
    L.s0[i] = runS0;
    L.s1[i] = runS1;
    L.q0[i] = runQ0;
    L.q1[i] = runQ1;
    if (lane == 31) rowTotal(i, (uint64_t(is) << tile_scans::kRowSumShift) | iq);
  }
  colTotal = make_uint4(runS0, runQ0, runS1, runQ1);
}

// Per lane, the column totals {s0, q0, s1, q1} of the tile's first `warps` warps.
template <int kWarps>
__device__ __forceinline__ void sumWarpColumnTotals(const uint4 (&colTotal)[kWarps][32], int lane, int warps,
                                                    uint32_t& s0, uint32_t& q0, uint32_t& s1, uint32_t& q1) {
#pragma unroll
  for (int w = 0; w < kWarps; ++w) {
    if (w < warps) {
      const uint4 c = colTotal[w][lane];
      s0 += c.x;
      q0 += c.y;
      s1 += c.z;
      q1 += c.w;
    }
  }
}

// Where the warp's rows start inside the tile, per lane: the column totals of the warps above.
struct ColumnOffsets {
  uint32_t s0, q0, s1, q1;
};
template <int kWarps>
__device__ __forceinline__ ColumnOffsets columnOffsets(const uint4 (&colTotal)[kWarps][32], int lane, int warp) {
  ColumnOffsets o{0, 0, 0, 0};
  sumWarpColumnTotals(colTotal, lane, warp, o.s0, o.q0, o.s1, o.q1);
  return o;
}

}  // namespace nccmatch::cuda::narrow

namespace nccmatch::cuda::wide {

// The warp-local 2D prefix L of a lane's kPx columns of each chunk on each of the warp's rows.
template <int kRows, int kChunks, int kPx>
struct WarpPrefix {
  uint32_t s[kRows][kChunks][kPx], q[kRows][kChunks][kPx];
};

// Row prefixes (serial inside the lane, one warp scan per chunk, chunks chained by their totals),
// then running column sums down the warp's rows. Each row's totals go to rowTotal(i, sum, sumSq)
// on every lane; colTotal[x] gets the column totals {s, q} over the warp's rows.
template <int kPx, int kChunks, int kRows, typename RowTotal>
__device__ __forceinline__ void scanPixelChunks(const uint32_t (&pix)[kRows][kChunks], int lane,
                                                WarpPrefix<kRows, kChunks, kPx>& L, uint2* colTotal,
                                                RowTotal&& rowTotal) {
  constexpr int kChunkWidth = 32 * kPx;
  uint32_t runS[kChunks][kPx], runQ[kChunks][kPx];
#pragma unroll
  for (int c = 0; c < kChunks; ++c)
#pragma unroll
    for (int j = 0; j < kPx; ++j) runS[c][j] = runQ[c][j] = 0;
#pragma unroll
  for (int i = 0; i < kRows; ++i) {
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
      const uint32_t totS = __shfl_sync(tile_scans::kFullMask, is, 31);
      const uint32_t totQ = __shfl_sync(tile_scans::kFullMask, iq, 31);
      const uint32_t baseS = offS + is - accS, baseQ = offQ + iq - accQ;
#pragma unroll
      for (int j = 0; j < kPx; ++j) {
        runS[c][j] += baseS + ps[j];
        runQ[c][j] += baseQ + pq[j];
        L.s[i][c][j] = runS[c][j];
        L.q[i][c][j] = runQ[c][j];
      }
      offS += totS;
      offQ += totQ;
    }
    rowTotal(i, offS, offQ);
  }
#pragma unroll
  for (int c = 0; c < kChunks; ++c)
#pragma unroll
    for (int j = 0; j < kPx; ++j) colTotal[c * kChunkWidth + kPx * lane + j] = make_uint2(runS[c][j], runQ[c][j]);
}

}  // namespace nccmatch::cuda::wide
