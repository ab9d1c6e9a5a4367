// Internal: the tile shapes the fused SAT build is compiled for, so that the benchmark can time
// them side by side. SatBuilder::create(Fused/Fused32) uses kDefaultFusedSatConfig, the fastest
// measured on the H200 (bench/RESULTS.md).
#pragma once

#include <memory>
#include <vector>

#include "nccmatch/sat_cuda.hpp"

namespace nccmatch::cuda {

// A tile is tileWidth columns (two per lane per 64-column chunk) by warps * rowsPerWarp rows.
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
};

// The 64x64 kernel that was the default before the wide tiles (bench_sat's baseline).
constexpr FusedSatConfig kNarrowFusedSatConfig{8, 8, true, true};
constexpr FusedSatConfig kDefaultFusedSatConfig{8, 4, true, true, 256, 2};

// Every configuration compiled in; create() refuses others.
std::vector<FusedSatConfig> fusedSatConfigs();

Status createFusedSatBuilderWithConfig(SatBuild build, int maxWidth, int maxHeight,
                                       FusedSatConfig config, std::unique_ptr<SatBuilder>* out);

}  // namespace nccmatch::cuda
