#include "nccmatch/host_memory.hpp"

#ifdef NCCMATCH_HAVE_CUDA
#include <cuda_runtime_api.h>

#include "cuda/cuda_check.hpp"
#include "cuda/engine/host_memory.hpp"
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

Status registerPinnedHost(void* memory, std::size_t bytes) {
  if (memory == nullptr) return Status::error("registerPinnedHost: memory pointer is null");
  if (bytes == 0) return Status::error("registerPinnedHost: zero bytes to register");
#ifdef NCCMATCH_HAVE_CUDA
  // Portable and mapped, as allocatePinnedHost's memory is: pinned for every context, and kernels
  // can read it where it lies.
  // The message names the CUDA call (a buffer registered twice: cudaErrorHostMemoryAlreadyRegistered).
  const Status registered = cudaStatus(cudaHostRegister(memory, bytes, cudaHostRegisterPortable | cudaHostRegisterMapped),
                                       "registerPinnedHost: cudaHostRegister", __FILE__, __LINE__);
  if (!registered.ok()) cudaGetLastError();  // not sticky: no error left for a later launch's check
  return registered;
#else
  return Status::error("registering host memory needs CUDA, and this build of nccmatch has no CUDA");
#endif
}

Status unregisterPinnedHost(void* memory) {
  if (memory == nullptr) return Status::error("unregisterPinnedHost: memory pointer is null");
#ifdef NCCMATCH_HAVE_CUDA
  const Status unregistered =
      cudaStatus(cudaHostUnregister(memory), "unregisterPinnedHost: cudaHostUnregister", __FILE__, __LINE__);
  if (!unregistered.ok()) cudaGetLastError();
  return unregistered;
#else
  return Status::error("registering host memory needs CUDA, and this build of nccmatch has no CUDA");
#endif
}

bool hostMemoryPinned(const void* memory, std::size_t bytes) {
#ifdef NCCMATCH_HAVE_CUDA
  return cuda::hostRange(static_cast<const uint8_t*>(memory), bytes).pinned;
#else
  (void)memory;
  (void)bytes;
  return false;
#endif
}

}  // namespace nccmatch
