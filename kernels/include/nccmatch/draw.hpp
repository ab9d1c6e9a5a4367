// Match boxes drawn into an 8-bit plane that lives on the GPU (the luma plane of a frame in CUDA
// memory), with the same rings as the element draws on the CPU: a white ring kMatchRingThickness
// pixels wide on the box's edge and a black 1-pixel ring just inside it, clipped to the plane.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "nccmatch/status.hpp"

namespace nccmatch {

struct DrawBox {
  int x = 0;  // top-left corner
  int y = 0;
  int width = 0;
  int height = 0;
};

inline constexpr int kMatchRingThickness = 2;

// Draws every box into the device plane (stride in bytes, >= width) on `stream` (a cudaStream_t;
// null: the default stream of the current context) and waits for it. Boxes travel as kernel
// arguments: nothing is allocated. Only in builds with CUDA.
#ifdef NCCMATCH_HAVE_CUDA
Status drawMatchBoxesOnDevice(uint8_t* plane, int width, int height, std::size_t stride,
                              const std::vector<DrawBox>& boxes, void* stream = nullptr);
#endif

}  // namespace nccmatch
