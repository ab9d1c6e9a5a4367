#include "cpu/cpu_peaks.hpp"
#include "cpu/simd_clones.hpp"

#include <algorithm>
#include <cmath>
#include <mutex>

#include "common/peaks.hpp"

namespace nccmatch {

namespace {

// The largest sign * row[x]. Eight independent lanes, so the compiler uses vector max
// instructions without reassociating anything.
NCCMATCH_SIMD_CLONES
double rowMaximum(const double* __restrict row, int n, double sign) {
  double lane[8];
  for (double& v : lane) v = -HUGE_VAL;
  int x = 0;
  for (; x + 8 <= n; x += 8)
    for (int k = 0; k < 8; ++k) {
      const double g = sign * row[x + k];
      lane[k] = lane[k] < g ? g : lane[k];
    }
  double m = -HUGE_VAL;
  for (; x < n; ++x) m = std::max(m, sign * row[x]);
  for (double v : lane) m = std::max(m, v);
  return m;
}

}  // namespace

void findPeaksParallel(const double* map, int mapWidth, int mapHeight, int templateWidth,
                       int templateHeight, uint32_t templateIndex, const MatchParams& params,
                       ThreadPool& pool, std::vector<Match>* matches, std::optional<Match>* best) {
  best->reset();
  if (mapWidth <= 0 || mapHeight <= 0) return;
  const double sign = goodnessSign(params.method);
  const double goodEnough = sign * params.threshold;
  const GoodnessMap<std::size_t> good = goodnessMap(map, mapWidth, mapHeight, sign);

  std::mutex mutex;
  PeakCandidate top{good(0, 0), 0, 0};
  std::vector<PeakCandidate> candidates;
  pool.parallelFor(mapHeight, [&](int yBegin, int yEnd) {
    PeakCandidate bandTop{good(0, yBegin), 0, yBegin};
    std::vector<PeakCandidate> bandCandidates;
    for (int y = yBegin; y < yEnd; ++y) {
      const double* row = map + std::size_t(y) * mapWidth;
      const double m = rowMaximum(row, mapWidth, sign);
      // NaN-free maps: the first x holding the maximum is the row's best in raster order.
      if (m > bandTop.goodness) {
        int x = 0;
        while (x + 1 < mapWidth && !(sign * row[x] == m)) ++x;
        bandTop = PeakCandidate{sign * row[x], x, y};
      }
      if (params.maxMatches <= 0 || !(m >= goodEnough)) continue;
      for (int x = 0; x < mapWidth; ++x) {
        const double g = sign * row[x];
        if (g >= goodEnough && isLocalPeak(good, x, y, g)) bandCandidates.push_back(PeakCandidate{g, x, y});
      }
    }
    std::lock_guard<std::mutex> lock(mutex);
    if (betterCandidate(bandTop, top)) top = bandTop;
    candidates.insert(candidates.end(), bandCandidates.begin(), bandCandidates.end());
  });

  auto makeMatch = [&](int x, int y) {
    return peakMatch(map, mapWidth, mapHeight, sign, templateWidth, templateHeight, templateIndex, x, y);
  };
  *best = makeMatch(top.x, top.y);

  // Greedy non-maximum suppression in the total order; candidates are taken best first, so a
  // heap yields only the few needed (a flat map has a candidate at every position).
  auto worse = [](const PeakCandidate& a, const PeakCandidate& b) { return betterCandidate(b, a); };
  std::make_heap(candidates.begin(), candidates.end(), worse);
  KeptBoxes kept(mapWidth, mapHeight, templateWidth, templateHeight, params.nmsIou);
  while (!candidates.empty() && int(kept.boxes().size()) < params.maxMatches) {
    std::pop_heap(candidates.begin(), candidates.end(), worse);
    const PeakCandidate c = candidates.back();
    candidates.pop_back();
    Match m = makeMatch(c.x, c.y);
    if (!kept.suppresses(m)) kept.add(m);
  }
  matches->insert(matches->end(), kept.boxes().begin(), kept.boxes().end());
}

}  // namespace nccmatch
