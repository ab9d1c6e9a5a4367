// What bench_fft_callbacks' placement callback (fft_callbacks_lto.cu) reads, in device memory (the
// product callback reads the library's cuda::FftProductLoadInfo).
#pragma once

#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>

namespace nccmatch::bench {

struct PlaceCallbackInfo {
  const uint8_t* image;
  std::size_t pitch;
  int width, height, fftWidth;
  const float* offset;
};

}  // namespace nccmatch::bench
