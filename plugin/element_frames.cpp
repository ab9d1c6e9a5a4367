// The element's frames in flight: each frame is mapped and handed to the engine as it arrives,
// held until its result is collected, then finished (ROI meta, messages, boxes) and pushed.
#include "element_frames.hpp"

#include <optional>
#include <string>
#include <utility>

#include "box_drawing.hpp"
#include "element_engine.hpp"
#include "match_reporting.hpp"
#include "nccmatch/draw.hpp"
#include "upstream_registration.hpp"

#define GST_CAT_DEFAULT gst_nccmatch_debug

namespace nccmatch::plugin::element {

namespace {

nccmatch::plugin::FrameTiming frameTiming(GstNccMatch* self, GstBuffer* buffer) {
  GstBaseTransform* trans = GST_BASE_TRANSFORM(self);
  nccmatch::plugin::FrameTiming timing;
  timing.timestamp = GST_BUFFER_PTS(buffer);
  timing.duration = GST_BUFFER_DURATION(buffer);
  if (trans->segment.format == GST_FORMAT_TIME && GST_CLOCK_TIME_IS_VALID(timing.timestamp)) {
    timing.streamTime = gst_segment_to_stream_time(&trans->segment, GST_FORMAT_TIME, timing.timestamp);
    timing.runningTime = gst_segment_to_running_time(&trans->segment, GST_FORMAT_TIME, timing.timestamp);
  }
  return timing;
}

void postMessages(GstNccMatch* self, const Settings& settings, const nccmatch::FrameResult& result,
                  GstBuffer* buffer, const nccmatch::plugin::TrackReport* tracks) {
  if (!result.best.empty() && result.best[0].has_value()) {
    GstStructure* s = nccmatch::plugin::makeTemplateMatchStructure(*result.best[0], settings.method);
    gst_element_post_message(GST_ELEMENT(self), gst_message_new_element(GST_OBJECT(self), s));
  }
  GstStructure* s =
      nccmatch::plugin::makeNccMatchStructure(result.matches, self->stream->names, frameTiming(self, buffer),
                                              settings.generation, tracks);
  gst_element_post_message(GST_ELEMENT(self), gst_message_new_element(GST_OBJECT(self), s));
}

// Each frame is submitted to the engine as it arrives and held, mapped, until its result is
// collected; with frames-in-flight n, frame k is finished (metas, messages, boxes) and pushed
// when frame k+n-1 has been submitted, so the GPU matches one frame while the next uploads and
// upstream produces the one after. Order and content of the output do not depend on n.

// The part `area` of the frame's luma plane as the engine sees it (host or device memory alike:
// the view starts at the area's first pixel and keeps the plane's stride).
nccmatch::FrameView lumaView(GstVideoFrame* frame, bool cuda, const SearchRegion& area) {
  nccmatch::FrameView view;
  view.stride = std::size_t(GST_VIDEO_FRAME_PLANE_STRIDE(frame, 0));
  view.data = static_cast<const uint8_t*>(GST_VIDEO_FRAME_PLANE_DATA(frame, 0)) + std::size_t(area.y) * view.stride +
              std::size_t(area.x);
  view.width = area.width;
  view.height = area.height;
  view.memory = cuda ? nccmatch::MemoryKind::Device : nccmatch::MemoryKind::Host;
  return view;
}

// Matches found in the search region, in frame coordinates.
void toFrameCoordinates(const SearchRegion& area, nccmatch::FrameResult* result) {
  if (area.x == 0 && area.y == 0) return;
  auto shift = [&](nccmatch::Match& m) {
    m.x += area.x;
    m.y += area.y;
    m.subX += area.x;
    m.subY += area.y;
  };
  for (nccmatch::Match& m : result->matches) shift(m);
  for (std::optional<nccmatch::Match>& b : result->best)
    if (b) shift(*b);
}

// A tracked frame as the element reports it: the matches (their best of template 0 as
// template_match's best, which the tracker does not otherwise keep) and their tracks.
nccmatch::FrameResult trackedResult(const nccmatch::TrackerFrame& tracked, std::size_t templates,
                                    nccmatch::plugin::TrackReport* report) {
  nccmatch::FrameResult result;
  result.best.assign(templates, std::nullopt);
  for (const nccmatch::TrackedMatch& m : tracked.matches) {
    result.matches.push_back(m.match);
    report->tags.push_back({m.trackId, nccmatch::trackStateName(m.state)});
    const uint32_t t = m.match.templateIndex;
    if (t < templates && !result.best[t]) result.best[t] = m.match;  // matches come best first
  }
  report->lost = tracked.lostTracks;
  report->ended = tracked.endedTracks;
  return result;
}

void releaseFrame(InFlightFrame& f) {
  if (f.mapped) gst_video_frame_unmap(&f.frame);
  f.mapped = false;
  gst_clear_buffer(&f.buffer);
}

// How a frame is mapped: NO_REF, since a reference held by the mapping would make the buffer
// unwritable for the metas; for writing only when boxes are drawn (a read-only map of memory
// that upstream still references costs no copy); as CUDA memory when the CUDA engine reads it in
// place.
GstMapFlags mapFlags(const InFlightFrame& f) {
  return GstMapFlags(GST_MAP_READ | GST_VIDEO_FRAME_MAP_FLAG_NO_REF | (f.settings.display ? GST_MAP_WRITE : 0)
#ifdef NCCMATCH_HAVE_GST_CUDA
                     | (f.cuda ? GST_MAP_CUDA : 0)
#endif
  );
}

// Whether a failure of the engine on frame f hands over to the CPU: device=auto and a CUDA engine.
bool mayHandOverToCpu(GstNccMatch* self, const InFlightFrame& f) {
  return f.settings.device == nccmatch::Backend::Auto && self->stream->engine->backend() == nccmatch::Backend::Cuda;
}

// The CUDA engine failed (`failure`: out of device memory, a lost context, ...) and device=auto:
// one warning, then a CPU engine holding the bank takes over. Frames in flight were submitted to
// the CUDA engine: each is matched again on the CPU when it is finished. False after posting an
// error (the CPU engine could not start).
bool handOverToCpu(GstNccMatch* self, const nccmatch::Status& failure) {
  return fallBackToCpu(self, "the CUDA backend failed (" + failure.message() + ")");
}

// A frame mapped as CUDA memory, mapped again on the host for the CPU engine: GStreamer's CUDA
// memory downloads it (and uploads it again when the boxes drawn on the host are next read as
// CUDA memory). Fails, saying so, when the memory cannot be read back (the context is gone).
nccmatch::Status mapOnHost(GstNccMatch* self, InFlightFrame& f) {
  if (!f.cuda) return nccmatch::Status();
  if (f.mapped) gst_video_frame_unmap(&f.frame);
  f.mapped = false;
  f.cuda = false;
  f.cudaReadBack = true;
  if (!gst_video_frame_map(&f.frame, &GST_VIDEO_FILTER(self)->in_info, f.buffer, mapFlags(f)))
    return nccmatch::Status::error(
        "the frame is in CUDA memory that could not be read back to the host for the CPU backend");
  f.mapped = true;
  return nccmatch::Status();
}

// The frame's result in area coordinates: collected from the engine it was submitted to, or,
// when that engine failed (device=auto: the CPU takes over here) or was replaced since, matched
// again on the engine now running. Scales merged. False after posting an error.
bool collectResult(GstNccMatch* self, InFlightFrame& f, nccmatch::FrameResult* result) {
  StreamState& stream = *self->stream;
  const gint64 begin = g_get_monotonic_time();
  bool again = f.engineEpoch != stream.engineEpoch;
  nccmatch::Status status;
  if (!again) {
    status = stream.engine->collect(result);
    if (!status.ok() && mayHandOverToCpu(self, f)) {
      if (!handOverToCpu(self, status)) return false;
      again = true;
    }
  }
  if (again) {
    GST_DEBUG_OBJECT(self, "frame submitted to a replaced engine: matched again on %s",
                     nccmatch::backendName(stream.engine->backend()));
    status = mapOnHost(self, f);
    if (status.ok())
      status = stream.engine->match(lumaView(&f.frame, f.cuda, f.area), f.settings.matchParams(), result);
  }
  f.engineMicros += g_get_monotonic_time() - begin;
  if (!status.ok()) {
    GST_ELEMENT_ERROR(self, LIBRARY, FAILED, ("Template matching failed: %s", status.message().c_str()), (nullptr));
    return false;
  }
  *result = mergeScales(self, *result, f.settings);
  return true;
}

// Draws the matches' boxes on the frame: on the device for CUDA memory while a CUDA engine runs
// (when that fails and device=auto, the CPU takes over), else on the host, a frame in CUDA memory
// mapped there first (the CPU took over since it was mapped). False after posting an error.
bool drawBoxes(GstNccMatch* self, InFlightFrame& f, const std::vector<nccmatch::Match>& matches) {
#ifdef NCCMATCH_HAVE_GST_CUDA
  nccmatch::Status status;
  if (f.cuda && self->stream->engine->backend() == nccmatch::Backend::Cuda) {
    std::vector<nccmatch::DrawBox> boxes;
    for (const nccmatch::Match& m : matches) boxes.push_back({m.x, m.y, m.width, m.height});
    status = nccmatch::drawMatchBoxesOnDevice(
        static_cast<uint8_t*>(GST_VIDEO_FRAME_PLANE_DATA(&f.frame, 0)), GST_VIDEO_FRAME_WIDTH(&f.frame),
        GST_VIDEO_FRAME_HEIGHT(&f.frame), std::size_t(GST_VIDEO_FRAME_PLANE_STRIDE(&f.frame, 0)), boxes);
    if (status.ok()) return true;
    if (mayHandOverToCpu(self, f) && !handOverToCpu(self, status)) return false;
  }
  if (status.ok() || self->stream->engine->backend() != nccmatch::Backend::Cuda) status = mapOnHost(self, f);
  if (!status.ok()) {
    GST_ELEMENT_ERROR(self, LIBRARY, FAILED, ("Could not draw the boxes: %s", status.message().c_str()), (nullptr));
    return false;
  }
#else
  (void)self;
#endif
  nccmatch::plugin::PlaneView plane{static_cast<uint8_t*>(GST_VIDEO_FRAME_PLANE_DATA(&f.frame, 0)),
                                    GST_VIDEO_FRAME_WIDTH(&f.frame), GST_VIDEO_FRAME_HEIGHT(&f.frame),
                                    std::size_t(GST_VIDEO_FRAME_PLANE_STRIDE(&f.frame, 0))};
  for (const nccmatch::Match& m : matches) nccmatch::plugin::drawMatchBox(plane, {m.x, m.y, m.width, m.height});
  return true;
}

}  // namespace

// Collects a frame's result, attaches the metas, posts the messages and draws the boxes; hands
// back the buffer to push, or null after posting an error.
GstBuffer* finishFrame(GstNccMatch* self, InFlightFrame& f) {
  StreamState& stream = *self->stream;
  nccmatch::FrameResult result;
  nccmatch::plugin::TrackReport report;
  bool ok = true;
  {
    nccmatch::plugin::CudaContextScope scope(stream.engineContext);
    if (f.tracked) {
      result = trackedResult(*f.tracked, stream.names.size(), &report);
      toFrameCoordinates(f.area, &result);
      NCCMATCH_OBJECT_LOCK(self);
      self->published->stats.add(f.engineMicros);
      NCCMATCH_OBJECT_UNLOCK(self);
    } else if (f.searched) {
      result = std::move(*f.searched);
      toFrameCoordinates(f.area, &result);
      NCCMATCH_OBJECT_LOCK(self);
      self->published->stats.add(f.engineMicros);
      NCCMATCH_OBJECT_UNLOCK(self);
    } else if (f.submitted) {
      ok = collectResult(self, f, &result);
      if (ok) {
        toFrameCoordinates(f.area, &result);
        NCCMATCH_OBJECT_LOCK(self);
        self->published->stats.add(f.engineMicros);
        NCCMATCH_OBJECT_UNLOCK(self);
      }
    }
    if (ok && f.settings.display && !result.matches.empty()) ok = drawBoxes(self, f, result.matches);
    if (f.mapped) gst_video_frame_unmap(&f.frame);
    f.mapped = false;
  }
  GstBuffer* buffer = f.buffer;
  f.buffer = nullptr;
  if (!ok) {
    gst_buffer_unref(buffer);
    return nullptr;
  }
  const nccmatch::plugin::TrackReport* tracks = f.tracked ? &report : nullptr;
  nccmatch::plugin::attachRoiMetas(buffer, result.matches, stream.names, tracks);
  if (f.settings.postMessages) postMessages(self, f.settings, result, buffer, tracks);
  return buffer;
}

// Drops every frame in flight unpushed (flush, stop), waiting for the engine to let go of them.
void discardFramesInFlight(GstNccMatch* self) {
  StreamState& stream = *self->stream;
  nccmatch::plugin::CudaContextScope scope(stream.engineContext);
  for (InFlightFrame& f : stream.inFlight) {
    nccmatch::FrameResult ignored;
    if (f.submitted && stream.engine && f.engineEpoch == stream.engineEpoch) stream.engine->collect(&ignored);
    releaseFrame(f);
  }
  stream.inFlight.clear();
}

// Finishes and pushes every frame in flight, oldest first (before serialized events, a drain
// query, a new bank or a context change). A failed push drops the rest.
GstFlowReturn pushFramesInFlight(GstNccMatch* self) {
  StreamState& stream = *self->stream;
  GstFlowReturn flow = GST_FLOW_OK;
  if (!stream.inFlight.empty()) GST_DEBUG_OBJECT(self, "draining %zu frame(s) in flight", stream.inFlight.size());
  while (!stream.inFlight.empty() && flow == GST_FLOW_OK) {
    InFlightFrame f = std::move(stream.inFlight.front());
    stream.inFlight.pop_front();
    GstBuffer* buffer = finishFrame(self, f);
    flow = buffer != nullptr ? gst_pad_push(GST_BASE_TRANSFORM_SRC_PAD(self), buffer) : GST_FLOW_ERROR;
  }
  if (flow != GST_FLOW_OK) discardFramesInFlight(self);
  return flow;
}

// Frames to hold for the stream's current settings (upstream liveness asked once per caps).
int framesInFlightNow(GstNccMatch* self, const Settings& settings) {
  StreamState& stream = *self->stream;
  if (!stream.upstreamLiveKnown) {
    GST_DEBUG_OBJECT(self, "asking upstream whether it is live");
    GstQuery* query = gst_query_new_latency();
    gboolean live = FALSE;
    if (gst_pad_peer_query(GST_BASE_TRANSFORM_SINK_PAD(self), query))
      gst_query_parse_latency(query, &live, nullptr, nullptr);
    gst_query_unref(query);
    stream.upstreamLive = live;
    stream.upstreamLiveKnown = true;
  }
  const int depth = nccmatch::plugin::framesInFlightFor(
      settings.mode, settings.framesInFlight, stream.engine->backend() == nccmatch::Backend::Cuda, stream.upstreamLive,
      stream.engine->maxFramesInFlight());
  if (stream.depth != 0 && depth != stream.depth)  // the latency we report changes
    gst_element_post_message(GST_ELEMENT(self), gst_message_new_latency(GST_OBJECT(self)));
  stream.depth = depth;
  return depth;
}

namespace {

// Null when the element can take a frame; else the flow to return, after posting an error.
std::optional<GstFlowReturn> refuseEarlyFrame(GstNccMatch* self) {
  if (!GST_VIDEO_FILTER(self)->negotiated) {
    GST_ELEMENT_ERROR(self, CORE, NOT_IMPLEMENTED, ("nccmatch received a frame before caps"), (nullptr));
    return GST_FLOW_NOT_NEGOTIATED;
  }
  if (!self->stream->engine) {
    GST_ELEMENT_ERROR(self, CORE, FAILED, ("nccmatch received a frame before it was started"), (nullptr));
    return GST_FLOW_ERROR;
  }
  return std::nullopt;
}

// What a new frame changes for the engine. Frames in flight were matched with the current bank and
// context, so they are finished before either changes.
struct EngineChanges {
  bool bank = false;     // template, templates, scales or grab-template set since the last load
  bool context = false;  // CUDA memory of another context than the engine's
  bool mode = false;     // mode changed: frames in flight go out, tracks end
  GstCudaContext* memoryContext = nullptr;  // the frame's CUDA context (no reference), or null
};

// Reads the frame's settings and memory: sets f.settings and f.cuda.
EngineChanges readFrameSettings(GstNccMatch* self, InFlightFrame& f) {
  StreamState& stream = *self->stream;
  f.settings = copySettings(self);
  EngineChanges changes;
  changes.bank = f.settings.templatesGeneration != stream.loadedGeneration;
  changes.mode = (f.settings.mode == Mode::Track) != stream.tracking;
#ifdef NCCMATCH_HAVE_GST_CUDA
  if (stream.cudaMemoryInput) changes.memoryContext = nccmatch::plugin::bufferCudaContext(f.buffer);
  // CUDA memory is read in place by a CUDA engine; after a hand-over to the CPU (device=auto) the
  // frame is mapped on the host instead (GStreamer's CUDA memory downloads it).
  const bool cudaEngine = stream.engine->backend() == nccmatch::Backend::Cuda;
  f.cuda = changes.memoryContext != nullptr && cudaEngine;
  f.cudaReadBack = changes.memoryContext != nullptr && !cudaEngine;
  changes.context = f.cuda && changes.memoryContext != stream.engineContext;
#endif
  return changes;
}

// Finishes the frames in flight before the bank or the context changes, cuts a grab-template
// request's patch from this frame (before it is mapped for matching) and moves the engine to the
// frame's CUDA context when that changed. Anything but GST_FLOW_OK: the frame goes no further.
GstFlowReturn prepareEngine(GstNccMatch* self, InFlightFrame& f, const EngineChanges& changes,
                            std::optional<nccmatch::TemplateImage>* grabbed) {
  if ((changes.bank || changes.context || changes.mode) && !self->stream->inFlight.empty()) {
    const GstFlowReturn flow = pushFramesInFlight(self);
    if (flow != GST_FLOW_OK) return flow;
  }
  if (changes.mode) {
    self->stream->tracker.endAll();
    self->stream->tracking = f.settings.mode == Mode::Track;
  }
  if (changes.bank && f.settings.grab) {
    nccmatch::TemplateImage patch;
    // The frame's CUDA memory is read by the engine when it is of the engine's context.
    const bool onDevice = f.cuda && !changes.context;
    if (cutGrabbedTemplate(self, f.buffer, *f.settings.grab, onDevice, &patch)) *grabbed = std::move(patch);
  }
#ifdef NCCMATCH_HAVE_GST_CUDA
  if (changes.context && !moveEngineToContext(self, changes.memoryContext)) return GST_FLOW_ERROR;
#endif
  return GST_FLOW_OK;
}

// When a system-memory frame cannot be mapped because it is too small: its size, the size the caps
// need and GStreamer's strides for them (a buffer without GstVideoMeta must have GStreamer's default
// layout, e.g. GRAY8 rows padded to a multiple of 4), as ": buffer of 1500 bytes, caps GRAY8 50x30
// need 1560 (rows of stride 52)". Empty otherwise.
std::string shortBufferReason(const GstVideoInfo& info, GstBuffer* buffer) {
  const gsize size = gst_buffer_get_size(buffer);
  if (gst_buffer_get_video_meta(buffer) != nullptr || size >= GST_VIDEO_INFO_SIZE(&info)) return "";
  const guint planes = GST_VIDEO_INFO_N_PLANES(&info);
  std::string strides;
  for (guint p = 0; p < planes; ++p)
    strides += (p > 0 ? "," : "") + std::to_string(GST_VIDEO_INFO_PLANE_STRIDE(&info, p));
  gchar* text = g_strdup_printf(": buffer of %" G_GSIZE_FORMAT " bytes, caps %s %dx%d need %" G_GSIZE_FORMAT " (%s %s)",
                                size, GST_VIDEO_INFO_NAME(&info), GST_VIDEO_INFO_WIDTH(&info),
                                GST_VIDEO_INFO_HEIGHT(&info), gsize(GST_VIDEO_INFO_SIZE(&info)),
                                planes == 1 ? "rows of stride" : "plane strides", strides.c_str());
  std::string reason = text;
  g_free(text);
  return reason;
}

// register-upstream: the frame's system memory noted (registered on its second sighting) for the
// CUDA engine, which then reads it as pinned memory. A refusal is logged once a memory.
void noteUpstreamFrame(GstNccMatch* self, InFlightFrame& f) {
  if (!f.settings.registerUpstream || f.cuda || self->stream->engine == nullptr ||
      self->stream->engine->backend() != nccmatch::Backend::Cuda || gst_buffer_n_memory(f.buffer) != 1)
    return;
  std::string why;
  const nccmatch::plugin::UpstreamMemory state =
      nccmatch::plugin::noteUpstreamMemory(gst_buffer_peek_memory(f.buffer, 0), nccmatch::plugin::defaultHostRegistrar(), &why);
  if (!why.empty())
    GST_INFO_OBJECT(self, "upstream memory left pageable (%s): its frames are staged before upload", why.c_str());
  else if (state == nccmatch::plugin::UpstreamMemory::Registered)
    GST_LOG_OBJECT(self, "frame in registered upstream memory");
}

// Maps the frame for the engine; false after posting an error.
bool mapFrame(GstNccMatch* self, InFlightFrame& f) {
  noteUpstreamFrame(self, f);
  const GstMapFlags flags = mapFlags(f);
  const GstVideoInfo& info = GST_VIDEO_FILTER(self)->in_info;
  if (!gst_video_frame_map(&f.frame, &info, f.buffer, flags)) {
    const std::string reason = f.cuda || f.cudaReadBack ? "" : shortBufferReason(info, f.buffer);
    GST_ELEMENT_ERROR(self, STREAM, FAILED,
                      ("Could not map %s%s",
                       f.cuda           ? "the CUDA memory of a frame"
                       : f.cudaReadBack ? "the CUDA memory of a frame on the host (for the CPU backend, which took "
                                          "over from the CUDA backend)"
                                        : "a frame",
                       reason.c_str()),
                      (nullptr));
    return false;
  }
  f.mapped = true;
  return true;
}

// Places the search region in the frame (f.area), warning about templates larger than it.
void placeRegion(GstNccMatch* self, InFlightFrame& f) {
  f.area =
      placeSearchRegion(f.settings.searchRegion, GST_VIDEO_FRAME_WIDTH(&f.frame), GST_VIDEO_FRAME_HEIGHT(&f.frame));
  warnOversizedTemplates(self, f.area.width, f.area.height, !f.settings.searchRegion.whole());
}

// mode=track: the tracker follows its tracks into this frame's area (a full-frame search or one
// matchRegions call over their windows); the tracks end first when the area moved or changed
// size. A failed frame leaves the tracker as it was (it may be tracked again on the CPU).
nccmatch::Status trackArea(GstNccMatch* self, InFlightFrame& f) {
  StreamState& stream = *self->stream;
  if (!(f.area == stream.trackArea)) {
    stream.tracker.endAll();
    stream.trackArea = f.area;
  }
  NCC_RETURN_IF_ERROR(stream.tracker.setOptions(f.settings.trackerOptions()));
  nccmatch::TrackerFrame tracked;
  NCC_RETURN_IF_ERROR(stream.tracker.track(*stream.engine, lumaView(&f.frame, f.cuda, f.area),
                                           f.settings.matchParams(), stream.scaled, &tracked));
  f.tracked = std::move(tracked);
  return nccmatch::Status();
}

// pyramid-levels: the coarse-to-fine search of the area, at once (it calls the engine
// synchronously).
nccmatch::Status searchArea(GstNccMatch* self, InFlightFrame& f) {
  StreamState& stream = *self->stream;
  nccmatch::FrameResult result;
  NCC_RETURN_IF_ERROR(
      stream.search.match(*stream.engine, lumaView(&f.frame, f.cuda, f.area), f.settings.matchParams(), &result));
  f.searched = std::move(result);
  return nccmatch::Status();
}

// Starts matching the area on the engine now running: the tracker (mode=track) or the
// coarse-to-fine search (pyramid-levels) at once, else a submit whose result is collected when
// the frame is finished. A frame mapped as CUDA memory is mapped on the host first when the
// engine is the CPU's (a hand-over since it was mapped).
nccmatch::Status startMatching(GstNccMatch* self, InFlightFrame& f) {
  StreamState& stream = *self->stream;
  if (f.cuda && stream.engine->backend() != nccmatch::Backend::Cuda) NCC_RETURN_IF_ERROR(mapOnHost(self, f));
  f.engineEpoch = stream.engineEpoch;
  if (f.settings.mode == Mode::Track) return trackArea(self, f);
  if (stream.pyramidLevels > 0) return searchArea(self, f);
  NCC_RETURN_IF_ERROR(stream.engine->submit(lumaView(&f.frame, f.cuda, f.area), f.settings.matchParams()));
  f.submitted = true;
  return nccmatch::Status();
}

// Hands the area's luma to the engine when there are templates (or to the tracker in track mode,
// or to the coarse-to-fine search). When the CUDA engine fails and device=auto, the CPU takes
// over and matches the frame. False after posting an error.
bool submitArea(GstNccMatch* self, InFlightFrame& f) {
  StreamState& stream = *self->stream;
  if (stream.names.empty()) return true;
  const gint64 begin = g_get_monotonic_time();
  nccmatch::Status status = startMatching(self, f);
  if (!status.ok() && mayHandOverToCpu(self, f)) {
    if (!handOverToCpu(self, status)) return false;
    status = startMatching(self, f);
  }
  f.engineMicros = g_get_monotonic_time() - begin;
  if (!status.ok())
    GST_ELEMENT_ERROR(self, LIBRARY, FAILED,
                      ("%s failed: %s", f.settings.mode == Mode::Track ? "Tracking" : "Template matching",
                       status.message().c_str()),
                      (nullptr));
  return status.ok();
}

// In the engine's context: the bank refreshed for the frame's settings, the region placed, the
// area submitted. False after posting an error.
bool matchFrame(GstNccMatch* self, InFlightFrame& f, const nccmatch::TemplateImage* grabbed) {
  nccmatch::plugin::CudaContextScope scope(self->stream->engineContext);
  if (!scope.ok()) {
    GST_ELEMENT_ERROR(self, LIBRARY, FAILED, ("Could not make the CUDA context current"), (nullptr));
    return false;
  }
  const uint64_t loaded = self->stream->loadedGeneration;
  if (!refreshBank(self, f.settings, grabbed, mayHandOverToCpu(self, f))) return false;
  if (self->stream->loadedGeneration != loaded) self->stream->tracker.endAll();  // tracks name the old bank
  placeRegion(self, f);
  return submitArea(self, f);
}

}  // namespace

// Maps a writable frame and submits its luma plane to the engine; the frame joins the frames in
// flight (also when there is nothing to match, so output order is kept). Takes the buffer.
GstFlowReturn submitFrame(GstNccMatch* self, GstBuffer* buffer) {
  if (std::optional<GstFlowReturn> refusal = refuseEarlyFrame(self)) {
    gst_buffer_unref(buffer);
    return *refusal;
  }
  InFlightFrame f;
  f.buffer = buffer;
  const EngineChanges changes = readFrameSettings(self, f);
  std::optional<nccmatch::TemplateImage> grabbed;
  GstFlowReturn flow = prepareEngine(self, f, changes, &grabbed);
  if (flow == GST_FLOW_OK && !(mapFrame(self, f) && matchFrame(self, f, grabbed ? &*grabbed : nullptr)))
    flow = GST_FLOW_ERROR;
  if (flow != GST_FLOW_OK) {
    releaseFrame(f);
    return flow;
  }
  self->stream->inFlight.push_back(std::move(f));
  return GST_FLOW_OK;
}

}  // namespace nccmatch::plugin::element
