#include "nccmatch/cuda_context.hpp"

#include <string>

#ifdef NCCMATCH_HAVE_CUDA
#include <cuda_runtime_api.h>

#include "cuda/cuda_check.hpp"
#endif

namespace nccmatch {

Status makePrimaryCudaContextCurrent(int device) {
#ifdef NCCMATCH_HAVE_CUDA
  if (device < 0) device = 0;
  int count = 0;
  NCC_CUDA_CHECK(cudaGetDeviceCount(&count));
  if (device >= count)
    return Status::error("CUDA device " + std::to_string(device) + " requested but only " + std::to_string(count) +
                         " present");
  // cudaSetDevice makes the device's primary context current on this thread (initialising it);
  // cudaFree(nullptr) makes sure of it on runtimes that initialise lazily.
  NCC_CUDA_CHECK(cudaSetDevice(device));
  NCC_CUDA_CHECK(cudaFree(nullptr));
  return Status();
#else
  (void)device;
  return Status::error("the primary CUDA context needs CUDA, and this build of nccmatch has no CUDA");
#endif
}

}  // namespace nccmatch
