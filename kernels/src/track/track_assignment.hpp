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

// Working memory of assignGreedy, kept by a caller that assigns every frame (no allocations once
// grown).
struct AssignScratch {
  struct Pair {
    Pair(double distance, int prediction, int candidate)
        : distance(distance), prediction(prediction), candidate(candidate) {}
    double distance;
    int prediction, candidate;
  };
  std::vector<Pair> pairs;
  std::vector<bool> taken;  // per candidate
};

// For each prediction the index of its candidate, or -1: pairs of the same template within the
// prediction's gate (withinGate), taken closest first (squared distance of the corners; ties by
// prediction, then candidate order), each prediction and candidate at most once.
std::vector<int> assignGreedy(const std::vector<Prediction>& predictions, const std::vector<Candidate>& candidates);
// The same into *assigned, with the caller's working memory.
void assignGreedy(const std::vector<Prediction>& predictions, const std::vector<Candidate>& candidates,
                  AssignScratch* scratch, std::vector<int>* assigned);

}  // namespace nccmatch::track
