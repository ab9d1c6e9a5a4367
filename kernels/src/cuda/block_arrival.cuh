// The last-block-done pattern of a grid: each block counts itself done on a device counter after
// its stores, and the block that counts last goes on to read every other block's stores (a
// reduction's last step). One thread fences and counts, after a barrier that
// followed the block's stores: a device-scope fence by every thread (a MEMBAR a warp) lengthened
// short kernels' last phase for nothing.
#pragma once

#include <cuda_runtime.h>

namespace nccmatch::cuda {

// Called by one thread of the block, after its own stores or a barrier that followed the block's:
// the fence makes those stores (ordered before this thread's by the barrier) visible to the other
// blocks before the count; for the block that counts the `total`-th (returned true), the second
// fence makes the other blocks' stores visible to this block's threads after a barrier (they read
// them bypassing L1: __ldcg).
__device__ __forceinline__ bool countBlockDone(unsigned* counter, unsigned total) {
  __threadfence();
  const bool last = atomicAdd(counter, 1u) == total - 1;
  if (last) __threadfence();
  return last;
}

}  // namespace nccmatch::cuda
