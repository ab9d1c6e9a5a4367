// When the tracker searches the whole frame (to acquire new objects) instead of the windows.
#pragma once

#include <cstdint>

namespace nccmatch::track {

// frame: this frame's number; lastFull: the frame of the last full-frame search (-1: none yet);
// anyMatchedLastFrame: some track was matched in the previous frame. The whole frame is searched
// while nothing was matched (nothing to follow), and every `interval` frames otherwise (never
// with interval 0).
inline bool fullSearchDue(int64_t frame, int64_t lastFull, int interval, bool anyMatchedLastFrame) {
  if (!anyMatchedLastFrame || lastFull < 0) return true;
  return interval > 0 && frame - lastFull >= interval;
}

}  // namespace nccmatch::track
