#include "upstream_registration.hpp"

#include <mutex>

#include "nccmatch/host_memory.hpp"

namespace nccmatch::plugin {
namespace {

// The mark a memory carries: its state and, once registered, what to unregister and how.
struct Mark {
  UpstreamMemory state = UpstreamMemory::SeenOnce;
  void* base = nullptr;
  nccmatch::Status (*unregisterRange)(void*) = nullptr;
};

GQuark markQuark() {
  static const GQuark quark = g_quark_from_static_string("nccmatch-upstream-registration");
  return quark;
}

// The qdata destroy notify: the memory is being freed, its bytes still valid.
void releaseMark(gpointer data) {
  Mark* mark = static_cast<Mark*>(data);
  if (mark->state == UpstreamMemory::Registered) {
    const nccmatch::Status released = mark->unregisterRange(mark->base);
    if (!released.ok()) GST_DEBUG("nccmatch: unregistering upstream memory: %s", released.message().c_str());
  }
  delete mark;
}

// One decision at a time over every element of the process: two elements behind a tee see the
// same memory.
std::mutex& marksMutex() {
  static std::mutex mutex;
  return mutex;
}

// GStreamer's own system memory only: its bytes stay where they are for the memory's life. Other
// allocators' memory (dmabuf or fd memory mapped anew at each map, CUDA memory, the element's own
// pinned memory) is left alone.
bool plainSystemMemory(GstMemory* memory) {
  return memory != nullptr && gst_memory_is_type(memory, GST_ALLOCATOR_SYSMEM) &&
         !GST_MEMORY_FLAG_IS_SET(memory, GST_MEMORY_FLAG_NOT_MAPPABLE);
}

}  // namespace

HostRegistrar defaultHostRegistrar() { return HostRegistrar{nccmatch::registerPinnedHost, nccmatch::unregisterPinnedHost}; }

UpstreamMemory upstreamMemoryState(GstMemory* memory) {
  if (memory == nullptr) return UpstreamMemory::Skipped;
  std::lock_guard<std::mutex> lock(marksMutex());
  const Mark* mark = static_cast<const Mark*>(gst_mini_object_get_qdata(GST_MINI_OBJECT_CAST(memory), markQuark()));
  return mark != nullptr ? mark->state : UpstreamMemory::Skipped;
}

UpstreamMemory noteUpstreamMemory(GstMemory* memory, const HostRegistrar& registrar, std::string* why) {
  if (!plainSystemMemory(memory)) return UpstreamMemory::Skipped;
  std::lock_guard<std::mutex> lock(marksMutex());
  GstMiniObject* object = GST_MINI_OBJECT_CAST(memory);
  Mark* mark = static_cast<Mark*>(gst_mini_object_get_qdata(object, markQuark()));
  if (mark == nullptr) {
    gst_mini_object_set_qdata(object, markQuark(), new Mark(), releaseMark);
    return UpstreamMemory::SeenOnce;
  }
  if (mark->state != UpstreamMemory::SeenOnce) return mark->state;
  // The second sighting: page-lock the bytes the memory maps (system memory keeps them in place).
  GstMapInfo map;
  if (!gst_memory_map(memory, &map, GST_MAP_READ)) {
    mark->state = UpstreamMemory::Refused;
    if (why != nullptr) *why = "the memory could not be mapped";
    return mark->state;
  }
  void* base = map.data;
  const std::size_t bytes = map.size;
  gst_memory_unmap(memory, &map);
  if (bytes == 0) {
    mark->state = UpstreamMemory::Refused;
    if (why != nullptr) *why = "the memory is empty";
    return mark->state;
  }
  const nccmatch::Status registered = registrar.registerRange(base, bytes);
  if (!registered.ok()) {
    mark->state = UpstreamMemory::Refused;
    if (why != nullptr) *why = registered.message();
    return mark->state;
  }
  mark->state = UpstreamMemory::Registered;
  mark->base = base;
  mark->unregisterRange = registrar.unregisterRange;
  return mark->state;
}

}  // namespace nccmatch::plugin
