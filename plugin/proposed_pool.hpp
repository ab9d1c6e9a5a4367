// The buffer pool the element proposes upstream, kept while the caps stay the same. Some producers
// renegotiate for every frame with unchanged caps (pnmdec behind multifilesrc sends an ALLOCATION
// query per image); each query used to get a new pool, so each frame came from a new pool's new
// buffer. Equal caps now get the same pool back, as xvimagesink and v4l2 sinks do; GStreamer
// accepts a producer setting the same configuration again on the pool it already activated.
#pragma once

#include <gst/gst.h>

namespace nccmatch::plugin {

class ProposedPool {
 public:
  ProposedPool() = default;
  ~ProposedPool() { reset(); }
  ProposedPool(const ProposedPool&) = delete;
  ProposedPool& operator=(const ProposedPool&) = delete;
  ProposedPool(ProposedPool&& other) noexcept;
  ProposedPool& operator=(ProposedPool&& other) noexcept;

  // A new reference to the pool for frames of `caps` (`size` bytes each, from `allocator`, with
  // GstVideoMeta): the kept pool when caps and allocator are those it was made for, else a new
  // configured one that is kept from now on. Null when a new pool refuses its configuration.
  GstBufferPool* forCaps(GstCaps* caps, guint size, GstAllocator* allocator);

  // Pools made so far (each one a new set of buffers upstream).
  int made() const { return made_; }

  // Drops the kept pool (stop, or memory the pool no longer suits).
  void reset();

 private:
  GstBufferPool* pool_ = nullptr;
  GstCaps* caps_ = nullptr;
  GstAllocator* allocator_ = nullptr;
  guint size_ = 0;
  int made_ = 0;
};

}  // namespace nccmatch::plugin
