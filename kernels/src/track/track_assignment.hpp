// Greedy assignment of a frame's matches to tracks: the closest (track, match) pair first.
#pragma once

#include <cstddef>
#include <vector>

#include "track/track_motion.hpp"

namespace nccmatch::track {

// What assignment needs of a track: its template, predicted corner and gate margin.
struct Prediction {
  uint32_t templateIndex = 0;
  Point corner;
  int margin = 0;
};

// What it needs of a match.
struct Candidate {
  uint32_t templateIndex = 0;
  Point corner;
};

// For each prediction the index of its candidate, or -1: pairs of the same template within the
// prediction's gate (withinGate), taken closest first (squared distance of the corners; ties by
// prediction, then candidate order), each prediction and candidate at most once.
std::vector<int> assignGreedy(const std::vector<Prediction>& predictions, const std::vector<Candidate>& candidates);

}  // namespace nccmatch::track
