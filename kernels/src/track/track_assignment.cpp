#include "track/track_assignment.hpp"

#include <algorithm>
#include <tuple>

namespace nccmatch::track {

std::vector<int> assignGreedy(const std::vector<Prediction>& predictions, const std::vector<Candidate>& candidates) {
  AssignScratch scratch;
  std::vector<int> assigned;
  assignGreedy(predictions, candidates, &scratch, &assigned);
  return assigned;
}

void assignGreedy(const std::vector<Prediction>& predictions, const std::vector<Candidate>& candidates,
                  AssignScratch* scratch, std::vector<int>* assigned) {
  using Pair = AssignScratch::Pair;
  std::vector<Pair>& pairs = scratch->pairs;
  std::vector<bool>& taken = scratch->taken;
  pairs.clear();
  taken.assign(candidates.size(), false);
  // Candidates by template (a frame's matches are): each prediction looks at its template's run
  // only, the same pairs in the same order as a look at all of them.
  const auto byTemplate = [](const Candidate& a, const Candidate& b) { return a.templateIndex < b.templateIndex; };
  const bool grouped = std::is_sorted(candidates.begin(), candidates.end(), byTemplate);
  // The pairs within the gates, prediction by prediction. `shared`: some prediction or candidate
  // is in two pairs (taken marks the candidates seen here).
  bool shared = false;
  for (std::size_t p = 0; p < predictions.size(); ++p) {
    const Prediction& a = predictions[p];
    std::size_t first = 0, end = candidates.size();
    if (grouped) {
      const Candidate key{a.templateIndex, {}};
      const auto run = std::equal_range(candidates.begin(), candidates.end(), key, byTemplate);
      first = std::size_t(run.first - candidates.begin());
      end = std::size_t(run.second - candidates.begin());
    }
    for (std::size_t c = first; c < end; ++c) {
      const Candidate& b = candidates[c];
      if (a.templateIndex != b.templateIndex || !withinGate(a.corner, a.margin, b.corner.x, b.corner.y)) continue;
      const double dx = b.corner.x - a.corner.x, dy = b.corner.y - a.corner.y;
      shared = shared || taken[c] || (!pairs.empty() && pairs.back().prediction == int(p));
      taken[c] = true;
      pairs.emplace_back(dx * dx + dy * dy, int(p), int(c));  // in place: no temporary to copy
    }
  }
  assigned->assign(predictions.size(), -1);
  // No prediction or candidate in two pairs (a tracker's usual frame): every pair is taken,
  // whatever the order, so the sort is skipped.
  if (!shared) {
    for (const Pair& pair : pairs) (*assigned)[pair.prediction] = pair.candidate;
    return;
  }
  std::sort(pairs.begin(), pairs.end(), [](const Pair& a, const Pair& b) {
    return std::tie(a.distance, a.prediction, a.candidate) < std::tie(b.distance, b.prediction, b.candidate);
  });
  taken.assign(candidates.size(), false);
  for (const Pair& pair : pairs) {
    if ((*assigned)[pair.prediction] >= 0 || taken[pair.candidate]) continue;
    (*assigned)[pair.prediction] = pair.candidate;
    taken[pair.candidate] = true;
  }
}

}  // namespace nccmatch::track
