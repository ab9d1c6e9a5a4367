// How the element's threads are ordered, told to ThreadSanitizer. GLib's GMutex and GRecMutex are
// futexes inside uninstrumented libglib, and GStreamer hands work to its streaming threads through
// GThreadPool queues: TSan sees none of it, so every access ordered only by them looks like a race.
// The two orderings the element relies on are announced to TSan here (__tsan_acquire/__tsan_release
// on one address each), so that TSan checks every access against them instead of being told to
// ignore those accesses. Outside TSan builds these cost nothing: plain GStreamer macros, an empty
// object.
#pragma once

#include <gst/gst.h>

#if defined(__SANITIZE_THREAD__)
#include <sanitizer/tsan_interface.h>
#endif

// The object lock (GST_OBJECT_LOCK): it guards the settings, the published stats and the refused
// values, written by property setters on any thread and copied by the streaming thread.
#if defined(__SANITIZE_THREAD__)
#define NCCMATCH_OBJECT_LOCK(obj)             \
  do {                                        \
    GST_OBJECT_LOCK(obj);                     \
    __tsan_acquire(GST_OBJECT_GET_LOCK(obj)); \
  } while (0)
#define NCCMATCH_OBJECT_UNLOCK(obj)           \
  do {                                        \
    __tsan_release(GST_OBJECT_GET_LOCK(obj)); \
    GST_OBJECT_UNLOCK(obj);                   \
  } while (0)
#else
#define NCCMATCH_OBJECT_LOCK(obj) GST_OBJECT_LOCK(obj)
#define NCCMATCH_OBJECT_UNLOCK(obj) GST_OBJECT_UNLOCK(obj)
#endif

namespace nccmatch::plugin {

// A call that GStreamer orders with the element's other streaming calls and with start()/stop():
// buffers, serialized events and serialized queries arrive with the sink pad's stream lock held;
// GstBaseTransform calls stop() with that lock held after the streaming thread let go, and start()
// before any data flows; init and finalize run while no other thread holds the element. What only
// these calls touch (StreamState) needs no lock of ours. Construct one at the top of each such call,
// with the element: TSan then sees the order GStreamer gives, and still reports any access to that
// state from elsewhere (a property setter, a non-serialized query).
class StreamingSection {
 public:
  explicit StreamingSection(const void* element) : state_(element) {
#if defined(__SANITIZE_THREAD__)
    __tsan_acquire(const_cast<void*>(state_));
#endif
  }
  ~StreamingSection() {
#if defined(__SANITIZE_THREAD__)
    __tsan_release(const_cast<void*>(state_));
#endif
  }
  StreamingSection(const StreamingSection&) = delete;
  StreamingSection& operator=(const StreamingSection&) = delete;

 private:
  [[maybe_unused]] const void* state_;
};

// A buffer the element's worker thread (worker-thread=true) pushes is read by whichever thread
// downstream hands it to, through GLib queues TSan cannot see (a queue, appsink, GstHarness): the
// push announces what the worker wrote into it (pixels, metas) as released on the buffer, and a
// reader that acquires on it (the tests' pulls: tests/plugin/plugin_test_support.hpp) is ordered
// after it. Nothing outside TSan builds.
inline void announceHandOver([[maybe_unused]] const void* buffer) {
#if defined(__SANITIZE_THREAD__)
  __tsan_release(const_cast<void*>(buffer));
#endif
}

}  // namespace nccmatch::plugin
