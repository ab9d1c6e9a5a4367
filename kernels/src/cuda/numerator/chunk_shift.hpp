// Sixteen bytes that start anywhere, put together from the two 16-byte aligned blocks holding
// them: what a tile load reads where its chunk is not 16-byte aligned (a window at any x of a
// frame, a frame in host memory read over the bus), so that it takes two vector loads, not
// sixteen byte loads. Host and device code: the host tests check it byte for byte.
#pragma once

#include <cstdint>

#if defined(__CUDACC__)
#define NCC_CHUNK_FN __host__ __device__ __forceinline__
#else
#define NCC_CHUNK_FN inline
#endif
#if defined(__CUDA_ARCH__)  // the device pass (the host compiler knows no such pragma)
#define NCC_CHUNK_UNROLL _Pragma("unroll")
#else
#define NCC_CHUNK_UNROLL
#endif

namespace nccmatch::cuda::image_tile {

// Bytes shift .. shift+15 of the 32 bytes lo, hi (four little-endian words each; shift 0..15).
// Whole words first (by 2, then by 1), then the bytes within a word: every index is a constant,
// so the words stay in registers.
NCC_CHUNK_FN void shiftChunk(const uint32_t (&lo)[4], const uint32_t (&hi)[4], unsigned shift, uint32_t (&out)[4]) {
  uint32_t w[8] = {lo[0], lo[1], lo[2], lo[3], hi[0], hi[1], hi[2], hi[3]};
  const bool twoWords = (shift & 8) != 0, oneWord = (shift & 4) != 0;
NCC_CHUNK_UNROLL
  for (int i = 0; i < 6; ++i) w[i] = twoWords ? w[i + 2] : w[i];
NCC_CHUNK_UNROLL
  for (int i = 0; i < 5; ++i) w[i] = oneWord ? w[i + 1] : w[i];
  const unsigned bits = 8 * (shift & 3);
NCC_CHUNK_UNROLL
  for (int i = 0; i < 4; ++i) {
#if defined(__CUDA_ARCH__)
    out[i] = __funnelshift_r(w[i], w[i + 1], bits);  // one instruction; bits 0 gives w[i]
#else
    out[i] = bits == 0 ? w[i] : (w[i] >> bits) | (w[i + 1] << (32 - bits));
#endif
  }
}

}  // namespace nccmatch::cuda::image_tile

#undef NCC_CHUNK_FN
#undef NCC_CHUNK_UNROLL
