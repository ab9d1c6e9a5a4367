// The `nccmatch` element. It maps frames, keeps the template bank current, and hands each frame's
// luma plane to the engine (nccmatch_dep); reporting and drawing live in their own units.
#include "gstnccmatch.hpp"

#include <gst/video/video.h>

#include <cmath>
#include <memory>
#include <string>
#include <vector>

#include "box_drawing.hpp"
#include "match_reporting.hpp"
#include "nccmatch/engine.hpp"
#include "nccmatch_settings.hpp"
#include "template_loader.hpp"

GST_DEBUG_CATEGORY_STATIC(gst_nccmatch_debug);
#define GST_CAT_DEFAULT gst_nccmatch_debug

using nccmatch::plugin::Settings;

namespace {

// What only the streaming thread (and start/stop, while it is stopped) touches.
struct StreamState {
  std::unique_ptr<nccmatch::Engine> engine;
  uint64_t loadedGeneration = 0;
  std::vector<std::string> names;   // template names of the engine's bank, by index
  std::vector<bool> oversizeWarned; // per template: "larger than the frame" already posted
  int frameWidth = 0;
  int frameHeight = 0;
};

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
};

constexpr GParamFlags kPlayingFlags = static_cast<GParamFlags>(
    G_PARAM_READWRITE | G_PARAM_STATIC_STRINGS | GST_PARAM_MUTABLE_PLAYING);
constexpr GParamFlags kReadyFlags = static_cast<GParamFlags>(
    G_PARAM_READWRITE | G_PARAM_STATIC_STRINGS | GST_PARAM_MUTABLE_READY);

// The engine accepts frames up to 16384x16384; saying so in the caps makes a larger stream fail
// negotiation instead of every frame.
#define NCCMATCH_CAPS                                                                              \
  "video/x-raw, format = (string) { GRAY8, I420, NV12 }, width = (int) [ 1, 16384 ], height = (int) " \
  "[ 1, 16384 ], framerate = (fraction) [ 0/1, max ]"

}  // namespace

struct _GstNccMatch {
  GstVideoFilter parent;
  Settings* settings;    // guarded by the object lock
  StreamState* stream;   // streaming thread only
};

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

Settings copySettings(GstNccMatch* self) {
  GST_OBJECT_LOCK(self);
  Settings copy = *self->settings;
  GST_OBJECT_UNLOCK(self);
  return copy;
}

void postLoadError(GstNccMatch* self, const nccmatch::plugin::TemplateLoadError& error) {
  using nccmatch::plugin::TemplateLoadFailure;
  switch (error.kind) {
    case TemplateLoadFailure::NotFound:
      GST_ELEMENT_ERROR(self, RESOURCE, NOT_FOUND, ("%s", error.message.c_str()), (nullptr));
      break;
    case TemplateLoadFailure::Unreadable:
      GST_ELEMENT_ERROR(self, RESOURCE, OPEN_READ, ("%s", error.message.c_str()), (nullptr));
      break;
    default:
      GST_ELEMENT_ERROR(self, STREAM, DECODE, ("%s", error.message.c_str()), (nullptr));
      break;
  }
}

void postLoadWarning(GstNccMatch* self, const nccmatch::plugin::TemplateLoadError& error) {
  using nccmatch::plugin::TemplateLoadFailure;
  std::string text = error.message + "; keeping the previous templates";
  switch (error.kind) {
    case TemplateLoadFailure::NotFound:
      GST_ELEMENT_WARNING(self, RESOURCE, NOT_FOUND, ("%s", text.c_str()), (nullptr));
      break;
    case TemplateLoadFailure::Unreadable:
      GST_ELEMENT_WARNING(self, RESOURCE, OPEN_READ, ("%s", text.c_str()), (nullptr));
      break;
    default:
      GST_ELEMENT_WARNING(self, STREAM, DECODE, ("%s", text.c_str()), (nullptr));
      break;
  }
}

// Hands a freshly loaded bank to the engine.
bool installBank(GstNccMatch* self, std::vector<nccmatch::TemplateImage> bank) {
  StreamState& stream = *self->stream;
  std::vector<std::string> names;
  for (const nccmatch::TemplateImage& t : bank) names.push_back(t.name);
  nccmatch::Status status = stream.engine->setTemplates(std::move(bank));
  if (!status.ok()) {
    GST_ELEMENT_ERROR(self, LIBRARY, SETTINGS, ("Could not prepare the templates: %s", status.message().c_str()),
                      (nullptr));
    return false;
  }
  stream.names = std::move(names);
  stream.oversizeWarned.assign(stream.names.size(), false);
  GST_INFO_OBJECT(self, "loaded %zu template(s)", stream.names.size());
  return true;
}

