// The `nccmatch` element's GObject and GstBaseTransform side: type, start/stop, caps, allocation,
// events and queries. Properties: element_properties.cpp; templates and the engine:
// element_engine.cpp; frames in flight (submit, hold, finish, push): element_frames.cpp; reporting
// and drawing in their own units.
#include "gstnccmatch.hpp"

#include <gst/video/video.h>

#include <cmath>
#include <string>
#include <utility>
#include <vector>

#include "element_engine.hpp"
#include "element_frames.hpp"
#include "element_properties.hpp"
#include "element_state.hpp"
#include "pinned_allocator.hpp"

GST_DEBUG_CATEGORY(gst_nccmatch_debug);
#define GST_CAT_DEFAULT gst_nccmatch_debug

using nccmatch::plugin::Settings;
using namespace nccmatch::plugin::element;

namespace {

// The engine accepts frames up to 16384x16384; saying so in the caps makes a larger stream fail
// negotiation instead of every frame.
#define NCCMATCH_SYSTEM_CAPS                                                                       \
  "video/x-raw, format = (string) { GRAY8, I420, NV12 }, width = (int) [ 1, 16384 ], height = (int) " \
  "[ 1, 16384 ], framerate = (fraction) [ 0/1, max ]"
// From cudaupload, nvh264dec, nvjpegdec: the luma plane is read in place on the GPU.
#define NCCMATCH_CUDA_CAPS                                                                                \
  "video/x-raw(memory:CUDAMemory), format = (string) { I420, NV12 }, width = (int) [ 1, 16384 ], height = " \
  "(int) [ 1, 16384 ], framerate = (fraction) [ 0/1, max ]"

}  // namespace

G_DEFINE_TYPE(GstNccMatch, gst_nccmatch, GST_TYPE_VIDEO_FILTER)
GST_ELEMENT_REGISTER_DEFINE(nccmatch, "nccmatch", GST_RANK_NONE, GST_TYPE_NCCMATCH)

GType gst_nccmatch_method_get_type(void) {
  static GType type = 0;
  static const GEnumValue values[] = {
      {int(nccmatch::Method::SqDiff), "Sum of squared differences (lower is better)", "sqdiff"},
      {int(nccmatch::Method::SqDiffNormed), "Normalised sum of squared differences, 0..1 (lower is better)",
       "sqdiff-normed"},
      {int(nccmatch::Method::CCorr), "Cross-correlation (higher is better)", "ccorr"},
      {int(nccmatch::Method::CCorrNormed), "Normalised cross-correlation, 0..1 (higher is better)", "ccorr-normed"},
      {int(nccmatch::Method::CCoeff), "Correlation coefficient, mean removed (higher is better)", "ccoeff"},
      {int(nccmatch::Method::CCoeffNormed),
       "Normalised correlation coefficient (NCC), -1..1 (higher is better)", "ccoeff-normed"},
      {0, nullptr, nullptr},
  };
  if (g_once_init_enter(&type)) g_once_init_leave(&type, g_enum_register_static("GstNccMatchMethod", values));
  return type;
}

GType gst_nccmatch_device_get_type(void) {
  static GType type = 0;
  static const GEnumValue values[] = {
      {int(nccmatch::Backend::Auto), "CUDA when a GPU is usable, else the CPU", "auto"},
      {int(nccmatch::Backend::Cpu), "The CPU backend (multithreaded, exact)", "cpu"},
      {int(nccmatch::Backend::Cuda), "The CUDA backend; the element fails to start without a usable GPU", "cuda"},
      {0, nullptr, nullptr},
  };
  if (g_once_init_enter(&type)) g_once_init_leave(&type, g_enum_register_static("GstNccMatchDevice", values));
  return type;
}

GType gst_nccmatch_mode_get_type(void) {
  static GType type = 0;
  static const GEnumValue values[] = {
      {int(nccmatch::plugin::Mode::Detect), "Every frame searched on its own (templatematch's behaviour)", "detect"},
      {int(nccmatch::plugin::Mode::Track), "Matches followed from frame to frame with ids that last", "track"},
      {0, nullptr, nullptr},
  };
  if (g_once_init_enter(&type)) g_once_init_leave(&type, g_enum_register_static("GstNccMatchMode", values));
  return type;
}

GType gst_nccmatch_rotation_support_get_type(void) {
  static GType type = 0;
  static const GEnumValue values[] = {
      {int(nccmatch::RotationSupport::Rectangle),
       "The whole rotated template (its rotated support as the mask; every angle its own mask)", "rectangle"},
      {int(nccmatch::RotationSupport::Disc),
       "The disc inscribed in the template (one mask per scale, shared by every angle: less work, corners "
       "not compared)",
       "disc"},
      {0, nullptr, nullptr},
  };
  if (g_once_init_enter(&type))
    g_once_init_leave(&type, g_enum_register_static("GstNccMatchRotationSupport", values));
  return type;
}

