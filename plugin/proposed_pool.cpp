#include "proposed_pool.hpp"

#include <gst/video/video.h>

#include <utility>

namespace nccmatch::plugin {

ProposedPool::ProposedPool(ProposedPool&& other) noexcept { *this = std::move(other); }

ProposedPool& ProposedPool::operator=(ProposedPool&& other) noexcept {
  if (this == &other) return *this;
  reset();
  pool_ = std::exchange(other.pool_, nullptr);
  caps_ = std::exchange(other.caps_, nullptr);
  allocator_ = std::exchange(other.allocator_, nullptr);
  size_ = std::exchange(other.size_, 0u);
  made_ = std::exchange(other.made_, 0);
  return *this;
}

void ProposedPool::reset() {
  if (pool_ != nullptr) gst_object_unref(pool_);
  if (caps_ != nullptr) gst_caps_unref(caps_);
  if (allocator_ != nullptr) gst_object_unref(allocator_);
  pool_ = nullptr;
  caps_ = nullptr;
  allocator_ = nullptr;
  size_ = 0;
}

GstBufferPool* ProposedPool::forCaps(GstCaps* caps, guint size, GstAllocator* allocator) {
  if (pool_ != nullptr && allocator == allocator_ && size == size_ && gst_caps_is_equal(caps, caps_))
    return static_cast<GstBufferPool*>(gst_object_ref(pool_));
  reset();
  GstBufferPool* pool = gst_video_buffer_pool_new();
  GstStructure* config = gst_buffer_pool_get_config(pool);
  GstAllocationParams params;
  gst_allocation_params_init(&params);
  gst_buffer_pool_config_set_params(config, caps, size, 0, 0);
  gst_buffer_pool_config_set_allocator(config, allocator, &params);
  gst_buffer_pool_config_add_option(config, GST_BUFFER_POOL_OPTION_VIDEO_META);
  if (!gst_buffer_pool_set_config(pool, config)) {
    gst_object_unref(pool);
    return nullptr;
  }
  ++made_;
  pool_ = pool;
  caps_ = gst_caps_ref(caps);
  allocator_ = allocator != nullptr ? static_cast<GstAllocator*>(gst_object_ref(allocator)) : nullptr;
  size_ = size;
  return static_cast<GstBufferPool*>(gst_object_ref(pool_));
}

}  // namespace nccmatch::plugin
