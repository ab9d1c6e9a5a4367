#include "box_drawing.hpp"

#include <algorithm>
#include <cstring>

namespace nccmatch::plugin {

namespace {

// Fills the rectangle [x0, x1) x [y0, y1), clipped to the plane.
void fillRect(PlaneView plane, long x0, long y0, long x1, long y1, uint8_t value) {
  x0 = std::max(x0, 0L);
  y0 = std::max(y0, 0L);
  x1 = std::min(x1, long(plane.width));
  y1 = std::min(y1, long(plane.height));
  if (x0 >= x1 || y0 >= y1) return;
  for (long y = y0; y < y1; ++y) std::memset(plane.data + y * plane.stride + x0, value, std::size_t(x1 - x0));
}

}  // namespace

void drawRing(PlaneView plane, Box box, int thickness, uint8_t value) {
  if (plane.data == nullptr || box.width <= 0 || box.height <= 0 || thickness < 1) return;
  // long arithmetic: boxes come from matches but a caller may pass anything.
  long x0 = box.x, y0 = box.y, x1 = x0 + long(box.width), y1 = y0 + long(box.height);
  long t = thickness;
  fillRect(plane, x0, y0, x1, std::min(y0 + t, y1), value);          // top
  fillRect(plane, x0, std::max(y1 - t, y0), x1, y1, value);          // bottom
  fillRect(plane, x0, y0, std::min(x0 + t, x1), y1, value);          // left
  fillRect(plane, std::max(x1 - t, x0), y0, x1, y1, value);          // right
}

void drawMatchBox(PlaneView plane, Box box) {
  drawRing(plane, box, kMatchRingThickness, 255);
  const int t = kMatchRingThickness;
  if (box.width <= 2 * t || box.height <= 2 * t) return;  // no room inside the white ring
  if (box.x > plane.width || box.y > plane.height) return;  // wholly outside (and no overflow below)
  Box inner{box.x + kMatchRingThickness, box.y + kMatchRingThickness, box.width - 2 * kMatchRingThickness,
            box.height - 2 * kMatchRingThickness};
  drawRing(plane, inner, 1, 0);
}

}  // namespace nccmatch::plugin
