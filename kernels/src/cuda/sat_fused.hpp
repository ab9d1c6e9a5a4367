// Internal: the tile shapes the fused SAT build is compiled for, so that the benchmark can time
// them side by side. SatBuilder::create(Fused/Fused32) uses kDefaultFusedSatConfig, the fastest
// measured on the H200 (bench/RESULTS.md).
#pragma once

#include <memory>
#include <vector>

#include "nccmatch/sat_cuda.hpp"

namespace nccmatch::cuda {

// A tile is 64 columns (two per lane) by warps * rowsPerWarp rows.
struct FusedSatConfig {
  int warps;
  int rowsPerWarp;
  bool streamingStores;  // st.global.cs for the tables (evict-first), else plain stores
  bool stampedWords;     // carries as self-stamped words (one load per look-back step, no fences),
                         // else flags published with release and read with acquire
};

constexpr FusedSatConfig kDefaultFusedSatConfig{8, 8, true, true};

// Every configuration compiled in; create() refuses others.
std::vector<FusedSatConfig> fusedSatConfigs();

Status createFusedSatBuilderWithConfig(SatBuild build, int maxWidth, int maxHeight,
                                       FusedSatConfig config, std::unique_ptr<SatBuilder>* out);

}  // namespace nccmatch::cuda
