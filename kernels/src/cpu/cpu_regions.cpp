// CpuEngine::matchRegions: each region is matched as a view of the frame against its one
// template (the bank's, an own image, or a prepared set's), exactly (Direct numerator, or
// per-window plain sums on the Reference path and for masked templates), and its peaks found by
// the reference findPeaks; the regions are spread over the engine's threads. A prepared set keeps
// what an own image needs made each call: statistics, Direct layout, numerator template.
#include <string>
#include <vector>

#include "common/peaks.hpp"
#include "common/region_template_sets.hpp"
#include "common/validate.hpp"
#include "cpu/cpu_direct_scores.hpp"
#include "cpu/cpu_engine.hpp"
#include "cpu/cpu_numerator_direct.hpp"
#include "cpu/cpu_masked_window_sums.hpp"
#include "cpu/cpu_window_sums.hpp"
#include "rules/masked_score_rules.hpp"

namespace nccmatch {

namespace {

// The region as a frame of its own.
FrameView regionView(const FrameView& frame, const RegionQuery& r) {
  FrameView view = frame;
  view.data = frame.data + std::size_t(r.y) * frame.stride + std::size_t(r.x);
  view.width = r.width;
  view.height = r.height;
  return view;
}

// Every window's score from its plain sums: the Reference path's arithmetic, no tables; a masked
// template's sums over its compared pixels only (the masked rules), its numerator template made
// here unless given (a prepared set's).
void scoreViewReference(const FrameView& view, Method method, const TemplateImage& t, const TemplateStats& stats,
                        const TemplateImage* prepared, double* out) {
  const int mapW = view.width - t.width + 1, mapH = view.height - t.height + 1;
  const bool masked = ignoresPixels(t);
  const TemplateImage made = masked && prepared == nullptr ? numeratorTemplate(t) : TemplateImage();
  const TemplateImage& numerator = prepared != nullptr ? *prepared : made;
  for (int y = 0; y < mapH; ++y)
    for (int x = 0; x < mapW; ++x) {
      int64_t s1, s2;
      if (masked)
        maskedWindowSumsAt(view.data, view.stride, x, y, t, &s1, &s2);
      else
        windowSumsAt(view.data, view.stride, x, y, t.width, t.height, &s1, &s2);
      const int64_t c = directCrossAt(view.data, view.stride, x, y, masked ? numerator : t);
      out[std::size_t(y) * mapW + x] = maskedScoreFromSums(method, stats, s1, s2, c);
    }
}

void toFrame(const RegionQuery& r, Match* m) {
  m->x += r.x;
  m->y += r.y;
  m->subX += r.x;
  m->subY += r.y;
}

}  // namespace

Status CpuEngine::prepareRegionTemplates(std::vector<TemplateImage> templates, RegionTemplateSet* set) {
  if (set == nullptr) return Status::error("prepareRegionTemplates: set pointer is null");
  NCC_RETURN_IF_ERROR(RegionSetIds::validate(templates));
  RegionSet prepared;
  for (const TemplateImage& t : templates) {
    const bool masked = ignoresPixels(t);
    prepared.stats.push_back(maskedTemplateStats(t));
    prepared.packed.push_back(masked ? DirectTemplate() : packDirectTemplate(t));
    prepared.numerator.push_back(masked ? numeratorTemplate(t) : TemplateImage());
  }
  const uint32_t size = uint32_t(templates.size());
  prepared.images = std::move(templates);
  regionSets_.add(std::move(prepared), size, set);
  return Status();
}

Status CpuEngine::matchRegions(const FrameView& frame, const std::vector<RegionQuery>& regions,
                               const MatchParams& params, std::vector<RegionResult>* results) {
  NCC_RETURN_IF_ERROR(validateRegions(bank_, regionSets_, frame, regions, results));
  NCC_RETURN_IF_ERROR(validateParams(params));
  if (frame.memory != MemoryKind::Host) return Status::error("the CPU backend needs frames in host memory");
  results->assign(regions.size(), RegionResult());
  const bool reference = path_ == CpuPath::Reference;
  pool_.parallelFor(int(regions.size()), [&](int begin, int end) {
    thread_local std::vector<double> map;
    for (int k = begin; k < end; ++k) {
      const RegionQuery& r = regions[k];
      // The region's template and what is prepared of it: the bank's, a set's, or nothing (own).
      const RegionSet* set = r.set.empty() ? nullptr : &regionSets_.at(r.set);
      const bool own = set == nullptr && r.image != nullptr;
      const TemplateImage& t = set != nullptr ? set->images[r.setIndex] : own ? *r.image : bank_[r.templateIndex];
      if (t.width > r.width || t.height > r.height) continue;
      const TemplateStats stats = set != nullptr ? set->stats[r.setIndex]
                                  : own          ? maskedTemplateStats(t)
                                                 : stats_[r.templateIndex];
      const FrameView view = regionView(frame, r);
      const int mapW = r.width - t.width + 1, mapH = r.height - t.height + 1;
      map.resize(std::size_t(mapW) * mapH);
      if (reference || ignoresPixels(t)) {  // masked: the plain loops (tracking windows are small)
        scoreViewReference(view, params.method, t, stats, set != nullptr ? &set->numerator[r.setIndex] : nullptr,
                           map.data());
      } else if (own) {
        scoreRowsDirect(view, params.method, t, stats, packDirectTemplate(t), 0, mapH, map.data());
      } else {
        scoreRowsDirect(view, params.method, t, stats,
                        set != nullptr ? set->packed[r.setIndex] : packed_[r.templateIndex], 0, mapH, map.data());
      }
      RegionResult& out = (*results)[k];
      findPeaks(map.data(), mapW, mapH, t.width, t.height, r.templateIndex, params, &out.matches, &out.best);
      for (Match& m : out.matches) toFrame(r, &m);
      if (out.best) toFrame(r, &*out.best);
    }
  });
  return Status();
}

}  // namespace nccmatch
