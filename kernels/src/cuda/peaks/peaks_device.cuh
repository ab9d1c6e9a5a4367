// Device helpers of peak finding shared by the peak kernels and the score kernels that hand
// over per-block bests and threshold candidates (the candidate order of rules/peak_rules.hpp).
#pragma once

#include "cuda/peaks/peaks_kernels.hpp"
#include "rules/peak_rules.hpp"

namespace nccmatch::cuda {

// The rules' candidate order (rankedBefore) over linear indices; index -1 (none) ranks last.
__device__ inline bool better(const Ranked& a, const Ranked& b) {
  if (b.index < 0) return a.index >= 0;
  if (a.index < 0) return false;
  return rankedBefore(a.goodness, a.index, b.goodness, b.index);
}

__device__ inline Ranked warpBest(Ranked r) {
  for (int offset = 16; offset > 0; offset >>= 1) {
    Ranked o;
    o.goodness = __shfl_down_sync(0xffffffffu, r.goodness, offset);
    o.index = __shfl_down_sync(0xffffffffu, r.index, offset);
    if (better(o, r)) r = o;
  }
  return r;
}

// Position in a block of any shape (1-D, 2-D or 3-D), in the order warps are formed.
__device__ inline int linearThread() {
  return (threadIdx.z * blockDim.y + threadIdx.y) * blockDim.x + threadIdx.x;
}

// The block's best in thread 0 (the other threads' return value is not the block's): one barrier,
// which also orders every thread's earlier stores before what thread 0 does next. All threads of
// the block must call it; the block holds whole warps; between two calls the block passes a
// barrier (the second rewrites the first's per-warp bests). kCount: also the sum of the warps'
// `count`s (each the same in all lanes of its warp) into *blockCount of thread 0 (a variable of
// each thread's own: warp 0's other lanes write partial sums to theirs), at the same barrier.
template <bool kCount>
__device__ inline Ranked blockBestInThread0Of(Ranked r, int count, int* blockCount) {
  __shared__ Ranked perWarp[32];
  __shared__ int perWarpCount[kCount ? 32 : 1];
  const int tid = linearThread();
  const int lane = tid & 31, warp = tid >> 5;
  r = warpBest(r);
  if (lane == 0) {
    perWarp[warp] = r;
    if constexpr (kCount) perWarpCount[warp] = count;
  }
  __syncthreads();
  if (warp == 0) {
    const int warps = int(blockDim.x * blockDim.y * blockDim.z + 31) >> 5;
    r = warpBest(lane < warps ? perWarp[lane] : Ranked{0.0, -1});
    if constexpr (kCount) {
      int sum = lane < warps ? perWarpCount[lane] : 0;
#pragma unroll
      for (int offset = 16; offset > 0; offset >>= 1) sum += __shfl_down_sync(0xffffffffu, sum, offset);
      *blockCount = sum;
    }
  }
  return r;
}

__device__ inline Ranked blockBestInThread0(Ranked r) { return blockBestInThread0Of<false>(r, 0, nullptr); }

// The block's best and its warps' counts summed, both in thread 0, with one barrier.
__device__ inline Ranked blockBestAndCountInThread0(Ranked r, int count, int* blockCount) {
  return blockBestInThread0Of<true>(r, count, blockCount);
}

// The block's best, returned to every thread. All threads of the block must call it; the block
// holds whole warps.
__device__ inline Ranked blockBest(Ranked r) {
  __shared__ Ranked result;
  r = blockBestInThread0(r);
  if (linearThread() == 0) result = r;
  __syncthreads();
  Ranked out = result;
  __syncthreads();  // result may be rewritten by the next call
  return out;
}

// Appends `index` to list[] for every lane where `take` holds, one atomic per warp. All lanes
// of the warp must call it.
__device__ inline void appendWarp(bool take, int index, int* list, int* count) {
  const unsigned mask = __ballot_sync(0xffffffffu, take);
  if (mask == 0) return;
  const int lane = linearThread() & 31;
  const int leader = __ffs(mask) - 1;
  int base = 0;
  if (lane == leader) base = atomicAdd(count, __popc(mask));
  base = __shfl_sync(0xffffffffu, base, leader);
  if (take) list[base + __popc(mask & ((1u << lane) - 1u))] = index;
}

}  // namespace nccmatch::cuda
