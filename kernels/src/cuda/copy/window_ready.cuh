// The gather's row flags (WindowRowsReady, window_gather.hpp) on both sides: the gather's blocks
// raise one flag each once their rows are in device memory; a kernel launched overlapping the
// gather waits for the flags of the rows it reads instead of for the gather's end, so a window's
// first tiles are scored while the last rows of the windows still come over the bus.
#pragma once

#include "cuda/copy/window_gather.hpp"
#include "cuda/dependent_launch.cuh"

namespace nccmatch::cuda {

// In the gather, by every thread of block (copy, rowBlock) after its stores: the block's stores
// are ordered before thread 0's release of the flag by the barrier.
__device__ __forceinline__ void signalRowsGathered(const WindowRowsReady& ready, int copy, int rowBlock) {
  __syncthreads();
  if (threadIdx.x == 0) {
    unsigned* flag = ready.flags + std::size_t(copy) * ready.stride + rowBlock;
    __threadfence();
    asm volatile("st.release.gpu.global.u32 [%0], %1;" ::"l"(flag), "r"(ready.generation) : "memory");
  }
}

__device__ __forceinline__ unsigned loadAcquire(const unsigned* flag) {
  unsigned v;
  asm volatile("ld.acquire.gpu.global.u32 %0, [%1];" : "=r"(v) : "l"(flag) : "memory");
  return v;
}

// How many polls (with a short sleep between) a flag gets before the block falls back to waiting
// for the gather's end: a flag is normally raised within microseconds; under a slow tool it may
// take longer, and the fallback is exact anyway.
constexpr int kReadyPolls = 1 << 14;

// In the reading kernel, by every thread of the block, before it reads rows firstRow..lastRow of
// copy `copy`: the first threads each poll one row block's flag (acquire), and the barrier orders
// every thread's later reads after them. A flag still not raised after kReadyPolls: the whole
// block waits for the gather grid's end instead (griddepcontrol.wait: exact without flags too).
__device__ __forceinline__ void waitForRowsGathered(const WindowRowsReady& ready, int copy, int firstRow,
                                                    int lastRow) {
  const int first = firstRow / kGatherRowsPerBlock, last = lastRow / kGatherRowsPerBlock;
  bool late = false;
  for (int b = first + int(threadIdx.x); b <= last; b += int(blockDim.x)) {
    const unsigned* flag = ready.flags + std::size_t(copy) * ready.stride + b;
    for (int poll = 0; loadAcquire(flag) != ready.generation; ++poll) {
      if (poll == kReadyPolls) {
        late = true;
        break;
      }
      __nanosleep(64);
    }
    if (late) break;
  }
  if (__syncthreads_or(late)) waitForPreviousGrid();
}

}  // namespace nccmatch::cuda
