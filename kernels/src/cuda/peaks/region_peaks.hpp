// The device half of a list of regions' peaks (common/region_peaks.hpp): one block per region
// scans its score map, appends every position that passes the threshold and the
// local-peak rule to one candidate list (atomically; the host sorts them) and writes the region's
// best position, each sampled with its neighbours. Only these few samples travel to the host,
// never the maps. The fused region kernel hands its peaks over per tile itself (one launch:
// RegionPeakJob's tile fields); this kernel serves the masked kernel's maps.
#pragma once

#include <cuda_runtime_api.h>

#include "common/region_peaks.hpp"
#include "cuda/numerator/region_scores.hpp"
#include "nccmatch/status.hpp"

namespace nccmatch::cuda {

struct Ranked;  // peaks/peaks_kernels.hpp

// What a region peak search writes, and where. sign and goodEnough: the rules' goodness sign and
// sign * threshold; collect: max-matches > 0. candidates: room for `capacity` samples,
// *candidateCount zeroed before; bests: one sample per region. The fused region kernel's own
// hand-off, each per region and zeroed before: tilesDone (finished tiles: the last one finishes
// the region), aboveCount (positions in the region's RegionScoreDesc::above list), and tileBests
// (tileStride slots a region, one a tile).
struct RegionPeakJob {
  double sign = 1.0, goodEnough = 0.0;
  bool collect = false;
  RegionPeak* candidates = nullptr;
  int capacity = 0;
  int* candidateCount = nullptr;
  RegionPeak* bests = nullptr;
  unsigned* tilesDone = nullptr;
  int* aboveCount = nullptr;
  Ranked* tileBests = nullptr;
  int tileStride = 0;
  int firstRegion = 0;  // the launch's region k is region firstRegion + k of bests and candidates
};

// An error naming the missing buffer, if any.
Status checkRegionPeakJob(const RegionPeakJob& job);

// One block per region over the `count` descriptors in device memory (maps already scored).
// Enqueues on stream, never syncs.
Status findRegionPeaks(const RegionScoreDesc* descs, int count, const RegionPeakJob& job, cudaStream_t stream);

}  // namespace nccmatch::cuda
