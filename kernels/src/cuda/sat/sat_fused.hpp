// Internal: the tile shapes the fused SAT build is compiled for, so that the benchmark can time
// them side by side. SatBuilder::create(Fused/Fused32) uses defaultFusedSatConfig(), the fastest
// measured on the H200 for the builder's maximum size (bench/RESULTS.md).
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "nccmatch/sat_cuda.hpp"

namespace nccmatch::cuda {

// A tile is tileWidth columns (pixelsPerLane per lane in each chunk of 32 * pixelsPerLane columns)
// by warps * rowsPerWarp rows.
// window 0 is the 64-column kernel (serial look-backs, sat_fused.cu); window >= 1 the wide kernel
// (sat_fused_wide.cuh: horizontal carries summed from every tile to the left, vertical look-back
// over `window` tiles per step).
struct FusedSatConfig {
  int warps;
  int rowsPerWarp;
  bool streamingStores;  // st.global.cs for the tables (evict-first), else plain stores
  bool stampedWords;     // carries as self-stamped words (one load per look-back step, no fences),
                         // else flags published with release and read with acquire
  int tileWidth = 64;
  int window = 0;
  int pollBackoffNs = 0;  // wide kernel: sleep between look-back polls that found nothing new
  int pixelsPerLane = 2;  // wide kernel: adjacent pixels per lane and row (2 or 4)
};

// The 64x64 kernel: the default up to kWideFusedMinPixels (faster there: 1080p, 2048^2) and
// bench_sat's baseline. Above it, 256x32 wide tiles (1.17x at 4096^2, 1.22x at 8192^2).
constexpr FusedSatConfig kNarrowFusedSatConfig{8, 8, true, true};
constexpr FusedSatConfig kDefaultFusedSatConfig{8, 4, true, true, 256, 2, 128, 2};
constexpr int64_t kWideFusedMinPixels = int64_t(2048) * 2048;

// The configuration SatBuilder::create(Fused/Fused32) uses for a builder of this maximum size.
FusedSatConfig defaultFusedSatConfig(int maxWidth, int maxHeight);

// Every configuration compiled in; create() refuses others.
std::vector<FusedSatConfig> fusedSatConfigs();

Status createFusedSatBuilderWithConfig(SatBuild build, int maxWidth, int maxHeight,
                                       FusedSatConfig config, std::unique_ptr<SatBuilder>* out);

}  // namespace nccmatch::cuda
