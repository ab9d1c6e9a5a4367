// The device's primary CUDA context: the one the CUDA runtime and every engine without
// EngineOptions::useCurrentCudaContext work in. Kernels of one context run side by side on the
// GPU, while separate contexts take turns on it (time slices); an application or a framework
// that makes contexts of its own (GStreamer's gstcuda does, one per pipeline) can wrap this one
// instead, so that all its engines share the GPU at the granularity of blocks, not of slices.
#pragma once

#include "nccmatch/status.hpp"

namespace nccmatch {

// Makes `device`'s primary context (created if needed) current on the calling thread, replacing
// the thread's current context; device < 0 is device 0. Fails with a message in builds without
// CUDA, on hosts without a usable driver, or for a device that does not exist.
Status makePrimaryCudaContextCurrent(int device);

}  // namespace nccmatch
