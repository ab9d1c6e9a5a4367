// Peak finding of the CPU backend: the same results as findPeaks (peaks.hpp, the reference), with
// the map scanned by the engine's threads in bands of rows and each row first reduced to its
// maximum with vector instructions, so rows with nothing above the threshold cost one pass.
#pragma once

#include <optional>
#include <vector>

#include "nccmatch/types.hpp"
#include "cpu/thread_pool.hpp"

namespace nccmatch {

void findPeaksParallel(const double* map, int mapWidth, int mapHeight, int templateWidth,
                       int templateHeight, uint32_t templateIndex, const MatchParams& params,
                       ThreadPool& pool, std::vector<Match>* matches, std::optional<Match>* best);

}  // namespace nccmatch
