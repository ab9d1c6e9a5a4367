// Picks the numerator (spatial or fft) per template and frame size from predicted times. The
// constants are fitted to measurements on the GPU host (bench_ncc; see bench/RESULTS.md).
#pragma once

#include "nccmatch/engine.hpp"

namespace nccmatch::cuda {

struct NumeratorCosts {
  // Each the template's whole path beyond the upload: numerator, window sums, scores, peaks.
  double spatialMicros = 0.0;  // fused kernel (<= 64x64) or dp4a numerator with SAT and scan
  double fftMicros = 0.0;      // float transforms (the frame's forward one included), SAT, scan, exact rescoring
};

// smCount: multiprocessors of the device (the spatial kernel runs in waves of blocks).
NumeratorCosts predictNumeratorCosts(int templateWidth, int templateHeight, int frameWidth,
                                     int frameHeight, int smCount);

// Spatial or Fft (never Auto).
CudaNumerator chooseNumerator(int templateWidth, int templateHeight, int frameWidth,
                              int frameHeight, int smCount);

}  // namespace nccmatch::cuda
