#include "track/region_detections.hpp"

#include <algorithm>

#include "common/peaks.hpp"
#include "rules/peak_rules.hpp"

namespace nccmatch::track {

FrameResult combineRegionResults(const std::vector<RegionQuery>& regions, const std::vector<RegionResult>& results,
                                 std::size_t entries, const MatchParams& params) {
  CombineScratch scratch;
  FrameResult out;
  combineRegionResults(regions, results, entries, params, &scratch, &out);
  return out;
}

void combineRegionResults(const std::vector<RegionQuery>& regions, const std::vector<RegionResult>& results,
                          std::size_t entries, const MatchParams& params, CombineScratch* scratch, FrameResult* out) {
  using Found = CombineScratch::Found;
  const double sign = goodnessSign(params.method);
  auto better = [&](const Match& a, const Match& b) {
    return rankedBefore(sign * a.score, rasterKey(a.x, a.y), sign * b.score, rasterKey(b.x, b.y));
  };
  // Every region's matches in one list, ordered by entry, best first within an entry (stable: equal
  // matches keep the regions' order); then each entry's run kept greedily. One list, not one per
  // entry: a tracker calls this every frame.
  out->matches.clear();
  out->best.assign(entries, std::nullopt);
  std::vector<Found>& all = scratch->all;
  all.clear();
  for (std::size_t k = 0; k < regions.size() && k < results.size(); ++k) {
    const uint32_t entry = regions[k].templateIndex;
    if (entry >= entries) continue;
    const RegionResult& r = results[k];
    for (const Match& m : r.matches) all.emplace_back(entry, m);  // in place: no temporary to copy
    if (r.best && (!out->best[entry] || better(*r.best, *out->best[entry]))) out->best[entry] = r.best;
  }
  const auto ranked = [&](const Found& a, const Found& b) {
    if (a.entry != b.entry) return a.entry < b.entry;
    return better(a.match, b.match);
  };
  // Already in order (a tracker's windows in the order of their templates, one match each): the
  // stable sort would keep it as it is; it is skipped, and with it its buffer.
  if (!std::is_sorted(all.begin(), all.end(), ranked)) std::stable_sort(all.begin(), all.end(), ranked);
  std::vector<Match>& kept = scratch->kept;
  for (std::size_t first = 0; first < all.size();) {
    std::size_t end = first;
    while (end < all.size() && all[end].entry == all[first].entry) ++end;
    kept.clear();
    for (std::size_t i = first; i < end && int(kept.size()) < params.maxMatches; ++i) {
      const Match& m = all[i].match;
      const bool repeat = std::any_of(kept.begin(), kept.end(), [&](const Match& k) { return k.x == m.x && k.y == m.y; });
      if (repeat || suppressedByAny(m, kept, params.nmsIou)) continue;
      kept.push_back(m);
    }
    out->matches.insert(out->matches.end(), kept.begin(), kept.end());
    first = end;
  }
}

}  // namespace nccmatch::track
