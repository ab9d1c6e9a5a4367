// Page-locked (pinned) host memory: frames written here are copied to the GPU asynchronously and
// at full bus speed, without the engine's staging copy. For buffer pools offered to producers.
#pragma once

#include <cstddef>

#include "nccmatch/status.hpp"

namespace nccmatch {

// Allocates `bytes` (> 0) of pinned host memory usable from every CUDA context of the process,
// page aligned. Fails with a message in builds without CUDA or on hosts without a usable driver.
Status allocatePinnedHost(std::size_t bytes, void** memory);
// Frees memory from allocatePinnedHost; null is ignored.
void freePinnedHost(void* memory);

}  // namespace nccmatch
