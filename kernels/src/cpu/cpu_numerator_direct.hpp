// The direct numerator of the CPU backend: sum of I*T over every window of one map row, exact in
// integers: AVX-512 VNNI dot products where the CPU has them, else loops the compiler vectorises
// (8-bit pixels widened to 16-bit products, summed in 32-bit lanes).
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "nccmatch/types.hpp"

namespace nccmatch {

// cross[x] = sum over the template of I(x + tx, y + ty) * T(tx, ty) for x in [0, mapWidth).
// scratch holds mapWidth int32 values. Exact for every template size.
void directCrossRow(const uint8_t* frame, std::size_t stride, int mapWidth, int y,
                    const TemplateImage& t, int32_t* scratch, int64_t* cross);

// A template laid out for the AVX-512 VNNI kernel: T - 128 as signed bytes, four taps per int32,
// each row padded with zero taps to a multiple of four. Pixels its mask ignores are zero taps, so
// the kernel's sum plus 128 * (the window's masked sum of I) is sum I T M.
struct DirectTemplate {
  int width = 0, height = 0, groups = 0;
  std::vector<int32_t> taps;  // height rows of `groups` words
};
DirectTemplate packDirectTemplate(const TemplateImage& t);

// True when this CPU has AVX-512 BW and VNNI and the kernel's int32 sums cannot overflow for this
// template size (at most 65792 pixels: |I * (T - 128)| <= 32640).
bool directVnniUsable(int templateWidth, int templateHeight);
inline bool directVnniUsable(const DirectTemplate& t) { return directVnniUsable(t.width, t.height); }

// cross as directCrossRow, from vpdpbusd dot products of four image bytes with four taps of
// T - 128, plus 128 * windowSum[x] (the window's exact sum of I over the compared pixels). frameWidth bounds the vector
// loads; windows too close to the right edge take directCrossRow's loops. scratch: mapWidth int32.
void directCrossRowVnni(const uint8_t* frame, std::size_t stride, int frameWidth, int mapWidth, int y,
                        const TemplateImage& t, const DirectTemplate& packed, const int64_t* windowSum,
                        int32_t* scratch, int64_t* cross);

// The same sum at one window (used to repair single positions on the FFT path).
int64_t directCrossAt(const uint8_t* frame, std::size_t stride, int x, int y, const TemplateImage& t);

}  // namespace nccmatch
