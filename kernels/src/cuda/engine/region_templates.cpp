#include "cuda/engine/region_templates.hpp"

#include <cstring>

#include "cuda/cuda_check.hpp"
#include "cuda/numerator/masked_scores.hpp"
#include "cuda/numerator/spatial_scores.hpp"
#include "rules/masked_score_rules.hpp"

namespace nccmatch::cuda {

bool fusedRegionTemplate(const TemplateImage& t) { return fusedSpatialFits(t.width, t.height) && !ignoresPixels(t); }

RegionTemplateLayout::RegionTemplateLayout(const TemplateImage& t) : fused_(fusedRegionTemplate(t)) {
  if (fused_) fragments_ = fusedSpatialFragments(t.pixels.data(), t.width, t.height);
  bytes_ = fused_ ? fragments_.size() : maskedLayoutBytes(t.width, t.height);
}

TemplateStats RegionTemplateLayout::writeTo(const TemplateImage& t, uint8_t* out) const {
  if (!fused_) return packMaskedTemplate(t, out);
  std::memcpy(out, fragments_.data(), fragments_.size());
  return templateStats(t);  // nothing ignored: maskedTemplateStats(t)
}

Status prepareRegionTemplates(const std::vector<TemplateImage>& templates, PreparedRegionTemplates* out) {
  PreparedRegionTemplates prepared;
  std::vector<RegionTemplateLayout> layouts;
  layouts.reserve(templates.size());
  std::size_t bytes = 0;
  for (const TemplateImage& t : templates) {
    layouts.emplace_back(t);
    PreparedRegionTemplates::Entry e;
    e.width = t.width;
    e.height = t.height;
    e.fused = layouts.back().fused();
    e.offset = bytes;
    bytes += alignRegionTemplate(layouts.back().bytes());
    prepared.entries.push_back(e);
  }
  std::vector<uint8_t> host(bytes, 0);  // padding zeroed: the upload reads no uninitialised byte
  for (std::size_t i = 0; i < templates.size(); ++i)
    prepared.entries[i].stats = layouts[i].writeTo(templates[i], host.data() + prepared.entries[i].offset);
  NCC_RETURN_IF_ERROR(prepared.block.reserve(bytes));
  NCC_CUDA_CHECK(cudaMemcpy(prepared.block.as<uint8_t>(), host.data(), bytes, cudaMemcpyHostToDevice));
  *out = std::move(prepared);
  return Status();
}

}  // namespace nccmatch::cuda
