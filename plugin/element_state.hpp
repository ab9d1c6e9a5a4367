// The nccmatch element's state: what the streaming thread keeps (engine, bank names, frames in
// flight), what it publishes (stats), and the instance struct. The functions that work on it are
// declared by their own units: element_engine.hpp (templates and the engine's life) and
// element_frames.hpp (frames in flight); gstnccmatch.cpp is the GObject/GstBaseTransform side.
#pragma once

#include <gst/gst.h>
#include <gst/video/video.h>

#include <deque>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "allocation_answer.hpp"
#include "cuda_context.hpp"
#include "frame_stats.hpp"
#include "frame_worker.hpp"
#include "gstnccmatch.hpp"
#include "nccmatch/coarse_to_fine.hpp"
#include "nccmatch/engine.hpp"
#include "nccmatch/scales.hpp"
#include "nccmatch/tracker.hpp"
#include "nccmatch_settings.hpp"
#include "proposed_pool.hpp"
#include "thread_annotations.hpp"  // NCCMATCH_OBJECT_LOCK, StreamingSection: the ordering TSan must see

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
  // The engine the frame was submitted to (StreamState::engineEpoch then): when that engine has
  // been replaced since (device=auto handed over to the CPU), the frame is matched again.
  uint64_t engineEpoch = 0;
  // A frame in CUDA memory mapped on the host (GStreamer's CUDA memory downloads it): the CUDA
  // engine failed and the CPU engine matches it.
  bool cudaReadBack = false;
  Settings settings;       // the values the frame is matched and reported with
  SearchRegion area;       // the part of the frame matched (search-region placed in the frame)
  gint64 engineMicros = 0; // wall-clock time spent in the engine's submit and collect
  // mode=track: the frame's tracks, found when it was submitted (track mode holds no frames in
  // flight: each frame's windows come from the frame before). Area coordinates.
  std::optional<nccmatch::TrackerFrame> tracked;
  // pyramid-levels > 0: the coarse-to-fine search's result, found when the frame was submitted
  // (the search calls the engine synchronously). Area coordinates.
  std::optional<nccmatch::FrameResult> searched;
};

// What only the streaming thread (and start/stop, while it is stopped) touches.
struct StreamState {
  std::unique_ptr<nccmatch::Engine> engine;
  uint64_t engineEpoch = 0;  // bumped each time the engine is destroyed (replaced, or stopped)
  uint64_t loadedGeneration = 0;
  std::vector<std::string> names;   // template names of the loaded bank, by index
  std::vector<nccmatch::TemplateImage> originals;  // the loaded bank, before scaling
  // The engine's bank: per entry the loaded template and scale factor it was made from (its
  // images live in the engine); the engine's matches are merged back through it.
  nccmatch::ScaledBank scaled;
  std::vector<double> scales{1.0};  // the factors `scaled` was made with
  std::vector<double> angles{0.0};  // the angles `scaled` was made with
  nccmatch::RotationSupport rotationSupport = nccmatch::RotationSupport::Rectangle;  // and their support
  // pyramid-levels: the levels the bank was last made for (the engine then holds the search's
  // coarse bank) and the search; 0: the engine holds every variant and matches exhaustively.
  int pyramidLevels = 0;
  int requestedPyramidLevels = 0;  // the levels last asked for (a refused request is not retried)
  nccmatch::CoarseToFineSearch search;
  std::vector<bool> oversizeWarned; // per engine entry: "larger than the frame" already posted
  int searchedWidth = 0, searchedHeight = 0;  // the area the flags above were posted for
  int frameWidth = 0;
  int frameHeight = 0;
  bool cudaMemoryInput = false;  // the negotiated caps carry memory:CUDAMemory
  // device=auto handed over from the CUDA backend to the CPU (at start or while running): CUDA
  // memory is still taken, each frame read back to the host (GStreamer's CUDA memory downloads
  // it), so that an upstream that gives only CUDA memory goes on. Only in builds with gstcuda.
  bool cudaFellBack = false;
  // The gstcuda context the CUDA engine runs in (a reference), or null: CPU engine, or a CUDA
  // engine in the device's primary context (no gstcuda in this build or no context to be had).
  GstCudaContext* engineContext = nullptr;
  std::deque<InFlightFrame> inFlight;  // oldest first
  int depth = 0;                       // frames held at most, as last resolved (0: not yet)
  bool upstreamLive = false;           // asked once per caps
  bool upstreamLiveKnown = false;
  // mode=track: the tracks, whether the last frame was tracked, and the area (placed search
  // region) they live in; a flush, a seek, new caps, a new bank, a moved area or a change of mode
  // end them (ids go on counting until stop).
  nccmatch::Tracker tracker;
  bool tracking = false;
  SearchRegion trackArea;
  nccmatch::plugin::ProposedPool proposedPool;  // the pinned pool offered upstream, kept per caps
  nccmatch::plugin::AllocationAnswer allocationAnswer;  // downstream's answer passed upstream, per caps
};

// What the streaming thread publishes for the `stats` property; guarded by the object lock.
struct Published {
  nccmatch::plugin::FrameStats stats;
  std::string backend = "none";
  std::string memory = "system";
  int threads = 0;  // the engine's host threads (0: not started)
  // The negotiated framerate, for the latency query: that query is answered on whichever thread
  // asks (the application's, a sink's) while GstVideoFilter's in_info is written by the streaming
  // thread with no lock, so the query reads this copy instead.
  int fpsN = 0, fpsD = 1;
  // memory:CUDAMemory caps are offered only when the engine can read CUDA memory in place, or
  // after device=auto fell back to the CPU (frames read back: StreamState::cudaFellBack).
  bool cudaCapsAllowed = true;
};

// String property values that set_property refused (they do not parse). While the element runs a
// refused value is posted at once as a warning and the previous value stays; before start (a
// gst-launch line sets properties before the element has a bus) it is kept here and start() fails
// with an error naming it, as gst-launch refuses a typed property value that does not parse.
struct RefusedValues {
  bool running = false;  // between a successful start() and stop()
  std::map<std::string, std::string> beforeStart;  // property name -> why its last value was refused
};

}  // namespace nccmatch::plugin::element

struct _GstNccMatch {
  GstVideoFilter parent;
  nccmatch::plugin::Settings* settings;    // guarded by the object lock
  nccmatch::plugin::element::Published* published;  // guarded by the object lock
  nccmatch::plugin::element::RefusedValues* refused;  // guarded by the object lock
  nccmatch::plugin::element::StreamState* stream;   // streaming thread only (or the worker's, see below)
  // worker-thread=true: the thread that matches and pushes the frames (started by start()). Its
  // frames touch StreamState on that thread; every other streaming call (serialized events and
  // queries, a renegotiation, stop) waits until it is idle first (FrameWorker::waitIdle).
  nccmatch::plugin::FrameWorker* worker;
  // Set through GstContext (set_context, from any thread) and start(); guarded by the object lock
  // except in start()/stop(), when no other thread reads it for the engine.
  GstCudaContext* cudaContext;
};

