#include "peaks.hpp"

#include <algorithm>
#include <cmath>

namespace nccmatch {

double boxIou(const Match& a, const Match& b) {
  double ix = std::max(0, std::min(a.x + a.width, b.x + b.width) - std::max(a.x, b.x));
  double iy = std::max(0, std::min(a.y + a.height, b.y + b.height) - std::max(a.y, b.y));
  double inter = ix * iy;
  double uni = double(a.width) * a.height + double(b.width) * b.height - inter;
  return uni > 0 ? inter / uni : 0.0;
}

bool suppressedByAny(const Match& box, const std::vector<Match>& kept, double nmsIou) {
  for (const Match& k : kept)
    if (boxIou(box, k) > nmsIou) return true;
  return false;
}

double parabolaOffset(double left, double centre, double right) {
  double curvature = left - 2.0 * centre + right;
  if (curvature == 0.0 || !std::isfinite(curvature)) return 0.0;
  double offset = 0.5 * (left - right) / curvature;
  if (!std::isfinite(offset)) return 0.0;
  return std::clamp(offset, -0.5, 0.5);
}

void findPeaks(const double* map, int mapWidth, int mapHeight, int templateWidth,
               int templateHeight, uint32_t templateIndex, const MatchParams& params,
               std::vector<Match>* matches, std::optional<Match>* best) {
  best->reset();
  if (mapWidth <= 0 || mapHeight <= 0) return;
  const double sign = lowerIsBetter(params.method) ? -1.0 : 1.0;
  const double goodEnough = sign * params.threshold;
  auto good = [&](int x, int y) { return sign * map[std::size_t(y) * mapWidth + x]; };

  auto makeMatch = [&](int x, int y) {
    Match m;
    m.templateIndex = templateIndex;
    m.x = x;
    m.y = y;
    m.width = templateWidth;
    m.height = templateHeight;
    m.score = map[std::size_t(y) * mapWidth + x];
    double g = good(x, y);
    m.subX = x + (x > 0 && x + 1 < mapWidth ? parabolaOffset(good(x - 1, y), g, good(x + 1, y)) : 0.0);
    m.subY = y + (y > 0 && y + 1 < mapHeight ? parabolaOffset(good(x, y - 1), g, good(x, y + 1)) : 0.0);
    return m;
  };

  PeakCandidate top{good(0, 0), 0, 0};
  std::vector<PeakCandidate> candidates;
  for (int y = 0; y < mapHeight; ++y) {
    for (int x = 0; x < mapWidth; ++x) {
      const double g = good(x, y);
      PeakCandidate c{g, x, y};
      if (betterCandidate(c, top)) top = c;
      if (params.maxMatches <= 0 || !(g >= goodEnough)) continue;
      // A local extremum: no 8-neighbour is strictly better.
      bool peak = true;
      for (int dy = -1; dy <= 1 && peak; ++dy) {
        int ny = y + dy;
        if (ny < 0 || ny >= mapHeight) continue;
        for (int dx = -1; dx <= 1; ++dx) {
          int nx = x + dx;
          if ((dx == 0 && dy == 0) || nx < 0 || nx >= mapWidth) continue;
          if (good(nx, ny) > g) {
            peak = false;
            break;
          }
        }
      }
      if (peak) candidates.push_back(c);
    }
  }
  *best = makeMatch(top.x, top.y);

  std::sort(candidates.begin(), candidates.end(), betterCandidate);
  std::vector<Match> kept;
  for (const PeakCandidate& c : candidates) {
    if (int(kept.size()) >= params.maxMatches) break;
    Match m = makeMatch(c.x, c.y);
    if (!suppressedByAny(m, kept, params.nmsIou)) kept.push_back(m);
  }
  matches->insert(matches->end(), kept.begin(), kept.end());
}

}  // namespace nccmatch
