// The integer tensor-core instructions the spatial numerators use: u8 x u8 (or u8 x s8) products
// summed in s32, exact.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

namespace nccmatch::cuda {

// D (16x8, s32) += A (16x32, u8, row) * B (32x8, u8, col).
// Lane (g, t) = (lane / 4, lane % 4) holds A rows g and g+8 at k 4t..4t+3 and 16+4t..16+4t+3
// (a.x: row g, a.y: row g+8, a.z: row g at +16, a.w: row g+8 at +16), B column g at the same k
// (b0, b1), and D rows g, g+8 at columns 2t, 2t+1 (d0, d1: row g; d2, d3: row g+8).
// kSignedB: B is s8 (the GEMM bank's zero-mean templates, rules/zero_mean_screen.hpp).
template <bool kSignedB = false>
__device__ inline void mmaU8(uint32_t (&d)[4], const uint4& a, uint32_t b0, uint32_t b1) {
  if constexpr (kSignedB)
    asm("mma.sync.aligned.m16n8k32.row.col.s32.u8.s8.s32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
        "{%0,%1,%2,%3};\n"
        : "+r"(d[0]), "+r"(d[1]), "+r"(d[2]), "+r"(d[3])
        : "r"(a.x), "r"(a.y), "r"(a.z), "r"(a.w), "r"(b0), "r"(b1));
  else
    asm("mma.sync.aligned.m16n8k32.row.col.s32.u8.u8.s32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
        "{%0,%1,%2,%3};\n"
        : "+r"(d[0]), "+r"(d[1]), "+r"(d[2]), "+r"(d[3])
        : "r"(a.x), "r"(a.y), "r"(a.z), "r"(a.w), "r"(b0), "r"(b1));
}

// The same with K = 16: A (16x16) in two registers, B (16x8) in one.
__device__ inline void mmaU8K16(uint32_t (&d)[4], const uint2& a, uint32_t b0) {
  asm("mma.sync.aligned.m16n8k16.row.col.s32.u8.u8.s32 {%0,%1,%2,%3}, {%4,%5}, {%6}, "
      "{%0,%1,%2,%3};\n"
      : "+r"(d[0]), "+r"(d[1]), "+r"(d[2]), "+r"(d[3])
      : "r"(a.x), "r"(a.y), "r"(b0));
}

}  // namespace nccmatch::cuda
