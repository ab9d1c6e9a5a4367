// Peak finding on one template's score map: threshold, local extrema, greedy non-maximum
// suppression, max-matches, sub-pixel refinement. The reference every backend must reproduce.
#pragma once

#include <cstddef>
#include <optional>
#include <utility>
#include <vector>

#include "nccmatch/types.hpp"
#include "rules/peak_rules.hpp"

namespace nccmatch {

// A map position that may become a match. goodness is the score, negated for lower-is-better
// methods, so that larger is always better.
struct PeakCandidate {
  double goodness;
  int x, y;
};

// The rules' candidate order (better goodness, then raster order), so results are deterministic.
inline bool betterCandidate(const PeakCandidate& a, const PeakCandidate& b) {
  return rankedBefore(a.goodness, rasterKey(a.x, a.y), b.goodness, rasterKey(b.x, b.y));
}

// Intersection over union of two matches' boxes.
inline double boxIou(const Match& a, const Match& b) {
  return boxIou(a.x, a.y, a.width, a.height, b.x, b.y, b.width, b.height);
}

// A host score map read as goodness (score times sign).
inline GoodnessMap<std::size_t> goodnessMap(const double* map, int mapWidth, int mapHeight,
                                            double sign) {
  return GoodnessMap<std::size_t>{map, mapWidth, mapHeight, sign};
}

// One template's matches (*matches from `first` on) and its best, once their scores were made exact
// after a rounding numerator (an FFT) chose them: a match whose exact score misses the threshold is
// dropped (the rounded one may pass a threshold the exact one misses), the rest are ordered best
// first with ties in raster order, as on the exact paths, and the first of them becomes the best
// where it ranks before it (exact ties: copies of the template).
void orderExactMatches(const MatchParams& params, std::vector<Match>* matches, std::size_t first,
                       std::optional<Match>* best);

// True when `box` overlaps any of `kept` by more than nmsIou (greedy NMS's rejection rule).
bool suppressedByAny(const Match& box, const std::vector<Match>& kept, double nmsIou);

// The boxes greedy NMS has kept for one template, answering suppressedByAny's question from the
// kept boxes near the new one only: boxes overlap only when their corners are less than a box
// apart, so once many are kept they are filed in a grid of box-sized cells and a check looks at
// 3x3 cells. Boxes of mixed sizes (a scaled bank) work with the largest size as boxWidth x
// boxHeight; every corner must lie inside mapWidth x mapHeight. With nmsIou >= 1 nothing is ever suppressed (IoU of distinct boxes is
// below 1). Huge max-matches on maps with a candidate everywhere stay near-linear this way,
// where comparing with every kept box was quadratic (hours at 1080p).
class KeptBoxes {
 public:
  // `storage`: a vector whose memory the kept boxes reuse (its contents are dropped), so that a
  // caller finishing many small regions a frame allocates nothing once warm.
  KeptBoxes(int mapWidth, int mapHeight, int boxWidth, int boxHeight, double nmsIou,
            std::vector<Match> storage = {});
  bool suppresses(const Match& box) const;
  void add(const Match& box);
  const std::vector<Match>& boxes() const { return kept_; }
  // The kept boxes, moved out (the object keeps none).
  std::vector<Match> release() { return std::move(kept_); }

 private:
  static constexpr std::size_t kLinearLimit = 32;  // below this many, compare with each
  void file(int k);
  int boxWidth_, boxHeight_;
  double nmsIou_;
  int cellsX_, cellsY_;
  std::vector<Match> kept_;
  std::vector<int> head_;  // per cell: the last kept box filed there, -1 for none
  std::vector<int> next_;  // per kept box: the one filed before it in its cell
};

// The match at (x, y) of a score map: the score, the box, and the sub-pixel corner from the
// parabolas through the position's neighbours in goodness (score times `sign`).
Match peakMatch(const double* map, int mapWidth, int mapHeight, double sign, int templateWidth,
                int templateHeight, uint32_t templateIndex, int x, int y);

// map is mapWidth x mapHeight, row-major. Appends this template's matches to *matches (best
// first) and sets *best to the global best position (ties: smallest y, then x).
void findPeaks(const double* map, int mapWidth, int mapHeight, int templateWidth,
               int templateHeight, uint32_t templateIndex, const MatchParams& params,
               std::vector<Match>* matches, std::optional<Match>* best);

}  // namespace nccmatch
