// The device half of a list of regions' peaks (common/region_peaks.hpp): one block per region
// scans its score map (written by fusedRegionScores), appends every position that passes the
// threshold and the local-peak rule to one candidate list (atomically; the host sorts them) and
// writes the region's best position, each sampled with its neighbours. Only these few samples
// travel to the host, never the maps.
#pragma once

#include <cuda_runtime_api.h>

#include "common/region_peaks.hpp"
#include "cuda/numerator/region_scores.hpp"
#include "nccmatch/status.hpp"

namespace nccmatch::cuda {

// descs: the `count` regions' descriptors in device memory (maps already scored). sign and
// goodEnough: the rules' goodness sign and sign * threshold; collect: max-matches > 0.
// candidates: room for `capacity` samples, *candidateCount zeroed before; bests: `count` samples.
// Enqueues on stream, never syncs.
Status findRegionPeaks(const RegionScoreDesc* descs, int count, double sign, double goodEnough, bool collect,
                       RegionPeak* candidates, int capacity, int* candidateCount, RegionPeak* bests,
                       cudaStream_t stream);

}  // namespace nccmatch::cuda
