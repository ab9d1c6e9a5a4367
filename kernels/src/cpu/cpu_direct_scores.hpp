// Exact scores of one template over map rows of a frame by the Direct numerator (VNNI where
// usable, else vectorised loops) and window sums from the pixels: the Direct path of the CPU
// engine, one band of rows on the calling thread.
#pragma once

#include <functional>

#include "cpu/cpu_numerator_direct.hpp"
#include "nccmatch/types.hpp"
#include "rules/score_rules.hpp"

namespace nccmatch {

// A map row's window sums where they do not come from the pixels under the whole template
// (masked templates, sums shared by a group): sets *s1, *s2 to row y's sums, written into the
// scratch rows given or held elsewhere.
using RowWindowSums =
    std::function<void(int y, int64_t* scratch1, int64_t* scratch2, const int64_t** s1, const int64_t** s2)>;

// Scores map rows [yBegin, yEnd) of template t on `frame` into out (the whole map, row-major,
// (frame.width - t.width + 1) wide). t must fit the frame; its ignored pixels (if any) zeroed,
// with rowSums giving the masked window sums; stats as the score rules need them.
void scoreRowsDirect(const FrameView& frame, Method method, const TemplateImage& t, const TemplateStats& stats,
                     const DirectTemplate& packed, int yBegin, int yEnd, double* out,
                     const RowWindowSums& rowSums = nullptr);

}  // namespace nccmatch
