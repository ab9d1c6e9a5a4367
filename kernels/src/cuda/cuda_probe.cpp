// Is a CUDA device usable? Asked once per engine creation; never aborts when no driver exists.
#include <cuda_runtime_api.h>

#include <string>

namespace nccmatch {

bool cudaDevicePresent(std::string* why) {
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
