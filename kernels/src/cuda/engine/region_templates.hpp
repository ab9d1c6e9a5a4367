// Templates of the region search as its kernels read them, laid out on the host: the fused region
// kernel's tensor-core fragments for a template up to 64x64 that ignores no pixel, the masked
// region kernel's layout (packMaskedTemplate) for the others, each with its statistics. Own images
// (RegionQuery::image) are laid out so every matchRegions call (region_search.cpp); a prepared set
// (Engine::prepareRegionTemplates) once, into one device block that its regions then name.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "cuda/engine/device_buffer.hpp"
#include "nccmatch/status.hpp"
#include "nccmatch/types.hpp"
#include "rules/score_rules.hpp"

namespace nccmatch::cuda {

// Template layouts start this many bytes apart at least (the fused kernel's cp.async loads).
constexpr std::size_t kRegionTemplateAlign = 16;
inline std::size_t alignRegionTemplate(std::size_t n) {
  return (n + kRegionTemplateAlign - 1) / kRegionTemplateAlign * kRegionTemplateAlign;
}

// Which kernel scores a region of this template: the fused one (at most 64x64, no pixel ignored).
bool fusedRegionTemplate(const TemplateImage& t);

// One template laid out: its kind and the bytes to write (fragments, for fused ones; the masked
// layout is written in place by writeTo, as its size is known).
class RegionTemplateLayout {
 public:
  explicit RegionTemplateLayout(const TemplateImage& t);
  bool fused() const { return fused_; }
  std::size_t bytes() const { return bytes_; }
  // Writes the layout to out (bytes() bytes) and returns the template's statistics over its
  // compared pixels (maskedTemplateStats).
  TemplateStats writeTo(const TemplateImage& t, uint8_t* out) const;

 private:
  bool fused_;
  std::size_t bytes_;
  std::vector<uint8_t> fragments_;  // fused only
};

// A prepared set on the device: every template's layout in one block.
struct PreparedRegionTemplates {
  struct Entry {
    int width = 0, height = 0;
    bool fused = false;
    TemplateStats stats;
    std::size_t offset = 0;  // its layout in `block`
  };
  std::vector<Entry> entries;
  DeviceBuffer block;

  const uint8_t* layout(uint32_t i) const { return block.as<uint8_t>() + entries[i].offset; }
};

// Lays out every template (validated) on the host and uploads them in one synchronous copy.
Status prepareRegionTemplates(const std::vector<TemplateImage>& templates, PreparedRegionTemplates* out);

}  // namespace nccmatch::cuda
