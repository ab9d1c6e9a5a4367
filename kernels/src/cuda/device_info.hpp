// What the CUDA code asks of a device: the one place the SM count is queried.
#pragma once

#include <cuda_runtime_api.h>

#include "cuda/cuda_check.hpp"
#include "nccmatch/status.hpp"

namespace nccmatch::cuda {

// The number of streaming multiprocessors of `device` (grids of one wave are sized by it).
inline Status multiprocessorCount(int device, int* count) {
  NCC_CUDA_CHECK(cudaDeviceGetAttribute(count, cudaDevAttrMultiProcessorCount, device));
  return Status();
}

// The same for the device current on the calling thread.
inline Status currentDeviceMultiprocessors(int* count) {
  int device = 0;
  NCC_CUDA_CHECK(cudaGetDevice(&device));
  return multiprocessorCount(device, count);
}

}  // namespace nccmatch::cuda
