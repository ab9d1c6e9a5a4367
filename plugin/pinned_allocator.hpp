// A GstAllocator of page-locked host memory (nccmatch::allocatePinnedHost): offered upstream in a
// buffer pool so producers write frames straight into memory the GPU copies from asynchronously.
#pragma once

#include <gst/gst.h>

#include <string>

namespace nccmatch::plugin {

inline constexpr const char* kPinnedMemoryType = "NccMatchPinnedMemory";

// A new reference to the process's pinned allocator, or null (with the reason in *why) when
// pinned memory cannot be had: no CUDA in this build, no driver, or the first allocation failed.
GstAllocator* pinnedAllocator(std::string* why);

// True when `memory` comes from the pinned allocator.
bool isPinnedMemory(GstMemory* memory);

}  // namespace nccmatch::plugin
