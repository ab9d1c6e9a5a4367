// The tracker's record of one track: its id, template, last match, velocity, frames lost and,
// with template-update, its own copy of its template.
#pragma once

#include <cstdint>
#include <vector>

#include "nccmatch/tracker.hpp"
#include "nccmatch/types.hpp"

namespace nccmatch {

struct Tracker::Track {
  uint64_t id = 0;
  uint32_t original = 0;  // the template tracked (an original of a scaled bank)
  uint32_t entry = 0;     // the engine bank entry (scale) of the last match
  Match last;             // the last match, frame coordinates, templateIndex = original
  int64_t lastFrame = 0;  // the frame of the last match
  double vx = 0.0, vy = 0.0;  // pixels per frame, from the last two matches
  int missed = 0;             // frames since the last match
  // template-update: the blended copy (doubles, so small updates are not lost to rounding) and
  // its rounded image, which the track's window is searched with.
  std::vector<double> blend;
  TemplateImage own;
};

}  // namespace nccmatch
