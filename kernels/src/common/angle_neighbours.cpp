// Neighbours in angle among a bank's variants of one original and scale.
#include "common/angle_neighbours.hpp"

#include <algorithm>
#include <map>
#include <utility>

namespace nccmatch {

AngleNeighbours angleNeighbours(const ScaledBank& bank) {
  const std::size_t n = bank.original.size();
  AngleNeighbours a;
  a.left.assign(n, -1), a.right.assign(n, -1);
  a.leftStep.assign(n, 0.0), a.rightStep.assign(n, 0.0);
  a.wraps.assign(n, false), a.first.assign(n, 0.0);
  // Entries by (original, scale): a map, so a bank of thousands of variants groups in n log n.
  std::map<std::pair<uint32_t, double>, std::vector<std::size_t>> groups;
  for (std::size_t e = 0; e < n && e < bank.scale.size(); ++e) groups[{bank.original[e], bank.scale[e]}].push_back(e);
  for (auto& entry : groups) {
    std::vector<std::size_t>& group = entry.second;
    std::sort(group.begin(), group.end(),
              [&](std::size_t p, std::size_t q) { return entryAngle(bank, p) < entryAngle(bank, q); });
    const std::size_t g = group.size();
    if (g < 2) continue;
    double widestGap = 0;
    for (std::size_t k = 0; k + 1 < g; ++k)
      widestGap = std::max(widestGap, entryAngle(bank, group[k + 1]) - entryAngle(bank, group[k]));
    const double lo = entryAngle(bank, group.front()), hi = entryAngle(bank, group.back());
    const double wrapGap = lo + 360.0 - hi;
    const bool wraps = g >= 3 && wrapGap > 0 && wrapGap <= widestGap * (1 + 1e-9);
    for (std::size_t k = 0; k < g; ++k) {
      const std::size_t e0 = group[k];
      a.wraps[e0] = wraps;
      a.first[e0] = lo;
      if (k > 0 || wraps) {
        const std::size_t l = group[(k + g - 1) % g];
        a.left[e0] = long(l);
        a.leftStep[e0] = entryAngle(bank, l) - entryAngle(bank, e0) - (k == 0 ? 360.0 : 0.0);
      }
      if (k + 1 < g || wraps) {
        const std::size_t r = group[(k + 1) % g];
        a.right[e0] = long(r);
        a.rightStep[e0] = entryAngle(bank, r) - entryAngle(bank, e0) + (k + 1 == g ? 360.0 : 0.0);
      }
    }
  }
  return a;
}

}  // namespace nccmatch
