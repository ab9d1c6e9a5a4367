// Owning allocations of device memory (DeviceBuffer) and of pinned host memory (PinnedBuffer)
// that grow on demand and never shrink, so a stream of same-sized frames allocates nothing after
// the first. Movable, not copyable. Both allocate through the fault-injection hook.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <utility>

#include "cuda/cuda_check.hpp"
#include "cuda/fault_injection.hpp"

namespace nccmatch::cuda {

struct DeviceMemory {
  static cudaError_t allocate(void** data, std::size_t bytes) { return faults::allocateDevice(data, bytes); }
  static void free(void* data) { faults::freeDevice(data); }
};

struct PinnedMemory {
  static cudaError_t allocate(void** data, std::size_t bytes) {
    return faults::allocatePinned(data, bytes, cudaHostAllocDefault);
  }
  static void free(void* data) { faults::freePinned(data); }
};

template <typename Memory>
class Buffer {
 public:
  Buffer() = default;
  Buffer(const Buffer&) = delete;
  Buffer& operator=(const Buffer&) = delete;
  Buffer(Buffer&& other) noexcept { swap(other); }
  Buffer& operator=(Buffer&& other) noexcept {
    Buffer(std::move(other)).swap(*this);
    return *this;
  }
  ~Buffer() { release(); }

  // Makes room for at least `bytes`; the old contents are lost when it grows.
  Status reserve(std::size_t bytes) {
    if (bytes <= capacity_) return Status();
    release();
    NCC_CUDA_CHECK(Memory::allocate(&data_, bytes));
    capacity_ = bytes;
    return Status();
  }
  void release() {
    if (data_ != nullptr) Memory::free(data_);
    data_ = nullptr;
    capacity_ = 0;
  }
  template <typename T>
  T* as() const { return static_cast<T*>(data_); }
  std::size_t capacity() const { return capacity_; }

 private:
  void swap(Buffer& other) noexcept {
    std::swap(data_, other.data_);
    std::swap(capacity_, other.capacity_);
  }

  void* data_ = nullptr;
  std::size_t capacity_ = 0;
};

using DeviceBuffer = Buffer<DeviceMemory>;
using PinnedBuffer = Buffer<PinnedMemory>;

}  // namespace nccmatch::cuda
