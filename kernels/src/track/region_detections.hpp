// A frame's window searches as one result: what the tracker assigns to tracks.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "nccmatch/regions.hpp"
#include "nccmatch/types.hpp"

namespace nccmatch::track {

// Working memory of combineRegionResults, kept by a caller that combines every frame (no
// allocations once grown).
struct CombineScratch {
  struct Found {
    Found(uint32_t entry, const Match& match) : entry(entry), match(match) {}
    uint32_t entry;  // the region's template
    Match match;
  };
  std::vector<Found> all;  // every region's matches
  std::vector<Match> kept;  // one entry's matches kept so far
};

// The windows' matches as one FrameResult over `entries` bank templates (by RegionQuery's
// templateIndex): per template, every window's matches (a position two windows found, once,
// with its better score), ranked as the rules rank candidates (better score, then raster order),
// greedy NMS at params.nmsIou and at most params.maxMatches; best[i] the best of the windows'
// bests. Matches keep their scores, boxes and sub-pixel corners.
FrameResult combineRegionResults(const std::vector<RegionQuery>& regions, const std::vector<RegionResult>& results,
                                 std::size_t entries, const MatchParams& params);
// The same into *out (replaced), with the caller's working memory.
void combineRegionResults(const std::vector<RegionQuery>& regions, const std::vector<RegionResult>& results,
                          std::size_t entries, const MatchParams& params, CombineScratch* scratch, FrameResult* out);

}  // namespace nccmatch::track
