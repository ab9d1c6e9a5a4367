// Window sums of the CPU backend under a template's mask: s1 = sum I M and s2 = sum I^2 M over
// every window, i.e. the correlations of I and I^2 with the mask. The mask's compared pixels are
// cut into rectangles (runs of each row, merged down while the next row has the same run), and
// each rectangle is one box of the frame's int64 summed-area tables: exact integers at four
// lookups a rectangle (one rectangle for a full mask, about one a row for a disc or a rotated
// square).
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "nccmatch/types.hpp"

namespace nccmatch {

struct MaskRectangle {
  int x0 = 0, y0 = 0, x1 = 0, y1 = 0;  // [x0, x1) x [y0, y1) in template pixels
};

// The compared pixels of t as disjoint rectangles covering them exactly (no mask: one rectangle
// of the whole template; an empty mask: none).
std::vector<MaskRectangle> maskRectangles(const TemplateImage& t);

// s1[i], s2[i] of the windows (x0 + i, y), i < count, from the frame's tables (sat, satSq:
// buildSatCpu's layout, frameWidth wide).
void maskedWindowSumsRow(const int64_t* sat, const int64_t* satSq, int frameWidth,
                         const std::vector<MaskRectangle>& rectangles, int y, int x0, int count, int64_t* s1,
                         int64_t* s2);

// The sums of one window (x, y) straight from the pixels, over the compared pixels of t.
void maskedWindowSumsAt(const uint8_t* frame, std::size_t stride, int x, int y, const TemplateImage& t,
                        int64_t* s1, int64_t* s2);

}  // namespace nccmatch
