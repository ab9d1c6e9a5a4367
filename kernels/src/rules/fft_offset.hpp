// The constant the fft path subtracts from a frame before its forward transform. Any constant
// gives the same correlation (the template is zero-mean), but float rounding grows with
// ||I - offset||, so it should be near the frame's mean. The mean of a fixed 32 x 32 grid of
// samples is: 1 024 loads, which every block of the placement kernel makes itself, instead of a
// pass over the whole frame and a wait for it. The sum is an integer, so every block (and the
// host) finds the same value.
#pragma once

#include <cstddef>
#include <cstdint>

#include "nccmatch/sat.hpp"  // NCC_HOST_DEVICE

namespace nccmatch {

constexpr int kFftOffsetGrid = 32;
constexpr int kFftOffsetSamples = kFftOffsetGrid * kFftOffsetGrid;

// The i-th sample's coordinate along a side of `length` pixels (i < kFftOffsetGrid): the centre
// of the i-th of 32 equal stripes, so within [0, length) for any length >= 1 (samples repeat
// below 32 pixels).
NCC_HOST_DEVICE inline int fftOffsetSampleAt(int i, int length) {
  return int((2 * int64_t(i) + 1) * length / (2 * kFftOffsetGrid));
}

// Sample k (k < kFftOffsetSamples) of a frame: row-major over the grid.
NCC_HOST_DEVICE inline uint32_t fftOffsetSample(const uint8_t* image, std::size_t pitch, int width, int height,
                                                int k) {
  const int x = fftOffsetSampleAt(k % kFftOffsetGrid, width);
  const int y = fftOffsetSampleAt(k / kFftOffsetGrid, height);
  return image[std::size_t(y) * pitch + x];
}

// The offset from the samples' sum.
NCC_HOST_DEVICE inline double fftOffsetFromSampleSum(uint32_t sum) { return double(sum) / kFftOffsetSamples; }

// The same on the host, for tests and tools.
inline double fftSampledOffset(const uint8_t* image, std::size_t pitch, int width, int height) {
  uint32_t sum = 0;
  for (int k = 0; k < kFftOffsetSamples; ++k) sum += fftOffsetSample(image, pitch, width, height, k);
  return fftOffsetFromSampleSum(sum);
}

}  // namespace nccmatch
