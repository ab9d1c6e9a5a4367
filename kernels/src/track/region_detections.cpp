#include "track/region_detections.hpp"

#include <algorithm>

#include "common/peaks.hpp"
#include "rules/peak_rules.hpp"

namespace nccmatch::track {

FrameResult combineRegionResults(const std::vector<RegionQuery>& regions, const std::vector<RegionResult>& results,
                                 std::size_t entries, const MatchParams& params) {
  const double sign = goodnessSign(params.method);
  auto better = [&](const Match& a, const Match& b) {
    return rankedBefore(sign * a.score, rasterKey(a.x, a.y), sign * b.score, rasterKey(b.x, b.y));
  };
  std::vector<std::vector<Match>> found(entries);
  FrameResult out;
  out.best.assign(entries, std::nullopt);
  for (std::size_t k = 0; k < regions.size() && k < results.size(); ++k) {
    const uint32_t entry = regions[k].templateIndex;
    if (entry >= entries) continue;
    const RegionResult& r = results[k];
    found[entry].insert(found[entry].end(), r.matches.begin(), r.matches.end());
    if (r.best && (!out.best[entry] || better(*r.best, *out.best[entry]))) out.best[entry] = r.best;
  }
  for (std::vector<Match>& list : found) {
    std::stable_sort(list.begin(), list.end(), better);
    std::vector<Match> kept;
    for (const Match& m : list) {
      if (int(kept.size()) >= params.maxMatches) break;
      const bool repeat = std::any_of(kept.begin(), kept.end(), [&](const Match& k) { return k.x == m.x && k.y == m.y; });
      if (repeat || suppressedByAny(m, kept, params.nmsIou)) continue;
      kept.push_back(m);
    }
    out.matches.insert(out.matches.end(), kept.begin(), kept.end());
  }
  return out;
}

}  // namespace nccmatch::track
