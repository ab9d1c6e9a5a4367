// Owning device and pinned-host allocations that grow on demand and never shrink, so a stream
// of same-sized frames allocates nothing after the first.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>

#include "cuda/cuda_check.hpp"

namespace nccmatch::cuda {

class DeviceBuffer {
 public:
  DeviceBuffer() = default;
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
  ~DeviceBuffer() { release(); }

  // Makes room for at least `bytes`; the old contents are lost when it grows.
  Status reserve(std::size_t bytes) {
    if (bytes <= capacity_) return Status();
    release();
    NCC_CUDA_CHECK(cudaMalloc(&data_, bytes));
    capacity_ = bytes;
    return Status();
  }
  void release() {
    if (data_ != nullptr) cudaFree(data_);
    data_ = nullptr;
    capacity_ = 0;
  }
  template <typename T>
  T* as() const { return static_cast<T*>(data_); }
  std::size_t capacity() const { return capacity_; }

 private:
  void* data_ = nullptr;
  std::size_t capacity_ = 0;
};

class PinnedBuffer {
 public:
  PinnedBuffer() = default;
  PinnedBuffer(const PinnedBuffer&) = delete;
  PinnedBuffer& operator=(const PinnedBuffer&) = delete;
  ~PinnedBuffer() { release(); }

  Status reserve(std::size_t bytes) {
    if (bytes <= capacity_) return Status();
    release();
    NCC_CUDA_CHECK(cudaMallocHost(&data_, bytes));
    capacity_ = bytes;
    return Status();
  }
  void release() {
    if (data_ != nullptr) cudaFreeHost(data_);
    data_ = nullptr;
    capacity_ = 0;
  }
  template <typename T>
  T* as() const { return static_cast<T*>(data_); }

 private:
  void* data_ = nullptr;
  std::size_t capacity_ = 0;
};

}  // namespace nccmatch::cuda
