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

// Page-locks `bytes` (> 0) of host memory the caller already holds (a camera SDK's buffers, a
// frame buffer reused from frame to frame) for every CUDA context, mapped into the devices'
// address space: frames held there take the pinned path (the CUDA engine's matchRegions gathers
// their windows on the GPU instead of packing and uploading them on the CPU). Locking pages is
// slow: register a buffer once, not every frame. The memory must stay allocated until
// unregisterPinnedHost. Fails with a message for null or zero bytes, a range already registered
// or pinned, in builds without CUDA and on hosts without a usable driver.
Status registerPinnedHost(void* memory, std::size_t bytes);
// Ends the registration registerPinnedHost made for `memory` (the same pointer). Fails with a
// message for memory it did not register.
Status unregisterPinnedHost(void* memory);

// Whether every byte of [memory, memory + bytes) is page-locked for CUDA (allocatePinnedHost,
// registerPinnedHost, cudaHostAlloc or cudaHostRegister): what the CUDA engine asks of a host frame
// before it copies it without staging. Asks the runtime about the range's first and last byte;
// pageable memory is no error and leaves none behind (unlike registering it a second time to find
// out). False for null, zero bytes, builds without CUDA and hosts without a usable driver.
bool hostMemoryPinned(const void* memory, std::size_t bytes);

}  // namespace nccmatch
