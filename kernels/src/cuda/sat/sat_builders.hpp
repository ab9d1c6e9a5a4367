// Internal to the SAT builds: the argument check shared by every build, and one factory per build.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>

#include "nccmatch/sat_cuda.hpp"

namespace nccmatch::cuda {

// Largest image side any build accepts (row sums of I^2 then fit in uint32: 16384 * 255^2 < 2^32).
constexpr int kSatMaxSide = 16384;

// Checks the arguments of SatBuilder::build against the builder's maximum size.
Status validateSatBuildArgs(const char* who, const uint8_t* image, std::size_t pitch, int width,
                            int height, const void* sum, const void* sumSq, int maxWidth,
                            int maxHeight);

Status createNaiveSatBuilder(int maxWidth, int maxHeight, std::unique_ptr<SatBuilder>* out);
Status createCubSatBuilder(int maxWidth, int maxHeight, std::unique_ptr<SatBuilder>* out);
Status createDlbSatBuilder(int maxWidth, int maxHeight, std::unique_ptr<SatBuilder>* out);
// build is Fused or Fused32.
Status createFusedSatBuilder(SatBuild build, int maxWidth, int maxHeight,
                             std::unique_ptr<SatBuilder>* out);

}  // namespace nccmatch::cuda
