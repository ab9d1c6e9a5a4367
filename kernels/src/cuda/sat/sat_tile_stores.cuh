// Table stores shared by the fused SAT kernels: one or two adjacent entries of a row, optionally
// streaming (st.global.cs, evict-first: the tables are not read again by the build).
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

namespace nccmatch::cuda {

template <bool kStreaming>
__device__ __forceinline__ void storeOne(int64_t* p, int64_t v) {
  if constexpr (kStreaming) __stcs(reinterpret_cast<long long*>(p), static_cast<long long>(v));
  else *p = v;
}
template <bool kStreaming>
__device__ __forceinline__ void storeOne(uint32_t* p, uint32_t v) {
  if constexpr (kStreaming) __stcs(reinterpret_cast<unsigned int*>(p), v);
  else *p = v;
}
template <bool kStreaming>
__device__ __forceinline__ void storeTwo(int64_t* p, int64_t a, int64_t b) {
  const longlong2 v = make_longlong2(a, b);
  if constexpr (kStreaming) __stcs(reinterpret_cast<longlong2*>(p), v);
  else *reinterpret_cast<longlong2*>(p) = v;
}
template <bool kStreaming>
__device__ __forceinline__ void storeTwo(uint32_t* p, uint32_t a, uint32_t b) {
  const uint2 v = make_uint2(a, b);
  if constexpr (kStreaming) __stcs(reinterpret_cast<uint2*>(p), v);
  else *reinterpret_cast<uint2*>(p) = v;
}

template <bool kStreaming>
__device__ __forceinline__ void storeFour(int64_t* p, int64_t a, int64_t b, int64_t c, int64_t d) {
  storeTwo<kStreaming>(p, a, b);
  storeTwo<kStreaming>(p + 2, c, d);
}
template <bool kStreaming>
__device__ __forceinline__ void storeFour(uint32_t* p, uint32_t a, uint32_t b, uint32_t c, uint32_t d) {
  const uint4 v = make_uint4(a, b, c, d);
  if constexpr (kStreaming) __stcs(reinterpret_cast<uint4*>(p), v);
  else *reinterpret_cast<uint4*>(p) = v;
}

// Entries x and x+1 of a row, each only where it lies inside the image.
template <bool kStreaming, typename Out>
__device__ __forceinline__ void storeRowPair(Out* row, int x, int width, bool vector, Out a, Out b) {
  if (vector && x + 1 < width) {
    storeTwo<kStreaming>(row + x, a, b);
  } else {
    if (x < width) storeOne<kStreaming>(row + x, a);
    if (x + 1 < width) storeOne<kStreaming>(row + x + 1, b);
  }
}

// Entries x .. x+3 of a row (x a multiple of 4): one 16-byte-aligned group when `quad` (the row's
// entry x is aligned to the group's access size), else pairs or single entries.
template <bool kStreaming, typename Out>
__device__ __forceinline__ void storeRowQuad(Out* row, int x, int width, bool vector, bool quad, Out a, Out b, Out c,
                                             Out d) {
  if (quad && x + 3 < width) {
    storeFour<kStreaming>(row + x, a, b, c, d);
  } else {
    storeRowPair<kStreaming>(row, x, width, vector, a, b);
    storeRowPair<kStreaming>(row, x + 2, width, vector, c, d);
  }
}

}  // namespace nccmatch::cuda
