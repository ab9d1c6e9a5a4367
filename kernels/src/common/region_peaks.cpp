#include "common/region_peaks.hpp"

#include <algorithm>

#include "common/peaks.hpp"

namespace nccmatch {

namespace {

// peakMatch (peaks.cpp) from a sample instead of the map: the same score and parabolas.
Match matchOf(const RegionPeak& p, double sign, int mapWidth, int mapHeight, int templateWidth, int templateHeight,
              uint32_t templateIndex) {
  Match m;
  m.templateIndex = templateIndex;
  m.x = p.x;
  m.y = p.y;
  m.width = templateWidth;
  m.height = templateHeight;
  m.score = p.score;
  const double centre = sign * p.score;
  m.subX = p.x + (p.x > 0 && p.x + 1 < mapWidth ? parabolaOffset(p.left, centre, p.right) : 0.0);
  m.subY = p.y + (p.y > 0 && p.y + 1 < mapHeight ? parabolaOffset(p.up, centre, p.down) : 0.0);
  return m;
}

}  // namespace

bool RegionCandidates::group(const RegionPeak* candidates, std::size_t count, std::size_t regions) {
  ends_.assign(regions + 1, 0);  // first each region's count one place on, then its start
  for (std::size_t k = 0; k < count; ++k) {
    const int region = candidates[k].region;
    if (region < 0 || std::size_t(region) >= regions) {
      ends_.assign(regions, 0);
      grouped_.clear();
      return false;
    }
    ++ends_[std::size_t(region) + 1];
  }
  for (std::size_t i = 0; i < regions; ++i) ends_[i + 1] += ends_[i];
  grouped_.resize(count);
  for (std::size_t k = 0; k < count; ++k) grouped_[ends_[std::size_t(candidates[k].region)]++] = candidates[k];
  ends_.pop_back();  // each start has moved on to its region's end
  return true;
}

void RegionCandidates::trim() {
  if (grouped_.capacity() <= kKeptCandidates) return;
  std::vector<RegionPeak>().swap(grouped_);
  std::vector<std::size_t>().swap(ends_);
}

RegionPeak bestOfTiles(const RegionPeak* tiles, std::size_t count, double sign) {
  const RegionPeak* best = tiles;
  for (std::size_t t = 1; t < count; ++t)
    if (rankedBefore(sign * tiles[t].score, rasterKey(tiles[t].x, tiles[t].y), sign * best->score,
                     rasterKey(best->x, best->y)))
      best = tiles + t;
  return *best;
}

void finishRegionPeaks(RegionPeak* candidates, std::size_t count, const RegionPeak& best, int mapWidth,
                       int mapHeight, int templateWidth, int templateHeight, uint32_t templateIndex,
                       const MatchParams& params, RegionResult* out) {
  const double sign = goodnessSign(params.method);
  out->best = matchOf(best, sign, mapWidth, mapHeight, templateWidth, templateHeight, templateIndex);
  if (params.maxMatches <= 0) {
    out->matches.clear();
    return;
  }
  std::sort(candidates, candidates + count, [&](const RegionPeak& a, const RegionPeak& b) {
    return betterCandidate(PeakCandidate{sign * a.score, a.x, a.y}, PeakCandidate{sign * b.score, b.x, b.y});
  });
  KeptBoxes kept(mapWidth, mapHeight, templateWidth, templateHeight, params.nmsIou, std::move(out->matches));
  for (std::size_t k = 0; k < count; ++k) {
    if (int(kept.boxes().size()) >= params.maxMatches) break;
    const Match m = matchOf(candidates[k], sign, mapWidth, mapHeight, templateWidth, templateHeight, templateIndex);
    if (!kept.suppresses(m)) kept.add(m);
  }
  out->matches = kept.release();
}

}  // namespace nccmatch
