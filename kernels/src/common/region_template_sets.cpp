#include "common/region_template_sets.hpp"

#include <atomic>

#include "common/validate.hpp"

namespace nccmatch {

namespace {
// Engine numbers: process-wide, from 1, never reused (a handle of a destroyed engine names no
// engine alive).
std::atomic<uint64_t> nextEngine{1};
}  // namespace

RegionSetIds::RegionSetIds() : engine_(nextEngine.fetch_add(1)) {}

bool RegionSetIds::holds(const RegionTemplateSet& set) const {
  return set.engine == engine_ && sizes_.count(set.id) != 0;
}

Status RegionSetIds::check(const RegionTemplateSet& set, uint32_t index) const {
  if (set.id == 0) return Status::error("the template set is empty (no set was prepared into this handle)");
  if (set.engine != engine_)
    return Status::error("template set " + std::to_string(set.id) + " was prepared by another engine");
  const auto found = sizes_.find(set.id);
  if (found == sizes_.end())
    return Status::error("template set " + std::to_string(set.id) + " was released or replaced");
  if (index >= found->second)
    return Status::error("template " + std::to_string(index) + " is outside its set " + std::to_string(set.id) +
                         " of " + std::to_string(found->second));
  return Status();
}

Status RegionSetIds::validate(const std::vector<TemplateImage>& templates) {
  if (templates.empty()) return Status::error("prepareRegionTemplates: no templates");
  Status st = validateTemplates(templates);
  if (!st.ok()) return Status::error("prepareRegionTemplates: " + st.message());
  if (templates.size() > UINT32_MAX)
    return Status::error("prepareRegionTemplates: " + std::to_string(templates.size()) + " templates; at most " +
                         std::to_string(UINT32_MAX));
  return Status();
}

RegionTemplateSet RegionSetIds::issue(uint32_t size) {
  RegionTemplateSet set;
  set.engine = engine_;
  set.id = nextId_++;
  set.size = size;
  sizes_.emplace(set.id, size);
  return set;
}

}  // namespace nccmatch
