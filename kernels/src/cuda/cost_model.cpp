#include "cuda/cost_model.hpp"

#include <cmath>

#include "cuda/numerator_fft.hpp"
#include "cuda/numerator_spatial.hpp"

namespace nccmatch::cuda {

namespace {

// Fitted on the H200 (bench_ncc 2026-11-29, bench/RESULTS.md): numerator time = match() on a
// device frame minus the 8x8 case's non-numerator part. Spatial: one resident wave of 8 blocks per
// SM costs kSpatialWordRowMicros per 4-byte template word row of every output it covers.
constexpr double kSpatialWordRowMicros = 0.17;
constexpr double kSpatialLaunchMicros = 4.0;
constexpr int kSpatialBlocksPerSm = 8;
// FFT (double): product + Z2D per template, D2Z per frame, both roughly linear in the padded size.
constexpr double kFftMicrosPerMegaPoint = 45.0;
constexpr double kFftFixedMicros = 20.0;

int ceilDiv(int a, int b) { return (a + b - 1) / b; }

}  // namespace

NumeratorCosts predictNumeratorCosts(int w, int h, int frameWidth, int frameHeight, int smCount) {
  NumeratorCosts c;
  const SpatialLayout l = spatialLayout(w, h);
  const int mapWidth = frameWidth - w + 1, mapHeight = frameHeight - h + 1;
  const double blocks = double(ceilDiv(mapWidth, kSpatialTileWidth)) * ceilDiv(mapHeight, kSpatialTileHeight);
  const double waves = std::ceil(blocks / (double(smCount > 0 ? smCount : 1) * kSpatialBlocksPerSm));
  c.spatialMicros = kSpatialLaunchMicros + waves * (l.paddedWidth / 4.0) * l.paddedHeight * kSpatialWordRowMicros;
  const double points = double(fastFftSize(frameWidth, true)) * fastFftSize(frameHeight, false);
  c.fftMicros = kFftFixedMicros + kFftMicrosPerMegaPoint * points / 1e6;
  return c;
}

CudaNumerator chooseNumerator(int w, int h, int frameWidth, int frameHeight, int smCount) {
  const NumeratorCosts c = predictNumeratorCosts(w, h, frameWidth, frameHeight, smCount);
  return c.spatialMicros <= c.fftMicros ? CudaNumerator::Spatial : CudaNumerator::Fft;
}

}  // namespace nccmatch::cuda
