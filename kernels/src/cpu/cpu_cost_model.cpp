#include "cpu/cpu_cost_model.hpp"

#include <algorithm>
#include <cmath>

#include "cpu/cpu_numerator_direct.hpp"

#ifdef NCCMATCH_HAVE_FFTW
#include "cpu/cpu_numerator_fft.hpp"
#endif

namespace nccmatch {

namespace {
// Measured with bench_cpu and per-path runs on an AMD EPYC (Zen 5, AVX-512, 2 cores) at 1920x1080
// (per thread): seconds per 8-bit multiply-accumulate of the direct path (the VNNI kernel, and the
// auto-vectorised rows where the CPU has no VNNI), and per FFT work unit (points * (log2 points
// + 2) + tile overhead, forward and inverse; FFTW_MEASURE plans) of the tiled FFT path. The
// per-window costs both paths share (sums, scores, peaks) cancel out.
constexpr double kDirectVnniSecondsPerMac = 8.0e-12;
constexpr double kDirectSecondsPerMac = 2.4e-11;
constexpr double kFftSecondsPerWorkUnit = 1.3e-10;
}  // namespace

double directNumeratorSeconds(int frameWidth, int frameHeight, int templateWidth, int templateHeight,
                              int threads) {
  const double windows = double(frameWidth - templateWidth + 1) * (frameHeight - templateHeight + 1);
  const double perMac =
      directVnniUsable(templateWidth, templateHeight) ? kDirectVnniSecondsPerMac : kDirectSecondsPerMac;
  return perMac * windows * templateWidth * templateHeight / std::max(1, threads);
}

bool cpuFftAvailable() {
#ifdef NCCMATCH_HAVE_FFTW
  return true;
#else
  return false;
#endif
}

double fftNumeratorSeconds(int frameWidth, int frameHeight, int templateWidth, int templateHeight,
                           int threads) {
#ifdef NCCMATCH_HAVE_FFTW
  FftTiling tiling = chooseFftTiling(frameWidth, frameHeight, templateWidth, templateHeight, threads);
  return kFftSecondsPerWorkUnit * tiling.makespanWork;
#else
  (void)frameWidth, (void)frameHeight, (void)templateWidth, (void)templateHeight, (void)threads;
  return HUGE_VAL;
#endif
}

CpuPath resolveCpuPath(CpuPath requested, int frameWidth, int frameHeight, int templateWidth,
                       int templateHeight, int threads) {
  if (requested != CpuPath::Auto) return requested;
  if (!cpuFftAvailable()) return CpuPath::Direct;
  return fftNumeratorSeconds(frameWidth, frameHeight, templateWidth, templateHeight, threads) <
                 directNumeratorSeconds(frameWidth, frameHeight, templateWidth, templateHeight, threads)
             ? CpuPath::Fft
             : CpuPath::Direct;
}

}  // namespace nccmatch