// Reloads the bank when `template`/`templates` changed since the last load. A failure while
// running keeps the previous bank (as templatematch) and posts a warning, once per change.
bool refreshBank(GstNccMatch* self, const Settings& settings) {
  StreamState& stream = *self->stream;
  if (settings.templatesGeneration == stream.loadedGeneration) return true;
  stream.loadedGeneration = settings.templatesGeneration;
  std::vector<nccmatch::TemplateImage> bank;
  nccmatch::plugin::TemplateLoadError error;
  if (!nccmatch::plugin::loadTemplateBank(settings.templateFiles, &bank, &error)) {
    postLoadWarning(self, error);
    return true;
  }
  return installBank(self, std::move(bank));
}

// The engine skips templates larger than the frame; say so once per template and frame size.
void warnOversizedTemplates(GstNccMatch* self) {
  StreamState& stream = *self->stream;
  const std::vector<nccmatch::TemplateImage>& bank = stream.engine->templates();
  for (std::size_t i = 0; i < bank.size() && i < stream.oversizeWarned.size(); ++i) {
    if (stream.oversizeWarned[i]) continue;
    if (bank[i].width <= stream.frameWidth && bank[i].height <= stream.frameHeight) continue;
    stream.oversizeWarned[i] = true;
    GST_ELEMENT_WARNING(self, STREAM, FORMAT,
                        ("Template %zu ('%s', %dx%d) is larger than the %dx%d frame; it is skipped", i,
                         bank[i].name.c_str(), bank[i].width, bank[i].height, stream.frameWidth,
                         stream.frameHeight),
                        (nullptr));
  }
}

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
                  GstBuffer* buffer) {
  if (!result.best.empty() && result.best[0].has_value()) {
    GstStructure* s = nccmatch::plugin::makeTemplateMatchStructure(*result.best[0], settings.method);
    gst_element_post_message(GST_ELEMENT(self), gst_message_new_element(GST_OBJECT(self), s));
  }
  GstStructure* s =
      nccmatch::plugin::makeNccMatchStructure(result.matches, self->stream->names, frameTiming(self, buffer));
  gst_element_post_message(GST_ELEMENT(self), gst_message_new_element(GST_OBJECT(self), s));
}

// ---- GstBaseTransform / GstVideoFilter virtual methods ----

gboolean gst_nccmatch_start(GstBaseTransform* trans) {
  GstNccMatch* self = GST_NCCMATCH(trans);
  Settings settings = copySettings(self);
  StreamState& stream = *self->stream;

  nccmatch::EngineOptions options;
  options.backend = settings.device;
  nccmatch::Status status = nccmatch::Engine::create(options, &stream.engine);
  if (!status.ok()) {
    GST_ELEMENT_ERROR(self, RESOURCE, SETTINGS, ("Could not start the matching engine (device=%s): %s",
                                                 nccmatch::backendName(settings.device), status.message().c_str()),
                      (nullptr));
    return FALSE;
  }
  GST_INFO_OBJECT(self, "engine backend: %s", nccmatch::backendName(stream.engine->backend()));

  std::vector<nccmatch::TemplateImage> bank;
  nccmatch::plugin::TemplateLoadError error;
  if (!nccmatch::plugin::loadTemplateBank(settings.templateFiles, &bank, &error)) {
    postLoadError(self, error);
    stream.engine.reset();
    return FALSE;
  }
  if (settings.templateFiles.empty())
    GST_WARNING_OBJECT(self, "no template set: frames pass through without matches");
  stream.loadedGeneration = settings.templatesGeneration;
  if (!installBank(self, std::move(bank))) {
    stream.engine.reset();
    return FALSE;
  }
  return TRUE;
}

gboolean gst_nccmatch_stop(GstBaseTransform* trans) {
  GstNccMatch* self = GST_NCCMATCH(trans);
  *self->stream = StreamState();
  return TRUE;
}

gboolean gst_nccmatch_set_info(GstVideoFilter* filter, GstCaps*, GstVideoInfo* in_info, GstCaps*, GstVideoInfo*) {
  GstNccMatch* self = GST_NCCMATCH(filter);
  StreamState& stream = *self->stream;
  if (GST_VIDEO_INFO_WIDTH(in_info) != stream.frameWidth || GST_VIDEO_INFO_HEIGHT(in_info) != stream.frameHeight)
    stream.oversizeWarned.assign(stream.names.size(), false);
  stream.frameWidth = GST_VIDEO_INFO_WIDTH(in_info);
  stream.frameHeight = GST_VIDEO_INFO_HEIGHT(in_info);
  return TRUE;
}

