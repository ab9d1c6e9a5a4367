// What bench_fft_callbacks' cuFFT load callbacks (fft_callbacks_lto.cu) read, in device memory.
#pragma once

#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>

namespace nccmatch::bench {

struct ProductCallbackInfo {
  const float2* frame;  // the frame's spectrum
  const float2* tpl;    // the template's spectrum
};

struct PlaceCallbackInfo {
  const uint8_t* image;
  std::size_t pitch;
  int width, height, fftWidth;
  const float* offset;
};

}  // namespace nccmatch::bench
