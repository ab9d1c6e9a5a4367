// Warp scans shared by the fused SAT kernels (64-column and wide tiles): the packed row-sum word
// both publish, the two-moment warp scan, and HC(y), the running sum of a tile's row carries.
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
