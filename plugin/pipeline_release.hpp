// Stopping and freeing a private pipeline (the template loader's) safely. GStreamer frees an
// element only in NULL; one disposed in another state takes its children down with it while they
// may still hold streaming state: decodebin2's dispose then aborted the process ("Attempt to unlock
// mutex that was not locked", found by tests/fuzz/fuzz_template_loader after the pipeline had
// stayed in READY with its filesrc in PAUSED). There the first change to NULL is refused (about
// once in 4000 fuzzed files, decodebin2 on a malformed BMP) and the second one succeeds.
#pragma once

#include <gst/gst.h>

#include <cstddef>

namespace nccmatch::plugin {

// Sets `pipeline` to NULL, retrying a refused or unfinished state change a few times, and drops
// the reference the caller owns once the pipeline and every element in it are in NULL. A pipeline
// that never gets there is kept (parked: never disposed, a warning logged) instead of freed.
// Returns true when the pipeline was released, false when it was parked.
bool releasePipeline(GstElement* pipeline);

// How many pipelines this process has parked so far.
std::size_t parkedPipelineCount();

}  // namespace nccmatch::plugin
