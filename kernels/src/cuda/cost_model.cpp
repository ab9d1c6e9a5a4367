#include "cuda/cost_model.hpp"

#include <cmath>

#include "cuda/numerator_fft.hpp"
#include "cuda/numerator_spatial.hpp"
#include "cuda/spatial_scores.hpp"

namespace nccmatch::cuda {

namespace {

// Fitted on the H200 (bench_ncc 2026-11-29, bench/RESULTS.md): numerator time = match() on a
// device frame minus the 8x8 case's non-numerator part. Spatial: one resident wave of 8 blocks per
// SM costs kSpatialWordRowMicros per 4-byte template word row of every output it covers.
constexpr double kSpatialWordRowMicros = 0.17;
constexpr double kSpatialLaunchMicros = 4.0;
constexpr int kSpatialBlocksPerSm = 8;
// Templates up to 64x64 take the fused tensor-core kernel: mapW * mapH * h * 32 * kSteps padded
// multiply-adds at about 270 per picosecond (predicted from the m16n8k32 rate bounded by two
// shared-memory loads per MMA; refit from bench_ncc when measured).
constexpr double kTensorMicrosPerGigaMac = 3.7;
// FFT (float): product + C2R per template, R2C per frame, both roughly linear in the padded size;
// about 0.65x the double fit (float stages of the 1ba0e05 run: 48 + 49 us at 2.07 Mpoints).
constexpr double kFftMicrosPerMegaPoint = 30.0;
constexpr double kFftFixedMicros = 15.0;

int ceilDiv(int a, int b) { return (a + b - 1) / b; }

}  // namespace

NumeratorCosts predictNumeratorCosts(int w, int h, int frameWidth, int frameHeight, int smCount) {
  NumeratorCosts c;
  const SpatialLayout l = spatialLayout(w, h);
  const int mapWidth = frameWidth - w + 1, mapHeight = frameHeight - h + 1;
  const double blocks = double(ceilDiv(mapWidth, kSpatialTileWidth)) * ceilDiv(mapHeight, kSpatialTileHeight);
  const double waves = std::ceil(blocks / (double(smCount > 0 ? smCount : 1) * kSpatialBlocksPerSm));
  if (fusedSpatialFits(w, h)) {
    const double kSteps = std::ceil((w + 15) / 32.0);
    const double macs = double(mapWidth) * mapHeight * h * 32.0 * kSteps;
    c.spatialMicros = kSpatialLaunchMicros + macs / 1e9 * kTensorMicrosPerGigaMac;
  } else {
    c.spatialMicros = kSpatialLaunchMicros + waves * (l.paddedWidth / 4.0) * l.paddedHeight * kSpatialWordRowMicros;
  }
  const double points = double(fastFftSize(frameWidth, true)) * fastFftSize(frameHeight, false);
  c.fftMicros = kFftFixedMicros + kFftMicrosPerMegaPoint * points / 1e6;
  return c;
}

CudaNumerator chooseNumerator(int w, int h, int frameWidth, int frameHeight, int smCount) {
  const NumeratorCosts c = predictNumeratorCosts(w, h, frameWidth, frameHeight, smCount);
  return c.spatialMicros <= c.fftMicros ? CudaNumerator::Spatial : CudaNumerator::Fft;
}

}  // namespace nccmatch::cuda
