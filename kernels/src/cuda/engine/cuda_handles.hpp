// Owning handles of CUDA streams, events and graphs: each destroys what it holds when it goes
// away or is reset. Movable, not copyable. The owner synchronises before destroying a stream
// whose work still reads memory that is freed beside it.
#pragma once

#include <cuda_runtime_api.h>

#include <utility>

#include "cuda/cuda_check.hpp"

namespace nccmatch::cuda {

template <typename Kind>
class CudaHandle {
 public:
  using Raw = typename Kind::Raw;

  CudaHandle() = default;
  CudaHandle(const CudaHandle&) = delete;
  CudaHandle& operator=(const CudaHandle&) = delete;
  CudaHandle(CudaHandle&& other) noexcept : raw_(std::exchange(other.raw_, nullptr)) {}
  CudaHandle& operator=(CudaHandle&& other) noexcept {
    reset(std::exchange(other.raw_, nullptr));
    return *this;
  }
  ~CudaHandle() { reset(); }

  Raw get() const { return raw_; }
  explicit operator bool() const { return raw_ != nullptr; }
  // Destroys the handle held (if any) and takes `raw`.
  void reset(Raw raw = nullptr) {
    if (raw_ != nullptr) Kind::destroy(raw_);
    raw_ = raw;
  }

 private:
  Raw raw_ = nullptr;
};

struct StreamKind {
  using Raw = cudaStream_t;
  static void destroy(cudaStream_t stream) { cudaStreamDestroy(stream); }
};
struct EventKind {
  using Raw = cudaEvent_t;
  static void destroy(cudaEvent_t event) { cudaEventDestroy(event); }
};
struct GraphKind {
  using Raw = cudaGraph_t;
  static void destroy(cudaGraph_t graph) { cudaGraphDestroy(graph); }
};
struct GraphExecKind {
  using Raw = cudaGraphExec_t;
  static void destroy(cudaGraphExec_t exec) { cudaGraphExecDestroy(exec); }
};

using Stream = CudaHandle<StreamKind>;
using Event = CudaHandle<EventKind>;
using Graph = CudaHandle<GraphKind>;
using GraphExec = CudaHandle<GraphExecKind>;

// A stream that does not synchronise with the legacy default stream.
inline Status createStream(Stream* stream) {
  cudaStream_t raw = nullptr;
  NCC_CUDA_CHECK(cudaStreamCreateWithFlags(&raw, cudaStreamNonBlocking));
  stream->reset(raw);
  return Status();
}

// An event for ordering only (no timing).
inline Status createEvent(Event* event) {
  cudaEvent_t raw = nullptr;
  NCC_CUDA_CHECK(cudaEventCreateWithFlags(&raw, cudaEventDisableTiming));
  event->reset(raw);
  return Status();
}

}  // namespace nccmatch::cuda