namespace {

// ---- GstBaseTransform / GstVideoFilter virtual methods ----

// Values refused before start fail it (RefusedValues), each named in one error; otherwise the
// element counts as running from here, so values refused from now on are warned about at once.
bool claimStart(GstNccMatch* self) {
  std::string refusals;
  NCCMATCH_OBJECT_LOCK(self);
  for (const auto& [property, why] : self->refused->beforeStart)
    refusals += (refusals.empty() ? "" : "; ") + ("Invalid '" + property + "': " + why);
  self->refused->running = refusals.empty();
  NCCMATCH_OBJECT_UNLOCK(self);
  if (refusals.empty()) return true;
  GST_ELEMENT_ERROR(self, RESOURCE, SETTINGS, ("%s", refusals.c_str()), (nullptr));
  return false;
}

void markStopped(GstNccMatch* self) {
  NCCMATCH_OBJECT_LOCK(self);
  self->refused->running = false;
  NCCMATCH_OBJECT_UNLOCK(self);
}

// The CUDA engine holding `bank` (scaled and rotated into `scaled`), or false with `why` saying
// what failed: the engine could not start (`engineFailed`) or could not take the bank. Posts
// nothing; leaves no engine behind.
bool startCudaEngine(GstNccMatch* self, const Settings& settings, std::vector<nccmatch::TemplateImage> bank,
                     nccmatch::ScaledBank scaled, nccmatch::CoarseToFineSearch search, std::string* why,
                     bool* engineFailed) {
  StreamState& stream = *self->stream;
  GstCudaContext* context = nullptr;
#ifdef NCCMATCH_HAVE_GST_CUDA
  context = ensureCudaContext(self, settings.cudaDeviceId);
  if (context == nullptr)
    GST_WARNING_OBJECT(self, "no GStreamer CUDA context: CUDA engine in the device's primary context, "
                             "memory:CUDAMemory input refused");
#endif
  nccmatch::Status status = newEngine(self, nccmatch::Backend::Cuda, settings.cudaDeviceId, context);
#ifdef NCCMATCH_HAVE_GST_CUDA
  gst_clear_object(&context);
#endif
  *engineFailed = !status.ok();
  if (status.ok()) {
    nccmatch::plugin::CudaContextScope scope(stream.engineContext);
    status = handBank(self, std::move(bank), std::move(scaled), settings.scales, settings.angles,
                      settings.rotationSupport, settings.bankPyramidLevels(), std::move(search));
  }
  if (status.ok()) return true;
  *why = *engineFailed ? status.message() : "Could not prepare the templates: " + status.message();
  if (stream.engine) destroyEngine(self);
  return false;
}

// The engine on the backend the settings ask for, holding the bank they name. device=auto takes
// the CPU when no GPU is usable (said once in the log) or when the CUDA engine cannot start or
// cannot take the bank (said once on the bus, as a warning); device=cuda stops with an error.
bool startEngine(GstNccMatch* self) {
  Settings settings = copySettings(self);
  StreamState& stream = *self->stream;

  nccmatch::Backend backend = nccmatch::Backend::Cpu;
  if (settings.device != nccmatch::Backend::Cpu) {
    std::string why;
    if (nccmatch::cudaAvailable(&why)) {
      backend = nccmatch::Backend::Cuda;
    } else if (settings.device == nccmatch::Backend::Cuda) {
      GST_ELEMENT_ERROR(self, RESOURCE, SETTINGS,
                        ("Could not start the matching engine (device=cuda): CUDA backend requested but "
                         "unavailable: %s",
                         why.c_str()),
                        (nullptr));
      return false;
    } else {
      GST_WARNING_OBJECT(self, "device=auto: %s; matching on the CPU", why.c_str());
    }
  }

  std::vector<nccmatch::TemplateImage> bank;
  nccmatch::plugin::TemplateLoadError error;
  if (!nccmatch::plugin::loadTemplateBank(settings.templateFiles, settings.maskFiles, &bank, &error)) {
    postLoadError(self, error);
    return false;
  }
  if (settings.templateFiles.empty() && !settings.grab)
    GST_WARNING_OBJECT(self, "no template set: frames pass through without matches");
  // A grab-template request waits for the first frame: its generation stays unloaded until then.
  stream.loadedGeneration = settings.grab ? settings.templatesGeneration - 1 : settings.templatesGeneration;
  // The same on every backend: its failure is not the GPU's.
  nccmatch::ScaledBank scaled;
  nccmatch::CoarseToFineSearch search;
  const char* failed = nullptr;
  stream.requestedPyramidLevels = settings.bankPyramidLevels();
  nccmatch::Status status = prepareVariants(bank, settings.scales, settings.angles, settings.rotationSupport,
                                            settings.bankPyramidLevels(), &scaled, &search, &failed);
  if (!status.ok()) {
    GST_ELEMENT_ERROR(self, LIBRARY, SETTINGS, ("Could not prepare the templates: %s", status.message().c_str()),
                      (nullptr));
    return false;
  }

  if (backend == nccmatch::Backend::Cuda) {
    std::string why;
    bool engineFailed = false;
    if (startCudaEngine(self, settings, bank, scaled, search, &why, &engineFailed)) {
      publishEngine(self, true);
      return true;
    }
    if (settings.device == nccmatch::Backend::Cuda) {
      if (engineFailed)
        GST_ELEMENT_ERROR(self, RESOURCE, SETTINGS,
                          ("Could not start the matching engine (device=cuda): %s", why.c_str()), (nullptr));
      else
        GST_ELEMENT_ERROR(self, LIBRARY, SETTINGS, ("%s (device=cuda)", why.c_str()), (nullptr));
      return false;
    }
    GST_ELEMENT_WARNING(self, RESOURCE, SETTINGS,
                        ("device=auto: the CUDA backend could not start (%s); matching on the CPU", why.c_str()),
                        (nullptr));
    stream.cudaFellBack = nccmatch::plugin::kHaveGstCuda;  // CUDA memory still taken, read back
  }
  if (!createEngine(self, nccmatch::Backend::Cpu, settings.cudaDeviceId, nullptr)) return false;
  status = handBank(self, std::move(bank), std::move(scaled), settings.scales, settings.angles,
                    settings.rotationSupport, settings.bankPyramidLevels(), std::move(search));
  if (!status.ok()) {
    GST_ELEMENT_ERROR(self, LIBRARY, SETTINGS, ("Could not prepare the templates: %s", status.message().c_str()),
                      (nullptr));
    destroyEngine(self);
    return false;
  }
  publishEngine(self, true);
  return true;
}

GstFlowReturn processOnWorker(GstNccMatch* self, GstBuffer* writable);

// The element's worker (made once in init, under the object lock): read under that lock too, so
// that every thread that reaches it (a flush from the application's, queries, the streaming
// thread) is ordered after init for TSan. The worker itself is thread-safe.
nccmatch::plugin::FrameWorker& workerOf(GstNccMatch* self) {
  NCCMATCH_OBJECT_LOCK(self);
  nccmatch::plugin::FrameWorker* worker = self->worker;
  NCCMATCH_OBJECT_UNLOCK(self);
  return *worker;
}

gboolean gst_nccmatch_start(GstBaseTransform* trans) {
  GstNccMatch* self = GST_NCCMATCH(trans);
  nccmatch::plugin::StreamingSection section(self);
  if (!claimStart(self)) return FALSE;
  if (startEngine(self)) {
    if (copySettings(self).workerThread)
      workerOf(self).start([self](GstBuffer* writable) { return processOnWorker(self, writable); },
                          nccmatch::plugin::kWorkerWaitingBuffers);
    return TRUE;
  }
  markStopped(self);
  return FALSE;
}

gboolean gst_nccmatch_stop(GstBaseTransform* trans) {
  GstNccMatch* self = GST_NCCMATCH(trans);
  workerOf(self).stop();  // the pads are inactive: a push in hand returns at once
  nccmatch::plugin::StreamingSection section(self);
  markStopped(self);
  discardFramesInFlight(self);
  destroyEngine(self);
  *self->stream = StreamState();
  NCCMATCH_OBJECT_LOCK(self);
  self->published->cudaCapsAllowed = true;
#ifdef NCCMATCH_HAVE_GST_CUDA
  gst_clear_object(&self->cudaContext);
#endif
  NCCMATCH_OBJECT_UNLOCK(self);
  return TRUE;
}

// In place, the same caps on both sides; memory:CUDAMemory only while the engine can take it.
GstCaps* gst_nccmatch_transform_caps(GstBaseTransform* trans, GstPadDirection, GstCaps* caps, GstCaps* filter) {
  GstNccMatch* self = GST_NCCMATCH(trans);
  NCCMATCH_OBJECT_LOCK(self);
  const bool cudaAllowed = self->published->cudaCapsAllowed && self->settings->device != nccmatch::Backend::Cpu;
  NCCMATCH_OBJECT_UNLOCK(self);
  GstCaps* result = gst_caps_copy(caps);
  if (!cudaAllowed) {
    for (guint i = gst_caps_get_size(result); i > 0; --i) {
      GstCapsFeatures* features = gst_caps_get_features(result, i - 1);
      if (features != nullptr && gst_caps_features_contains(features, "memory:CUDAMemory"))
        gst_caps_remove_structure(result, i - 1);
    }
  }
  if (filter != nullptr) {
    GstCaps* both = gst_caps_intersect_full(filter, result, GST_CAPS_INTERSECT_FIRST);
    gst_caps_unref(result);
    result = both;
  }
  return result;
}

gboolean gst_nccmatch_set_info(GstVideoFilter* filter, GstCaps* incaps, GstVideoInfo* in_info, GstCaps*,
                               GstVideoInfo*) {
  GstNccMatch* self = GST_NCCMATCH(filter);
  nccmatch::plugin::StreamingSection section(self);  // from the caps event, serialized
  StreamState& stream = *self->stream;
  const bool cudaMemory = nccmatch::plugin::capsHaveCudaMemory(incaps);
  if (cudaMemory && stream.engineContext == nullptr && !stream.cudaFellBack) {
    GST_ELEMENT_ERROR(self, CORE, NEGOTIATION,
                      ("memory:CUDAMemory input needs the CUDA backend in a GStreamer CUDA context (device=%s, "
                       "engine: %s)",
                       nccmatch::backendName(copySettings(self).device),
                       stream.engine ? nccmatch::backendName(stream.engine->backend()) : "none"),
                      (nullptr));
    return FALSE;
  }
  GST_DEBUG_OBJECT(self, "set_info %" GST_PTR_FORMAT, incaps);
  stream.cudaMemoryInput = cudaMemory;
  stream.upstreamLiveKnown = false;
  stream.tracker.endAll();  // new caps: every track ends (mode=track)
  stream.frameWidth = GST_VIDEO_INFO_WIDTH(in_info);
  stream.frameHeight = GST_VIDEO_INFO_HEIGHT(in_info);
  NCCMATCH_OBJECT_LOCK(self);
  self->published->memory = cudaMemory ? "cuda" : "system";
  self->published->fpsN = GST_VIDEO_INFO_FPS_N(in_info);
  self->published->fpsD = GST_VIDEO_INFO_FPS_D(in_info);
  NCCMATCH_OBJECT_UNLOCK(self);
  return TRUE;
}

// `writable` (taken; null: none) is submitted, and the oldest frame is finished and handed back
// once more than frames-in-flight - 1 are held.
GstFlowReturn submitAndFinishOldest(GstNccMatch* self, GstBuffer* writable, GstBuffer** outbuf) {
  StreamState& stream = *self->stream;
  *outbuf = nullptr;
  if (writable != nullptr) {
    const GstFlowReturn flow = submitFrame(self, writable);
    if (flow != GST_FLOW_OK) return flow;
  }
  if (stream.inFlight.empty() ||
      int(stream.inFlight.size()) < framesInFlightNow(self, stream.inFlight.back().settings))
    return GST_FLOW_OK;
  InFlightFrame f = std::move(stream.inFlight.front());  // no copy of its settings' vectors
  stream.inFlight.pop_front();
  *outbuf = finishFrame(self, f);
  return *outbuf != nullptr ? GST_FLOW_OK : GST_FLOW_ERROR;
}

// The worker thread's part for one buffer: what the streaming thread does without a worker
// (GstBaseTransform's loop of generate_output and push), timed for the stats' worker-us.
GstFlowReturn processOnWorker(GstNccMatch* self, GstBuffer* writable) {
  nccmatch::plugin::StreamingSection section(self);
  GstFlowReturn flow = GST_FLOW_OK;
  for (GstBuffer* input = writable;; input = nullptr) {
    const gint64 begin = g_get_monotonic_time();
    GstBuffer* out = nullptr;
    flow = submitAndFinishOldest(self, input, &out);
    const gint64 spent = g_get_monotonic_time() - begin;
    if (input != nullptr) {
      NCCMATCH_OBJECT_LOCK(self);
      self->published->stats.addWorker(spent);
      NCCMATCH_OBJECT_UNLOCK(self);
    }
    if (flow != GST_FLOW_OK || out == nullptr) break;
    nccmatch::plugin::announceHandOver(out);
    flow = gst_pad_push(GST_BASE_TRANSFORM_SRC_PAD(self), out);
    if (flow != GST_FLOW_OK) break;
  }
  return flow;
}

// The new buffer made writable (as an in-place transform) and submitted; with a worker thread
// handed over to it instead, nothing handed back here.
GstFlowReturn generateOutput(GstNccMatch* self, GstBuffer** outbuf) {
  GstBaseTransform* trans = GST_BASE_TRANSFORM(self);
  *outbuf = nullptr;
  GstBuffer* writable = nullptr;
  if (GstBuffer* input = trans->queued_buf) {
    trans->queued_buf = nullptr;
    const GstFlowReturn flow =
        GST_BASE_TRANSFORM_CLASS(gst_nccmatch_parent_class)->prepare_output_buffer(trans, input, &writable);
    if (writable != input) gst_buffer_unref(input);
    if (flow != GST_FLOW_OK || writable == nullptr) return flow != GST_FLOW_OK ? flow : GST_FLOW_ERROR;
    nccmatch::plugin::FrameWorker& worker = workerOf(self);
    if (worker.running()) return worker.push(writable);
  }
  return submitAndFinishOldest(self, writable, outbuf);
}

// A renegotiation before this buffer (downstream asked to reconfigure) may set new caps, which
// the worker's frames must not see half way: it is idle first.
GstFlowReturn gst_nccmatch_submit_input_buffer(GstBaseTransform* trans, gboolean discont, GstBuffer* input) {
  GstNccMatch* self = GST_NCCMATCH(trans);
  if (gst_pad_needs_reconfigure(GST_BASE_TRANSFORM_SRC_PAD(trans))) workerOf(self).waitIdle();
  return GST_BASE_TRANSFORM_CLASS(gst_nccmatch_parent_class)->submit_input_buffer(trans, discont, input);
}

// GstBaseTransform calls this after each input buffer and again until it hands back nothing
// (generateOutput), timed for the stats' streaming-us. (QoS dropping happens before this, in
// GstBaseTransform's submit_input_buffer.)
GstFlowReturn gst_nccmatch_generate_output(GstBaseTransform* trans, GstBuffer** outbuf) {
  GstNccMatch* self = GST_NCCMATCH(trans);
  // With a worker thread only the hand-over runs here: no StreamState is touched.
  nccmatch::plugin::StreamingSection section(self);
  const bool input = trans->queued_buf != nullptr;
  const gint64 begin = g_get_monotonic_time();
  const GstFlowReturn flow = generateOutput(self, outbuf);
  const gint64 spent = g_get_monotonic_time() - begin;
  NCCMATCH_OBJECT_LOCK(self);
  self->published->stats.addStreaming(spent, input);
  NCCMATCH_OBJECT_UNLOCK(self);
  return flow;
}

// GstVideoFilter's proposal (in place: downstream's answer), asked once per caps: equal caps get
// the answer kept (AllocationAnswer says why) until downstream asks for a new allocation.
gboolean proposeDownstreamsAnswer(GstNccMatch* self, GstQuery* decide_query, GstQuery* query) {
  GstBaseTransform* trans = GST_BASE_TRANSFORM(self);
  nccmatch::plugin::AllocationAnswer& kept = self->stream->allocationAnswer;  // reset by a reconfigure: query()
  bool result = false;
  if (kept.replay(query, &result)) {
    GST_DEBUG_OBJECT(self, "allocation query answered as before (caps unchanged)");
    return result;
  }
  const gboolean ok = GST_BASE_TRANSFORM_CLASS(gst_nccmatch_parent_class)->propose_allocation(trans, decide_query, query);
  kept.keep(query, ok);
  GST_DEBUG_OBJECT(self, "allocation query asked downstream (%d asked)", kept.kept());
  return ok;
}

// Upstream writing system-memory frames for the CUDA engine gets a pool of pinned memory, which
// the engine copies from asynchronously; otherwise (CPU engine, CUDA memory, no pinned memory)
// GstVideoFilter's own proposal, i.e. downstream's.
gboolean gst_nccmatch_propose_allocation(GstBaseTransform* trans, GstQuery* decide_query, GstQuery* query) {
  GstNccMatch* self = GST_NCCMATCH(trans);
  nccmatch::plugin::StreamingSection section(self);  // the allocation query is serialized
  GST_DEBUG_OBJECT(self, "ALLOCATION query from upstream");
  GstCaps* caps = nullptr;
  gboolean needPool = FALSE;
  gst_query_parse_allocation(query, &caps, &needPool);
  const bool cudaEngine = self->stream->engine && self->stream->engine->backend() == nccmatch::Backend::Cuda;
  GstVideoInfo info;
  if (!cudaEngine || caps == nullptr || nccmatch::plugin::capsHaveCudaMemory(caps) ||
      !gst_video_info_from_caps(&info, caps))
    return proposeDownstreamsAnswer(self, decide_query, query);
  std::string why;
  GstAllocator* allocator = nccmatch::plugin::pinnedAllocator(&why);
  if (allocator == nullptr) {
    GST_INFO_OBJECT(self, "no pinned memory (%s): frames are staged before upload", why.c_str());
    return proposeDownstreamsAnswer(self, decide_query, query);
  }
  GstAllocationParams params;
  gst_allocation_params_init(&params);
  gboolean ok = TRUE;
  if (needPool) {
    // Equal caps get the pool proposed before (ProposedPool says why).
    GstBufferPool* pool =
        self->stream->proposedPool.forCaps(caps, guint(GST_VIDEO_INFO_SIZE(&info)), allocator);
    ok = pool != nullptr;
    if (ok) {
      gst_query_add_allocation_pool(query, pool, guint(GST_VIDEO_INFO_SIZE(&info)), 0, 0);
      GST_DEBUG_OBJECT(self, "proposing pinned pool %p (%d made)", static_cast<void*>(pool),
                       self->stream->proposedPool.made());
      gst_object_unref(pool);
    } else {
      GST_WARNING_OBJECT(self, "the pinned buffer pool refused its configuration");
    }
  }
  if (ok) {
    gst_query_add_allocation_param(query, allocator, &params);
    gst_query_add_allocation_meta(query, GST_VIDEO_META_API_TYPE, nullptr);
  }
  gst_object_unref(allocator);
  return ok;
}

// Caps equal to the current ones change nothing (GstBaseTransform does not even call set_info):
// producers that renegotiate per frame re-send them, and draining the frames in flight for each
// would serialise the engine with upstream.
bool sameCapsAgain(GstBaseTransform* trans, GstEvent* event) {
  if (GST_EVENT_TYPE(event) != GST_EVENT_CAPS) return false;
  GstCaps* caps = nullptr;
  gst_event_parse_caps(event, &caps);
  GstCaps* current = gst_pad_get_current_caps(GST_BASE_TRANSFORM_SINK_PAD(trans));
  const bool same = current != nullptr && caps != nullptr && gst_caps_is_equal(current, caps);
  if (current != nullptr) gst_caps_unref(current);
  return same;
}

// Serialized events (EOS, segment, caps, gap, ...) follow the frames before them: the frames in
// flight go out first (not for caps equal to the current ones); a flush drops them. At EOS the
// totals go out as an element message "nccmatch-stats" (the `stats` property's value).
gboolean gst_nccmatch_sink_event(GstBaseTransform* trans, GstEvent* event) {
  GstNccMatch* self = GST_NCCMATCH(trans);
  GST_LOG_OBJECT(self, "sink event %s", GST_EVENT_TYPE_NAME(event));
  // The worker drops what waits and stops waiting on a full queue; its push in hand returns once
  // the flush reaches downstream (below).
  if (GST_EVENT_TYPE(event) == GST_EVENT_FLUSH_START) workerOf(self).setFlushing(true);
  if (GST_EVENT_IS_SERIALIZED(event)) {  // flush-stop included; flush-start touches no stream state
    workerOf(self).waitIdle();  // the frames handed to the worker are in flight or pushed
    nccmatch::plugin::StreamingSection section(self);
    if (GST_EVENT_TYPE(event) == GST_EVENT_FLUSH_STOP) {
      discardFramesInFlight(self);
      workerOf(self).setFlushing(false);
    }
    else if (!sameCapsAgain(trans, event)) pushFramesInFlight(self);
    else GST_DEBUG_OBJECT(self, "caps unchanged: %zu frame(s) stay in flight", self->stream->inFlight.size());
    // mode=track: a flush or a new segment (a seek) ends every track; its id is reported in the
    // next frame's ended-tracks.
    if (GST_EVENT_TYPE(event) == GST_EVENT_FLUSH_STOP || GST_EVENT_TYPE(event) == GST_EVENT_SEGMENT)
      self->stream->tracker.endAll();
  }
  if (GST_EVENT_TYPE(event) == GST_EVENT_EOS) {
    NCCMATCH_OBJECT_LOCK(self);
    GstStructure* s = nccmatch::plugin::makeStatsStructure(self->published->stats, self->published->backend,
                                                           self->published->memory, self->published->threads);
    NCCMATCH_OBJECT_UNLOCK(self);
    gst_element_post_message(GST_ELEMENT(self), gst_message_new_element(GST_OBJECT(self), s));
  }
  return GST_BASE_TRANSFORM_CLASS(gst_nccmatch_parent_class)->sink_event(trans, event);
}

// The latency of the frames held in flight (frames-in-flight - 1 frame durations) adds to
// upstream's; a drain query gets every held frame pushed first.
gboolean gst_nccmatch_query(GstBaseTransform* trans, GstPadDirection direction, GstQuery* query) {
  GstNccMatch* self = GST_NCCMATCH(trans);
  if (direction == GST_PAD_SINK && GST_QUERY_IS_SERIALIZED(query)) workerOf(self).waitIdle();
  if (direction == GST_PAD_SINK && GST_QUERY_TYPE(query) == GST_QUERY_DRAIN) {  // serialized
    nccmatch::plugin::StreamingSection section(self);
    pushFramesInFlight(self);
  }
  // Downstream asked for a new allocation (a RECONFIGURE event): the answer kept for upstream's
  // allocation queries is stale. Checked here, since GstBaseTransform clears the flag (and
  // renegotiates its own allocation) before it calls propose_allocation.
  if (direction == GST_PAD_SINK && GST_QUERY_TYPE(query) == GST_QUERY_ALLOCATION &&  // serialized
      gst_pad_needs_reconfigure(GST_BASE_TRANSFORM_SRC_PAD(trans))) {
    nccmatch::plugin::StreamingSection section(self);
    self->stream->allocationAnswer.reset();
  }
  if (direction == GST_PAD_SRC && GST_QUERY_TYPE(query) == GST_QUERY_LATENCY) {
    if (!GST_BASE_TRANSFORM_CLASS(gst_nccmatch_parent_class)->query(trans, direction, query)) return FALSE;
    gboolean live = FALSE;
    GstClockTime min = 0, max = GST_CLOCK_TIME_NONE;
    gst_query_parse_latency(query, &live, &min, &max);
    NCCMATCH_OBJECT_LOCK(self);
    const int setting = self->settings->framesInFlight;
    const nccmatch::plugin::Mode mode = self->settings->mode;
    const bool cuda = self->published->backend == "cuda";
    const int fpsN = self->published->fpsN, fpsD = self->published->fpsD;
    NCCMATCH_OBJECT_UNLOCK(self);
    const int depth =
        nccmatch::plugin::framesInFlightFor(mode, setting, cuda, live, nccmatch::Engine::kMaxFramesInFlight);
    GstClockTime held = 0;
    if (depth > 1 && fpsN > 0) held = gst_util_uint64_scale_int(GST_SECOND * guint64(depth - 1), fpsD, fpsN);
    // Buffers waiting for the worker thread wait only while it is behind: they add to the most.
    // Whether it runs (read at start), not the setting, which may have changed since.
    GstClockTime waiting = 0;
    if (workerOf(self).running() && fpsN > 0)
      waiting = gst_util_uint64_scale_int(GST_SECOND * guint64(nccmatch::plugin::kWorkerWaitingBuffers), fpsD, fpsN);
    GST_DEBUG_OBJECT(self, "latency: %d frame(s) in flight hold %" GST_TIME_FORMAT, depth, GST_TIME_ARGS(held));
    gst_query_set_latency(query, live, min + held, GST_CLOCK_TIME_IS_VALID(max) ? max + held + waiting : max);
    return TRUE;
  }
#ifdef NCCMATCH_HAVE_GST_CUDA
  if (GST_QUERY_TYPE(query) == GST_QUERY_CONTEXT) {
    NCCMATCH_OBJECT_LOCK(self);
    GstCudaContext* context =
        self->cudaContext != nullptr ? static_cast<GstCudaContext*>(gst_object_ref(self->cudaContext)) : nullptr;
    NCCMATCH_OBJECT_UNLOCK(self);
    const gboolean answered = gst_cuda_handle_context_query(GST_ELEMENT(self), query, context);
    if (context != nullptr) gst_object_unref(context);
    if (answered) return TRUE;
  }
#endif
  return GST_BASE_TRANSFORM_CLASS(gst_nccmatch_parent_class)->query(trans, direction, query);
}

#ifdef NCCMATCH_HAVE_GST_CUDA
void gst_nccmatch_set_context(GstElement* element, GstContext* context) {
  GstNccMatch* self = GST_NCCMATCH(element);
  NCCMATCH_OBJECT_LOCK(self);
  const int deviceId = self->settings->cudaDeviceId;
  GstCudaContext* current = self->cudaContext;
  self->cudaContext = nullptr;
  NCCMATCH_OBJECT_UNLOCK(self);
  gst_cuda_handle_set_context(element, context, deviceId, &current);
  NCCMATCH_OBJECT_LOCK(self);
  if (self->cudaContext == nullptr) self->cudaContext = current;
  else if (current != nullptr) gst_object_unref(current);
  NCCMATCH_OBJECT_UNLOCK(self);
  GST_ELEMENT_CLASS(gst_nccmatch_parent_class)->set_context(element, context);
}
#endif

// ---- GObject ----

// The `grab-template` action signal: the next frame's box becomes the whole bank (as `template`
// replaces it), cut in the streaming thread before that frame is matched.
gboolean gst_nccmatch_grab_template(GstNccMatch* self, const gchar* name, gint x, gint y, gint width, gint height) {
  if (x < 0 || y < 0 || width < 1 || height < 1) {
    GST_WARNING_OBJECT(self, "grab-template: box %d,%d,%d,%d refused (x, y >= 0; width, height >= 1)", x, y, width,
                       height);
    return FALSE;
  }
  nccmatch::plugin::GrabRequest request;
  request.name = name != nullptr && name[0] != '\0' ? name : "grabbed";
  request.x = x;
  request.y = y;
  request.width = width;
  request.height = height;
  NCCMATCH_OBJECT_LOCK(self);
  Settings& s = *self->settings;
  s.templateFiles.clear();
  s.grab = request;
  ++s.templatesGeneration;
  ++s.generation;
  NCCMATCH_OBJECT_UNLOCK(self);
  return TRUE;
}

void gst_nccmatch_finalize(GObject* object) {
  GstNccMatch* self = GST_NCCMATCH(object);
  delete self->worker;  // stopped by stop(); joins it otherwise
  {
    nccmatch::plugin::StreamingSection section(self);
    delete self->stream;
  }
  delete self->refused;
  delete self->published;
  delete self->settings;
#ifdef NCCMATCH_HAVE_GST_CUDA
  gst_clear_object(&self->cudaContext);
#endif
  G_OBJECT_CLASS(gst_nccmatch_parent_class)->finalize(object);
}

}  // namespace

