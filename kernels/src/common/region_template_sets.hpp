// The region template sets an engine holds (Engine::prepareRegionTemplates): the handles it
// issues, their checks, and each set's backend-specific preparation. Both backends keep theirs
// here, so a bad handle gets the same message from each.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "nccmatch/regions.hpp"
#include "nccmatch/status.hpp"
#include "nccmatch/types.hpp"

namespace nccmatch {

// The handles of one engine: its number (unique in the process, never reused) and the ids and
// sizes of the sets it holds.
class RegionSetIds {
 public:
  RegionSetIds();

  bool holds(const RegionTemplateSet& set) const;
  // Ok when `set` names a held set with a template `index`; otherwise why not ("prepared by
  // another engine", "released or replaced", "outside its set of N").
  Status check(const RegionTemplateSet& set, uint32_t index) const;
  // The templates prepareRegionTemplates accepts: at least one, each valid (validateTemplates).
  static Status validate(const std::vector<TemplateImage>& templates);

 protected:
  RegionTemplateSet issue(uint32_t size);  // a new id
  void forget(uint64_t id) { sizes_.erase(id); }

 private:
  uint64_t engine_;
  uint64_t nextId_ = 1;
  std::map<uint64_t, uint32_t> sizes_;  // by id
};

// The sets themselves: Prepared is the backend's preparation of one set.
template <class Prepared>
class RegionTemplateSets : public RegionSetIds {
 public:
  // Holds `prepared` under a new handle in *set; a set *set named here is released (replaced).
  void add(Prepared prepared, uint32_t size, RegionTemplateSet* set) {
    if (holds(*set)) release(*set);
    *set = issue(size);
    sets_.emplace(set->id, std::move(prepared));
  }
  Status release(RegionTemplateSet* set) {
    if (set == nullptr) return Status::error("releaseRegionTemplates: set pointer is null");
    if (!holds(*set)) {
      Status why = check(*set, 0);
      return Status::error("releaseRegionTemplates: " + (why.ok() ? std::string("no such set") : why.message()));
    }
    release(*set);
    *set = RegionTemplateSet();
    return Status();
  }
  // A held set (check() first).
  const Prepared& at(const RegionTemplateSet& set) const { return sets_.at(set.id); }

 private:
  void release(const RegionTemplateSet& set) {
    sets_.erase(set.id);
    forget(set.id);
  }
  std::map<uint64_t, Prepared> sets_;
};

}  // namespace nccmatch
