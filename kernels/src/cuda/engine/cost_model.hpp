// Picks the numerator (spatial or fft) per template and frame size from predicted times. The
// constants are fitted to measurements on the GPU host (bench_ncc; see bench/RESULTS.md).
#pragma once

#include <cstddef>

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

// Whether a float-fft template's peaks should come from its score and recompute kernels'
// hand-off (PeakHandoff) rather than a scan of its whole map afterwards. The hand-off adds work
// to every position the score kernel scores and saves the scan's pass over the map: it pays on
// large maps only. Measured on an H100 (session 46, bench_stream --large, 2 frames in flight,
// hand-off against map scan in the same run, two rounds): +2.5 to +4.5 us a frame on 1080p maps
// (1.4-1.7 M positions), +1.5 to +2.5 on 2560x1440's 128² map (3.2 M), -1 to -4 on 2160p maps
// (6.8-7.5 M); the boundary between the last two.
inline constexpr std::size_t kFftHandoffMinPositions = 5'000'000;
bool fftPeakHandoffPays(int mapWidth, int mapHeight);

// Whether a frame of width x height may take a matching lane beyond the first
// (EngineOptions::cudaMatchingLanes). Measured (session 47, bench_stream --lanes-ab on an H100,
// 2 in flight; two engines on the H200): 1080p and 1440p 5-19 % less time a frame with two lanes,
// banks at 2160p 10-12 % less (H200), but 2160p single fft templates 8-9 % more (two frames'
// 4096 x 2304 transforms at once): extra lanes on frames up to kExtraLanesMaxFftPixels when the
// bank has fft templates, on any frame otherwise.
inline constexpr long long kExtraLanesMaxFftPixels = 4'000'000;
inline bool extraLanesPay(int frameWidth, int frameHeight, bool anyFft) {
  return !anyFft || (long long)frameWidth * frameHeight <= kExtraLanesMaxFftPixels;
}

}  // namespace nccmatch::cuda
