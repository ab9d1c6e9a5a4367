// The nccmatch element's state and the functions its units share: what the streaming thread keeps
// (engine, bank names, frames in flight), what it publishes (stats), and the instance struct.
// gstnccmatch.cpp is the GObject/GstBaseTransform side; element_engine.cpp keeps the templates and
// the engine; element_frames.cpp submits, holds, finishes and pushes frames.
#pragma once

#include <gst/gst.h>
#include <gst/video/video.h>

#include <deque>
#include <memory>
#include <string>
#include <vector>

#include "cuda_context.hpp"
#include "frame_stats.hpp"
#include "gstnccmatch.hpp"
#include "nccmatch/engine.hpp"
#include "nccmatch/scales.hpp"
#include "nccmatch_settings.hpp"
#include "template_loader.hpp"

GST_DEBUG_CATEGORY_EXTERN(gst_nccmatch_debug);

namespace nccmatch::plugin::element {

// A frame submitted to the engine, held (mapped: the engine may still read it) until its result
// is collected.
struct InFlightFrame {
  GstBuffer* buffer = nullptr;  // owned, writable
  GstVideoFrame frame{};
  bool mapped = false;
  bool cuda = false;       // mapped with GST_MAP_CUDA: the plane is device memory
  bool submitted = false;  // false when there was nothing to match (no templates)
  Settings settings;       // the values the frame is matched and reported with
  SearchRegion area;       // the part of the frame matched (search-region placed in the frame)
  gint64 engineMicros = 0; // wall-clock time spent in the engine's submit and collect
};

// What only the streaming thread (and start/stop, while it is stopped) touches.
struct StreamState {
  std::unique_ptr<nccmatch::Engine> engine;
  uint64_t loadedGeneration = 0;
  std::vector<std::string> names;   // template names of the loaded bank, by index
  std::vector<nccmatch::TemplateImage> originals;  // the loaded bank, before scaling
  // The engine's bank: per entry the loaded template and scale factor it was made from (its
  // images live in the engine); the engine's matches are merged back through it.
  nccmatch::ScaledBank scaled;
  std::vector<double> scales{1.0};  // the factors `scaled` was made with
  std::vector<bool> oversizeWarned; // per engine entry: "larger than the frame" already posted
  int searchedWidth = 0, searchedHeight = 0;  // the area the flags above were posted for
  int frameWidth = 0;
  int frameHeight = 0;
  bool cudaMemoryInput = false;  // the negotiated caps carry memory:CUDAMemory
  // The gstcuda context the CUDA engine runs in (a reference), or null: CPU engine, or a CUDA
  // engine in the device's primary context (no gstcuda in this build or no context to be had).
  GstCudaContext* engineContext = nullptr;
  std::deque<InFlightFrame> inFlight;  // oldest first
  int depth = 0;                       // frames held at most, as last resolved (0: not yet)
  bool upstreamLive = false;           // asked once per caps
  bool upstreamLiveKnown = false;
};

// What the streaming thread publishes for the `stats` property; guarded by the object lock.
struct Published {
  nccmatch::plugin::FrameStats stats;
  std::string backend = "none";
  std::string memory = "system";
  int threads = 0;  // the engine's host threads (0: not started)
  // memory:CUDAMemory caps are offered only when the engine can read CUDA memory in place.
  bool cudaCapsAllowed = true;
};

}  // namespace nccmatch::plugin::element

struct _GstNccMatch {
  GstVideoFilter parent;
  nccmatch::plugin::Settings* settings;    // guarded by the object lock
  nccmatch::plugin::element::Published* published;  // guarded by the object lock
  nccmatch::plugin::element::StreamState* stream;   // streaming thread only
  // Set through GstContext (set_context, from any thread) and start(); guarded by the object lock
  // except in start()/stop(), when no other thread reads it for the engine.
  GstCudaContext* cudaContext;
};


namespace nccmatch::plugin::element {

// ---- element_engine.cpp: settings, templates, the engine's life ----

// The settings, copied under the object lock.
Settings copySettings(GstNccMatch* self);
// GST_ELEMENT_ERROR for a bank that cannot be loaded at start.
void postLoadError(GstNccMatch* self, const TemplateLoadError& error);
// Hands a freshly loaded bank to the engine at each of `scales` (an empty bank stays here:
// nothing to match). A bank that cannot be scaled or prepared posts an error, or with
// `keepOnFailure` (while running) a warning, keeping the previous bank.
bool installBank(GstNccMatch* self, std::vector<nccmatch::TemplateImage> bank, const std::vector<double>& scales,
                 bool keepOnFailure);
// Reloads the bank when `template`/`templates`/`scales`/`grab-template` changed since the last
// load; a failure while running keeps the previous bank and posts a warning. `grabbed`: the patch
// cut for a pending grab-template (null when it could not be cut: the previous bank stays).
bool refreshBank(GstNccMatch* self, const Settings& settings, const nccmatch::TemplateImage* grabbed);
// The engine's result for the loaded bank: each template's scaled copies merged (scales.hpp).
nccmatch::FrameResult mergeScales(GstNccMatch* self, const nccmatch::FrameResult& engineResult,
                                  const Settings& settings);
// One warning per template (and scale) larger than the area searched (the engine skips it): the
// frame, or the search region when `region` is true. Posted again when that size changes.
void warnOversizedTemplates(GstNccMatch* self, int width, int height, bool region);
// The engine for `backend` (Cpu or Cuda), in `context` when one is given.
bool createEngine(GstNccMatch* self, nccmatch::Backend backend, int deviceId, GstCudaContext* context);
// Destroys the engine inside its context.
void destroyEngine(GstNccMatch* self);
#ifdef NCCMATCH_HAVE_GST_CUDA
// The shared gstcuda context (from a neighbour, the application, or made here and announced).
GstCudaContext* ensureCudaContext(GstNccMatch* self, int deviceId);
#endif

// Cuts the patch of a grab-template request from `buffer`'s luma plane (mapped for reading by
// itself, so CUDA memory comes to the host through GStreamer). False, with a warning, when the
// box is not inside the frame or the buffer cannot be read.
bool cutGrabbedTemplate(GstNccMatch* self, GstBuffer* buffer, const GrabRequest& request,
                        nccmatch::TemplateImage* out);

// ---- element_frames.cpp: frames in flight ----

// Maps a writable frame and submits its luma plane; the frame joins the frames in flight. Takes
// the buffer.
GstFlowReturn submitFrame(GstNccMatch* self, GstBuffer* buffer);
// Collects a frame's result, attaches the metas, posts the messages, draws the boxes; the buffer
// to push, or null after posting an error.
GstBuffer* finishFrame(GstNccMatch* self, InFlightFrame& frame);
// Drops every frame in flight unpushed (flush, stop).
void discardFramesInFlight(GstNccMatch* self);
// Finishes and pushes every frame in flight, oldest first; a failed push drops the rest.
GstFlowReturn pushFramesInFlight(GstNccMatch* self);
// Frames to hold for the current settings (upstream liveness asked once per caps); posts a
// latency message when it changes.
int framesInFlightNow(GstNccMatch* self, const Settings& settings);

}  // namespace nccmatch::plugin::element
