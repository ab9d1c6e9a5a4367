// Upstream's own system memory page-locked for the CUDA engine (property register-upstream): a
// producer that refuses the element's pinned pool still recycles the memories of its own pool, so
// a memory seen a second time is registered (nccmatch::registerPinnedHost) and frames in it take
// the engine's pinned paths (an asynchronous upload with no staging copy, a tracker's windows
// gathered on the GPU) instead of the CPU's copies. A memory seen once may never come back: it is
// only marked. A registered memory is unregistered when GStreamer frees it (qdata destroy notify,
// which runs before the memory's bytes are released); one that cannot be registered (pages already
// registered through another memory, memory the driver refuses) is marked and never tried again.
// The marks live on the memories, so every element of a process shares them.
#pragma once

#include <gst/gst.h>

#include <string>

#include "nccmatch/status.hpp"

namespace nccmatch::plugin {

// How a memory stands after noteUpstreamMemory.
enum class UpstreamMemory {
  Skipped,     // not GStreamer's mappable system memory (CUDA, dmabuf or pinned memory, not mappable)
  SeenOnce,    // marked: registered when it comes back
  Registered,  // page-locked now (this call or an earlier one)
  Refused,     // registration failed once: left pageable
};

// The calls that page-lock and release host memory: nccmatch::registerPinnedHost and
// unregisterPinnedHost by default; tests put their own in.
struct HostRegistrar {
  nccmatch::Status (*registerRange)(void* memory, std::size_t bytes);
  nccmatch::Status (*unregisterRange)(void* memory);
};
HostRegistrar defaultHostRegistrar();

// Notes one sighting of `memory` (from an input buffer, before the engine reads it) and registers
// it on its second. `registrar` is kept with a registered memory for its unregistration. A
// refusal's message goes to *why when given.
UpstreamMemory noteUpstreamMemory(GstMemory* memory, const HostRegistrar& registrar, std::string* why = nullptr);

// What noteUpstreamMemory left on `memory` (Skipped when nothing).
UpstreamMemory upstreamMemoryState(GstMemory* memory);

}  // namespace nccmatch::plugin
