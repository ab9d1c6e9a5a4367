#include "cuda_context.hpp"

#include <cstring>

namespace nccmatch::plugin {

bool capsHaveCudaMemory(const GstCaps* caps) {
  if (caps == nullptr || gst_caps_is_empty(caps) || gst_caps_is_any(caps)) return false;
  GstCapsFeatures* features = gst_caps_get_features(caps, 0);
  return features != nullptr && gst_caps_features_contains(features, "memory:CUDAMemory");
}

CudaContextScope::CudaContextScope(GstCudaContext* context) {
#ifdef NCCMATCH_HAVE_GST_CUDA
  if (context != nullptr) {
    pushed_ = gst_cuda_context_push(context);
    ok_ = pushed_;
  }
#else
  (void)context;
#endif
}

CudaContextScope::~CudaContextScope() {
#ifdef NCCMATCH_HAVE_GST_CUDA
  if (pushed_) gst_cuda_context_pop(nullptr);
#endif
}

#ifdef NCCMATCH_HAVE_GST_CUDA
GstCudaContext* bufferCudaContext(GstBuffer* buffer) {
  if (buffer == nullptr || gst_buffer_n_memory(buffer) == 0) return nullptr;
  GstMemory* memory = gst_buffer_peek_memory(buffer, 0);
  if (!gst_is_cuda_memory(memory)) return nullptr;
  return GST_CUDA_MEMORY_CAST(memory)->context;
}
#endif

}  // namespace nccmatch::plugin
