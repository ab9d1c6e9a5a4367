// A kernel's per-block descriptor read once for the whole block: the list may lie in mapped host
// memory (RegionSearch's pinned work area, read over the bus without a copy first), where every
// thread loading the struct field by field would send each field's read over the bus once a warp.
#pragma once

#include <cstdint>

namespace nccmatch::cuda {

// Returns *source (device or mapped host memory, 8-byte aligned) to every thread: the block's first
// threads read it, one 8-byte word each, into shared memory, and the block waits for them. Every
// thread of the block calls it, once a kernel; T is trivially copyable.
template <typename T>
__device__ __forceinline__ T blockDescriptor(const T* source) {
  static_assert(sizeof(T) % 8 == 0 && alignof(T) >= 8, "a descriptor of whole 8-byte words");
  constexpr int kWords = int(sizeof(T) / 8);
  __shared__ uint64_t staged[kWords];
  const int t = int((threadIdx.z * blockDim.y + threadIdx.y) * blockDim.x + threadIdx.x);
  if (t < kWords) staged[t] = reinterpret_cast<const uint64_t*>(source)[t];
  __syncthreads();
  T out;
  memcpy(&out, staged, sizeof(T));
  return out;
}

}  // namespace nccmatch::cuda
