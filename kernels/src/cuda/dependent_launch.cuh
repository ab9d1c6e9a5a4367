// Programmatic dependent launch (sm_90 and later): a kernel launched overlapping the stream's
// previous kernel may start while that kernel runs, once each of its blocks has called
// allowDependentLaunch; it does what needs nothing of that kernel's output (its descriptors, its
// shared memory) and then waits for the whole previous grid, its writes included
// (waitForPreviousGrid). On older devices the launch is an ordinary one and both calls do nothing.
#pragma once

#include <cuda_runtime.h>

#include <utility>

#include "cuda/cuda_check.hpp"
#include "nccmatch/status.hpp"

namespace nccmatch::cuda {

// In the previous kernel: its dependent may be launched now (every block of it has called this).
__device__ __forceinline__ void allowDependentLaunch() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
#endif
}

// In the dependent kernel, before it reads anything the previous kernel writes: waits until that
// grid has ended and its memory operations are visible (at once for an ordinary launch).
__device__ __forceinline__ void waitForPreviousGrid() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.wait;" ::: "memory");
#endif
}

// Whether the current device takes programmatic dependent launches (compute capability 9.0+).
inline Status dependentLaunchSupported(bool* supported) {
  int device = 0, major = 0;
  NCC_CUDA_CHECK(cudaGetDevice(&device));
  NCC_CUDA_CHECK(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, device));
  *supported = major >= 9;
  return Status();
}

// Launches kernel<<<grid, block, shared, stream>>>(args...), overlapping the stream's previous
// kernel when `overlap` (the kernel must then call waitForPreviousGrid before it reads that
// kernel's output; only where dependentLaunchSupported). Checked.
template <typename... Params, typename... Args>
Status launchKernel(void (*kernel)(Params...), dim3 grid, dim3 block, std::size_t shared, cudaStream_t stream,
                    bool overlap, Args&&... args) {
  cudaLaunchAttribute attribute{};
  attribute.id = cudaLaunchAttributeProgrammaticStreamSerialization;
  attribute.val.programmaticStreamSerializationAllowed = 1;
  cudaLaunchConfig_t config{};
  config.gridDim = grid;
  config.blockDim = block;
  config.dynamicSmemBytes = shared;
  config.stream = stream;
  config.attrs = &attribute;
  config.numAttrs = overlap ? 1 : 0;
  NCC_CUDA_CHECK(cudaLaunchKernelEx(&config, kernel, std::forward<Args>(args)...));
  return Status();
}

}  // namespace nccmatch::cuda
