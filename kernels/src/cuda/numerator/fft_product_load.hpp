// The float inverse transform's load callback (fft_product_load.cu): cuFFT forms each input
// element as the conjugate product while it loads it, instead of a kernel writing the product
// and the transform reading it back. Measured on an H100 (bench_fft_callbacks, session 48): product
// and C2R 37.3 -> 35.1 µs at 2048 x 1152, 138.4 -> 108.6 µs at 4096 x 2304.
#pragma once

#include <cuda_runtime.h>

namespace nccmatch::cuda {

// What the callback reads (device memory, cuFFT's callerInfo): the frame's spectrum and the
// spectrum of the template being correlated.
struct FftProductLoadInfo {
  const float2* frame;
  const float2* tpl;
};

// The callback's name as cufftXtSetJITCallback takes it: a C++ function at global scope, named
// without its parameters (cuFFT forms the symbol from the callback type's signature; an extern "C"
// name is not found and cufftMakePlan fails with CUFFT_INTERNAL_ERROR).
inline constexpr const char* kFftProductLoadSymbol = "nccFftConjugateProductLoad";

}  // namespace nccmatch::cuda
