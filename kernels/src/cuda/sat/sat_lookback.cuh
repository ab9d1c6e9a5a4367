// Decoupled look-back plumbing shared by the dlb and fused SAT builds: tile tickets, epoch-stamped
// tile flags with release/acquire ordering, and the scratch that holds them.
//
// Tiles are handed out from an atomic ticket counter, not blockIdx, so a tile only ever waits on
// tiles whose blocks already run: the look-back cannot deadlock. The counter resets itself (the
// block that draws the last ticket zeroes it), and flags carry the build's epoch, so no per-frame
// memset is needed: a flag left by an earlier build reads as "not ready".
#pragma once

#include <cuda/atomic>
#include <cuda_runtime.h>

#include <cstdint>
#include <memory>

#include "cuda/cuda_check.hpp"

namespace nccmatch::cuda {

enum : uint32_t { kFlagAggregate = 1, kFlagPrefix = 2 };

// A pair of moments (sum of I, sum of I^2), aligned so one vector access moves both.
template <typename T>
struct alignas(2 * sizeof(T)) MomentPair {
  T s, q;
};

__device__ __forceinline__ uint32_t flagStamp(uint32_t epoch, uint32_t state) {
  return (epoch << 2) | state;
}

__device__ __forceinline__ void publishFlag(uint32_t* flag, uint32_t epoch, uint32_t state) {
  ::cuda::atomic_ref<uint32_t, ::cuda::thread_scope_device> ref(*flag);
  ref.store(flagStamp(epoch, state), ::cuda::memory_order_release);
}

// Spins until the tile behind `flag` has published in this epoch; returns its state.
__device__ __forceinline__ uint32_t waitForFlag(uint32_t* flag, uint32_t epoch) {
  ::cuda::atomic_ref<uint32_t, ::cuda::thread_scope_device> ref(*flag);
  uint32_t f = ref.load(::cuda::memory_order_acquire);
  while ((f >> 2) != epoch) f = ref.load(::cuda::memory_order_acquire);
  return f & 3u;
}

// Called by one thread per block. The block drawing the last ticket of the launch zeroes the
// counter: every other block has drawn already, and the next launch on the stream starts at 0.
__device__ __forceinline__ uint32_t drawTicket(uint32_t* counter, uint32_t numTiles) {
  const uint32_t t = atomicAdd(counter, 1u);
  if (t == numTiles - 1) atomicExch(counter, 0u);
  return t;
}

// Self-validating carry words: a 12-bit build stamp above a 52-bit payload. A reader that sees
// this build's stamp in a word has the word's value; no flag and no fence are involved, so a
// look-back step costs one load. Each word is written once per build; stamps cycle through
// 1..kStampLimit-1 and the words are cleared when the cycle restarts.
constexpr uint32_t kStampLimit = 1u << 12;
constexpr int kStampShift = 52;
constexpr uint64_t kPayloadMask = (uint64_t(1) << kStampShift) - 1;

__device__ __forceinline__ void storeStamped(uint64_t* word, uint64_t payload, uint32_t stamp) {
  ::cuda::atomic_ref<uint64_t, ::cuda::thread_scope_device> ref(*word);
  ref.store((uint64_t(stamp) << kStampShift) | payload, ::cuda::memory_order_relaxed);
}
// Returns true and the payload when the word carries `stamp`.
__device__ __forceinline__ bool loadStamped(uint64_t* word, uint32_t stamp, uint64_t* payload) {
  ::cuda::atomic_ref<uint64_t, ::cuda::thread_scope_device> ref(*word);
  const uint64_t w = ref.load(::cuda::memory_order_relaxed);
  *payload = w & kPayloadMask;
  return (w >> kStampShift) == stamp;
}

// Two adjacent stamped words (16-byte aligned) in one access. Each word is still single-copy
// atomic and carries its own stamp, so a reader validates each word separately.
__device__ __forceinline__ ulonglong2 loadStampedPair(const uint64_t* words) {
  ulonglong2 v;
  asm volatile("ld.relaxed.gpu.global.v2.u64 {%0, %1}, [%2];" : "=l"(v.x), "=l"(v.y) : "l"(words) : "memory");
  return v;
}
__device__ __forceinline__ void storeStampedPair(uint64_t* words, uint64_t a, uint64_t b, uint32_t stamp) {
  const uint64_t s = uint64_t(stamp) << kStampShift;
  asm volatile("st.relaxed.gpu.global.v2.u64 [%0], {%1, %2};" ::"l"(words), "l"(s | a), "l"(s | b) : "memory");
}
__device__ __forceinline__ uint64_t loadWord(const uint64_t* word) {
  uint64_t v;
  asm volatile("ld.relaxed.gpu.global.u64 %0, [%1];" : "=l"(v) : "l"(word) : "memory");
  return v;
}
__device__ __forceinline__ bool hasStamp(uint64_t word, uint32_t stamp) { return (word >> kStampShift) == stamp; }

struct CudaFreeDeleter {
  void operator()(void* p) const { faults::freeDevice(p); }
};
using DeviceMemory = std::unique_ptr<void, CudaFreeDeleter>;

inline Status allocateDevice(std::size_t bytes, DeviceMemory* out) {
  void* p = nullptr;
  NCC_CUDA_CHECK(faults::allocateDevice(&p, bytes < 1 ? 1 : bytes));
  out->reset(p);
  return Status();
}

// Tile flags (`arrays` arrays of `tiles` flags) and the ticket counter, zeroed once at creation.
class LookbackFlags {
 public:
  Status create(std::size_t tiles, int arrays) {
    tiles_ = tiles;
    arrays_ = arrays;
    NCC_RETURN_IF_ERROR(allocateDevice(bytes(), &memory_));
    NCC_CUDA_CHECK(cudaMemset(memory_.get(), 0, bytes()));
    return Status();
  }
  // The epoch for the next build. Epochs use 30 bits; on wrap-around (once per 2^30 builds) the
  // flags are cleared so that no stale flag can match.
  Status nextEpoch(cudaStream_t stream, uint32_t* epoch) {
    if (++epoch_ >= (1u << 30)) {
      epoch_ = 1;
      NCC_CUDA_CHECK(cudaMemsetAsync(memory_.get(), 0, bytes(), stream));
    }
    *epoch = epoch_;
    return Status();
  }
  uint32_t* ticket() const { return static_cast<uint32_t*>(memory_.get()); }
  uint32_t* flags(int array) const { return ticket() + 1 + std::size_t(array) * tiles_; }

 private:
  std::size_t bytes() const { return (1 + std::size_t(arrays_) * tiles_) * sizeof(uint32_t); }
  DeviceMemory memory_;
  std::size_t tiles_ = 0;
  int arrays_ = 0;
  uint32_t epoch_ = 0;
};

}  // namespace nccmatch::cuda
