// Peaks of a region's score map found where the map lies (the GPU) and finished on the host: the
// device hands over each candidate (a position that passes the threshold and the local-peak rule)
// and the region's best position, each with its score and its four neighbours' goodness; the host
// ranks, suppresses and refines them exactly as findPeaks (peaks.hpp) does with the whole map.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "nccmatch/regions.hpp"
#include "nccmatch/types.hpp"
#include "rules/peak_rules.hpp"

namespace nccmatch {

// A position of region `region`'s map: its score and the goodness of its neighbours left, right,
// above and below (0 where the neighbour is outside the map, where the sub-pixel rule reads none).
struct RegionPeak {
  int region = 0;
  int x = 0, y = 0;
  double score = 0.0;
  double left = 0.0, right = 0.0, up = 0.0, down = 0.0;
};

// Position (x, y) with its score and its neighbours' goodness read from `good` (any map
// accessor with width, height and goodness at (x, y): a whole map, or a kernel's tile of it).
template <typename Good>
NCC_HOST_DEVICE inline RegionPeak sampleRegionPeakAt(const Good& good, double score, int region, int x, int y) {
  RegionPeak p;
  p.region = region;
  p.x = x;
  p.y = y;
  p.score = score;
  p.left = x > 0 ? good(x - 1, y) : 0.0;
  p.right = x + 1 < good.width ? good(x + 1, y) : 0.0;
  p.up = y > 0 ? good(x, y - 1) : 0.0;
  p.down = y + 1 < good.height ? good(x, y + 1) : 0.0;
  return p;
}

template <typename Index>
NCC_HOST_DEVICE inline RegionPeak sampleRegionPeak(const GoodnessMap<Index>& good, const double* map, int region,
                                                   int x, int y) {
  return sampleRegionPeakAt(good, map[Index(y) * good.width + x], region, x, y);
}

// A call's candidates, as the device handed them over (any order), grouped by region by a stable
// counting sort into memory kept from call to call: a caller finishing a tracker's windows every
// frame allocates nothing once warm. Memory beyond kKeptCandidates (a call with a low threshold
// over large regions) is given back by trim().
class RegionCandidates {
 public:
  static constexpr std::size_t kKeptCandidates = 4096;

  // Groups candidates[0, count) of a call of `regions` regions; false (nothing grouped) when one
  // names a region outside [0, regions).
  bool group(const RegionPeak* candidates, std::size_t count, std::size_t regions);
  // Region i's candidates, in the order they were handed over, and how many.
  RegionPeak* of(std::size_t region) { return grouped_.data() + begin(region); }
  std::size_t count(std::size_t region) const { return ends_[region] - begin(region); }
  // Gives back the memory of a call with more than kKeptCandidates candidates.
  void trim();
  std::size_t capacity() const { return grouped_.capacity(); }

 private:
  std::size_t begin(std::size_t region) const { return region == 0 ? 0 : ends_[region - 1]; }
  std::vector<RegionPeak> grouped_;
  std::vector<std::size_t> ends_;  // region i's candidates end at ends_[i]
};

// A region's best position from its tiles' bests (the fused region kernel hands one over a tile,
// region_scores.hpp), in any order, `count` >= 1: the first by the rules' order, goodness
// (sign * score), then raster order, which is the best of the whole map.
RegionPeak bestOfTiles(const RegionPeak* tiles, std::size_t count, double sign);

// The region's matches and best (frame coordinates are the caller's business) from its `count`
// candidates in any order (sorted in place) and its best position: findPeaks' result for the
// region's mapWidth x mapHeight map. out->matches' memory is reused: a caller that keeps its
// results from call to call allocates nothing once warm.
void finishRegionPeaks(RegionPeak* candidates, std::size_t count, const RegionPeak& best, int mapWidth,
                       int mapHeight, int templateWidth, int templateHeight, uint32_t templateIndex,
                       const MatchParams& params, RegionResult* out);

}  // namespace nccmatch
