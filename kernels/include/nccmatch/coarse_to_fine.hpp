// Coarse-to-fine search over a bank of variants (several scales and angles of each template), as
// HALCON's NumLevels does: the frame and every variant are halved (2x2 box averages) once per
// pyramid level; the engine matches the coarsest bank on the coarsest frame; the best coarse
// (variant, position) pairs are then refined level by level, each on the variants of the
// neighbouring angles and scales, in small rectangles around twice the coarse position
// (Engine::matchRegions). At full size the scores, peaks, NMS and merged result are the exhaustive
// search's rules (mergeScaledResult), so a match found is the exhaustive search's match there.
//
//   nccmatch::ScaledBank variants;
//   st = nccmatch::rotateAndScaleTemplates(originals, {0.9, 1.0, 1.1}, nccmatch::angleRange(0, 360, 5), &variants);
//   nccmatch::CoarseToFineSearch search;
//   st = nccmatch::CoarseToFineSearch::create(variants, {}, &search);   // one level: half size
//   st = engine->setTemplates(search.engineTemplates());                 // the coarse bank
//   st = search.match(*engine, frame, params, &result);                  // as mergeScaledResult's
//
// What it cannot promise: an object whose coarse score is neither among a template's best
// coarse variants (keepBest, scoreMargin) nor above the lowered threshold is never refined, so it
// is missed where the exhaustive search finds it (textures finer than the coarse level's pixels
// lose most of their score there). It needs a normalised method (ccoeff-normed, ccorr-normed,
// sqdiff-normed): the unnormalised scores grow with the template's area and do not carry from one
// level to the next.
#pragma once

#include <cstddef>
#include <vector>

#include "nccmatch/engine.hpp"
#include "nccmatch/scales.hpp"
#include "nccmatch/status.hpp"
#include "nccmatch/types.hpp"

namespace nccmatch {

// At most this many halvings; a variant must keep kMinCoarseSide pixels a side and
// kMinCoarsePixels compared pixels at the coarsest level.
inline constexpr int kMaxPyramidLevels = 2;
inline constexpr int kMinCoarseSide = 4;
inline constexpr int kMinCoarsePixels = 16;

struct CoarseToFineOptions {
  // Halvings of the frame and the bank: 0 is the exhaustive search of every variant at full size
  // (the engine holds the full bank), 1 searches at half size, 2 at a quarter.
  int levels = 1;
  // Per template and level: the positions of this many of its best variants are refined (and of
  // this many peaks of each variant beside max-matches)...
  int keepBest = 4;
  // ...and those of every variant whose best is within this much score of the template's best,
  // and every coarse peak scoring above the threshold lowered by this much.
  double scoreMargin = 0.2;
  // Each candidate is refined on the variants this many angle steps and scale steps either side
  // of its own (angles wrap when the bank's angles cover the full circle evenly).
  int angleNeighbours = 1;
  int scaleNeighbours = 1;
  // Positions searched around twice a candidate's coarse position: +-this many pixels.
  int searchRadius = 2;
};

// Levels in 0..kMaxPyramidLevels, keepBest >= 1, scoreMargin finite in [0, 2], neighbours in
// 0..16, searchRadius in 1..16; the message names the option.
Status validateCoarseToFineOptions(const CoarseToFineOptions& options);

// A normalised method, whose scores compare across pyramid levels.
bool coarseToFineMethod(Method method);

// One refinement level of the last CoarseToFineSearch::match: its wall time (candidate picking,
// the matchRegions call, the choice of peaks) and what it searched.
struct CoarseToFineLevelStats {
  int level = 0;               // pyramid level refined: 0 is full size
  double ms = 0;               // wall milliseconds
  double regionsMs = 0;        // of which the matchRegions call (the rest: picking and choosing, on the host)
  std::size_t candidates = 0;  // (variant, position) pairs handed down from the coarser level
  std::size_t regions = 0;     // rectangles searched (one matchRegions call)
  double products = 0;         // window-pixel products of those rectangles
};

// The work and wall times of the last CoarseToFineSearch::match (lastWork()), in window-pixel
// products (positions scored times the compared pixels of the variant scored there) and wall
// milliseconds, to see where a frame's time goes. With levels == 0 only coarseMs and
// coarseProducts are set (the exhaustive match).
struct CoarseToFineWork {
  double coarseProducts = 0;  // the engine's match of the coarsest bank
  double refineProducts = 0;  // every refinement region, every level
  std::size_t regions = 0;    // refinement regions searched, every level
  double pyramidMs = 0;       // the frame's halvings (and a device frame's copy to the host)
  double prepareMs = 0;       // preparing the finer levels' variants on the engine (first match with it only)
  double coarseMs = 0;        // the engine's full-frame match of the coarsest bank
  double mergeMs = 0;         // merging the full-size peaks into the result (mergeScaledResult)
  std::vector<CoarseToFineLevelStats> refine;  // one a refinement level, coarsest first
};

// The window-pixel products of an exhaustive search of `bank` on a width x height frame.
double exhaustiveProducts(const std::vector<TemplateImage>& bank, int width, int height);

// A 2x2 box-averaged copy of a template (rounded to nearest), floor(width / 2) x floor(height / 2);
// a pixel is compared when all four source pixels are (so a coarse pixel never mixes in an
// ignored one, as the coarse frame's box averages hold exactly the four pixels it covers).
TemplateImage halveTemplate(const TemplateImage& source);

class CoarseToFineSearch {
 public:
  // Builds the pyramid of `variants` (the bank of scaleTemplates or rotateAndScaleTemplates).
  // Fails for invalid options, an empty or inconsistent bank, or a variant that would be smaller
  // than kMinCoarseSide a side or keep fewer than kMinCoarsePixels compared pixels at the coarsest
  // level (naming its template, scale, angle and sizes).
  static Status create(const ScaledBank& variants, const CoarseToFineOptions& options, CoarseToFineSearch* out);

