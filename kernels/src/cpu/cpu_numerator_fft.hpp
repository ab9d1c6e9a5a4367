// The FFT numerator of the CPU backend (FFTW3, single precision): sum of I*(T - mean T) over
// every window, by overlap-save tiles. Template spectra are built once per bank and frame size;
// the frame's tile spectra once per frame and shared by all templates of the same tile size.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <vector>

#include "nccmatch/types.hpp"
#include "cpu/thread_pool.hpp"

namespace nccmatch {

// Tile size for one template on one frame size, chosen to minimise the time of the transforms
// spread over `threads` (whole tiles per thread).
struct FftTiling {
  int tileWidth = 0, tileHeight = 0;
  // Work of one frame for this template, in FFT "points * log2(points)" units (forward, inverse),
  // and the share of the busiest thread (forward + inverse).
  double forwardWork = 0, inverseWork = 0, makespanWork = 0;
};
FftTiling chooseFftTiling(int frameWidth, int frameHeight, int templateWidth, int templateHeight,
                          int threads = 1);

class FftNumerator {
 public:
  FftNumerator();
  ~FftNumerator();
  FftNumerator(const FftNumerator&) = delete;
  FftNumerator& operator=(const FftNumerator&) = delete;

  // Plans tiles and computes template spectra for the templates flagged in useFft; cheap when
  // neither the bank nor the frame size changed since the last call.
  void prepare(const std::vector<TemplateImage>* bank, uint64_t bankGeneration,
               const std::vector<bool>& useFft, int frameWidth, int frameHeight, int threads = 1);
  // Forward transforms of the frame's tiles.
  void transformFrame(const FrameView& frame, ThreadPool& pool);
  // out[y * mapW + x] = sum I*(T - mean T) at window (x, y), in float arithmetic; bound[...] an
  // upper estimate of its rounding error, per window (constant over a tile).
  void centredCross(uint32_t templateIndex, ThreadPool& pool, float* out, float* bound);

  // The same numerator one tile at a time, for callers that consume it while it is in cache:
  // visit(x0, y0, x1, y1, values, stride, bound) for the map block [x0, x1) x [y0, y1), with the
  // value of window (x, y) at values[(y - y0) * stride + x - x0] and one error bound for the block.
  // Called from the pool's threads on disjoint blocks covering the map.
  using TileVisitor =
      std::function<void(int x0, int y0, int x1, int y1, const float* values, int stride, float bound)>;
  void centredCrossTiles(uint32_t templateIndex, ThreadPool& pool, const TileVisitor& visit);

 private:
  struct Group;
  struct TemplateSpectrum;
  std::vector<std::unique_ptr<Group>> groups_;
  std::vector<std::unique_ptr<TemplateSpectrum>> templates_;
  const std::vector<TemplateImage>* bank_ = nullptr;
  uint64_t bankGeneration_ = ~uint64_t(0);
  std::vector<bool> useFft_;
  int frameWidth_ = 0, frameHeight_ = 0, threads_ = 0;
};

}  // namespace nccmatch
