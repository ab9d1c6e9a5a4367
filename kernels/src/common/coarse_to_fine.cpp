// Coarse-to-fine search: the pyramid of a bank of variants, the engine's match at the coarsest
// level, and the refinement of candidates level by level with Engine::matchRegions.
#include "nccmatch/coarse_to_fine.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <limits>
#include <map>
#include <optional>
#include <string>
#include <tuple>

#include "common/angle_neighbours.hpp"
#include "common/peaks.hpp"
#include "common/validate.hpp"
#include "rules/peak_rules.hpp"

namespace nccmatch {

namespace {

std::string formatNumber(double v) {
  char text[32];
  std::snprintf(text, sizeof text, "%g", v);
  return text;
}

// Wall milliseconds since `start`.
double msSince(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
}

std::string sizeText(int w, int h) { return std::to_string(w) + "x" + std::to_string(h); }

double comparedPixels(const TemplateImage& t) {
  if (t.mask.empty()) return double(t.width) * t.height;
  return double(std::count_if(t.mask.begin(), t.mask.end(), [](uint8_t m) { return m != 0; }));
}

// The 2x2 box average of a frame (rounded to nearest), tightly packed, floor(w/2) x floor(h/2).
void halveFrame(const uint8_t* src, std::size_t stride, int w, int h, std::vector<uint8_t>* out) {
  const int hw = w / 2, hh = h / 2;
  out->resize(std::size_t(hw) * hh);
  for (int y = 0; y < hh; ++y) {
    const uint8_t* a = src + std::size_t(2 * y) * stride;
    const uint8_t* b = a + stride;
    uint8_t* o = out->data() + std::size_t(y) * hw;
    for (int x = 0; x < hw; ++x) o[x] = uint8_t((a[2 * x] + a[2 * x + 1] + b[2 * x] + b[2 * x + 1] + 2) >> 2);
  }
}

// One level's findings per variant: peaks best first (after NMS and max-matches) and the best.
struct LevelPeaks {
  std::vector<std::vector<Match>> peaks;
  std::vector<std::optional<Match>> best;
};

// A variant and a position (top-left corner) at some level, to be refined at the next finer one.
struct Candidate {
  uint32_t variant;
  int x, y;
  bool operator<(const Candidate& o) const { return std::tie(variant, y, x) < std::tie(o.variant, o.y, o.x); }
  bool operator==(const Candidate& o) const { return variant == o.variant && x == o.x && y == o.y; }
};

// Positions (top-left corners) x0..x1, y0..y1 inclusive.
struct PositionRect {
  int x0, y0, x1, y1;
};

// Overlapping or touching rectangles of one variant merged into their bounding boxes, so no
// position is scored twice.
void mergeRects(std::vector<PositionRect>* rects) {
  bool merged = true;
  while (merged) {
    merged = false;
    for (std::size_t i = 0; i < rects->size() && !merged; ++i) {
      for (std::size_t j = i + 1; j < rects->size(); ++j) {
        PositionRect& a = (*rects)[i];
        const PositionRect& b = (*rects)[j];
        if (a.x0 > b.x1 + 1 || b.x0 > a.x1 + 1 || a.y0 > b.y1 + 1 || b.y0 > a.y1 + 1) continue;
        a = {std::min(a.x0, b.x0), std::min(a.y0, b.y0), std::max(a.x1, b.x1), std::max(a.y1, b.y1)};
        rects->erase(rects->begin() + long(j));
        merged = true;
        break;
      }
    }
  }
}

// The exhaustive search's choice among one variant's peaks: best first (raster order on ties),
// greedy NMS, at most maxMatches (findPeaks' rule on the peaks found).
std::vector<Match> selectPeaks(std::vector<Match> found, int mapW, int mapH, int w, int h, const MatchParams& params) {
  const double sign = goodnessSign(params.method);
  std::sort(found.begin(), found.end(), [sign](const Match& a, const Match& b) {
    return rankedBefore(sign * a.score, rasterKey(a.x, a.y), sign * b.score, rasterKey(b.x, b.y));
  });
  KeptBoxes kept(mapW, mapH, w, h, params.nmsIou);
  for (const Match& m : found) {
    if (int(kept.boxes().size()) >= params.maxMatches) break;
    if (!kept.suppresses(m)) kept.add(m);
  }
  return kept.boxes();
}

bool betterMatch(const Match& a, const Match& b, double sign) {
  return rankedBefore(sign * a.score, rasterKey(a.x, a.y), sign * b.score, rasterKey(b.x, b.y));
}

// The candidates a level hands to the next finer one: per template the bests of its keepBest best
// variants and of every variant within scoreMargin of its best, and every peak (those passed the
// lowered threshold).
std::vector<Candidate> pickCandidates(const LevelPeaks& level, const ScaledBank& bank, const CoarseToFineOptions& options,
                                      double sign) {
  std::vector<Candidate> out;
  std::vector<std::vector<uint32_t>> byOriginal(bank.originals);
  for (std::size_t v = 0; v < level.best.size(); ++v)
    if (level.best[v]) byOriginal[bank.original[v]].push_back(uint32_t(v));
  for (std::vector<uint32_t>& entries : byOriginal) {
    if (entries.empty()) continue;
    auto goodness = [&](uint32_t v) { return sign * level.best[v]->score; };
    std::sort(entries.begin(), entries.end(), [&](uint32_t a, uint32_t b) {
      return goodness(a) != goodness(b) ? goodness(a) > goodness(b) : a < b;
    });
    const double top = goodness(entries.front());
    for (std::size_t k = 0; k < entries.size(); ++k) {
      const uint32_t v = entries[k];
      if (int(k) >= options.keepBest && goodness(v) < top - options.scoreMargin) continue;
      out.push_back({v, level.best[v]->x, level.best[v]->y});
    }
  }
  for (std::size_t v = 0; v < level.peaks.size(); ++v)
    for (const Match& m : level.peaks[v]) out.push_back({uint32_t(v), m.x, m.y});
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

// One refinement step: the finer level's frame and bank (and that bank prepared on the engine),
// the coarser bank the candidates were found with, each variant's neighbours, and the compared
// pixels of the finer bank's variants.
struct RefineStep {
  const FrameView& view;
  const std::vector<TemplateImage>& bank;
  const RegionTemplateSet& prepared;
  const std::vector<TemplateImage>& coarser;
  const std::vector<std::vector<uint32_t>>& neighbours;
  const std::vector<double>& compared;
};

// Per variant of the finer level, the positions searched for the candidates: each candidate's
// neighbouring variants within +-radius of twice its place (centre to centre), and a ring of one
// more position whose peaks are not taken (their neighbours outside the region are unknown) but
// which lets the inner ones be judged; overlapping rectangles merged.
std::vector<std::vector<PositionRect>> candidateRects(const RefineStep& step, const std::vector<Candidate>& candidates,
                                                      int radius) {
  std::vector<std::vector<PositionRect>> rects(step.bank.size());
  for (const Candidate& c : candidates) {
    const double cx = 2.0 * (c.x + (step.coarser[c.variant].width - 1) / 2.0) + 0.5;
    const double cy = 2.0 * (c.y + (step.coarser[c.variant].height - 1) / 2.0) + 0.5;
    for (uint32_t v : step.neighbours[c.variant]) {
      const int maxX = step.view.width - step.bank[v].width, maxY = step.view.height - step.bank[v].height;
      if (maxX < 0 || maxY < 0) continue;
      const int gx = int(std::lround(cx - (step.bank[v].width - 1) / 2.0));
      const int gy = int(std::lround(cy - (step.bank[v].height - 1) / 2.0));
      rects[v].push_back({std::clamp(gx - radius - 1, 0, maxX), std::clamp(gy - radius - 1, 0, maxY),
                          std::clamp(gx + radius + 1, 0, maxX), std::clamp(gy + radius + 1, 0, maxY)});
    }
  }
  for (std::vector<PositionRect>& list : rects) mergeRects(&list);
  return rects;
}

// Searches the candidates' rectangles in one matchRegions call and gives the level's findings:
// per variant the best over its rectangles and its peaks above levelParams' threshold away from
// the rings, chosen as the exhaustive search chooses (selectPeaks).
Status refineLevel(Engine& engine, const RefineStep& step, const std::vector<Candidate>& candidates, int radius,
                   const MatchParams& levelParams, LevelPeaks* out, CoarseToFineLevelStats* stats) {
  const std::size_t n = step.bank.size();
  stats->candidates = candidates.size();
  const std::vector<std::vector<PositionRect>> rects = candidateRects(step, candidates, radius);
  std::vector<RegionQuery> queries;
  std::vector<std::pair<uint32_t, PositionRect>> owners;
  for (std::size_t v = 0; v < n; ++v) {
    for (const PositionRect& p : rects[v]) {
      RegionQuery q;
      q.x = p.x0, q.y = p.y0;
      q.width = p.x1 - p.x0 + step.bank[v].width, q.height = p.y1 - p.y0 + step.bank[v].height;
      q.set = step.prepared;  // variant v, laid out once on the engine
      q.setIndex = uint32_t(v);
      queries.push_back(q);
      owners.push_back({uint32_t(v), p});
      stats->products += double(p.x1 - p.x0 + 1) * (p.y1 - p.y0 + 1) * step.compared[v];
    }
  }
  stats->regions = queries.size();
  // Every local peak of each region above the level's threshold: the NMS and max-matches of the
  // exhaustive search run below, over all of a variant's regions.
  MatchParams regionParams = levelParams;
  regionParams.nmsIou = 1.0;
  regionParams.maxMatches = levelParams.maxMatches == 0 ? 0 : std::numeric_limits<int>::max();
  std::vector<RegionResult> found;
  const auto searching = std::chrono::steady_clock::now();
  NCC_RETURN_IF_ERROR(engine.matchRegions(step.view, queries, regionParams, &found));
  stats->regionsMs = msSince(searching);

  const double sign = goodnessSign(levelParams.method);
  out->peaks.assign(n, {});
  out->best.assign(n, std::nullopt);
  std::vector<std::vector<Match>> peaks(n);
  for (std::size_t k = 0; k < found.size(); ++k) {
    const uint32_t v = owners[k].first;
    const PositionRect& p = owners[k].second;
    const int maxX = step.view.width - step.bank[v].width, maxY = step.view.height - step.bank[v].height;
    if (found[k].best) {
      Match b = *found[k].best;
      b.templateIndex = v;
      if (!out->best[v] || betterMatch(b, *out->best[v], sign)) out->best[v] = b;
    }
    for (Match m : found[k].matches) {
      const bool inside = (m.x > p.x0 || p.x0 == 0) && (m.x < p.x1 || p.x1 == maxX) && (m.y > p.y0 || p.y0 == 0) &&
                          (m.y < p.y1 || p.y1 == maxY);
      if (!inside) continue;
      m.templateIndex = v;
      peaks[v].push_back(m);
    }
  }
  for (std::size_t v = 0; v < n; ++v)
    if (!peaks[v].empty())
      out->peaks[v] = selectPeaks(std::move(peaks[v]), step.view.width - step.bank[v].width + 1,
                                  step.view.height - step.bank[v].height + 1, step.bank[v].width, step.bank[v].height,
                                  levelParams);
  return Status();
}

// The entries of `bank` by (original, scale index, angle), scales of each original in ascending
// order: each variant's neighbours within the given numbers of scale and angle steps, itself first.
std::vector<std::vector<uint32_t>> variantNeighbours(const ScaledBank& bank, int scaleSteps, int angleSteps) {
  const std::size_t n = bank.templates.size();
  const AngleNeighbours angles = angleNeighbours(bank);
  std::vector<std::vector<double>> scales(bank.originals);
  for (std::size_t e = 0; e < n; ++e) scales[bank.original[e]].push_back(bank.scale[e]);
  for (std::vector<double>& s : scales) {
    std::sort(s.begin(), s.end());
    s.erase(std::unique(s.begin(), s.end()), s.end());
  }
  auto scaleIndex = [&](std::size_t e) {
    const std::vector<double>& s = scales[bank.original[e]];
    return int(std::lower_bound(s.begin(), s.end(), bank.scale[e]) - s.begin());
  };
  std::map<std::tuple<uint32_t, int, double>, uint32_t> at;
  for (std::size_t e = 0; e < n; ++e) at.emplace(std::make_tuple(bank.original[e], scaleIndex(e), entryAngle(bank, e)), uint32_t(e));
  std::vector<std::vector<uint32_t>> out(n);
  for (std::size_t e = 0; e < n; ++e) {
    std::vector<uint32_t>& list = out[e];
    list.push_back(uint32_t(e));
    for (int ds = -scaleSteps; ds <= scaleSteps; ++ds) {
      const auto found = at.find(std::make_tuple(bank.original[e], scaleIndex(e) + ds, entryAngle(bank, e)));
      if (found == at.end()) continue;
      const uint32_t centre = found->second;
      list.push_back(centre);
      for (const std::vector<long>* side : {&angles.left, &angles.right}) {
        long u = long(centre);
        for (int k = 0; k < angleSteps && (u = (*side)[std::size_t(u)]) >= 0; ++k) list.push_back(uint32_t(u));
      }
    }
    std::sort(list.begin() + 1, list.end());
    list.erase(std::unique(list.begin() + 1, list.end()), list.end());
    list.erase(std::remove(list.begin() + 1, list.end(), uint32_t(e)), list.end());
  }
  return out;
}

// The threshold of the levels above full size: lowered by the margin, in the method's direction.
double loweredThreshold(const MatchParams& params, double margin) {
  return params.threshold - goodnessSign(params.method) * margin;
}

}  // namespace

Status validateCoarseToFineOptions(const CoarseToFineOptions& o) {
  if (o.levels < 0 || o.levels > kMaxPyramidLevels)
    return Status::error("pyramid levels " + std::to_string(o.levels) + " is outside 0.." +
                         std::to_string(kMaxPyramidLevels) + " (0 searches every variant at full size)");
  if (o.keepBest < 1) return Status::error("keep-best " + std::to_string(o.keepBest) + " is below 1");
  if (!std::isfinite(o.scoreMargin) || o.scoreMargin < 0 || o.scoreMargin > 2)
    return Status::error("score margin " + formatNumber(o.scoreMargin) + " is outside 0..2");
  if (o.angleNeighbours < 0 || o.angleNeighbours > 16)
    return Status::error("angle neighbours " + std::to_string(o.angleNeighbours) + " is outside 0..16");
  if (o.scaleNeighbours < 0 || o.scaleNeighbours > 16)
    return Status::error("scale neighbours " + std::to_string(o.scaleNeighbours) + " is outside 0..16");
  if (o.searchRadius < 1 || o.searchRadius > 16)
    return Status::error("search radius " + std::to_string(o.searchRadius) + " is outside 1..16");
  return Status();
}

bool coarseToFineMethod(Method method) {
  return method == Method::CCoeffNormed || method == Method::CCorrNormed || method == Method::SqDiffNormed;
}

double exhaustiveProducts(const std::vector<TemplateImage>& bank, int width, int height) {
  double sum = 0;
  for (const TemplateImage& t : bank)
    if (t.width <= width && t.height <= height)
      sum += double(width - t.width + 1) * (height - t.height + 1) * comparedPixels(t);
  return sum;
}

TemplateImage halveTemplate(const TemplateImage& source) {
  TemplateImage out;
  out.name = source.name;
  out.width = std::max(1, source.width / 2);
  out.height = std::max(1, source.height / 2);
  out.pixels.resize(std::size_t(out.width) * out.height);
  if (!source.mask.empty()) out.mask.resize(out.pixels.size());
  for (int y = 0; y < out.height; ++y) {
    for (int x = 0; x < out.width; ++x) {
      int sum = 0, n = 0;
      bool compared = true;
      for (int j = 0; j < 2; ++j)
        for (int i = 0; i < 2; ++i) {
          const int sx = 2 * x + i, sy = 2 * y + j;
          if (sx >= source.width || sy >= source.height) continue;
          const std::size_t k = std::size_t(sy) * source.width + sx;
          sum += source.pixels[k];
          ++n;
          if (!source.mask.empty() && source.mask[k] == 0) compared = false;
        }
      const std::size_t k = std::size_t(y) * out.width + x;
      out.pixels[k] = uint8_t((sum + n / 2) / n);
      if (!out.mask.empty()) out.mask[k] = compared ? 255 : 0;
    }
  }
  return out;
}

Status CoarseToFineSearch::create(const ScaledBank& variants, const CoarseToFineOptions& options,
                                  CoarseToFineSearch* out) {
  if (out == nullptr) return Status::error("coarse-to-fine: output pointer is null");
  NCC_RETURN_IF_ERROR(validateCoarseToFineOptions(options));
  const std::size_t n = variants.templates.size();
  if (n == 0) return Status::error("coarse-to-fine: the bank has no variants");
  if (variants.original.size() != n || variants.scale.size() != n || (!variants.angle.empty() && variants.angle.size() != n))
    return Status::error("coarse-to-fine: the bank's original, scale and angle lists do not match its " +
                         std::to_string(n) + " templates");
  for (uint32_t o : variants.original)
    if (o >= variants.originals)
      return Status::error("coarse-to-fine: a variant names original " + std::to_string(o) + " of " +
                           std::to_string(variants.originals));
  NCC_RETURN_IF_ERROR(validateTemplates(variants.templates));

  CoarseToFineSearch s;
  s.variants_ = variants;
  s.options_ = options;
  s.pyramid_.push_back(variants.templates);
  for (int level = 1; level <= options.levels; ++level) {
    std::vector<TemplateImage> halved;
    halved.reserve(n);
    for (std::size_t v = 0; v < n; ++v) {
      const TemplateImage& full = variants.templates[v];
      const TemplateImage& finer = s.pyramid_.back()[v];
      if (finer.width / 2 >= kMinCoarseSide && finer.height / 2 >= kMinCoarseSide) halved.push_back(halveTemplate(finer));
      const bool fits = halved.size() == v + 1;
      const double compared = fits ? comparedPixels(halved.back()) : 0;
      if (!fits || compared < kMinCoarsePixels)
        return Status::error(
            "coarse-to-fine: template " + std::to_string(variants.original[v]) + " ('" + full.name + "') at scale " +
            formatNumber(variants.scale[v]) + ", angle " + formatNumber(entryAngle(variants, v)) + " is " +
            sizeText(full.width, full.height) + "; at pyramid level " + std::to_string(level) + " it would be " +
            sizeText(finer.width / 2, finer.height / 2) +
            (fits ? " with " + formatNumber(compared) + " compared pixels" : std::string()) + ", below the " +
            std::to_string(kMinCoarseSide) + " pixels a side and " +
            std::to_string(kMinCoarsePixels) + " compared pixels a coarse variant needs: use fewer levels "
            "(0 searches every variant at full size) or larger templates");
    }
    s.pyramid_.push_back(std::move(halved));
  }
  for (const std::vector<TemplateImage>& level : s.pyramid_) {
    std::vector<double> counts;
    for (const TemplateImage& t : level) counts.push_back(comparedPixels(t));
    s.compared_.push_back(std::move(counts));
  }
  s.neighbours_ = variantNeighbours(variants, options.scaleNeighbours, options.angleNeighbours);
  *out = std::move(s);
  return Status();
}

Status CoarseToFineSearch::prepareRefinement(Engine& engine, std::vector<RegionTemplateSet>* sets) {
  sets->assign(std::size_t(options_.levels), RegionTemplateSet());
  for (int l = 0; l < options_.levels; ++l) {
    for (const PreparedLevel& p : prepared_)
      if (p.level == l && engine.holdsRegionTemplates(p.set)) (*sets)[std::size_t(l)] = p.set;
    if (!(*sets)[std::size_t(l)].empty()) continue;
    RegionTemplateSet made;
    NCC_RETURN_IF_ERROR(engine.prepareRegionTemplates(pyramid_[std::size_t(l)], &made));
    // This engine's handles that it no longer holds (released) are of no use: dropped.
    prepared_.erase(std::remove_if(prepared_.begin(), prepared_.end(),
                                   [&](const PreparedLevel& p) {
                                     return p.set.engine == made.engine && !engine.holdsRegionTemplates(p.set);
                                   }),
                    prepared_.end());
    prepared_.push_back({l, made});
    (*sets)[std::size_t(l)] = made;
  }
  return Status();
}

void CoarseToFineSearch::releasePrepared(Engine& engine) {
  std::vector<PreparedLevel> kept;  // other engines' sets (and one this engine failed to release)
  for (const PreparedLevel& p : prepared_) {
    RegionTemplateSet set = p.set;
    if (engine.holdsRegionTemplates(set) && engine.releaseRegionTemplates(&set).ok()) continue;
    kept.push_back(p);
  }
  prepared_ = std::move(kept);
}

Status CoarseToFineSearch::match(Engine& engine, const FrameView& frame, const MatchParams& params,
                                 FrameResult* result) {
  if (result == nullptr) return Status::error("coarse-to-fine: result pointer is null");
  if (pyramid_.empty()) return Status::error("coarse-to-fine: the search was not created (CoarseToFineSearch::create)");
  NCC_RETURN_IF_ERROR(validateFrame(frame));
  NCC_RETURN_IF_ERROR(validateParams(params));
  const std::vector<TemplateImage>& held = engine.templates();
  bool same = held.size() == engineTemplates().size();
  for (std::size_t k = 0; same && k < held.size(); ++k)
    same = held[k].width == engineTemplates()[k].width && held[k].height == engineTemplates()[k].height;
  if (!same)
    return Status::error("coarse-to-fine: the engine holds " + std::to_string(held.size()) +
                         " templates, not this search's bank of " + std::to_string(engineTemplates().size()) +
                         " (engine->setTemplates(search.engineTemplates()))");
  const int levels = options_.levels;
  work_ = CoarseToFineWork();
  using Clock = std::chrono::steady_clock;
  if (levels == 0) {
    FrameResult raw;
    const Clock::time_point started = Clock::now();
    NCC_RETURN_IF_ERROR(engine.match(frame, params, &raw));
    work_.coarseMs = msSince(started);
    work_.coarseProducts = exhaustiveProducts(pyramid_[0], frame.width, frame.height);
    const Clock::time_point merging = Clock::now();
    *result = mergeScaledResult(variants_, raw, params);
    work_.mergeMs = msSince(merging);
    return Status();
  }
  if (!coarseToFineMethod(params.method))
    return Status::error(std::string("coarse-to-fine needs a normalised method (ccoeff-normed, ccorr-normed, "
                                     "sqdiff-normed); '") +
                         methodName(params.method) + "' scores grow with the template's area, so they do not carry "
                         "from one pyramid level to the next");

  // The pyramid of the frame: level 0 is the frame itself (a device frame copied to the host to
  // be halved), level l the halving of level l - 1.
  const Clock::time_point pyramidStart = Clock::now();
  const uint8_t* host = frame.data;
  std::size_t hostStride = frame.stride;
  if (frame.memory != MemoryKind::Host) {
    NCC_RETURN_IF_ERROR(engine.copyPatch(frame, 0, 0, frame.width, frame.height, &hostFrame_));
    host = hostFrame_.data();
    hostStride = std::size_t(frame.width);
  }
  frames_.resize(std::size_t(levels));
  std::vector<FrameView> views{frame};
  for (int level = 1; level <= levels; ++level) {
    const FrameView& finer = views.back();
    if (finer.width < 2 || finer.height < 2)
      return Status::error("coarse-to-fine: the " + sizeText(frame.width, frame.height) + " frame is too small for " +
                           std::to_string(levels) + " pyramid levels");
    halveFrame(level == 1 ? host : finer.data, level == 1 ? hostStride : finer.stride, finer.width, finer.height,
               &frames_[std::size_t(level - 1)]);
    views.push_back({frames_[std::size_t(level - 1)].data(), finer.width / 2, finer.height / 2,
                     std::size_t(finer.width / 2), MemoryKind::Host});
  }
  work_.pyramidMs = msSince(pyramidStart);

  const std::size_t n = variants_.templates.size();
  const double sign = goodnessSign(params.method);
  // Above full size: the lowered threshold, and each variant's keepBest best peaks beside
  // max-matches (a template with one variant still hands on several places).
  MatchParams coarse = params;
  coarse.threshold = loweredThreshold(params, options_.scoreMargin);
  coarse.maxMatches = params.maxMatches == 0 ? 0 : params.maxMatches + options_.keepBest;

  // The finer levels' variants on this engine: prepared once (again for another engine).
  const Clock::time_point preparing = Clock::now();
  std::vector<RegionTemplateSet> sets;
  NCC_RETURN_IF_ERROR(prepareRefinement(engine, &sets));
  work_.prepareMs = msSince(preparing);

  // The coarsest level: the engine's search of the whole (halved) frame.
  LevelPeaks level;
  {
    FrameResult raw;
    const Clock::time_point started = Clock::now();
    NCC_RETURN_IF_ERROR(engine.match(views.back(), coarse, &raw));
    work_.coarseMs = msSince(started);
    work_.coarseProducts = exhaustiveProducts(pyramid_.back(), views.back().width, views.back().height);
    level.peaks.assign(n, {});
    level.best = raw.best;
    level.best.resize(n);
    for (const Match& m : raw.matches)
      if (m.templateIndex < n) level.peaks[m.templateIndex].push_back(m);
  }

  // Each finer level: every candidate's neighbouring variants in a few positions around twice its
  // place. (A variant that fits a frame fits its halving too: floor(W/2) >= floor(w/2) when W >= w,
  // so no variant is left out of the coarse search for its size alone.)
  for (int l = levels - 1; l >= 0; --l) {
    const RefineStep step{views[std::size_t(l)], pyramid_[std::size_t(l)], sets[std::size_t(l)],
                          pyramid_[std::size_t(l + 1)], neighbours_, compared_[std::size_t(l)]};
    LevelPeaks next;
    CoarseToFineLevelStats stats;
    stats.level = l;
    const Clock::time_point started = Clock::now();
    NCC_RETURN_IF_ERROR(refineLevel(engine, step, pickCandidates(level, variants_, options_, sign), options_.searchRadius,
                                    l == 0 ? params : coarse, &next, &stats));
    stats.ms = msSince(started);
    work_.refineProducts += stats.products;
    work_.regions += stats.regions;
    work_.refine.push_back(stats);
    level = std::move(next);
  }

  const Clock::time_point merging = Clock::now();
  FrameResult raw;
  raw.best = level.best;
  for (std::vector<Match>& list : level.peaks) raw.matches.insert(raw.matches.end(), list.begin(), list.end());
  *result = mergeScaledResult(variants_, raw, params);
  work_.mergeMs = msSince(merging);
  return Status();
}

}  // namespace nccmatch
