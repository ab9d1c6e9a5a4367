// Constant-velocity motion of a track: where its box is predicted in a frame and the window
// searched around it.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>

namespace nccmatch::track {

struct Point {
  double x = 0.0, y = 0.0;
};

// The top-left corner predicted `frames` frames after a match at `last` moving at (vx, vy).
inline Point predictCorner(Point last, double vx, double vy, int64_t frames) {
  return Point{last.x + vx * double(frames), last.y + vy * double(frames)};
}

// The velocity between two matches `frames` (>= 1) frames apart.
inline Point velocityBetween(Point before, Point after, int64_t frames) {
  return Point{(after.x - before.x) / double(frames), (after.y - before.y) / double(frames)};
}

// The margin of a track lost for `missed` frames: `margin` more for each of them, so a lost
// object is searched in a growing window. Bounded so that it never overflows an int.
inline int marginAfterMissed(int margin, int missed) {
  const int64_t grown = int64_t(margin) * (1 + int64_t(std::max(missed, 0)));
  return int(std::min<int64_t>(grown, 1 << 20));
}

struct Window {
  int x = 0, y = 0, width = 0, height = 0;  // width or height 0: empty
};

// The box w x h at `corner` rounded to the nearest pixel, grown by `margin` on each side and
// clipped to the frameWidth x frameHeight frame; empty when nothing of it is in the frame. Rounded,
// not grown outward to whole pixels: a sub-pixel corner would make every window one pixel wider
// and taller than w + 2 margin (129 instead of 128 for 32 + 2 x 48), which costs the engine more
// than the position it adds (a wider row pitch, an odd tail in every packed row).
inline Window searchWindow(Point corner, int w, int h, int margin, int frameWidth, int frameHeight) {
  const double x0 = std::floor(corner.x + 0.5) - margin, y0 = std::floor(corner.y + 0.5) - margin;
  const double x1 = x0 + w + 2.0 * margin, y1 = y0 + h + 2.0 * margin;
  const double cx0 = std::max(0.0, x0), cy0 = std::max(0.0, y0);
  const double cx1 = std::min(double(frameWidth), x1), cy1 = std::min(double(frameHeight), y1);
  if (!(cx1 > cx0 && cy1 > cy0)) return Window{};
  return Window{int(cx0), int(cy0), int(cx1 - cx0), int(cy1 - cy0)};
}

// Whether a match with top-left corner (x, y) is a candidate for a track predicted at `corner`
// with this margin: within the margin along both axes (a match found in the track's window is).
inline bool withinGate(Point corner, int margin, double x, double y) {
  return std::abs(x - corner.x) <= margin + 1.0 && std::abs(y - corner.y) <= margin + 1.0;
}

}  // namespace nccmatch::track
