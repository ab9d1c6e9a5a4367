#include "allocation_answer.hpp"

#include <utility>

namespace nccmatch::plugin {

AllocationAnswer::AllocationAnswer(AllocationAnswer&& other) noexcept { *this = std::move(other); }

AllocationAnswer& AllocationAnswer::operator=(AllocationAnswer&& other) noexcept {
  if (this == &other) return *this;
  reset();
  caps_ = std::exchange(other.caps_, nullptr);
  needPool_ = other.needPool_;
  result_ = other.result_;
  pools_ = std::move(other.pools_);
  params_ = std::move(other.params_);
  metas_ = std::move(other.metas_);
  kept_ = std::exchange(other.kept_, 0);
  other.pools_.clear();
  other.params_.clear();
  other.metas_.clear();
  return *this;
}

void AllocationAnswer::reset() {
  if (caps_ != nullptr) gst_caps_unref(caps_);
  caps_ = nullptr;
  for (Pool& p : pools_)
    if (p.pool != nullptr) gst_object_unref(p.pool);
  for (Param& p : params_)
    if (p.allocator != nullptr) gst_object_unref(p.allocator);
  for (Meta& m : metas_)
    if (m.params != nullptr) gst_structure_free(m.params);
  pools_.clear();
  params_.clear();
  metas_.clear();
}

bool AllocationAnswer::replay(GstQuery* query, bool* result) const {
  GstCaps* caps = nullptr;
  gboolean needPool = FALSE;
  gst_query_parse_allocation(query, &caps, &needPool);
  if (caps_ == nullptr || caps == nullptr || bool(needPool) != needPool_ || !gst_caps_is_equal(caps, caps_))
    return false;
  for (const Pool& p : pools_) gst_query_add_allocation_pool(query, p.pool, p.size, p.minBuffers, p.maxBuffers);
  for (const Param& p : params_) gst_query_add_allocation_param(query, p.allocator, &p.params);
  for (const Meta& m : metas_) gst_query_add_allocation_meta(query, m.api, m.params);
  *result = result_;
  return true;
}

void AllocationAnswer::keep(GstQuery* answered, bool result) {
  reset();
  GstCaps* caps = nullptr;
  gboolean needPool = FALSE;
  gst_query_parse_allocation(answered, &caps, &needPool);
  if (caps == nullptr) return;  // nothing to compare the next query with
  caps_ = gst_caps_ref(caps);
  needPool_ = needPool;
  result_ = result;
  for (guint i = 0; i < gst_query_get_n_allocation_pools(answered); ++i) {
    Pool p{};
    gst_query_parse_nth_allocation_pool(answered, i, &p.pool, &p.size, &p.minBuffers, &p.maxBuffers);  // a ref
    pools_.push_back(p);
  }
  for (guint i = 0; i < gst_query_get_n_allocation_params(answered); ++i) {
    Param p{};
    gst_query_parse_nth_allocation_param(answered, i, &p.allocator, &p.params);  // a ref
    params_.push_back(p);
  }
  for (guint i = 0; i < gst_query_get_n_allocation_metas(answered); ++i) {
    Meta m{};
    const GstStructure* params = nullptr;
    m.api = gst_query_parse_nth_allocation_meta(answered, i, &params);
    m.params = params != nullptr ? gst_structure_copy(params) : nullptr;
    metas_.push_back(m);
  }
  ++kept_;
}

}  // namespace nccmatch::plugin
