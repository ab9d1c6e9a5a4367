// Is a CUDA device usable? Asked once per engine creation; never aborts when no driver exists.
#include <cuda_runtime_api.h>

#include <string>

#include "cuda/fault_injection.hpp"

namespace nccmatch {

bool cudaDevicePresent(std::string* why) {
  // Faults armed by NCCMATCH_CUDA_* follow the variables from here too, so that an element started
  // after they were unset runs clean (a bad value is reported by CudaEngine::create).
  cuda::faults::applyEnvironment();
  int count = 0;
  cudaError_t err = cudaGetDeviceCount(&count);
  if (err != cudaSuccess) {
    if (why) *why = std::string("no usable CUDA device (") + cudaGetErrorString(err) + ")";
    cudaGetLastError();  // clear the sticky-free error so later calls start clean
    return false;
  }
  if (count == 0) {
    if (why) *why = "no CUDA device found";
    return false;
  }
  return true;
}

}  // namespace nccmatch
