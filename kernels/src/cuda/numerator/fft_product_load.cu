// The float inverse transform's load callback (fft_product_load.hpp), compiled to LTO-IR only
// (kernels/src/cuda/meson.build): cuFFT links it into its C2R kernels when the plan is made.
#include <cufftXt.h>

#include "cuda/numerator/conjugate_product.cuh"
#include "cuda/numerator/fft_product_load.hpp"

// dataIn (the plan's input buffer, which a C2R plan may overwrite) is not read.
__device__ cufftComplex nccFftConjugateProductLoad(void*, unsigned long long offset, void* info, void*) {
  const auto* p = static_cast<const nccmatch::cuda::FftProductLoadInfo*>(info);
  return nccmatch::cuda::conjugateProduct(p->frame[offset], p->tpl[offset]);
}
