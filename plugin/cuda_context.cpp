#include "cuda_context.hpp"

#include <cstring>
#include <functional>
#include <map>
#include <mutex>

#include "nccmatch/cuda_context.hpp"

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

namespace {

// The context query on the peers of an element's pads of one direction; true when one answered.
bool queryPeers(GstElement* element, GstQuery* query, GstPadDirection direction) {
  GstIterator* pads = direction == GST_PAD_SRC ? gst_element_iterate_src_pads(element)
                                               : gst_element_iterate_sink_pads(element);
  bool answered = false;
  GValue item = G_VALUE_INIT;
  for (bool done = false; !done && !answered;) {
    switch (gst_iterator_next(pads, &item)) {
      case GST_ITERATOR_OK:
        answered = gst_pad_peer_query(GST_PAD(g_value_get_object(&item)), query);
        g_value_reset(&item);
        break;
      case GST_ITERATOR_RESYNC:
        gst_iterator_resync(pads);
        break;
      default:
        done = true;
        break;
    }
  }
  g_value_unset(&item);
  gst_iterator_free(pads);
  return answered;
}

// Sets the context a query came back with on the element (its set_context takes it or not).
void takeAnswer(GstElement* element, GstQuery* query) {
  GstContext* context = nullptr;
  gst_query_parse_context(query, &context);
  if (context != nullptr) gst_element_set_context(element, context);
}

}  // namespace

void askForCudaContext(GstElement* element, const std::function<bool()>& answered) {
  GstQuery* query = gst_query_new_context(GST_CUDA_CONTEXT_TYPE);
  if (queryPeers(element, query, GST_PAD_SRC)) takeAnswer(element, query);
  if (!answered() && queryPeers(element, query, GST_PAD_SINK)) takeAnswer(element, query);
  if (!answered())
    gst_element_post_message(element, gst_message_new_need_context(GST_OBJECT(element), GST_CUDA_CONTEXT_TYPE));
  gst_query_unref(query);
}

GstCudaContext* processCudaContext(int deviceId) {
  const int device = deviceId < 0 ? 0 : deviceId;
  static std::mutex lock;
  // Weak references: the context lives while elements hold it (g_weak_ref_get is safe against
  // a context being finalised on another thread); never freed, like any process-wide state.
  static auto* made = new std::map<int, GWeakRef>();
  std::lock_guard<std::mutex> guard(lock);
  auto found = made->find(device);
  if (found == made->end()) {
    found = made->emplace(device, GWeakRef()).first;
    g_weak_ref_init(&found->second, nullptr);
  }
  if (gpointer kept = g_weak_ref_get(&found->second)) return static_cast<GstCudaContext*>(kept);
  const nccmatch::Status current = nccmatch::makePrimaryCudaContextCurrent(device);
  if (!current.ok()) {
    GST_WARNING("the primary CUDA context of device %d: %s", device, current.message().c_str());
    return nullptr;
  }
  // The runtime made the primary context current on this thread: popped, it is its handle.
  CUcontext primary = nullptr;
  CUdevice handle = 0;
  if (CuCtxPopCurrent(&primary) != CUDA_SUCCESS || primary == nullptr ||
      CuDeviceGet(&handle, device) != CUDA_SUCCESS) {
    GST_WARNING("could not take the primary CUDA context of device %d", device);
    return nullptr;
  }
  // Not owned: the primary context lives as long as the process (the runtime keeps it).
  GstCudaContext* context = gst_cuda_context_new_wrapped(primary, handle);
  if (context != nullptr) g_weak_ref_set(&found->second, context);
  return context;
}
#endif

}  // namespace nccmatch::plugin
