#include "cpu_cost_model.hpp"

#include <cmath>

#ifdef NCCMATCH_HAVE_FFTW
#include "cpu_numerator_fft.hpp"
#endif

namespace nccmatch {

namespace {
// Measured with bench_cpu on an AMD EPYC (Zen 4, AVX-512, 2 cores) at 1920x1080 (per thread):
// seconds per 8-bit multiply-accumulate of the direct path, and per FFT work unit
// (points * (log2 points + 2), forward and inverse) of the tiled FFT path.
constexpr double kDirectSecondsPerMac = 7.0e-11;
constexpr double kFftSecondsPerWorkUnit = 1.5e-9;
}  // namespace

double directNumeratorSeconds(int frameWidth, int frameHeight, int templateWidth, int templateHeight) {
  const double windows = double(frameWidth - templateWidth + 1) * (frameHeight - templateHeight + 1);
  return kDirectSecondsPerMac * windows * templateWidth * templateHeight;
}

bool cpuFftAvailable() {
#ifdef NCCMATCH_HAVE_FFTW
  return true;
#else
  return false;
#endif
}

double fftNumeratorSeconds(int frameWidth, int frameHeight, int templateWidth, int templateHeight) {
#ifdef NCCMATCH_HAVE_FFTW
  FftTiling tiling = chooseFftTiling(frameWidth, frameHeight, templateWidth, templateHeight);
  return kFftSecondsPerWorkUnit * (tiling.forwardWork + tiling.inverseWork);
#else
  (void)frameWidth, (void)frameHeight, (void)templateWidth, (void)templateHeight;
  return HUGE_VAL;
#endif
}

CpuPath resolveCpuPath(CpuPath requested, int frameWidth, int frameHeight, int templateWidth,
                       int templateHeight) {
  if (requested != CpuPath::Auto) return requested;
  if (!cpuFftAvailable()) return CpuPath::Direct;
  return fftNumeratorSeconds(frameWidth, frameHeight, templateWidth, templateHeight) <
                 directNumeratorSeconds(frameWidth, frameHeight, templateWidth, templateHeight)
             ? CpuPath::Fft
             : CpuPath::Direct;
}

}  // namespace nccmatch
