// The direct numerator of the CPU backend: sum of I*T over every window of one map row, exact in
// integers and vectorised (8-bit pixels widened to 16-bit products, summed in 32-bit lanes).
#pragma once

#include <cstddef>
#include <cstdint>

#include "nccmatch/types.hpp"

namespace nccmatch {

// cross[x] = sum over the template of I(x + tx, y + ty) * T(tx, ty) for x in [0, mapWidth).
// scratch holds mapWidth int32 values. Exact for every template size.
void directCrossRow(const uint8_t* frame, std::size_t stride, int mapWidth, int y,
                    const TemplateImage& t, int32_t* scratch, int64_t* cross);

// The same sum at one window (used to repair single positions on the FFT path).
int64_t directCrossAt(const uint8_t* frame, std::size_t stride, int x, int y, const TemplateImage& t);

}  // namespace nccmatch
