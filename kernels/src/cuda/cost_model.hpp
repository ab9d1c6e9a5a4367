// Picks the numerator (spatial or fft) per template and frame size from predicted times. The
// constants are fitted to measurements on the GPU host (bench_ncc; see bench/RESULTS.md).
#pragma once

#include "nccmatch/engine.hpp"

namespace nccmatch::cuda {

struct NumeratorCosts {
  double spatialMicros = 0.0;  // direct sum of this template over the frame
  double fftMicros = 0.0;      // one product + inverse transform, plus the frame's forward one
};

// smCount: multiprocessors of the device (the spatial kernel runs in waves of blocks).
NumeratorCosts predictNumeratorCosts(int templateWidth, int templateHeight, int frameWidth,
                                     int frameHeight, int smCount);

// Spatial or Fft (never Auto).
CudaNumerator chooseNumerator(int templateWidth, int templateHeight, int frameWidth,
                              int frameHeight, int smCount);

}  // namespace nccmatch::cuda
