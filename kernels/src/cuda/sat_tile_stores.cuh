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

}  // namespace nccmatch::cuda