static void gst_nccmatch_init(GstNccMatch* self) {
  // The instance's parts are handed to the streaming thread (StreamingSection) and to whichever
  // thread sets a property (object lock) by GStreamer, out of TSan's sight: both are announced.
  nccmatch::plugin::StreamingSection section(self);
  NCCMATCH_OBJECT_LOCK(self);
  self->settings = new Settings();
  self->published = new Published();
  self->refused = new RefusedValues();
  self->stream = new StreamState();
  self->worker = new nccmatch::plugin::FrameWorker();
  self->cudaContext = nullptr;
  NCCMATCH_OBJECT_UNLOCK(self);
  gst_base_transform_set_in_place(GST_BASE_TRANSFORM(self), TRUE);
  // As GstVideoFilter: frames that a downstream QoS event marks late are dropped unmatched.
  gst_base_transform_set_qos_enabled(GST_BASE_TRANSFORM(self), TRUE);
}

static void gst_nccmatch_class_init(GstNccMatchClass* klass) {
  GObjectClass* gobject_class = G_OBJECT_CLASS(klass);
  GstElementClass* element_class = GST_ELEMENT_CLASS(klass);
  GstBaseTransformClass* trans_class = GST_BASE_TRANSFORM_CLASS(klass);
  GstVideoFilterClass* filter_class = GST_VIDEO_FILTER_CLASS(klass);

  GST_DEBUG_CATEGORY_INIT(gst_nccmatch_debug, "nccmatch", 0, "nccmatch template matching");

  gobject_class->set_property = setProperty;
  gobject_class->get_property = getProperty;
  gobject_class->finalize = gst_nccmatch_finalize;
  installProperties(gobject_class);

  // gboolean grab-template(gchar* name, gint x, gint y, gint width, gint height)
  g_signal_new_class_handler("grab-template", G_TYPE_FROM_CLASS(klass),
                             static_cast<GSignalFlags>(G_SIGNAL_RUN_LAST | G_SIGNAL_ACTION),
                             G_CALLBACK(gst_nccmatch_grab_template), nullptr, nullptr, nullptr, G_TYPE_BOOLEAN, 5,
                             G_TYPE_STRING, G_TYPE_INT, G_TYPE_INT, G_TYPE_INT, G_TYPE_INT);

  gst_element_class_set_static_metadata(
      element_class, "Template matching (normalized cross-correlation)", "Filter/Analyzer/Video",
      "Finds template images in video frames (luma plane) with OpenCV's six matchTemplate scores; a drop-in "
      "for templatematch with several templates, several matches, a threshold, ROI meta and GPU support",
      "nccmatch developers");
  GstCaps* caps = gst_caps_from_string(nccmatch::plugin::kHaveGstCuda ? NCCMATCH_SYSTEM_CAPS "; " NCCMATCH_CUDA_CAPS
                                                                     : NCCMATCH_SYSTEM_CAPS);
  gst_element_class_add_pad_template(element_class, gst_pad_template_new("sink", GST_PAD_SINK, GST_PAD_ALWAYS, caps));
  gst_element_class_add_pad_template(element_class, gst_pad_template_new("src", GST_PAD_SRC, GST_PAD_ALWAYS, caps));
  gst_caps_unref(caps);

  trans_class->start = GST_DEBUG_FUNCPTR(gst_nccmatch_start);
  trans_class->stop = GST_DEBUG_FUNCPTR(gst_nccmatch_stop);
  trans_class->passthrough_on_same_caps = FALSE;
  trans_class->transform_caps = GST_DEBUG_FUNCPTR(gst_nccmatch_transform_caps);
  trans_class->submit_input_buffer = GST_DEBUG_FUNCPTR(gst_nccmatch_submit_input_buffer);
  trans_class->generate_output = GST_DEBUG_FUNCPTR(gst_nccmatch_generate_output);
  trans_class->propose_allocation = GST_DEBUG_FUNCPTR(gst_nccmatch_propose_allocation);
  trans_class->sink_event = GST_DEBUG_FUNCPTR(gst_nccmatch_sink_event);
  trans_class->query = GST_DEBUG_FUNCPTR(gst_nccmatch_query);
#ifdef NCCMATCH_HAVE_GST_CUDA
  element_class->set_context = GST_DEBUG_FUNCPTR(gst_nccmatch_set_context);
#endif
  filter_class->set_info = GST_DEBUG_FUNCPTR(gst_nccmatch_set_info);

  gst_type_mark_as_plugin_api(GST_TYPE_NCCMATCH_METHOD, static_cast<GstPluginAPIFlags>(0));
  gst_type_mark_as_plugin_api(GST_TYPE_NCCMATCH_DEVICE, static_cast<GstPluginAPIFlags>(0));
  gst_type_mark_as_plugin_api(GST_TYPE_NCCMATCH_MODE, static_cast<GstPluginAPIFlags>(0));
  gst_type_mark_as_plugin_api(GST_TYPE_NCCMATCH_ROTATION_SUPPORT, static_cast<GstPluginAPIFlags>(0));
}
