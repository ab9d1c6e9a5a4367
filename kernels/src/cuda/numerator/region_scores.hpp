// The fused spatial kernel over a list of regions of one frame in one launch (blockIdx.z = region):
// each region has its own image origin, size and pitch and its own template (up to 64x64, the
// fused kernel's tensor-core fragments). The numerator and window sums are the fused kernel's
// (fused_spatial_tiles.cuh); every score is the rules' scoreFromSums, bit for bit the CPU's map of
// that region as a frame of its own. The scores never leave the block: each block finds its
// tile's peaks and hands them to the host itself.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>

#include "common/integer_math.hpp"
#include "cuda/numerator/spatial_scores.hpp"
#include "nccmatch/status.hpp"
#include "rules/score_rules.hpp"

namespace nccmatch::cuda {

// A region's score map is cut in tiles of kRegionTileWidth x kRegionTileHeight positions, one a
// block. The block scores its tile with the one-position ring around it (the fused kernel's
// kFusedTileWidth x kFusedTileHeight outputs), so that every neighbour the local-peak rule and the
// sub-pixel samples read is in its own shared memory: no block waits for another's scores.
constexpr int kRegionTileWidth = kFusedTileWidth - 2;
constexpr int kRegionTileHeight = kFusedTileHeight - 2;

// The tiles of a mapWidth x mapHeight map, across and down.
NCC_HOST_DEVICE constexpr int regionTilesAcross(int mapWidth) { return ceilDiv(mapWidth, kRegionTileWidth); }
NCC_HOST_DEVICE constexpr int regionTilesDown(int mapHeight) { return ceilDiv(mapHeight, kRegionTileHeight); }
inline int regionTileCount(int mapWidth, int mapHeight) {
  return regionTilesAcross(mapWidth) * regionTilesDown(mapHeight);
}

// One region as the kernels read it (an array of these in device memory, or in mapped host memory:
// each block reads its own once).
struct RegionScoreDesc {
  const uint8_t* image = nullptr;  // device: the region's first pixel
  std::size_t pitch = 0;           // bytes between its rows
  int width = 0, height = 0;       // the region, at least the template's size
  const uint8_t* fragments = nullptr;  // device: fusedSpatialFragments of the template
  int templateWidth = 0, templateHeight = 0;  // 1..64 each
  TemplateStats stats;
  double* map = nullptr;  // device: (width - w + 1) x (height - h + 1), dense (the masked kernel's; the fused kernel writes none)
  int firstTile = 0;      // the fused kernel: the slot of its first tile's best in the job's tile bests
};

struct RegionPeakJob;  // peaks/region_peaks.hpp

// Up to this many descriptors travel in the kernel's parameters (a tracker's windows): no block
// reads its descriptor over the bus.
constexpr int kInlineRegionDescs = 32;

// Scores every region's whole map in one launch on `stream` (never syncs) and hands its peaks to
// the host (peaks: RegionPeakJob, region_handoff.cuh): each block its tile's best (tileBests) and
// its tile's candidates, so one launch gives every region's candidates and tile bests. descs:
// `count` descriptors in device or mapped host memory; hostDescs (optional): the same in host
// memory, passed in the kernel's parameters when there are at most kInlineRegionDescs (then
// `descs` is not read). overlapPrevious: launched overlapping the stream's previous kernel, the
// window gather (dependent_launch.cuh: only where dependentLaunchSupported); its blocks wait for
// that kernel's end before they read any pixel. maxTemplateHeight the tallest template among them;
// maxMapWidth, maxMapHeight the largest map sides (the grid's tiles across and down); each
// region's tiles' bests go to the job's tile bests from its descriptor's firstTile on (tile (x, y)
// at firstTile + y * regionTilesAcross + x); the job's counter zero (left zero).
Status fusedRegionScores(const RegionScoreDesc* descs, const RegionScoreDesc* hostDescs, int count,
                         int maxTemplateHeight, int maxMapWidth, int maxMapHeight, Method method,
                         const RegionPeakJob& peaks, bool overlapPrevious, cudaStream_t stream);

}  // namespace nccmatch::cuda
