// Exact scores of one template over map rows of a frame by the Direct numerator (VNNI where
// usable, else vectorised loops) and window sums from the pixels: the Direct path of the CPU
// engine, one band of rows on the calling thread.
#pragma once

#include "cpu/cpu_numerator_direct.hpp"
#include "nccmatch/types.hpp"
#include "rules/score_rules.hpp"

namespace nccmatch {

// Scores map rows [yBegin, yEnd) of template t on `frame` into out (the whole map, row-major,
// (frame.width - t.width + 1) wide). t must fit the frame.
void scoreRowsDirect(const FrameView& frame, Method method, const TemplateImage& t, const TemplateStats& stats,
                     const DirectTemplate& packed, int yBegin, int yEnd, double* out);

}  // namespace nccmatch
