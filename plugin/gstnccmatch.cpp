// The `nccmatch` element's GObject and GstBaseTransform side: type, properties, caps, allocation,
// events and queries. Templates and the engine: element_engine.cpp; frames in flight (submit,
// hold, finish, push): element_frames.cpp; reporting and drawing in their own units.
#include "gstnccmatch.hpp"

#include <gst/video/video.h>

#include <cmath>
#include <string>
#include <vector>

#include "element_engine.hpp"
#include "element_frames.hpp"
#include "element_state.hpp"
#include "pinned_allocator.hpp"

GST_DEBUG_CATEGORY(gst_nccmatch_debug);
#define GST_CAT_DEFAULT gst_nccmatch_debug

using nccmatch::plugin::Settings;
using namespace nccmatch::plugin::element;

namespace {

enum {
  PROP_0,
  PROP_TEMPLATE,
  PROP_TEMPLATES,
  PROP_METHOD,
  PROP_DISPLAY,
  PROP_THRESHOLD,
  PROP_MAX_MATCHES,
  PROP_NMS_IOU,
  PROP_POST_MESSAGES,
  PROP_DEVICE,
  PROP_CUDA_DEVICE_ID,
  PROP_FRAMES_IN_FLIGHT,
  PROP_SCALES,
  PROP_SEARCH_REGION,
  PROP_CPU_THREADS,
  PROP_STATS,
};

constexpr GParamFlags kPlayingFlags = static_cast<GParamFlags>(
    G_PARAM_READWRITE | G_PARAM_STATIC_STRINGS | GST_PARAM_MUTABLE_PLAYING);
constexpr GParamFlags kReadyFlags = static_cast<GParamFlags>(
    G_PARAM_READWRITE | G_PARAM_STATIC_STRINGS | GST_PARAM_MUTABLE_READY);

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

namespace {

// ---- GstBaseTransform / GstVideoFilter virtual methods ----

// Values refused before start fail it (RefusedValues), each named in one error; otherwise the
// element counts as running from here, so values refused from now on are warned about at once.
bool claimStart(GstNccMatch* self) {
  std::string refusals;
  GST_OBJECT_LOCK(self);
  for (const auto& [property, why] : self->refused->beforeStart)
    refusals += (refusals.empty() ? "" : "; ") + ("Invalid '" + property + "': " + why);
  self->refused->running = refusals.empty();
  GST_OBJECT_UNLOCK(self);
  if (refusals.empty()) return true;
  GST_ELEMENT_ERROR(self, RESOURCE, SETTINGS, ("%s", refusals.c_str()), (nullptr));
  return false;
}

void markStopped(GstNccMatch* self) {
  GST_OBJECT_LOCK(self);
  self->refused->running = false;
  GST_OBJECT_UNLOCK(self);
}

// The engine on the backend the settings ask for, holding the bank they name.
bool startEngine(GstNccMatch* self) {
  Settings settings = copySettings(self);
  StreamState& stream = *self->stream;

  // Backend: cpu as asked; cuda or auto need a usable GPU (auto falls back, saying so once).
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

  GstCudaContext* context = nullptr;
#ifdef NCCMATCH_HAVE_GST_CUDA
  if (backend == nccmatch::Backend::Cuda) {
    context = ensureCudaContext(self, settings.cudaDeviceId);
    if (context == nullptr)
      GST_WARNING_OBJECT(self, "no GStreamer CUDA context: CUDA engine in the device's primary context, "
                               "memory:CUDAMemory input refused");
  }
#endif
  const bool created = createEngine(self, backend, settings.cudaDeviceId, context);
#ifdef NCCMATCH_HAVE_GST_CUDA
  gst_clear_object(&context);
#endif
  if (!created) return false;
  GST_INFO_OBJECT(self, "engine backend: %s%s", nccmatch::backendName(stream.engine->backend()),
                  stream.engineContext != nullptr ? " (in the shared GStreamer CUDA context)" : "");
  GST_OBJECT_LOCK(self);
  self->published->stats.reset();
  self->published->backend = nccmatch::backendName(stream.engine->backend());
  self->published->threads = stream.engine->workerThreads();
  self->published->cudaCapsAllowed = stream.engineContext != nullptr;
  GST_OBJECT_UNLOCK(self);

  std::vector<nccmatch::TemplateImage> bank;
  nccmatch::plugin::TemplateLoadError error;
  if (!nccmatch::plugin::loadTemplateBank(settings.templateFiles, &bank, &error)) {
    postLoadError(self, error);
    destroyEngine(self);
    return false;
  }
  if (settings.templateFiles.empty() && !settings.grab)
    GST_WARNING_OBJECT(self, "no template set: frames pass through without matches");
  // A grab-template request waits for the first frame: its generation stays unloaded until then.
  stream.loadedGeneration = settings.grab ? settings.templatesGeneration - 1 : settings.templatesGeneration;
  bool installed;
  {
    nccmatch::plugin::CudaContextScope scope(stream.engineContext);
    installed = installBank(self, std::move(bank), settings.scales, false);
  }
  if (!installed) {
    destroyEngine(self);
    return false;
  }
  return true;
}

gboolean gst_nccmatch_start(GstBaseTransform* trans) {
  GstNccMatch* self = GST_NCCMATCH(trans);
  if (!claimStart(self)) return FALSE;
  if (startEngine(self)) return TRUE;
  markStopped(self);
  return FALSE;
}

gboolean gst_nccmatch_stop(GstBaseTransform* trans) {
  GstNccMatch* self = GST_NCCMATCH(trans);
  markStopped(self);
  discardFramesInFlight(self);
  destroyEngine(self);
  *self->stream = StreamState();
  GST_OBJECT_LOCK(self);
  self->published->cudaCapsAllowed = true;
#ifdef NCCMATCH_HAVE_GST_CUDA
  gst_clear_object(&self->cudaContext);
#endif
  GST_OBJECT_UNLOCK(self);
  return TRUE;
}

// In place, the same caps on both sides; memory:CUDAMemory only while the engine can take it.
GstCaps* gst_nccmatch_transform_caps(GstBaseTransform* trans, GstPadDirection, GstCaps* caps, GstCaps* filter) {
  GstNccMatch* self = GST_NCCMATCH(trans);
  GST_OBJECT_LOCK(self);
  const bool cudaAllowed = self->published->cudaCapsAllowed && self->settings->device != nccmatch::Backend::Cpu;
  GST_OBJECT_UNLOCK(self);
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
  StreamState& stream = *self->stream;
  const bool cudaMemory = nccmatch::plugin::capsHaveCudaMemory(incaps);
  if (cudaMemory && stream.engineContext == nullptr) {
    GST_ELEMENT_ERROR(self, CORE, NEGOTIATION,
                      ("memory:CUDAMemory input needs the CUDA backend in a GStreamer CUDA context (device=%s, "
                       "engine: %s)",
                       nccmatch::backendName(copySettings(self).device),
                       stream.engine ? nccmatch::backendName(stream.engine->backend()) : "none"),
                      (nullptr));
    return FALSE;
  }
  stream.cudaMemoryInput = cudaMemory;
  stream.upstreamLiveKnown = false;
  stream.frameWidth = GST_VIDEO_INFO_WIDTH(in_info);
  stream.frameHeight = GST_VIDEO_INFO_HEIGHT(in_info);
  GST_OBJECT_LOCK(self);
  self->published->memory = cudaMemory ? "cuda" : "system";
  GST_OBJECT_UNLOCK(self);
  return TRUE;
}

// GstBaseTransform calls this after each input buffer and again until it hands back nothing:
// the new buffer (made writable, as an in-place transform) is submitted, and the oldest frame is
// finished and handed back once more than frames-in-flight - 1 are held. (QoS dropping happens
// before this, in GstBaseTransform's submit_input_buffer.)
GstFlowReturn gst_nccmatch_generate_output(GstBaseTransform* trans, GstBuffer** outbuf) {
  GstNccMatch* self = GST_NCCMATCH(trans);
  StreamState& stream = *self->stream;
  *outbuf = nullptr;
  if (GstBuffer* input = trans->queued_buf) {
    trans->queued_buf = nullptr;
    GstBuffer* writable = nullptr;
    GstFlowReturn flow =
        GST_BASE_TRANSFORM_CLASS(gst_nccmatch_parent_class)->prepare_output_buffer(trans, input, &writable);
    if (writable != input) gst_buffer_unref(input);
    if (flow != GST_FLOW_OK || writable == nullptr) return flow != GST_FLOW_OK ? flow : GST_FLOW_ERROR;
    flow = submitFrame(self, writable);
    if (flow != GST_FLOW_OK) return flow;
  }
  if (stream.inFlight.empty() ||
      int(stream.inFlight.size()) < framesInFlightNow(self, stream.inFlight.back().settings))
    return GST_FLOW_OK;
  InFlightFrame f = stream.inFlight.front();
  stream.inFlight.pop_front();
  *outbuf = finishFrame(self, f);
  return *outbuf != nullptr ? GST_FLOW_OK : GST_FLOW_ERROR;
}

// Upstream writing system-memory frames for the CUDA engine gets a pool of pinned memory, which
// the engine copies from asynchronously; otherwise (CPU engine, CUDA memory, no pinned memory)
// GstVideoFilter's own proposal.
gboolean gst_nccmatch_propose_allocation(GstBaseTransform* trans, GstQuery* decide_query, GstQuery* query) {
  GstNccMatch* self = GST_NCCMATCH(trans);
  GstCaps* caps = nullptr;
  gboolean needPool = FALSE;
  gst_query_parse_allocation(query, &caps, &needPool);
  const bool cudaEngine = self->stream->engine && self->stream->engine->backend() == nccmatch::Backend::Cuda;
  GstVideoInfo info;
  if (!cudaEngine || caps == nullptr || nccmatch::plugin::capsHaveCudaMemory(caps) ||
      !gst_video_info_from_caps(&info, caps))
    return GST_BASE_TRANSFORM_CLASS(gst_nccmatch_parent_class)->propose_allocation(trans, decide_query, query);
  std::string why;
  GstAllocator* allocator = nccmatch::plugin::pinnedAllocator(&why);
  if (allocator == nullptr) {
    GST_INFO_OBJECT(self, "no pinned memory (%s): frames are staged before upload", why.c_str());
    return GST_BASE_TRANSFORM_CLASS(gst_nccmatch_parent_class)->propose_allocation(trans, decide_query, query);
  }
  GstAllocationParams params;
  gst_allocation_params_init(&params);
  gboolean ok = TRUE;
  if (needPool) {
    GstBufferPool* pool = gst_video_buffer_pool_new();
    GstStructure* config = gst_buffer_pool_get_config(pool);
    gst_buffer_pool_config_set_params(config, caps, guint(GST_VIDEO_INFO_SIZE(&info)), 0, 0);
    gst_buffer_pool_config_set_allocator(config, allocator, &params);
    gst_buffer_pool_config_add_option(config, GST_BUFFER_POOL_OPTION_VIDEO_META);
    ok = gst_buffer_pool_set_config(pool, config);
    if (ok) gst_query_add_allocation_pool(query, pool, guint(GST_VIDEO_INFO_SIZE(&info)), 0, 0);
    else GST_WARNING_OBJECT(self, "the pinned buffer pool refused its configuration");
    gst_object_unref(pool);
  }
  if (ok) {
    gst_query_add_allocation_param(query, allocator, &params);
    gst_query_add_allocation_meta(query, GST_VIDEO_META_API_TYPE, nullptr);
  }
  gst_object_unref(allocator);
  return ok;
}

// Serialized events (EOS, segment, caps, gap, ...) follow the frames before them: the frames in
// flight go out first; a flush drops them. At EOS the totals go out as an element message
// "nccmatch-stats" (the `stats` property's value).
gboolean gst_nccmatch_sink_event(GstBaseTransform* trans, GstEvent* event) {
  GstNccMatch* self = GST_NCCMATCH(trans);
  if (GST_EVENT_TYPE(event) == GST_EVENT_FLUSH_STOP) discardFramesInFlight(self);
  else if (GST_EVENT_IS_SERIALIZED(event)) pushFramesInFlight(self);
  if (GST_EVENT_TYPE(event) == GST_EVENT_EOS) {
    GST_OBJECT_LOCK(self);
    GstStructure* s = nccmatch::plugin::makeStatsStructure(self->published->stats, self->published->backend,
                                                           self->published->memory, self->published->threads);
    GST_OBJECT_UNLOCK(self);
    gst_element_post_message(GST_ELEMENT(self), gst_message_new_element(GST_OBJECT(self), s));
  }
  return GST_BASE_TRANSFORM_CLASS(gst_nccmatch_parent_class)->sink_event(trans, event);
}

// The latency of the frames held in flight (frames-in-flight - 1 frame durations) adds to
// upstream's; a drain query gets every held frame pushed first.
gboolean gst_nccmatch_query(GstBaseTransform* trans, GstPadDirection direction, GstQuery* query) {
  GstNccMatch* self = GST_NCCMATCH(trans);
  if (direction == GST_PAD_SINK && GST_QUERY_TYPE(query) == GST_QUERY_DRAIN) pushFramesInFlight(self);
  if (direction == GST_PAD_SRC && GST_QUERY_TYPE(query) == GST_QUERY_LATENCY) {
    if (!GST_BASE_TRANSFORM_CLASS(gst_nccmatch_parent_class)->query(trans, direction, query)) return FALSE;
    gboolean live = FALSE;
    GstClockTime min = 0, max = GST_CLOCK_TIME_NONE;
    gst_query_parse_latency(query, &live, &min, &max);
    GST_OBJECT_LOCK(self);
    const int setting = self->settings->framesInFlight;
    const bool cuda = self->published->backend == "cuda";
    GST_OBJECT_UNLOCK(self);
    const int depth = nccmatch::plugin::framesInFlightFor(setting, cuda, live, nccmatch::Engine::kMaxFramesInFlight);
    const GstVideoInfo* info = &GST_VIDEO_FILTER(self)->in_info;
    GstClockTime held = 0;
    if (depth > 1 && GST_VIDEO_INFO_FPS_N(info) > 0)
      held = gst_util_uint64_scale_int(GST_SECOND * guint64(depth - 1), GST_VIDEO_INFO_FPS_D(info),
                                       GST_VIDEO_INFO_FPS_N(info));
    GST_DEBUG_OBJECT(self, "latency: %d frame(s) in flight hold %" GST_TIME_FORMAT, depth, GST_TIME_ARGS(held));
    gst_query_set_latency(query, live, min + held, GST_CLOCK_TIME_IS_VALID(max) ? max + held : max);
    return TRUE;
  }
#ifdef NCCMATCH_HAVE_GST_CUDA
  if (GST_QUERY_TYPE(query) == GST_QUERY_CONTEXT) {
    GST_OBJECT_LOCK(self);
    GstCudaContext* context =
        self->cudaContext != nullptr ? static_cast<GstCudaContext*>(gst_object_ref(self->cudaContext)) : nullptr;
    GST_OBJECT_UNLOCK(self);
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
  GST_OBJECT_LOCK(self);
  const int deviceId = self->settings->cudaDeviceId;
  GstCudaContext* current = self->cudaContext;
  self->cudaContext = nullptr;
  GST_OBJECT_UNLOCK(self);
  gst_cuda_handle_set_context(element, context, deviceId, &current);
  GST_OBJECT_LOCK(self);
  if (self->cudaContext == nullptr) self->cudaContext = current;
  else if (current != nullptr) gst_object_unref(current);
  GST_OBJECT_UNLOCK(self);
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
  GST_OBJECT_LOCK(self);
  Settings& s = *self->settings;
  s.templateFiles.clear();
  s.grab = request;
  ++s.templatesGeneration;
  GST_OBJECT_UNLOCK(self);
  return TRUE;
}

// Records how setting a parsed string property went: true when the refusal is to be posted now as
// a warning (the element runs); before start it is kept for start() to fail on, until a valid value
// of that property is set.
bool noteRefusal(RefusedValues& refused, const char* property, const std::string& refusal) {
  if (refusal.empty()) {
    refused.beforeStart.erase(property);
    return false;
  }
  if (refused.running) return true;
  refused.beforeStart[property] = refusal;
  return false;
}

void gst_nccmatch_set_property(GObject* object, guint prop_id, const GValue* value, GParamSpec* pspec) {
  GstNccMatch* self = GST_NCCMATCH(object);
  std::string refusal;  // why a `scales` or `search-region` value was refused; empty: accepted
  GST_OBJECT_LOCK(self);
  Settings& s = *self->settings;
  switch (prop_id) {
    case PROP_TEMPLATE: {
      const char* file = g_value_get_string(value);
      s.templateFiles.clear();
      if (file != nullptr && file[0] != '\0') s.templateFiles.emplace_back(file);
      s.grab.reset();
      ++s.templatesGeneration;
      break;
    }
    case PROP_TEMPLATES:
      s.templateFiles = nccmatch::plugin::parseTemplateList(g_value_get_string(value));
      s.grab.reset();
      ++s.templatesGeneration;
      break;
    case PROP_METHOD:
      s.method = static_cast<nccmatch::Method>(g_value_get_enum(value));
      break;
    case PROP_DISPLAY:
      s.display = g_value_get_boolean(value);
      break;
    case PROP_THRESHOLD: {
      double threshold = g_value_get_double(value);
      if (std::isnan(threshold))
        GST_WARNING_OBJECT(self, "threshold NaN ignored; keeping %g", s.threshold);
      else
        s.threshold = threshold;
      break;
    }
    case PROP_MAX_MATCHES:
      s.maxMatches = int(MIN(g_value_get_uint(value), guint(G_MAXINT)));
      break;
    case PROP_NMS_IOU: {
      double iou = g_value_get_double(value);
      if (!(iou >= 0.0 && iou <= 1.0))
        GST_WARNING_OBJECT(self, "nms-iou %g ignored (must be 0..1); keeping %g", iou, s.nmsIou);
      else
        s.nmsIou = iou;
      break;
    }
    case PROP_POST_MESSAGES:
      s.postMessages = g_value_get_boolean(value);
      break;
    case PROP_DEVICE:
      s.device = static_cast<nccmatch::Backend>(g_value_get_enum(value));
      break;
    case PROP_CUDA_DEVICE_ID:
      s.cudaDeviceId = g_value_get_int(value);
      break;
    case PROP_FRAMES_IN_FLIGHT:
      s.framesInFlight = int(g_value_get_uint(value));
      break;
    case PROP_SCALES: {
      std::vector<double> scales = s.scales;
      if (nccmatch::plugin::parseScaleList(g_value_get_string(value), &scales, &refusal) && scales != s.scales) {
        s.scales = std::move(scales);
        ++s.templatesGeneration;  // the bank is made again before the next frame
      }
      break;
    }
    case PROP_SEARCH_REGION:
      nccmatch::plugin::parseSearchRegion(g_value_get_string(value), &s.searchRegion, &refusal);
      break;
    case PROP_CPU_THREADS:
      s.cpuThreads = int(g_value_get_uint(value));
      break;
    default:
      G_OBJECT_WARN_INVALID_PROPERTY_ID(object, prop_id, pspec);
      break;
  }
  const bool warnNow =
      (prop_id == PROP_SCALES || prop_id == PROP_SEARCH_REGION) && noteRefusal(*self->refused, pspec->name, refusal);
  GST_OBJECT_UNLOCK(self);
  // Posted outside the object lock: posting takes it.
  if (warnNow)
    GST_ELEMENT_WARNING(self, RESOURCE, SETTINGS, ("Invalid '%s': %s; keeping the previous %s", pspec->name,
                                                   refusal.c_str(), prop_id == PROP_SCALES ? "factors" : "region"),
                        (nullptr));
}

void gst_nccmatch_get_property(GObject* object, guint prop_id, GValue* value, GParamSpec* pspec) {
  GstNccMatch* self = GST_NCCMATCH(object);
  GST_OBJECT_LOCK(self);
  const Settings& s = *self->settings;
  switch (prop_id) {
    case PROP_TEMPLATE:
      g_value_set_string(value, s.templateFiles.empty() ? nullptr : s.templateFiles.front().c_str());
      break;
    case PROP_TEMPLATES:
      g_value_set_string(value, s.templateFiles.empty() ? nullptr
                                                        : nccmatch::plugin::joinTemplateList(s.templateFiles).c_str());
      break;
    case PROP_METHOD:
      g_value_set_enum(value, int(s.method));
      break;
    case PROP_DISPLAY:
      g_value_set_boolean(value, s.display);
      break;
    case PROP_THRESHOLD:
      g_value_set_double(value, s.threshold);
      break;
    case PROP_MAX_MATCHES:
      g_value_set_uint(value, guint(s.maxMatches));
      break;
    case PROP_NMS_IOU:
      g_value_set_double(value, s.nmsIou);
      break;
    case PROP_POST_MESSAGES:
      g_value_set_boolean(value, s.postMessages);
      break;
    case PROP_DEVICE:
      g_value_set_enum(value, int(s.device));
      break;
    case PROP_CUDA_DEVICE_ID:
      g_value_set_int(value, s.cudaDeviceId);
      break;
    case PROP_FRAMES_IN_FLIGHT:
      g_value_set_uint(value, guint(s.framesInFlight));
      break;
    case PROP_SCALES:
      g_value_set_string(value, nccmatch::plugin::joinScaleList(s.scales).c_str());
      break;
    case PROP_SEARCH_REGION:
      g_value_set_string(value, nccmatch::plugin::joinSearchRegion(s.searchRegion).c_str());
      break;
    case PROP_CPU_THREADS:
      g_value_set_uint(value, guint(s.cpuThreads));
      break;
    case PROP_STATS:
      g_value_take_boxed(value, nccmatch::plugin::makeStatsStructure(self->published->stats, self->published->backend,
                                                                     self->published->memory,
                                                                     self->published->threads));
      break;
    default:
      G_OBJECT_WARN_INVALID_PROPERTY_ID(object, prop_id, pspec);
      break;
  }
  GST_OBJECT_UNLOCK(self);
}

void gst_nccmatch_finalize(GObject* object) {
  GstNccMatch* self = GST_NCCMATCH(object);
  delete self->stream;
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
  self->settings = new Settings();
  self->published = new Published();
  self->refused = new RefusedValues();
  self->stream = new StreamState();
  self->cudaContext = nullptr;
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

  gobject_class->set_property = gst_nccmatch_set_property;
  gobject_class->get_property = gst_nccmatch_get_property;
  gobject_class->finalize = gst_nccmatch_finalize;

  g_object_class_install_property(
      gobject_class, PROP_TEMPLATE,
      g_param_spec_string(
          "template", "Template",
          "Image file to search for (any format GStreamer decodes: PNG, JPEG, PGM, ...; converted to 8-bit "
          "gray). Replaces the whole template list with this one file, as templatematch's property. May be set "
          "while PLAYING: the new file is loaded before the next frame; if it cannot be loaded a warning is "
          "posted and the previous templates stay. Reading it gives the first template file",
          nullptr, kPlayingFlags));
  g_object_class_install_property(
      gobject_class, PROP_TEMPLATES,
      g_param_spec_string(
          "templates", "Templates",
          "Comma-separated list of image files, all searched for in every frame (template index = position "
          "in the list, template name = file name without extension). Replaces the list set by 'template'. "
          "May be set while PLAYING (same rules as 'template'). A missing or undecodable file stops the "
          "pipeline at start with an error naming the file",
          nullptr, kPlayingFlags));
  g_object_class_install_property(
      gobject_class, PROP_METHOD,
      g_param_spec_enum("method", "Method",
                        "Matching score, OpenCV's matchTemplate methods with templatematch's values 0-5. For "
                        "sqdiff and sqdiff-normed lower scores are better matches (and 'threshold' is an upper "
                        "limit); for the others higher is better",
                        GST_TYPE_NCCMATCH_METHOD, int(nccmatch::plugin::kDefaultMethod), kPlayingFlags));
  g_object_class_install_property(
      gobject_class, PROP_DISPLAY,
      g_param_spec_boolean("display", "Display",
                           "Draw a box around each match on the luma plane (white 2-pixel ring with a black "
                           "1-pixel ring inside; boxes are gray-level only on I420/NV12)",
                           nccmatch::plugin::kDefaultDisplay, kPlayingFlags));
  g_object_class_install_property(
      gobject_class, PROP_THRESHOLD,
      g_param_spec_double(
          "threshold", "Threshold",
          "A position is a match when its score is >= threshold (<= threshold for sqdiff and sqdiff-normed). "
          "Any value is accepted because the unnormalised methods (sqdiff, ccorr, ccoeff) have large scores; "
          "for the normalised methods it lies in 0..1 (-1..1 for ccoeff-normed). NaN is ignored. The "
          "template_match message reports the best position regardless of the threshold",
          -G_MAXDOUBLE, G_MAXDOUBLE, nccmatch::plugin::kDefaultThreshold, kPlayingFlags));
  g_object_class_install_property(
      gobject_class, PROP_MAX_MATCHES,
      g_param_spec_uint("max-matches", "Maximum matches",
                        "At most this many matches per template and frame, best first (0: report none; the "
                        "template_match message is still posted)",
                        0, G_MAXINT, guint(nccmatch::plugin::kDefaultMaxMatches), kPlayingFlags));
  g_object_class_install_property(
      gobject_class, PROP_NMS_IOU,
      g_param_spec_double("nms-iou", "NMS IoU limit",
                          "Non-maximum suppression: a match whose box overlaps a better match of the same "
                          "template by more than this intersection-over-union is dropped (0: boxes may not "
                          "overlap at all; 1: keep overlapping boxes)",
                          0.0, 1.0, nccmatch::plugin::kDefaultNmsIou, kPlayingFlags));
  g_object_class_install_property(
      gobject_class, PROP_POST_MESSAGES,
      g_param_spec_boolean("post-messages", "Post messages",
                           "Post per frame the element messages 'template_match' (best position of the first "
                           "template, as templatematch) and 'nccmatch' (every match of every template, with "
                           "timestamps). Region-of-interest meta is attached to buffers either way",
                           nccmatch::plugin::kDefaultPostMessages, kPlayingFlags));
  g_object_class_install_property(
      gobject_class, PROP_DEVICE,
      g_param_spec_enum("device", "Device",
                        "Where matching runs. 'cuda' when this build has no CUDA backend or no GPU is usable "
                        "makes the element fail to start with an error saying why",
                        GST_TYPE_NCCMATCH_DEVICE, int(nccmatch::plugin::kDefaultDevice), kReadyFlags));
  g_object_class_install_property(
      gobject_class, PROP_CUDA_DEVICE_ID,
      g_param_spec_int("cuda-device-id", "CUDA device id",
                       "GPU to match on with the CUDA backend (-1: the device of the CUDA context shared by "
                       "neighbouring CUDA elements, or else the first device)",
                       -1, G_MAXINT, nccmatch::plugin::kDefaultCudaDeviceId, kReadyFlags));
  g_object_class_install_property(
      gobject_class, PROP_FRAMES_IN_FLIGHT,
      g_param_spec_uint(
          "frames-in-flight", "Frames in flight",
          "Frames matched at once: a frame is pushed when this many later ones have been handed to the "
          "engine, so on the GPU frame n+1 uploads while frame n is matched and upstream works meanwhile. "
          "Each held frame adds one frame duration to the latency the element reports; output order and "
          "content do not change. 0 (auto): 2 on the CUDA backend, 1 (no holding) on the CPU or when "
          "upstream is live",
          0, guint(nccmatch::Engine::kMaxFramesInFlight), guint(nccmatch::plugin::kDefaultFramesInFlight),
          kPlayingFlags));
  g_object_class_install_property(
      gobject_class, PROP_SCALES,
      g_param_spec_string(
          "scales", "Scales",
          "Comma-separated scale factors (0.01-16) at which every template is searched for, e.g. "
          "\"0.8,0.9,1,1.1,1.25\": each template is resized once per factor (area averaging down, linear "
          "interpolation up) and the matches of all its sizes are merged best first with the same NMS and "
          "max-matches; a match's 'scale' field says at which factor it was found and its box has that "
          "size. Compare scores across sizes with a normalised method (the unnormalised scores grow with "
          "the box). May be set while PLAYING (the templates are made again before the next frame). An "
          "invalid list set while running posts a warning naming the bad entry and keeps the previous factors; "
          "set before start it makes start fail with an error naming it. Empty: 1",
          "1", kPlayingFlags));
  g_object_class_install_property(
      gobject_class, PROP_SEARCH_REGION,
      g_param_spec_string(
          "search-region", "Search region",
          "Only this part of each frame is searched: \"x,y,width,height\" in frame pixels (empty: the whole "
          "frame). A region reaching past the frame's edge is moved inside it with its size kept (a side "
          "longer than the frame's is cut to it), so a tracker's region keeps one size. A match's box lies "
          "wholly inside the region searched and is reported in frame coordinates. A tracker moves it to "
          "the last match each frame (settable while PLAYING, taking effect on the next frame): the work per "
          "frame then follows the region's area, not the frame's. A template larger than the region is skipped with a "
          "warning. An invalid value set while running warns and keeps the previous region; set before start "
          "it makes start fail with an error saying what is wrong",
          "", kPlayingFlags));
  g_object_class_install_property(
      gobject_class, PROP_CPU_THREADS,
      g_param_spec_uint("cpu-threads", "CPU threads",
                        "Threads the CPU backend matches on (0: one per core). Several pipelines on one "
                        "machine can share its cores this way; the CUDA backend matches on the GPU and "
                        "ignores it. Read at start; the stats' 'threads' field gives the number in use",
                        0, guint(nccmatch::plugin::kMaxCpuThreads), guint(nccmatch::plugin::kDefaultCpuThreads),
                        kReadyFlags));
  g_object_class_install_property(
      gobject_class, PROP_STATS,
      g_param_spec_boxed("stats", "Statistics",
                         "Frames matched since start, mean and max wall-clock time of the engine's match per "
                         "frame in microseconds (CUDA: including the wait for the GPU), the backend in use, the "
                         "input memory and the host threads matching (nccmatch-stats structure; also posted as an "
                         "element message at EOS)",
                         GST_TYPE_STRUCTURE, static_cast<GParamFlags>(G_PARAM_READABLE | G_PARAM_STATIC_STRINGS)));

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
}
