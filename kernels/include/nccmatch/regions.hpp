// Searching a list of regions of one frame in one engine call (Engine::matchRegions): each region
// is a rectangle of the frame and the template searched in it. A tracker's windows are such a
// list, so a frame's cost follows the windows' area, not the frame's.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "nccmatch/types.hpp"

namespace nccmatch {

// One rectangle of the frame (x, y >= 0, width, height >= 1, inside the frame) and the template
// searched in it: the bank's template `templateIndex`, or `image` when set (e.g. a tracker's own,
// updated copy of that template; any size from 1x1 to 16384x16384). Matches report templateIndex
// either way.
struct RegionQuery {
  int x = 0;
  int y = 0;
  int width = 0;
  int height = 0;
  uint32_t templateIndex = 0;
  const TemplateImage* image = nullptr;  // not owned; must outlive the call
};

// What Engine::match would report for the one template on a view of the region alone (the same
// scores, local-peak rule, threshold, NMS, max-matches and sub-pixel refinement), moved to frame
// coordinates. A region smaller than its template has no matches and no best.
struct RegionResult {
  std::vector<Match> matches;  // best first
  std::optional<Match> best;   // the best position in the region regardless of threshold
};

}  // namespace nccmatch
