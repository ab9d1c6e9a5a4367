// The fused spatial kernel over a list of regions of one frame in one launch (blockIdx.z = region):
// each region has its own image origin, size and pitch, its own template (up to 64x64, the fused
// kernel's tensor-core fragments) and its own score map. The numerator and window sums are the
// fused kernel's (fused_spatial_tiles.cuh); every score is the rules' scoreFromSums, so a region's
// map is bit for bit the CPU's map of that region as a frame of its own.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>

#include "nccmatch/status.hpp"
#include "rules/score_rules.hpp"

namespace nccmatch::cuda {

// One region as the kernel reads it (an array of these in device memory, or in mapped host memory:
// each block reads its own once).
struct RegionScoreDesc {
  const uint8_t* image = nullptr;  // device: the region's first pixel
  std::size_t pitch = 0;           // bytes between its rows
  int width = 0, height = 0;       // the region, at least the template's size
  const uint8_t* fragments = nullptr;  // device: fusedSpatialFragments of the template
  int templateWidth = 0, templateHeight = 0;  // 1..64 each
  TemplateStats stats;
  double* map = nullptr;  // device: (width - w + 1) x (height - h + 1), dense
  int* above = nullptr;   // device, with a peak job: room for the map's positions (those reaching the threshold)
};

struct RegionPeakJob;  // peaks/region_peaks.hpp

// Up to this many descriptors travel in the kernel's parameters (a tracker's windows): no block
// reads its descriptor over the bus.
constexpr int kInlineRegionDescs = 32;

// Scores every region's whole map in one launch on `stream` (never syncs). descs: `count`
// descriptors in device or mapped host memory; hostDescs (optional): the same in host memory,
// passed in the kernel's parameters when there are at most kInlineRegionDescs (then `descs` is not
// read). overlapPrevious: launched overlapping the stream's previous kernel, the window gather
// (dependent_launch.cuh: only where dependentLaunchSupported); its blocks wait for that kernel's
// end before they read any pixel. maxTemplateHeight the tallest template among them; maxMapWidth,
// maxMapHeight the largest map sides (the grid's x and y). peaks (optional): the block that
// finishes a region's last tile then finds that region's peaks and hands them to the host
// (region_handoff.cuh), so one launch gives scores and peaks; its counters must be zero and are
// left zero.
Status fusedRegionScores(const RegionScoreDesc* descs, const RegionScoreDesc* hostDescs, int count,
                         int maxTemplateHeight, int maxMapWidth, int maxMapHeight, Method method,
                         const RegionPeakJob* peaks, bool overlapPrevious, cudaStream_t stream);

}  // namespace nccmatch::cuda
