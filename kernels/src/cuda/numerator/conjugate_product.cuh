// The fft correlation's product, written once: frame spectrum times the conjugate template
// spectrum, for the product kernel and for the inverse transform's load callback alike.
#pragma once

#include <cuda_runtime.h>

namespace nccmatch::cuda {

template <typename Complex>
__host__ __device__ __forceinline__ Complex conjugateProduct(Complex f, Complex t) {
  Complex r;
  r.x = f.x * t.x + f.y * t.y;
  r.y = f.y * t.x - f.x * t.y;
  return r;
}

}  // namespace nccmatch::cuda