  // What the engine must hold (Engine::setTemplates) for match(): the coarsest bank, or the full
  // bank with levels == 0.
  const std::vector<TemplateImage>& engineTemplates() const { return pyramid_.back(); }
  const ScaledBank& variants() const { return variants_; }
  const CoarseToFineOptions& options() const { return options_; }

  // The result of mergeScaledResult(variants(), engine's result on the full bank, params) for the
  // matches it finds (templateIndex names the original; scale and angle refined), best[i] the
  // best position of original i among those searched. The engine must hold engineTemplates()
  // (checked by count and sizes); levels >= 1 need a normalised method. A frame in device memory
  // is copied to the host once for the coarse levels (Engine::copyPatch); the full-size regions
  // are matched on the frame itself. The finer levels' variants are prepared on the engine
  // (Engine::prepareRegionTemplates) at the first match with it (and again should it no longer
  // hold them); each engine keeps them until releasePrepared() or its destruction, so a search
  // moving between engines prepares once on each.
  Status match(Engine& engine, const FrameView& frame, const MatchParams& params, FrameResult* result);

  // Releases the sets this search prepared on `engine`, if it holds them (e.g. before the search
  // is replaced while the engine lives on); the next match prepares them again.
  void releasePrepared(Engine& engine);

  // Where the last match's time went: products, regions and wall times per level.
  const CoarseToFineWork& lastWork() const { return work_; }

 private:
  // Each finer level's variants as prepared on `engine` (prepared now where it does not hold
  // them), into (*sets)[level].
  Status prepareRefinement(Engine& engine, std::vector<RegionTemplateSet>* sets);

  ScaledBank variants_;
  CoarseToFineOptions options_;
  std::vector<std::vector<TemplateImage>> pyramid_;  // [level][variant]; level 0 is the full bank
  std::vector<std::vector<double>> compared_;       // compared pixels, same layout
  std::vector<std::vector<uint32_t>> neighbours_;   // per variant: itself and its neighbours
  // pyramid_[level] (level < levels) prepared on an engine, for every engine it was prepared on
  // (a handle names its engine; those an engine no longer holds are dropped when it prepares anew).
  struct PreparedLevel {
    int level;
    RegionTemplateSet set;
  };
  std::vector<PreparedLevel> prepared_;
  std::vector<uint8_t> hostFrame_;                  // a device frame's copy
  std::vector<std::vector<uint8_t>> frames_;        // [level - 1]: the halved frames
  CoarseToFineWork work_;
};

}  // namespace nccmatch
