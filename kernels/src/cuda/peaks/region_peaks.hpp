// The device half of a list of regions' peaks (common/region_peaks.hpp): one block per region
// scans its score map, appends every position that passes the threshold and the
// local-peak rule to one candidate list (atomically; the host sorts them) and writes the region's
// best position, each sampled with its neighbours. Only these few samples travel to the host,
// never the maps. The fused region kernel hands its peaks over per tile itself (one launch, no
// map: RegionPeakJob's tile bests); this kernel serves the masked kernel's maps.
#pragma once

#include <cuda_runtime_api.h>

#include "common/region_peaks.hpp"
#include "cuda/numerator/region_scores.hpp"
#include "nccmatch/status.hpp"

namespace nccmatch::cuda {

// What a region peak search writes, and where. sign and goodEnough: the rules' goodness sign and
// sign * threshold; collect: max-matches > 0. The call's results go where the host reads them
// without a copy back (mapped host memory, cuda/peaks/region_handoff.cuh): bests (the peak
// kernel's: one sample a region), tileBests (the fused region kernel's: one sample a tile, each
// region's from its descriptor's firstTile on; the host takes each region's best of them), the first
// hostCandidateSlots candidates (hostCandidates) and each hand-off unit's candidate count
// (unitCounts: a fused tile's at its tile best's index, a peak kernel's region at its launch
// index; the host sums them); candidates past those slots, up to `capacity`, go to the device list
// `candidates` at their own index. callCounter: the candidate slots the call has taken, zero
// before the call; nextCounter: the next call's, which the call's units zero (the host alternates
// the two; the call's positions stay below 2^31).
struct RegionPeakJob {
  double sign = 1.0, goodEnough = 0.0;
  bool collect = false;
  RegionPeak* hostCandidates = nullptr;
  int hostCandidateSlots = 0;
  int* unitCounts = nullptr;
  RegionPeak* bests = nullptr;
  RegionPeak* tileBests = nullptr;
  RegionPeak* candidates = nullptr;
  int capacity = 0;
  unsigned* callCounter = nullptr;
  unsigned* nextCounter = nullptr;
  int firstRegion = 0;  // the launch's region k is region firstRegion + k of bests and candidates
};

// An error naming the missing buffer, if any.
Status checkRegionPeakJob(const RegionPeakJob& job);

// One block per region over the `count` descriptors (device or mapped host memory; maps already
// scored).
// Enqueues on stream, never syncs.
Status findRegionPeaks(const RegionScoreDesc* descs, int count, const RegionPeakJob& job, cudaStream_t stream);

}  // namespace nccmatch::cuda
