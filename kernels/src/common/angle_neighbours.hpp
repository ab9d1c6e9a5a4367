// Which variants of a bank are neighbours in angle: among the entries of one original at one
// scale, sorted by angle, each entry's left and right neighbour, wrapping around when the angles
// cover the full circle evenly. mergeScaledResult refines angles between these neighbours; the
// coarse-to-fine search refines positions on them.
#pragma once

#include <cstddef>
#include <vector>

#include "nccmatch/scales.hpp"

namespace nccmatch {

// The angle entry e of a bank was made with (0 when the bank has no angles).
inline double entryAngle(const ScaledBank& bank, std::size_t e) { return e < bank.angle.size() ? bank.angle[e] : 0.0; }

// Per entry: its neighbours in angle among the entries of the same original and scale (the entry
// index, or -1 where there is none) and the signed angle step to each (negative to the left).
struct AngleNeighbours {
  std::vector<long> left, right;
  std::vector<double> leftStep, rightStep;
  std::vector<bool> wraps;    // the entry's angles cover the full circle evenly
  std::vector<double> first;  // the smallest angle of the entry's group
};

AngleNeighbours angleNeighbours(const ScaledBank& bank);

}  // namespace nccmatch
