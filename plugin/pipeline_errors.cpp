#include "pipeline_errors.hpp"

#include <algorithm>
#include <cstdio>
#include <mutex>
#include <vector>

namespace nccmatch::plugin {

namespace {

// The pipelines registered now. The lock is held while a copy is posted, so a pipeline whose
// registration has ended is never touched by the hook again.
std::mutex registeredLock;
std::vector<GstElement*> registered;

// The element's top-level ancestor (a new reference), or null when it has no parent.
GstObject* topLevelOf(GstElement* element) {
  GstObject* top = gst_object_get_parent(GST_OBJECT(element));
  if (top == nullptr) return nullptr;
  while (GstObject* parent = gst_object_get_parent(top)) {
    gst_object_unref(top);
    top = parent;
  }
  return top;
}

// GstTracer hook "element-post-message-pre": an element is about to post `message`.
void beforePost(GstTracer*, guint64, GstElement* element, GstMessage* message) {
  if (GST_MESSAGE_TYPE(message) != GST_MESSAGE_ERROR) return;
  GstObject* top = topLevelOf(element);  // null for a pipeline's own errors: they reach its bus
  if (top == nullptr) return;
  {
    std::lock_guard<std::mutex> lock(registeredLock);
    if (std::find(registered.begin(), registered.end(), GST_ELEMENT(top)) != registered.end()) {
      GstBus* bus = gst_element_get_bus(GST_ELEMENT(top));
      if (bus != nullptr) {
        gst_bus_post(bus, gst_message_copy(message));
        gst_object_unref(bus);
      }
    }
  }
  gst_object_unref(top);
}

struct ErrorTracer {
  GstTracer parent;
};
struct ErrorTracerClass {
  GstTracerClass parent_class;
};

void errorTracerInit(GTypeInstance* instance, gpointer) {
  gst_tracing_register_hook(GST_TRACER(instance), "element-post-message-pre", G_CALLBACK(beforePost));
}

// The hook's tracer, made once a process. Its type name carries this copy's address: a test
// program may hold two copies of this code (its own and the plugin module's), each with its own
// registry and type.
void installTracer() {
  static std::once_flag once;
  std::call_once(once, [] {
    static char marker;
    char name[64];
    std::snprintf(name, sizeof name, "NccMatchErrorTracer%p", static_cast<void*>(&marker));
    const GType type = g_type_register_static_simple(GST_TYPE_TRACER, g_intern_string(name), sizeof(ErrorTracerClass),
                                                     nullptr, sizeof(ErrorTracer), errorTracerInit, GTypeFlags(0));
    // Kept for the life of the process: hooks cannot be removed.
    if (type != 0) g_object_new(type, nullptr);
  });
}

}  // namespace

ForwardedPipelineErrors::ForwardedPipelineErrors(GstElement* pipeline) : pipeline_(pipeline) {
  installTracer();
  std::lock_guard<std::mutex> lock(registeredLock);
  registered.push_back(pipeline_);
}

ForwardedPipelineErrors::~ForwardedPipelineErrors() {
  std::lock_guard<std::mutex> lock(registeredLock);
  registered.erase(std::find(registered.begin(), registered.end(), pipeline_));
}

}  // namespace nccmatch::plugin
