// Windows of a frame the device can address (a host frame in pinned or registered memory, read
// over the bus) gathered into device memory by one kernel: every window's rows in flight at once,
// each byte read once, so that the scoring kernels then read device memory. The scoring kernels'
// own tile loads over the bus keep few reads in flight and read the rows a tile shares with its
// neighbours again (bench_track: matchRegions on a pinned frame).
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>

#include "nccmatch/status.hpp"

namespace nccmatch::cuda {

// One window's copy (an array of these in device memory or mapped host memory).
struct WindowCopy {
  const uint8_t* source = nullptr;  // device address of the window's first pixel (any alignment)
  std::size_t sourcePitch = 0;      // bytes between its rows
  uint8_t* target = nullptr;        // device, 16-byte aligned
  std::size_t targetPitch = 0;      // a multiple of 16, at least `width`
  int width = 0, height = 0;
};

// Up to this many copies travel in the kernel's parameters (a tracker's windows): none is read
// over the bus before the pixels.
constexpr int kInlineWindowCopies = 32;

// Copies each window's `width` x `height` bytes on `stream` (never syncs); the bytes of a target
// row past `width`, up to its 16-byte boundary, are written too (the source bytes past the
// window, or zeros). copies: `count` descriptors in device or mapped host memory; hostCopies
// (optional): the same in host memory, passed to the kernel in its parameters when there are at
// most kInlineWindowCopies (then `copies` is not read). maxHeight the tallest window. The source
// is read in 16-byte aligned blocks, never outside the window's first to last byte. A kernel
// launched after it overlapping it (dependent_launch.cuh) may start while it runs.
Status gatherWindows(const WindowCopy* copies, const WindowCopy* hostCopies, int count, int maxHeight,
                     cudaStream_t stream);

}  // namespace nccmatch::cuda
