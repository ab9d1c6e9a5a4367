// The Hopper integer tensor-core instruction the GEMM bank uses on sm_90a: wgmma, issued by a
// warpgroup (4 consecutive warps), A and B from shared memory through matrix descriptors, D in
// registers. D (64 x N, s32) += A (64 x 32, u8, K-major) * B (32 x N, u8 or s8, K-major), exact.
// Lane (g, t) = (lane / 4, lane % 4) of warp w of the warpgroup holds, for n-tile i, rows
// 16w + g (d[4i], d[4i+1]) and 16w + g + 8 (d[4i+2], d[4i+3]) at columns 8i + 2t, 8i + 2t + 1:
// per warp the layout of mma.sync's m16n8 D fragments (mma_u8.cuh).
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

namespace nccmatch::cuda {

// A matrix descriptor without swizzling: the matrix is made of core matrices of 8 rows x 16 bytes
// (128 contiguous bytes); `leading` bytes between core matrices neighbouring in K, `stride` bytes
// between those neighbouring in M (or N). Shared-memory address, both offsets multiples of 16.
// The low word (address and leading offset) and the high word (stride) apart: a loop that
// steps through the matrix adds to the low word alone.
__device__ __forceinline__ uint32_t wgmmaDescriptorLow(uint32_t address, uint32_t leading) {
  return ((address & 0x3ffff) >> 4) | ((leading >> 4) << 16);
}
__device__ __forceinline__ uint64_t wgmmaDescriptor(uint32_t low, uint32_t stride) {
  return uint64_t(low) | (uint64_t(stride >> 4) << 32);
}
__device__ __forceinline__ uint64_t wgmmaDescriptor(uint32_t address, uint32_t leading, uint32_t stride) {
  return wgmmaDescriptor(wgmmaDescriptorLow(address, leading), stride);
}

// Orders the warpgroup's register accesses before the wgmma that follow (before the first of a
// sequence whose accumulators other instructions wrote).
__device__ __forceinline__ void wgmmaFence() { asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory"); }
// Closes the wgmma issued so far into a group and waits until all groups are done.
__device__ __forceinline__ void wgmmaCommitAndWait() {
  asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory");
  asm volatile("wgmma.wait_group.sync.aligned 0;\n" ::: "memory");
}
// Makes this thread's ordinary shared-memory writes visible to the tensor cores' reads (before
// the barrier after which wgmma reads them).
__device__ __forceinline__ void fenceSharedForTensorCores() {
  asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");
}

// D += A * B for N = 16, 32, 64 (accumulators always added: zero them before the first); B s8
// where kSignedB (the GEMM bank's zero-mean templates). One asm statement a shape, its B type
// spliced in (NCC_WGMMA_U8: the shape, the D registers' operand list, their count).
#define NCC_WGMMA_U8(SHAPE, DREGS, COUNT, BTYPE, ...)                                                  \
  asm volatile("{\n.reg .pred add;\nsetp.ne.b32 add, 1, 0;\nwgmma.mma_async.sync.aligned." SHAPE          \
               ".s32.u8." BTYPE " " DREGS ", %" #COUNT ", %" NCC_WGMMA_NEXT_##COUNT ", add;\n}\n"        \
               : __VA_ARGS__                                                                           \
               : "l"(a), "l"(b))
#define NCC_WGMMA_NEXT_8 "9"
#define NCC_WGMMA_NEXT_16 "17"
#define NCC_WGMMA_NEXT_32 "33"

#define NCC_WGMMA_D8 "{%0,%1,%2,%3,%4,%5,%6,%7}"
#define NCC_WGMMA_OUT8 "+r"(d[0]), "+r"(d[1]), "+r"(d[2]), "+r"(d[3]), "+r"(d[4]), "+r"(d[5]), "+r"(d[6]), "+r"(d[7])
#define NCC_WGMMA_D16 "{%0,%1,%2,%3,%4,%5,%6,%7,%8,%9,%10,%11,%12,%13,%14,%15}"
#define NCC_WGMMA_OUT16 "+r"(d[0]), "+r"(d[1]), "+r"(d[2]), "+r"(d[3]), "+r"(d[4]), "+r"(d[5]), "+r"(d[6]), "+r"(d[7]), "+r"(d[8]), "+r"(d[9]), "+r"(d[10]), "+r"(d[11]), "+r"(d[12]), "+r"(d[13]), "+r"(d[14]), "+r"(d[15])
#define NCC_WGMMA_D32 "{%0,%1,%2,%3,%4,%5,%6,%7,%8,%9,%10,%11,%12,%13,%14,%15,%16,%17,%18,%19,%20,%21,%22,%23,%24,%25,%26,%27,%28,%29,%30,%31}"
#define NCC_WGMMA_OUT32 "+r"(d[0]), "+r"(d[1]), "+r"(d[2]), "+r"(d[3]), "+r"(d[4]), "+r"(d[5]), "+r"(d[6]), "+r"(d[7]), "+r"(d[8]), "+r"(d[9]), "+r"(d[10]), "+r"(d[11]), "+r"(d[12]), "+r"(d[13]), "+r"(d[14]), "+r"(d[15]), "+r"(d[16]), "+r"(d[17]), "+r"(d[18]), "+r"(d[19]), "+r"(d[20]), "+r"(d[21]), "+r"(d[22]), "+r"(d[23]), "+r"(d[24]), "+r"(d[25]), "+r"(d[26]), "+r"(d[27]), "+r"(d[28]), "+r"(d[29]), "+r"(d[30]), "+r"(d[31])

template <bool kSignedB = false>
__device__ __forceinline__ void wgmmaU8N16(uint32_t (&d)[8], uint64_t a, uint64_t b) {
  if constexpr (kSignedB) NCC_WGMMA_U8("m64n16k32", NCC_WGMMA_D8, 8, "s8", NCC_WGMMA_OUT8);
  else NCC_WGMMA_U8("m64n16k32", NCC_WGMMA_D8, 8, "u8", NCC_WGMMA_OUT8);
}

template <bool kSignedB = false>
__device__ __forceinline__ void wgmmaU8N32(uint32_t (&d)[16], uint64_t a, uint64_t b) {
  if constexpr (kSignedB) NCC_WGMMA_U8("m64n32k32", NCC_WGMMA_D16, 16, "s8", NCC_WGMMA_OUT16);
  else NCC_WGMMA_U8("m64n32k32", NCC_WGMMA_D16, 16, "u8", NCC_WGMMA_OUT16);
}

template <bool kSignedB = false>
__device__ __forceinline__ void wgmmaU8N64(uint32_t (&d)[32], uint64_t a, uint64_t b) {
  if constexpr (kSignedB) NCC_WGMMA_U8("m64n64k32", NCC_WGMMA_D32, 32, "s8", NCC_WGMMA_OUT32);
  else NCC_WGMMA_U8("m64n64k32", NCC_WGMMA_D32, 32, "u8", NCC_WGMMA_OUT32);
}

#undef NCC_WGMMA_D8
#undef NCC_WGMMA_OUT8
#undef NCC_WGMMA_D16
#undef NCC_WGMMA_OUT16
#undef NCC_WGMMA_D32
#undef NCC_WGMMA_OUT32
#undef NCC_WGMMA_U8
#undef NCC_WGMMA_NEXT_8
#undef NCC_WGMMA_NEXT_16
#undef NCC_WGMMA_NEXT_32

}  // namespace nccmatch::cuda
