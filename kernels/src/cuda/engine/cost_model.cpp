#include "cuda/engine/cost_model.hpp"

#include <cmath>

#include "cuda/numerator/numerator_fft.hpp"
#include "cuda/numerator/numerator_spatial.hpp"
#include "cuda/numerator/spatial_scores.hpp"
#include "common/integer_math.hpp"

namespace nccmatch::cuda {

namespace {

// Predicted per-frame costs beyond the upload of one template's whole path (numerator, window
// sums, score, peaks), least-squares fits to bench_ncc on the H200 (bench/RESULTS.md, fused
// kernel with four output rows per warp, 2026-11-29).
// Fused spatial kernel (templates up to 64x64, tensor cores): fixed + per output (window sums,
// double scores, handoff) + per padded multiply-add (mapW * mapH * h * padded K); fit to
// the frame-on-device times at 1080p and 2160p, templates 8..64 (within 7% of all eight).
constexpr double kFusedFixedMicros = 36.7;
constexpr double kFusedMicrosPerMegaOutput = 10.64;
constexpr double kTensorMicrosPerGigaMac = 3.03;
// Spatial dp4a (larger templates): one resident wave of 8 blocks per SM costs
// kSpatialWordRowMicros per 4-byte template word row of every output it covers; the SAT, the
// exact score kernel and the peak scan add about kSatScoreScanMicrosPerMegaOutput.
constexpr double kSpatialWordRowMicros = 0.17;
constexpr double kSpatialLaunchMicros = 4.0;
constexpr int kSpatialBlocksPerSm = 8;
constexpr double kSatScoreScanMicrosPerMegaOutput = 31.0;
// FFT (float, with SAT, scores and scan): fixed + per padded megapoint, fit to the same run's
// templates 128 and 256 (157 us at 2048x1152, 466 us at 4096x2304).
constexpr double kFftMicrosPerMegaPoint = 43.7;
constexpr double kFftFixedMicros = 53.9;
// The reported matches rescored exactly (score and sub-pixel offsets from the frame, launched
// overlapping the peak search): measured +5-8 us a frame whatever the template's size
// (H100, bench_stream --large, 1080p and 2160p, 128^2 and 256^2).
constexpr double kFftExactRescoringMicros = 6.5;

}  // namespace

NumeratorCosts predictNumeratorCosts(int w, int h, int frameWidth, int frameHeight, int smCount) {
  NumeratorCosts c;
  const SpatialLayout l = spatialLayout(w, h);
  const int mapWidth = frameWidth - w + 1, mapHeight = frameHeight - h + 1;
  const double blocks = double(ceilDiv(mapWidth, kSpatialTileWidth)) * ceilDiv(mapHeight, kSpatialTileHeight);
  const double waves = std::ceil(blocks / (double(smCount > 0 ? smCount : 1) * kSpatialBlocksPerSm));
  const double outputs = double(mapWidth) * mapHeight;
  if (fusedSpatialFits(w, h)) {
    const double macs = outputs * h * double(fusedKSteps(w).paddedK());
    c.spatialMicros = kFusedFixedMicros + outputs / 1e6 * kFusedMicrosPerMegaOutput +
                      macs / 1e9 * kTensorMicrosPerGigaMac;
  } else {
    c.spatialMicros = kSpatialLaunchMicros + outputs / 1e6 * kSatScoreScanMicrosPerMegaOutput +
                      waves * (l.paddedWidth / 4.0) * l.paddedHeight * kSpatialWordRowMicros;
  }
  const double points = double(preferredFftSize(frameWidth, true)) * preferredFftSize(frameHeight, false);
  c.fftMicros = kFftFixedMicros + kFftExactRescoringMicros + kFftMicrosPerMegaPoint * points / 1e6;
  return c;
}

bool fftPeakHandoffPays(int mapWidth, int mapHeight) {
  return mapWidth > 0 && mapHeight > 0 && std::size_t(mapWidth) * std::size_t(mapHeight) >= kFftHandoffMinPositions;
}

CudaNumerator chooseNumerator(int w, int h, int frameWidth, int frameHeight, int smCount) {
  const NumeratorCosts c = predictNumeratorCosts(w, h, frameWidth, frameHeight, smCount);
  return c.spatialMicros <= c.fftMicros ? CudaNumerator::Spatial : CudaNumerator::Fft;
}

}  // namespace nccmatch::cuda
