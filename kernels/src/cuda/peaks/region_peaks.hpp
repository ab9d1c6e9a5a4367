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
// hostCandidateSlots candidates (hostCandidates) and, once the call's last hand-off is made, the
// candidate count (hostCandidateCount); candidates past those slots, up to `capacity`, go to the
// device list `candidates` at their own index. callCounter, a device counter zero before a call and
// left zero by it: candidate slots taken in the low 32 bits, hand-offs made in the high 32, of
// handOffs in the call (one a fused tile, one a region of the peak kernel: the fused launch and
// the peak launch after it count into the same total; the call's positions stay below 2^31).
struct RegionPeakJob {
  double sign = 1.0, goodEnough = 0.0;
  bool collect = false;
  RegionPeak* hostCandidates = nullptr;
  int hostCandidateSlots = 0;
  int* hostCandidateCount = nullptr;
  RegionPeak* bests = nullptr;
  RegionPeak* tileBests = nullptr;
  RegionPeak* candidates = nullptr;
  int capacity = 0;
  unsigned long long* callCounter = nullptr;
  int handOffs = 0;
  int firstRegion = 0;  // the launch's region k is region firstRegion + k of bests and candidates
};

// An error naming the missing buffer, if any.
Status checkRegionPeakJob(const RegionPeakJob& job);

// One block per region over the `count` descriptors (device or mapped host memory; maps already
// scored).
// Enqueues on stream, never syncs.
Status findRegionPeaks(const RegionScoreDesc* descs, int count, const RegionPeakJob& job, cudaStream_t stream);

}  // namespace nccmatch::cuda
