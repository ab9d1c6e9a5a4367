// Downstream's answer to an ALLOCATION query, kept while the caps stay the same. The element is in
// place, so a query it does not answer itself goes on downstream; producers that renegotiate for
// every frame (pnmdec behind multifilesrc) then send one per frame, and each one reaches the
// elements after nccmatch: a queue waits until it is empty, a GstBaseSink deep-copies the last
// buffer it holds (a frame-size memcpy into new memory, every frame). Equal caps get the kept
// answer instead; a RECONFIGURE from downstream (new allocation wanted) or other caps ask again.
#pragma once

#include <gst/gst.h>

#include <vector>

namespace nccmatch::plugin {

class AllocationAnswer {
 public:
  AllocationAnswer() = default;
  ~AllocationAnswer() { reset(); }
  AllocationAnswer(const AllocationAnswer&) = delete;
  AllocationAnswer& operator=(const AllocationAnswer&) = delete;
  AllocationAnswer(AllocationAnswer&& other) noexcept;
  AllocationAnswer& operator=(AllocationAnswer&& other) noexcept;

  // Adds the kept answer's pools, allocators and metas to `query` and sets *result to what the
  // downstream query returned; false (query untouched) when no answer is kept for its caps and
  // need-pool.
  bool replay(GstQuery* query, bool* result) const;

  // Keeps what downstream added to `answered` (a query just sent downstream) and its result.
  void keep(GstQuery* answered, bool result);

  // Answers kept so far (each one a query that went downstream).
  int kept() const { return kept_; }

  void reset();

 private:
  struct Pool {
    GstBufferPool* pool;  // may be null (sizes only)
    guint size, minBuffers, maxBuffers;
  };
  struct Param {
    GstAllocator* allocator;  // may be null (the default allocator)
    GstAllocationParams params;
  };
  struct Meta {
    GType api;
    GstStructure* params;  // may be null
  };
  GstCaps* caps_ = nullptr;  // null: nothing kept
  bool needPool_ = false;
  bool result_ = false;
  std::vector<Pool> pools_;
  std::vector<Param> params_;
  std::vector<Meta> metas_;
  int kept_ = 0;
};

}  // namespace nccmatch::plugin
