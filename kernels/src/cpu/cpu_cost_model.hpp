// Which numerator the CPU backend's Auto path uses for one template on one frame size: the one
// with the smaller predicted time, from per-operation costs measured on the development machine
// (bench/bench_cpu prints the same ratios for any machine; see cpu_cost_model.cpp).
#pragma once

#include "nccmatch/engine.hpp"

namespace nccmatch {

// Predicted seconds for one template and one frame on `threads` threads.
double directNumeratorSeconds(int frameWidth, int frameHeight, int templateWidth, int templateHeight,
                              int threads = 1);
double fftNumeratorSeconds(int frameWidth, int frameHeight, int templateWidth, int templateHeight,
                           int threads = 1);

// True when this build has the FFT numerator (FFTW3 found at configure time).
bool cpuFftAvailable();

// Resolves Auto to Direct or Fft for one template (never Fft without FFTW); any other path is
// returned unchanged.
CpuPath resolveCpuPath(CpuPath requested, int frameWidth, int frameHeight, int templateWidth,
                       int templateHeight, int threads = 1);

}  // namespace nccmatch
