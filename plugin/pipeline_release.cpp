#include "pipeline_release.hpp"

#include <mutex>
#include <vector>

namespace nccmatch::plugin {

namespace {

// How many times the change to NULL is asked for, and how long each waits for an asynchronous one.
constexpr int kStopAttempts = 5;
constexpr GstClockTime kStopWait = GST_SECOND;

std::mutex parkedMutex;
std::vector<GstElement*>& parkedPipelines() {
  static auto* parked = new std::vector<GstElement*>();  // reachable for the process's lifetime
  return *parked;
}

// True when `element` and, for a bin, every element inside it are in NULL with nothing pending.
bool stoppedThroughout(GstElement* element) {
  GstState current = GST_STATE_VOID_PENDING, pending = GST_STATE_VOID_PENDING;
  gst_element_get_state(element, &current, &pending, 0);
  if (current != GST_STATE_NULL || pending != GST_STATE_VOID_PENDING) return false;
  if (!GST_IS_BIN(element)) return true;
  bool stopped = true;
  GstIterator* children = gst_bin_iterate_elements(GST_BIN(element));
  GValue item = G_VALUE_INIT;
  for (bool more = true; more && stopped;) {
    switch (gst_iterator_next(children, &item)) {
      case GST_ITERATOR_OK:
        stopped = stoppedThroughout(GST_ELEMENT(g_value_get_object(&item)));
        g_value_reset(&item);
        break;
      case GST_ITERATOR_RESYNC:
        gst_iterator_resync(children);
        break;
      default:  // DONE, or ERROR
        more = false;
        break;
    }
  }
  g_value_unset(&item);
  gst_iterator_free(children);
  return stopped;
}

}  // namespace

bool releasePipeline(GstElement* pipeline) {
  for (int attempt = 0; attempt < kStopAttempts; ++attempt) {
    if (gst_element_set_state(pipeline, GST_STATE_NULL) == GST_STATE_CHANGE_ASYNC)
      gst_element_get_state(pipeline, nullptr, nullptr, kStopWait);
    if (stoppedThroughout(pipeline)) {
      gst_object_unref(pipeline);
      return true;
    }
  }
  GST_WARNING_OBJECT(pipeline, "did not reach NULL after %d attempts: kept, not freed", kStopAttempts);
  std::lock_guard<std::mutex> lock(parkedMutex);
  parkedPipelines().push_back(pipeline);
  return false;
}

std::size_t parkedPipelineCount() {
  std::lock_guard<std::mutex> lock(parkedMutex);
  return parkedPipelines().size();
}

}  // namespace nccmatch::plugin
