// Scores of map row segments on the CPU from exact window sums: the rules of score_rules.hpp
// in loops the compiler vectorises, so bit-identical to scoreFromSums and scoreFromCentred and
// several times faster per window.
#pragma once

#include <cstdint>

#include "rules/score_rules.hpp"

namespace nccmatch {

// out[x] = scoreFromSums(method, t, s1[x], s2[x], cross[x]) for x < count.
void scoreRowExact(Method method, const TemplateStats& t, const int64_t* s1, const int64_t* s2,
                   const int64_t* cross, int count, double* out);

// out[x] = scoreFromCentred(method, t, s1[x], s2[x], centred[x]).score for x < count. Returns true
// when some window's denominator is positive and below minDenominator (its score is then less
// accurate than the caller asked for; scoreFromCentred tells which).
bool scoreRowCentred(Method method, const TemplateStats& t, const int64_t* s1, const int64_t* s2,
                     const float* centred, int count, double minDenominator, double* out);

}  // namespace nccmatch
