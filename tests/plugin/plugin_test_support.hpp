// Shared helpers for the plugin tests: GStreamer set-up, temporary folders, template files written
// by the tests themselves (PGM bytes or GStreamer's pngenc), and video frames with known layouts.
#pragma once

#include <gst/gst.h>
#include <gst/check/gstharness.h>
#include <gst/video/video.h>

#if defined(__SANITIZE_THREAD__)
#include <sanitizer/tsan_interface.h>
#endif

#include <string>
#include <vector>

#include "nccmatch/types.hpp"
#include "test_support.hpp"  // tests/kernels: rng(), Image, makeTemplate(), paste()

namespace nccmatch::test {

// gst_init once, and makes the built plugin findable (its build folder is scanned when the
// element is not yet registered, so the binary also runs outside `meson test`).
void initGstreamer();

// A fresh folder under the system temp dir, removed with its files on destruction.
class TempDir {
 public:
  TempDir();
  ~TempDir();
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  std::string path(const std::string& fileName) const;

 private:
  std::string dir_;
};

void writePgm(const std::string& path, const TemplateImage& image);
// Encodes through appsrc ! pngenc ! filesink.
void writePng(const std::string& path, const TemplateImage& image);
// An RGBA PNG whose colour is the template's gray level and whose alpha is `alpha` (one byte a
// pixel, the template's size).
void writePngWithAlpha(const std::string& path, const TemplateImage& image, const std::vector<uint8_t>& alpha);
void writeBytes(const std::string& path, const std::vector<uint8_t>& bytes);

// Where the planes of a frame buffer lie.
struct FrameLayout {
  GstVideoFormat format = GST_VIDEO_FORMAT_GRAY8;
  int width = 0;
  int height = 0;
  gsize offset[GST_VIDEO_MAX_PLANES] = {};
  gint stride[GST_VIDEO_MAX_PLANES] = {};
  gsize size = 0;
  bool videoMeta = false;  // the layout travels as GstVideoMeta (custom strides)
};

// GStreamer's default layout for the caps (no video meta), or, when lumaPadding > 0, every plane's
// stride widened by lumaPadding bytes and described by a GstVideoMeta.
FrameLayout makeLayout(GstVideoFormat format, int width, int height, int lumaPadding);
GstCaps* capsFor(const FrameLayout& layout);

inline constexpr uint8_t kPoison = 0xA5;  // padding bytes; the element must never change them

// A buffer whose luma plane holds `luma` (width x height of the layout), chroma 128 and poison in
// all padding bytes.
GstBuffer* makeFrame(const FrameLayout& layout, const Image& luma);
// The luma plane of `buffer`, padding included (stride = the layout's luma stride).
Image readLuma(GstBuffer* buffer, const FrameLayout& layout);

// Messages of one type (e.g. GST_MESSAGE_ELEMENT) waiting on `bus`, popped in order; messages of
// other types are discarded (gst_bus_pop_filtered), so pop GST_MESSAGE_ANY to look at several types.
std::vector<GstMessage*> popMessages(GstBus* bus, GstMessageType type);
void unrefMessages(std::vector<GstMessage*>* messages);
// Element messages whose structure has this name.
std::vector<const GstStructure*> structuresNamed(const std::vector<GstMessage*>& messages, const char* name);
// The text of an error or warning message.
std::string messageText(GstMessage* message);

// A DRAIN query from upstream (serialized): whatever the element holds (frames in flight, buffers
// waiting for its worker thread) is matched and pushed before it returns. True when answered.
bool drainElement(GstHarness* harness);
// The flow upstream gets for `buffer` (taken) whichever thread matches it: with worker-thread a
// failure reaches upstream with the next buffer, so when the push returned OK the element is
// drained and a copy pushed, whose flow is returned (a failed stream drops it).
GstFlowReturn pushForFlow(GstHarness* harness, GstBuffer* buffer);

// Under ThreadSanitizer a buffer pulled from a harness acquires what the element's worker thread
// released on it before pushing it (plugin/thread_annotations.hpp: announceHandOver), so that the
// hand-over through GstHarness's GLib queue, which TSan cannot see, orders the test's reads after
// the worker's writes. Every pull of the element tests goes through these (the macros below).
#if defined(__SANITIZE_THREAD__)
inline GstBuffer* acquiredFromWorker(GstBuffer* buffer) {
  if (buffer != nullptr) __tsan_acquire(buffer);
  return buffer;
}
#define gst_harness_pull(h) ::nccmatch::test::acquiredFromWorker(gst_harness_pull(h))
#define gst_harness_try_pull(h) ::nccmatch::test::acquiredFromWorker(gst_harness_try_pull(h))
#define gst_harness_push_and_pull(h, b) ::nccmatch::test::acquiredFromWorker(gst_harness_push_and_pull(h, b))
#endif

}  // namespace nccmatch::test
