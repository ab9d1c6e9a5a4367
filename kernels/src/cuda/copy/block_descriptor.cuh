// A kernel's per-block descriptor read once for the whole block: the list may lie in mapped host
// memory (RegionSearch's pinned work area, read over the bus without a copy first), where every
// thread loading the struct field by field would send each field's read over the bus once a warp;
// a short list travels in the kernel's parameters instead (DescriptorParam), read in the constant
// bank: no round trip over the bus before a block can start its work.
#pragma once

#include <cstdint>
#include <cstring>

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

// A kernel parameter (`const __grid_constant__`) naming a launch's descriptors: up to kInline of
// them held in the parameter itself, more read from `list` (device or mapped host memory).
template <typename T, int kInline>
struct DescriptorParam {
  const T* list = nullptr;
  int inlined = 0;  // descriptors in `items` (0: read `list`)
  T items[kInline];

  // `count` descriptors at `list`; `host` (optional) the same ones in host memory, copied into the
  // parameter when they fit.
  static DescriptorParam of(const T* list, const T* host, int count) {
    DescriptorParam p;
    p.list = list;
    if (host != nullptr && count > 0 && count <= kInline) {
      std::memcpy(p.items, host, sizeof(T) * std::size_t(count));
      p.inlined = count;
    }
    return p;
  }

  // Descriptor i (a generic address: in the parameter space or in `list`).
  __device__ __forceinline__ const T* at(int i) const { return inlined > 0 ? items + i : list + i; }
};

}  // namespace nccmatch::cuda
