// Summed-area tables: unbordered, inclusive, int64.
// S(x,y) = sum of I over [0..x] x [0..y]; Q the same over I^2.
#pragma once

#include <cstddef>
#include <cstdint>

#include "nccmatch/status.hpp"

#if defined(__CUDACC__)
#define NCC_HOST_DEVICE __host__ __device__
#else
#define NCC_HOST_DEVICE
#endif

namespace nccmatch {

// Sum over the box [x0, x1) x [y0, y1) of a W-wide table, edges outside the table read as zero.
// Works for any integer table type (int64 tables, or uint32 tables in wrap-around arithmetic).
template <typename T>
NCC_HOST_DEVICE inline T satBox(const T* S, int W, int x0, int y0, int x1, int y1) {
  const std::ptrdiff_t w = W;
  T D = S[(y1 - 1) * w + (x1 - 1)];
  T B = (y0 > 0) ? S[(y0 - 1) * w + (x1 - 1)] : T(0);
  T C = (x0 > 0) ? S[(y1 - 1) * w + (x0 - 1)] : T(0);
  T A = (x0 > 0 && y0 > 0) ? S[(y0 - 1) * w + (x0 - 1)] : T(0);
  return D - B - C + A;
}

// CPU build of both tables from an 8-bit image with a row stride in bytes. S and Q hold W*H
// entries each (dense, row pitch W). This is the exact reference the GPU builds are tested against.
Status buildSatCpu(const uint8_t* image, std::size_t stride, int width, int height, int64_t* S,
                   int64_t* Q);

}  // namespace nccmatch
