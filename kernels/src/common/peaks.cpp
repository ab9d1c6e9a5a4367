#include "common/peaks.hpp"

#include <algorithm>

namespace nccmatch {

void orderExactMatches(const MatchParams& params, std::vector<Match>* matches, std::size_t first,
                       std::optional<Match>* best) {
  const double sign = goodnessSign(params.method);
  const double goodEnough = sign * params.threshold;  // as the peak finders compare
  matches->erase(std::remove_if(matches->begin() + std::ptrdiff_t(first), matches->end(),
                                [&](const Match& m) { return !(sign * m.score >= goodEnough); }),
                 matches->end());
  const auto better = [&](const Match& a, const Match& b) {
    return rankedBefore(sign * a.score, rasterKey(a.x, a.y), sign * b.score, rasterKey(b.x, b.y));
  };
  std::stable_sort(matches->begin() + std::ptrdiff_t(first), matches->end(), better);
  if (*best && matches->size() > first && better((*matches)[first], **best)) *best = (*matches)[first];
}

bool suppressedByAny(const Match& box, const std::vector<Match>& kept, double nmsIou) {
  for (const Match& k : kept)
    if (boxIou(box, k) > nmsIou) return true;
  return false;
}

KeptBoxes::KeptBoxes(int mapWidth, int mapHeight, int boxWidth, int boxHeight, double nmsIou,
                     std::vector<Match> storage)
    : boxWidth_(std::max(1, boxWidth)),
      boxHeight_(std::max(1, boxHeight)),
      nmsIou_(nmsIou),
      cellsX_(std::max(1, mapWidth) / std::max(1, boxWidth) + 1),
      cellsY_(std::max(1, mapHeight) / std::max(1, boxHeight) + 1),
      kept_(std::move(storage)) {
  kept_.clear();
}

void KeptBoxes::file(int k) {
  const int cell = (kept_[k].y / boxHeight_) * cellsX_ + kept_[k].x / boxWidth_;
  next_[k] = head_[cell];
  head_[cell] = k;
}

void KeptBoxes::add(const Match& box) {
  kept_.push_back(box);
  if (nmsIou_ >= 1.0) return;  // never consulted
  if (kept_.size() == kLinearLimit) {
    head_.assign(std::size_t(cellsX_) * cellsY_, -1);
    next_.assign(kept_.size(), -1);
    for (int k = 0; k < int(kept_.size()); ++k) file(k);
  } else if (kept_.size() > kLinearLimit) {
    next_.push_back(-1);
    file(int(kept_.size()) - 1);
  }
}

bool KeptBoxes::suppresses(const Match& box) const {
  if (nmsIou_ >= 1.0) return false;
  if (kept_.size() < kLinearLimit) return suppressedByAny(box, kept_, nmsIou_);
  const int cx = box.x / boxWidth_, cy = box.y / boxHeight_;
  for (int y = std::max(0, cy - 1); y <= std::min(cellsY_ - 1, cy + 1); ++y)
    for (int x = std::max(0, cx - 1); x <= std::min(cellsX_ - 1, cx + 1); ++x)
      for (int k = head_[std::size_t(y) * cellsX_ + x]; k >= 0; k = next_[k])
        if (boxIou(box, kept_[k]) > nmsIou_) return true;
  return false;
}

Match peakMatch(const double* map, int mapWidth, int mapHeight, double sign, int templateWidth,
                int templateHeight, uint32_t templateIndex, int x, int y) {
  const GoodnessMap<std::size_t> good = goodnessMap(map, mapWidth, mapHeight, sign);
  Match m;
  m.templateIndex = templateIndex;
  m.x = x;
  m.y = y;
  m.width = templateWidth;
  m.height = templateHeight;
  m.score = map[std::size_t(y) * mapWidth + x];
  m.subX = subPixelX(good, mapWidth, x, y);
  m.subY = subPixelY(good, mapHeight, x, y);
  return m;
}

void findPeaks(const double* map, int mapWidth, int mapHeight, int templateWidth,
               int templateHeight, uint32_t templateIndex, const MatchParams& params,
               std::vector<Match>* matches, std::optional<Match>* best) {
  best->reset();
  if (mapWidth <= 0 || mapHeight <= 0) return;
  const double sign = goodnessSign(params.method);
  const double goodEnough = sign * params.threshold;
  const GoodnessMap<std::size_t> good = goodnessMap(map, mapWidth, mapHeight, sign);

  auto makeMatch = [&](int x, int y) {
    return peakMatch(map, mapWidth, mapHeight, sign, templateWidth, templateHeight, templateIndex, x, y);
  };

  PeakCandidate top{good(0, 0), 0, 0};
  std::vector<PeakCandidate> candidates;
  for (int y = 0; y < mapHeight; ++y) {
    for (int x = 0; x < mapWidth; ++x) {
      const double g = good(x, y);
      PeakCandidate c{g, x, y};
      if (betterCandidate(c, top)) top = c;
      if (params.maxMatches <= 0 || !(g >= goodEnough)) continue;
      if (isLocalPeak(good, x, y, g)) candidates.push_back(c);
    }
  }
  *best = makeMatch(top.x, top.y);

  std::sort(candidates.begin(), candidates.end(), betterCandidate);
  KeptBoxes kept(mapWidth, mapHeight, templateWidth, templateHeight, params.nmsIou);
  for (const PeakCandidate& c : candidates) {
    if (int(kept.boxes().size()) >= params.maxMatches) break;
    Match m = makeMatch(c.x, c.y);
    if (!kept.suppresses(m)) kept.add(m);
  }
  matches->insert(matches->end(), kept.boxes().begin(), kept.boxes().end());
}

}  // namespace nccmatch
