// Draws match boxes into an 8-bit plane (the luma plane of GRAY8/I420/NV12). Detection never sees
// the drawing: the element draws after matching a frame.
#pragma once

#include <cstddef>
#include <cstdint>

namespace nccmatch::plugin {

struct PlaneView {
  uint8_t* data = nullptr;
  int width = 0;
  int height = 0;
  std::size_t stride = 0;  // bytes per row, >= width
};

struct Box {
  int x = 0;  // top-left corner
  int y = 0;
  int width = 0;
  int height = 0;
};

// Sets a ring `thickness` pixels wide along the inside of `box` to `value`. Pixels outside the
// plane are clipped; an empty box or a thickness < 1 draws nothing.
void drawRing(PlaneView plane, Box box, int thickness, uint8_t value);

// How the element marks a match: a white ring (kMatchRingThickness pixels) on the box's edge with a
// black one-pixel ring just inside it, so the box shows on dark and bright content alike.
inline constexpr int kMatchRingThickness = 2;
void drawMatchBox(PlaneView plane, Box box);

}  // namespace nccmatch::plugin
