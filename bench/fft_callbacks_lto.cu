// cuFFT load callbacks for bench_fft_callbacks, compiled to LTO-IR (code=lto_90) and handed to
// cufftXtSetJITCallback: cuFFT links them into its own kernels when the plan is made, so the value
// a transform reads is formed in its first pass instead of by a kernel of ours before it.
#include <cufftXt.h>

#include <cstdint>

#include "cuda/numerator/conjugate_product.cuh"
#include "cuda/numerator/fft_product_load.hpp"
#include "fft_callbacks_info.hpp"

// C++ functions at global scope, named to cufftXtSetJITCallback without their parameters: cuFFT
// forms the symbol from the name and the callback type's signature (an extern "C" name is not
// found: cufftMakePlan then fails with CUFFT_INTERNAL_ERROR, session 48 on an H100).

// The inverse transform's input: frame spectrum times the conjugate template spectrum (what the
// library's conjugateProductKernel writes). dataIn (the plan's own input buffer, which a C2R plan
// may overwrite) is not read.
__device__ cufftComplex nccConjugateProductLoad(void*, unsigned long long offset, void* info, void*) {
  const auto* p = static_cast<const nccmatch::cuda::FftProductLoadInfo*>(info);
  return nccmatch::cuda::conjugateProduct(p->frame[offset], p->tpl[offset]);
}

// The plain input through a callback: whether cuFFT links a callback at all where the others fail.
__device__ cufftComplex nccIdentityLoad(void* dataIn, unsigned long long offset, void*, void*) {
  return static_cast<const cufftComplex*>(dataIn)[offset];
}

// The forward transform's input: the 8-bit frame minus the offset (read from device memory, as
// the library finds it on the device), zero in the padding (what the placement kernel writes).
__device__ cufftReal nccPlaceFrameLoad(void*, unsigned long long offset, void* info, void*) {
  const auto* p = static_cast<const nccmatch::bench::PlaceCallbackInfo*>(info);
  const unsigned i = unsigned(offset);
  const unsigned y = i / unsigned(p->fftWidth), x = i - y * unsigned(p->fftWidth);
  if (x >= unsigned(p->width) || y >= unsigned(p->height)) return 0.f;
  return float(p->image[std::size_t(y) * p->pitch + x]) - *p->offset;
}
