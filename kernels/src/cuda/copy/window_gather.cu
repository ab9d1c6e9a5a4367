#include "cuda/copy/window_gather.hpp"

#include "common/integer_math.hpp"
#include "cuda/copy/block_descriptor.cuh"
#include "cuda/cuda_check.hpp"
#include "cuda/dependent_launch.cuh"
#include "cuda/numerator/chunk_shift.hpp"

namespace nccmatch::cuda {

namespace {

constexpr int kThreads = 64;      // one block: kRowsPerBlock rows of a window
constexpr int kRowsPerBlock = 8;  // 128-pixel rows: one 16-byte chunk a thread

using WindowCopies = DescriptorParam<WindowCopy, kInlineWindowCopies>;
static_assert(sizeof(WindowCopies) <= 4096, "every architecture and driver takes 4 KB of kernel parameters");

// Loads the 16-byte aligned block at `p`.
__device__ __forceinline__ void loadBlock(const uint8_t* p, uint32_t (&words)[4]) {
  const uint4 v = *reinterpret_cast<const uint4*>(p);
  words[0] = v.x;
  words[1] = v.y;
  words[2] = v.z;
  words[3] = v.w;
}

// Sixteen bytes from `source` (any alignment), of which the first `needed` are used, read as
// one or two aligned 16-byte blocks where those lie between the window's first and last byte
// (`first`, `last`: inside the allocation, whatever its size and alignment), else byte by byte
// (a window's first chunk before its first byte, or its last chunk past its last).
__device__ __forceinline__ uint4 loadChunk(const uint8_t* source, int needed, const uint8_t* first,
                                           const uint8_t* last) {
  const unsigned shift = unsigned(reinterpret_cast<uintptr_t>(source) & 15u);
  const uint8_t* base = source - shift;
  const bool twoBlocks = int(shift) + needed > 16;
  uint32_t out[4];
  if (base >= first && base + (twoBlocks ? 31 : 15) <= last) {
    uint32_t lo[4], hi[4];
    loadBlock(base, lo);
    if (twoBlocks) loadBlock(base + 16, hi);
    else hi[0] = hi[1] = hi[2] = hi[3] = 0;
    image_tile::shiftChunk(lo, hi, shift, out);
  } else {
#pragma unroll
    for (int w = 0; w < 4; ++w) {
      uint32_t word = 0;
#pragma unroll
      for (int b = 0; b < 4; ++b)
        if (4 * w + b < needed) word |= uint32_t(source[4 * w + b]) << (8 * b);
      out[w] = word;
    }
  }
  return make_uint4(out[0], out[1], out[2], out[3]);
}

// Block (x, y): rows kRowsPerBlock * y .. of window x, every thread a 16-byte chunk at a time. The
// scoring kernel after it may be launched at once (it waits for this grid's end before its loads).
__global__ void __launch_bounds__(kThreads) gatherWindowsKernel(const __grid_constant__ WindowCopies copies) {
  allowDependentLaunch();
  const WindowCopy c = blockDescriptor(copies.at(int(blockIdx.x)));
  const int firstRow = blockIdx.y * kRowsPerBlock;
  if (firstRow >= c.height) return;
  const int rows = min(kRowsPerBlock, c.height - firstRow);
  const int chunks = (c.width + 15) / 16;
  const uint8_t* last = c.source + std::size_t(c.height - 1) * c.sourcePitch + std::size_t(c.width - 1);
  for (int i = threadIdx.x; i < rows * chunks; i += kThreads) {
    const int row = firstRow + i / chunks, chunk = i % chunks;
    const int x = 16 * chunk;
    const uint4 v = loadChunk(c.source + std::size_t(row) * c.sourcePitch + x, min(16, c.width - x), c.source, last);
    *reinterpret_cast<uint4*>(c.target + std::size_t(row) * c.targetPitch + x) = v;
  }
}

}  // namespace

Status gatherWindows(const WindowCopy* copies, const WindowCopy* hostCopies, int count, int maxHeight,
                     cudaStream_t stream) {
  if (count <= 0 || maxHeight <= 0) return Status();
  const dim3 grid(unsigned(count), unsigned(ceilDiv(maxHeight, kRowsPerBlock)));
  return launchKernel(gatherWindowsKernel, grid, dim3(kThreads), 0, stream, false,
                      WindowCopies::of(copies, hostCopies, count));
}

}  // namespace nccmatch::cuda
