#include "track/track_assignment.hpp"

#include <algorithm>
#include <tuple>

namespace nccmatch::track {

std::vector<int> assignGreedy(const std::vector<Prediction>& predictions, const std::vector<Candidate>& candidates) {
  struct Pair {
    double distance;
    int prediction, candidate;
  };
  std::vector<Pair> pairs;
  pairs.reserve(predictions.size());
  for (std::size_t p = 0; p < predictions.size(); ++p)
    for (std::size_t c = 0; c < candidates.size(); ++c) {
      const Prediction& a = predictions[p];
      const Candidate& b = candidates[c];
      if (a.templateIndex != b.templateIndex || !withinGate(a.corner, a.margin, b.corner.x, b.corner.y)) continue;
      const double dx = b.corner.x - a.corner.x, dy = b.corner.y - a.corner.y;
      pairs.push_back(Pair{dx * dx + dy * dy, int(p), int(c)});
    }
  std::sort(pairs.begin(), pairs.end(), [](const Pair& a, const Pair& b) {
    return std::tie(a.distance, a.prediction, a.candidate) < std::tie(b.distance, b.prediction, b.candidate);
  });
  std::vector<int> assigned(predictions.size(), -1);
  std::vector<bool> taken(candidates.size(), false);
  for (const Pair& pair : pairs) {
    if (assigned[pair.prediction] >= 0 || taken[pair.candidate]) continue;
    assigned[pair.prediction] = pair.candidate;
    taken[pair.candidate] = true;
  }
  return assigned;
}

}  // namespace nccmatch::track
