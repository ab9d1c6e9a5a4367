// Searching a list of regions of one frame in one engine call (Engine::matchRegions): each region
// is a rectangle of the frame and the template searched in it. A tracker's windows are such a
// list, so a frame's cost follows the windows' area, not the frame's.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "nccmatch/types.hpp"

namespace nccmatch {

// A list of templates an engine has prepared once for many matchRegions calls
// (Engine::prepareRegionTemplates): a handle, copied freely, naming a set the engine holds until
// it is released or replaced, or the engine is destroyed. The engine sets every field; a
// default-constructed handle names no set. A handle is refused (a Status naming the problem) by
// any other engine and once its set is released or replaced.
struct RegionTemplateSet {
  uint64_t engine = 0;  // which engine prepared it (a number unique in the process; 0: none)
  uint64_t id = 0;      // the set within that engine (0: none)
  uint32_t size = 0;    // templates in the set
  bool empty() const { return id == 0; }
};

// One rectangle of the frame (x, y >= 0, width, height >= 1, inside the frame) and the template
// searched in it: the bank's template `templateIndex`; or `image` when set (e.g. a tracker's own,
// updated copy of that template; any size from 1x1 to 16384x16384), laid out anew each call; or
// template `setIndex` of the prepared `set` when that names one (laid out once, when prepared:
// what a caller searching the same templates frame after frame uses). At most one of image and
// set. Matches report templateIndex in every case.
struct RegionQuery {
  RegionQuery() = default;
  // A region searched for the bank's template (or, with `image`, that image).
  RegionQuery(int x, int y, int width, int height, uint32_t templateIndex, const TemplateImage* image = nullptr)
      : x(x), y(y), width(width), height(height), templateIndex(templateIndex), image(image) {}
  // A region searched for template `setIndex` of a prepared set.
  RegionQuery(int x, int y, int width, int height, const RegionTemplateSet& set, uint32_t setIndex,
              uint32_t templateIndex = 0)
      : x(x), y(y), width(width), height(height), templateIndex(templateIndex), set(set), setIndex(setIndex) {}

  int x = 0;
  int y = 0;
  int width = 0;
  int height = 0;
  uint32_t templateIndex = 0;
  const TemplateImage* image = nullptr;  // not owned; must outlive the call
  RegionTemplateSet set;                 // a set this engine prepared, or empty
  uint32_t setIndex = 0;                 // the template within `set`
};

// What Engine::match would report for the one template on a view of the region alone (the same
// scores, local-peak rule, threshold, NMS, max-matches and sub-pixel refinement), moved to frame
// coordinates. A region smaller than its template has no matches and no best.
struct RegionResult {
  std::vector<Match> matches;  // best first
  std::optional<Match> best;   // the best position in the region regardless of threshold
};

}  // namespace nccmatch