GstFlowReturn gst_nccmatch_transform_frame_ip(GstVideoFilter* filter, GstVideoFrame* frame) {
  GstNccMatch* self = GST_NCCMATCH(filter);
  StreamState& stream = *self->stream;
  if (!stream.engine) {
    GST_ELEMENT_ERROR(self, CORE, FAILED, ("nccmatch received a frame before it was started"), (nullptr));
    return GST_FLOW_ERROR;
  }
  Settings settings = copySettings(self);
  if (!refreshBank(self, settings)) return GST_FLOW_ERROR;
  warnOversizedTemplates(self);

  nccmatch::FrameView view;
  view.data = static_cast<const uint8_t*>(GST_VIDEO_FRAME_PLANE_DATA(frame, 0));
  view.width = GST_VIDEO_FRAME_WIDTH(frame);
  view.height = GST_VIDEO_FRAME_HEIGHT(frame);
  view.stride = std::size_t(GST_VIDEO_FRAME_PLANE_STRIDE(frame, 0));
  view.memory = nccmatch::MemoryKind::Host;

  nccmatch::FrameResult result;
  if (!stream.names.empty()) {
    nccmatch::Status status = stream.engine->match(view, settings.matchParams(), &result);
    if (!status.ok()) {
      GST_ELEMENT_ERROR(self, LIBRARY, FAILED, ("Template matching failed: %s", status.message().c_str()),
                        (nullptr));
      return GST_FLOW_ERROR;
    }
  }

  nccmatch::plugin::attachRoiMetas(frame->buffer, result.matches, stream.names);
  if (settings.postMessages) postMessages(self, settings, result, frame->buffer);
  if (settings.display) {
    nccmatch::plugin::PlaneView plane{static_cast<uint8_t*>(GST_VIDEO_FRAME_PLANE_DATA(frame, 0)), view.width,
                                      view.height, view.stride};
    for (const nccmatch::Match& m : result.matches)
      nccmatch::plugin::drawMatchBox(plane, {m.x, m.y, m.width, m.height});
  }
  return GST_FLOW_OK;
}

// ---- GObject ----

void gst_nccmatch_set_property(GObject* object, guint prop_id, const GValue* value, GParamSpec* pspec) {
  GstNccMatch* self = GST_NCCMATCH(object);
  GST_OBJECT_LOCK(self);
  Settings& s = *self->settings;
  switch (prop_id) {
    case PROP_TEMPLATE: {
      const char* file = g_value_get_string(value);
      s.templateFiles.clear();
      if (file != nullptr && file[0] != '\0') s.templateFiles.emplace_back(file);
      ++s.templatesGeneration;
      break;
    }
    case PROP_TEMPLATES:
      s.templateFiles = nccmatch::plugin::parseTemplateList(g_value_get_string(value));
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
    default:
      G_OBJECT_WARN_INVALID_PROPERTY_ID(object, prop_id, pspec);
      break;
  }
  GST_OBJECT_UNLOCK(self);
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
    default:
      G_OBJECT_WARN_INVALID_PROPERTY_ID(object, prop_id, pspec);
      break;
  }
  GST_OBJECT_UNLOCK(self);
}

void gst_nccmatch_finalize(GObject* object) {
  GstNccMatch* self = GST_NCCMATCH(object);
  delete self->stream;
  delete self->settings;
  G_OBJECT_CLASS(gst_nccmatch_parent_class)->finalize(object);
}

}  // namespace

static void gst_nccmatch_init(GstNccMatch* self) {
  self->settings = new Settings();
  self->stream = new StreamState();
  gst_base_transform_set_in_place(GST_BASE_TRANSFORM(self), TRUE);
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

  gst_element_class_set_static_metadata(
      element_class, "Template matching (normalized cross-correlation)", "Filter/Analyzer/Video",
      "Finds template images in video frames (luma plane) with OpenCV's six matchTemplate scores; a drop-in "
      "for templatematch with several templates, several matches, a threshold, ROI meta and GPU support",
      "nccmatch developers");
  GstCaps* caps = gst_caps_from_string(NCCMATCH_CAPS);
  gst_element_class_add_pad_template(element_class, gst_pad_template_new("sink", GST_PAD_SINK, GST_PAD_ALWAYS, caps));
  gst_element_class_add_pad_template(element_class, gst_pad_template_new("src", GST_PAD_SRC, GST_PAD_ALWAYS, caps));
  gst_caps_unref(caps);

  trans_class->start = GST_DEBUG_FUNCPTR(gst_nccmatch_start);
  trans_class->stop = GST_DEBUG_FUNCPTR(gst_nccmatch_stop);
  trans_class->passthrough_on_same_caps = FALSE;
  filter_class->set_info = GST_DEBUG_FUNCPTR(gst_nccmatch_set_info);
  filter_class->transform_frame_ip = GST_DEBUG_FUNCPTR(gst_nccmatch_transform_frame_ip);

  gst_type_mark_as_plugin_api(GST_TYPE_NCCMATCH_METHOD, static_cast<GstPluginAPIFlags>(0));
  gst_type_mark_as_plugin_api(GST_TYPE_NCCMATCH_DEVICE, static_cast<GstPluginAPIFlags>(0));
}
