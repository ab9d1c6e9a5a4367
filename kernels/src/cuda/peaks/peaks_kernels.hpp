// Peak finding on a score map that stays on the GPU: threshold, local extrema, greedy
// non-maximum suppression, max-matches and sub-pixel refinement, with exactly the rules and
// arithmetic of peaks.cpp, so the matches equal the CPU backend's.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>
#include <vector>

#include "cuda/engine/device_buffer.hpp"
#include "nccmatch/status.hpp"
#include "nccmatch/types.hpp"
#include "rules/score_rules.hpp"

namespace nccmatch::cuda {

// One match as the device writes it; the host adds template index and size.
struct DeviceMatch {
  int x = 0, y = 0;
  double score = 0.0, subX = 0.0, subY = 0.0;
};

// A position and its goodness (score times sign: larger is better); index -1 for none.
struct Ranked {
  double goodness;
  int index;  // y * mapWidth + x
};

// What a score kernel hands to peak finding besides the map: the best of each of its blocks,
// and the positions whose goodness reaches the threshold (in any order). Device pointers.
struct PeakHandoff {
  Ranked* blockBest = nullptr;
  int* above = nullptr;
  int* aboveCount = nullptr;  // zeroed before the score kernel
  double sign = 1.0;          // -1 for the sqdiff methods
  double goodEnough = 0.0;    // sign * threshold
  bool collect = false;       // max-matches > 0: above[] is wanted
};

// A score map on the device (dense, width x height) and the template size it was scored for.
struct DeviceScoreMap {
  const double* scores = nullptr;
  int width = 0, height = 0;
  int templateWidth = 0, templateHeight = 0;
};

// Where one template's peaks go (device pointers): the global best, the kept matches best first
// (room for params.maxMatches) and their count.
struct MatchSlots {
  DeviceMatch* best = nullptr;
  DeviceMatch* kept = nullptr;
  int* keptCount = nullptr;
};

// Above this many matches a template, NMS sorts the candidates once (CUB radix sort over the
// map's positions) and one warp walks them best first with a bitmap of suppressed positions:
// linear in the candidates. The select below costs one pass over the candidates per kept match,
// quadratic when thousands are kept (a flat map with huge max-matches: hours at 1080p).
constexpr int kSelectRoundsLimit = 64;

// Scratch and launches of the sorted NMS (the same kept matches as the select).
class SortedNms {
 public:
  // subPixelLater: a sparse map, whose neighbours are not in the map: the kept matches get
  // subX = x, subY = y here and their offsets from BankPeakFinder's refinement.
  Status run(const double* map, int mapWidth, int mapHeight, int templateWidth, int templateHeight,
             const MatchParams& params, const int* candidates, const int* count, DeviceMatch* kept,
             int* keptCount, cudaStream_t stream, bool subPixelLater = false);

