// gstcuda glue (GStreamer >= 1.22, gstreamer-cuda-1.0): the CUDA context the element shares with
// nvcodec's elements through GstContext, kept current while the engine works on its memory.
// Everything here is gstcuda's own API and the library's (nccmatch/cuda_context.hpp): the
// element never calls CUDA itself.
#pragma once

#include <gst/gst.h>

#include <functional>

#ifdef NCCMATCH_HAVE_GST_CUDA
#include <gst/cuda/gstcudacontext.h>
#include <gst/cuda/gstcudaloader.h>
#include <gst/cuda/gstcudamemory.h>
#include <gst/cuda/gstcudautils.h>
#else
typedef struct _GstCudaContext GstCudaContext;
#endif

namespace nccmatch::plugin {

// True when this build of the element takes memory:CUDAMemory input.
constexpr bool kHaveGstCuda =
#ifdef NCCMATCH_HAVE_GST_CUDA
    true;
#else
    false;
#endif

// The first caps structure carries the memory:CUDAMemory feature.
bool capsHaveCudaMemory(const GstCaps* caps);

// Makes `context` current on this thread for the scope's lifetime (nothing when null).
class CudaContextScope {
 public:
  explicit CudaContextScope(GstCudaContext* context);
  ~CudaContextScope();
  CudaContextScope(const CudaContextScope&) = delete;
  CudaContextScope& operator=(const CudaContextScope&) = delete;
  // False when a context was given but could not be made current.
  bool ok() const { return ok_; }

 private:
  bool pushed_ = false;
  bool ok_ = true;
};

#ifdef NCCMATCH_HAVE_GST_CUDA
// The context of a buffer's first memory when it is GstCudaMemory, else null (no reference).
GstCudaContext* bufferCudaContext(GstBuffer* buffer);

// Asks the neighbours (a context query downstream, then upstream) and then the bins and the
// application (a need-context message) for a CUDA context; an answer arrives through the
// element's set_context, as gstcuda's own elements do it. `answered`: whether the element has
// taken one (asked after each step; the need-context message is posted only when still false).
void askForCudaContext(GstElement* element, const std::function<bool()>& answered);

// The device's primary CUDA context (device < 0: device 0) wrapped for gstcuda, one per device
// and process (transfer full; null when CUDA cannot be used). gstcuda would make a context of
// its own for every pipeline, and separate contexts take turns on the GPU: two pipelines would
// wait for each other's kernels. In the primary context, every nccmatch of the process, and
// every library engine, share the GPU block by block.
GstCudaContext* processCudaContext(int deviceId);
#endif

}  // namespace nccmatch::plugin
