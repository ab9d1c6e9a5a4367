#include "nccmatch/host_memory.hpp"

#ifdef NCCMATCH_HAVE_CUDA
#include <cuda_runtime_api.h>

#include "cuda/cuda_check.hpp"
#include "cuda/fault_injection.hpp"
#endif

namespace nccmatch {

Status allocatePinnedHost(std::size_t bytes, void** memory) {
  if (memory == nullptr) return Status::error("allocatePinnedHost: memory pointer is null");
  *memory = nullptr;
  if (bytes == 0) return Status::error("allocatePinnedHost: zero bytes requested");
#ifdef NCCMATCH_HAVE_CUDA
  // Portable: pinned for every context, so a frame allocated here is also pinned for an engine
  // running in a GStreamer (gstcuda) context.
  NCC_CUDA_CHECK(cuda::faults::allocatePinned(memory, bytes, cudaHostAllocPortable));
  return Status();
#else
  return Status::error("pinned host memory needs CUDA, and this build of nccmatch has no CUDA");
#endif
}

void freePinnedHost(void* memory) {
#ifdef NCCMATCH_HAVE_CUDA
  cuda::faults::freePinned(memory);
#else
  (void)memory;
#endif
}

}  // namespace nccmatch
