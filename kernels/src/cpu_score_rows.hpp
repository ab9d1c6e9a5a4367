// Scores of whole map rows on the CPU: window sums straight from the SAT rows, and the six
// methods in int64 arithmetic where it cannot overflow. Bit-identical to scoreFromSums (whose
// __int128 values convert to the same doubles), several times faster per window.
#pragma once

#include <cstdint>

#include "score_rules.hpp"

namespace nccmatch {

// s1[x], s2[x] = sum of I and of I^2 over the window (x, y) of a tw x th template, x < mapW.
void boxSumsRow(const int64_t* sat, const int64_t* satSq, int frameWidth, int tw, int th, int y,
                int mapW, int64_t* s1, int64_t* s2);

// out[x] = scoreFromSums(method, t, s1[x], s2[x], cross[x]) for x < mapW.
void scoreRowExact(Method method, const TemplateStats& t, const int64_t* s1, const int64_t* s2,
                   const int64_t* cross, int mapW, double* out);

}  // namespace nccmatch