 private:
  DeviceBuffer keys_, values_, bitmap_, temp_;
  std::size_t tempBytes_ = 0;
  int positions_ = 0;
};

// One template of a bank whose score kernel handed over its peaks (PeakHandoff): where its map
// and handoff lie. Device pointers; candidates and candidateCount are BankPeakFinder's own.
struct BankPeakJob {
  const double* map = nullptr;
  int mapWidth = 0, mapHeight = 0;
  int templateWidth = 0, templateHeight = 0;
  int templateIndex = 0;  // results slot
  const Ranked* blockBest = nullptr;
  int partials = 0;       // blockBest entries
  const int* above = nullptr;
  const int* aboveCount = nullptr;
  int* candidates = nullptr;
  int* candidateCount = nullptr;
  // A sparse map (GemmBank, FusedBankRule::everyScore false) where set: the map holds only the
  // positions whose bit is set (those reaching the threshold). A position without its bit is
  // below the threshold for the local-extremum rule, and the sub-pixel neighbours of a match
  // are rescored exactly from the frame with the template's pixels (device, tightly packed).
  const uint32_t* aboveBits = nullptr;
  const uint8_t* templatePixels = nullptr;
  TemplateStats stats;
};

// The frame a bank was scored on (device memory), for rescoring a sparse map's positions.
struct DeviceFrame {
  const uint8_t* image = nullptr;
  std::size_t pitch = 0;
};

// A template's pixels (device, tightly packed), size and statistics, for exact rescoring.
struct ExactTemplate {
  const uint8_t* pixels = nullptr;
  int width = 0, height = 0;
  TemplateStats stats;
};

// The windows an exact sub-pixel refinement sums per match: its own and its four neighbours'.
constexpr int kExactAround = 5;

// One reported match's window sums (sum I, sum I^2, sum I*T of each window) while the blocks of
// refineSubPixelExactly add them up, and how many blocks have: zero between calls (the last block
// of a match zeroes them), so a buffer of them is zeroed once when allocated.
struct ExactMatchSums {
  unsigned long long sums[kExactAround][3];
  unsigned int blocksDone;
  unsigned int padding;
};
static_assert(sizeof(ExactMatchSums) == 128, "two cache sectors' worth a match");

// The scores and sub-pixel offsets of one template's reported matches (out: its best, kept matches
// and count, as PeakFinder wrote them on a mapWidth x mapHeight map) set again from exact scores of
// each match's window and its four neighbours, summed from `frame` (what was scored): for maps
// whose values are rounded (the fft numerator's), so that both are the CPU reference's, bit for bit,
// whatever the transform's rounding. Positions stay; the caller drops the matches whose exact score
// misses the threshold and orders the rest (orderExactMatches, common/peaks.hpp). matchSums: room
// for maxMatches + 1 matches, zeroed (and left zeroed). Enqueues on stream only; a group of blocks a
// match, each summing a slice of the template's pixels.
Status refineSubPixelExactly(const MatchSlots& out, const ExactTemplate& tpl, const DeviceFrame& frame,
                             const MatchParams& params, int mapWidth, int mapHeight, ExactMatchSums* matchSums,
                             cudaStream_t stream);

// findFromHandoff for every template of a bank in two launches (not two per template): the
// local extrema of all handoffs, then one block per template for the best and the NMS; with
// sparse maps, a third: the sub-pixel offsets of every reported match of those templates.
class BankPeakFinder {
 public:
  // The bank's jobs, uploaded once per bank and frame size (synchronously).
  Status set(const std::vector<BankPeakJob>& jobs);
  int size() const { return count_; }
  // Writes best[t], kept[t * maxMatches ...] and keptCount[t] for each job's template t, exactly
  // as findFromHandoff would on the whole map. frame: what the bank scored (sparse maps rescore
  // from it). Enqueues on stream only.
  Status find(const MatchParams& params, const DeviceFrame& frame, DeviceMatch* best, DeviceMatch* kept,
              int* keptCount, cudaStream_t stream) const;

 private:
  std::vector<BankPeakJob> jobs_;
  DeviceBuffer descriptors_, candidates_, counters_;
  mutable SortedNms sortedNms_;
  int count_ = 0;
  int sms_ = 1;
  bool sparse_ = false;  // some job has a sparse map
};

class PeakFinder {
 public:
  // Scratch for maps of up to `positions` entries.
  Status reserve(std::size_t positions);

  // Writes the map's global best and kept matches to `out`. Only enqueues work on stream.
  Status find(const DeviceScoreMap& map, const MatchParams& params, const MatchSlots& out, cudaStream_t stream);

  // The same results from a score kernel's handoff (`partials` block bests) instead of a scan
  // of the whole map: only the positions above the threshold are read back.
  Status findFromHandoff(const DeviceScoreMap& map, const MatchParams& params, const PeakHandoff& handoff,
                         int partials, const MatchSlots& out, cudaStream_t stream);

 private:
  // Checks the map's size (not empty, positions fit an int), reserves for it, sets *positions.
  Status prepareMap(int mapWidth, int mapHeight, std::size_t* positions);
  DeviceBuffer candidates_;  // indices of local extrema passing the threshold
  DeviceBuffer counter_;     // their count
  DeviceBuffer blockBest_;   // per-block best (goodness, index)
  SortedNms sortedNms_;      // max-matches above kSelectRoundsLimit
  std::size_t positions_ = 0;
  int maxBlocks_ = 0;
};

}  // namespace nccmatch::cuda
