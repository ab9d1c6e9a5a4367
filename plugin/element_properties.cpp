// The element's properties: their specs (flags say which may change while PLAYING) and how a
// value is stored in the settings under the object lock or read back.
#include "element_properties.hpp"

#include <cmath>
#include <string>

#include "element_state.hpp"

#define GST_CAT_DEFAULT gst_nccmatch_debug

using nccmatch::plugin::Settings;

namespace nccmatch::plugin::element {

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
  PROP_SETTINGS_GENERATION,
  PROP_MODE,
  PROP_SEARCH_MARGIN,
  PROP_LOST_FRAMES,
  PROP_ACQUIRE_INTERVAL,
  PROP_TEMPLATE_UPDATE,
  PROP_MASKS,
  PROP_ANGLES,
  PROP_ROTATION_SUPPORT,
  PROP_PYRAMID_LEVELS,
  PROP_REGISTER_UPSTREAM,
  PROP_WORKER_THREAD,
  PROP_CUDA_LANES,
};

constexpr GParamFlags kPlayingFlags = static_cast<GParamFlags>(
    G_PARAM_READWRITE | G_PARAM_STATIC_STRINGS | GST_PARAM_MUTABLE_PLAYING);
constexpr GParamFlags kReadyFlags = static_cast<GParamFlags>(
    G_PARAM_READWRITE | G_PARAM_STATIC_STRINGS | GST_PARAM_MUTABLE_READY);

}  // namespace

// Records how setting a parsed string property went: true when the refusal is to be posted now as
// a warning (the element runs); before start it is kept for start() to fail on, until a valid value
// of that property is set.
namespace {

bool noteRefusal(RefusedValues& refused, const char* property, const std::string& refusal) {
  if (refusal.empty()) {
    refused.beforeStart.erase(property);
    return false;
  }
  if (refused.running) return true;
  refused.beforeStart[property] = refusal;
  return false;
}

// Whether `value` lies in the double property's declared range. GObject checks a double against
// its spec at float precision (GLib 2.74: 1 + 2e-16 passes for 0..1, so does -1e-300 for 0..), so
// such a value reaches set_property: it is refused here as GObject refuses the others, with a
// g_warning naming the value and the range, never silently.
bool inDeclaredRange(GParamSpec* pspec, double value, double kept) {
  const GParamSpecDouble* spec = G_PARAM_SPEC_DOUBLE(pspec);
  if (value >= spec->minimum && value <= spec->maximum) return true;
  g_warning("value %.17g of type 'gdouble' is out of range for property '%s' (%g..%g); keeping %g", value,
            pspec->name, spec->minimum, spec->maximum, kept);
  return false;
}

}  // namespace

void setProperty(GObject* object, guint prop_id, const GValue* value, GParamSpec* pspec) {
  GstNccMatch* self = GST_NCCMATCH(object);
  std::string refusal;  // why a `scales`, `angles` or `search-region` value was refused; empty: accepted
  bool readAtStartChanged = false;  // a property read at start (kReadyFlags) got another value
  NCCMATCH_OBJECT_LOCK(self);
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
      const double iou = g_value_get_double(value);
      if (inDeclaredRange(pspec, iou, s.nmsIou)) s.nmsIou = iou;
      break;
    }
    case PROP_POST_MESSAGES:
      s.postMessages = g_value_get_boolean(value);
      break;
    case PROP_REGISTER_UPSTREAM:
      s.registerUpstream = g_value_get_boolean(value);
      break;
    case PROP_WORKER_THREAD:
      readAtStartChanged = s.workerThread != bool(g_value_get_boolean(value));
      s.workerThread = g_value_get_boolean(value);
      break;
    case PROP_DEVICE:
      readAtStartChanged = s.device != static_cast<nccmatch::Backend>(g_value_get_enum(value));
      s.device = static_cast<nccmatch::Backend>(g_value_get_enum(value));
      break;
    case PROP_CUDA_DEVICE_ID:
      readAtStartChanged = s.cudaDeviceId != g_value_get_int(value);
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
    case PROP_MASKS:
      s.maskFiles = nccmatch::plugin::parseMaskList(g_value_get_string(value));
      ++s.templatesGeneration;  // the bank is loaded again (its masks with it) before the next frame
      break;
    case PROP_ROTATION_SUPPORT: {
      const auto support = static_cast<nccmatch::RotationSupport>(g_value_get_enum(value));
      if (support != s.rotationSupport) {
        s.rotationSupport = support;
        ++s.templatesGeneration;  // the bank is made again before the next frame
      }
      break;
    }
    case PROP_PYRAMID_LEVELS: {
      const int levels = int(MIN(g_value_get_uint(value), guint(nccmatch::kMaxPyramidLevels)));
      if (levels != s.pyramidLevels) {
        s.pyramidLevels = levels;
        ++s.templatesGeneration;  // the bank (coarse or full) is made again before the next frame
      }
      break;
    }
    case PROP_ANGLES: {
      std::vector<double> angles = s.angles;
      if (nccmatch::plugin::parseAngleList(g_value_get_string(value), &angles, &refusal) && angles != s.angles) {
        s.angles = std::move(angles);
        ++s.templatesGeneration;  // the bank is made again before the next frame
      }
      break;
    }
    case PROP_CPU_THREADS:
      readAtStartChanged = s.cpuThreads != int(g_value_get_uint(value));
      s.cpuThreads = int(g_value_get_uint(value));
      break;
    case PROP_CUDA_LANES:
      readAtStartChanged = s.cudaLanes != int(g_value_get_uint(value));
      s.cudaLanes = int(g_value_get_uint(value));
      break;
    case PROP_MODE:
      s.mode = static_cast<nccmatch::plugin::Mode>(g_value_get_enum(value));
      break;
    case PROP_SEARCH_MARGIN:
      s.searchMargin = int(MIN(g_value_get_uint(value), guint(nccmatch::plugin::kMaxSearchMargin)));
      break;
    case PROP_LOST_FRAMES:
      s.lostFrames = int(MIN(g_value_get_uint(value), guint(nccmatch::plugin::kMaxTrackFrames)));
      break;
    case PROP_ACQUIRE_INTERVAL:
      s.acquireInterval = int(MIN(g_value_get_uint(value), guint(nccmatch::plugin::kMaxTrackFrames)));
      break;
    case PROP_TEMPLATE_UPDATE: {
      const double update = g_value_get_double(value);
      if (inDeclaredRange(pspec, update, s.templateUpdate)) s.templateUpdate = update;
      break;
    }
    default:
      G_OBJECT_WARN_INVALID_PROPERTY_ID(object, prop_id, pspec);
      break;
  }
  ++s.generation;  // also for a refused value: the generation counts sets, not changes
  const bool warnNow =
      (prop_id == PROP_SCALES || prop_id == PROP_ANGLES || prop_id == PROP_SEARCH_REGION) &&
      noteRefusal(*self->refused, pspec->name, refusal);
  // A property read at start changed while the element runs: it waits for the next start, which
  // the user is told (a silently deferred setting would look ignored).
  const bool deferred = readAtStartChanged && self->refused->running;
  NCCMATCH_OBJECT_UNLOCK(self);
  if (deferred)
    GST_ELEMENT_WARNING(self, RESOURCE, SETTINGS,
                        ("'%s' is read when the element starts: the new value applies from its next start "
                         "(it runs now)",
                         pspec->name),
                        (nullptr));
  // Posted outside the object lock: posting takes it.
  if (warnNow)
    GST_ELEMENT_WARNING(self, RESOURCE, SETTINGS, ("Invalid '%s': %s; keeping the previous %s", pspec->name,
                                                   refusal.c_str(),
                                                   prop_id == PROP_SCALES   ? "factors"
                                                   : prop_id == PROP_ANGLES ? "angles"
                                                                            : "region"),
                        (nullptr));
}

void getProperty(GObject* object, guint prop_id, GValue* value, GParamSpec* pspec) {
  GstNccMatch* self = GST_NCCMATCH(object);
  NCCMATCH_OBJECT_LOCK(self);
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
    case PROP_REGISTER_UPSTREAM:
      g_value_set_boolean(value, s.registerUpstream);
      break;
    case PROP_WORKER_THREAD:
      g_value_set_boolean(value, s.workerThread);
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
    case PROP_MASKS:
      g_value_set_string(value, s.maskFiles.empty() ? nullptr : nccmatch::plugin::joinTemplateList(s.maskFiles).c_str());
      break;
    case PROP_ANGLES:
      g_value_set_string(value, nccmatch::plugin::joinAngleList(s.angles).c_str());
      break;
    case PROP_ROTATION_SUPPORT:
      g_value_set_enum(value, int(s.rotationSupport));
      break;
    case PROP_PYRAMID_LEVELS:
      g_value_set_uint(value, guint(s.pyramidLevels));
      break;
    case PROP_CPU_THREADS:
      g_value_set_uint(value, guint(s.cpuThreads));
      break;
    case PROP_CUDA_LANES:
      g_value_set_uint(value, guint(s.cudaLanes));
      break;
    case PROP_STATS:
      g_value_take_boxed(value, nccmatch::plugin::makeStatsStructure(self->published->stats, self->published->backend,
                                                                     self->published->memory,
                                                                     self->published->threads));
      break;
    case PROP_SETTINGS_GENERATION:
      g_value_set_uint64(value, s.generation);
      break;
    case PROP_MODE:
      g_value_set_enum(value, int(s.mode));
      break;
    case PROP_SEARCH_MARGIN:
      g_value_set_uint(value, guint(s.searchMargin));
      break;
    case PROP_LOST_FRAMES:
      g_value_set_uint(value, guint(s.lostFrames));
      break;
    case PROP_ACQUIRE_INTERVAL:
      g_value_set_uint(value, guint(s.acquireInterval));
      break;
    case PROP_TEMPLATE_UPDATE:
      g_value_set_double(value, s.templateUpdate);
      break;
    default:
      G_OBJECT_WARN_INVALID_PROPERTY_ID(object, prop_id, pspec);
      break;
  }
  NCCMATCH_OBJECT_UNLOCK(self);
}

namespace {

// mode, search-margin, lost-frames, acquire-interval, template-update (nccmatch::Tracker).
void installTrackingProperties(GObjectClass* gobject_class) {
  g_object_class_install_property(
      gobject_class, PROP_MODE,
      g_param_spec_enum(
          "mode", "Mode",
          "detect: every frame is searched on its own (templatematch's behaviour). track: matches are followed "
          "from frame to frame with ids that last: each match that passes threshold, NMS and max-matches starts or "
          "continues a track (several objects of one template are several tracks), assigned greedily by the "
          "distance to each track's predicted position (constant velocity); between full-frame searches "
          "(acquire-interval) only a window of search-margin pixels around each track's predicted box is "
          "searched, all windows in one engine call. Each match of the 'nccmatch' message then carries "
          "'track-id' (guint64) and 'track-state' (new, tracked, reacquired), the message 'lost-tracks' and "
          "'ended-tracks' (arrays of guint64), and each ROI meta's id and 'nccmatch' parameters the track id. "
          "Track mode holds no frames in flight. May be set while PLAYING: switching ends every track. A "
          "flush, a seek, new caps, a new bank or a moved search-region end every track too; ids are never reused "
          "while the element runs",
          GST_TYPE_NCCMATCH_MODE, int(nccmatch::plugin::kDefaultMode), kPlayingFlags));
  g_object_class_install_property(
      gobject_class, PROP_SEARCH_MARGIN,
      g_param_spec_uint("search-margin", "Search margin",
                        "mode=track: pixels searched on each side of a track's predicted box. A lost track's "
                        "margin grows by this much for each frame it stays lost. Settable while PLAYING (next "
                        "frame)",
                        0, guint(nccmatch::plugin::kMaxSearchMargin), guint(nccmatch::plugin::kDefaultSearchMargin),
                        kPlayingFlags));
  g_object_class_install_property(
      gobject_class, PROP_LOST_FRAMES,
      g_param_spec_uint("lost-frames", "Lost frames",
                        "mode=track: frames a track may go unmatched (lost: predicted on and searched in a growing "
                        "window) and still keep its id when matched again; after that it ends and the object gets "
                        "a new id when found again. Settable while PLAYING",
                        0, guint(nccmatch::plugin::kMaxTrackFrames), guint(nccmatch::plugin::kDefaultLostFrames),
                        kPlayingFlags));
  g_object_class_install_property(
      gobject_class, PROP_ACQUIRE_INTERVAL,
      g_param_spec_uint("acquire-interval", "Acquire interval",
                        "mode=track: frames between full-frame searches for new objects (0: only while no track "
                        "was matched in the previous frame). The whole frame is always searched while nothing "
                        "was matched. Settable while PLAYING",
                        0, guint(nccmatch::plugin::kMaxTrackFrames), guint(nccmatch::plugin::kDefaultAcquireInterval),
                        kPlayingFlags));
  g_object_class_install_property(
      gobject_class, PROP_TEMPLATE_UPDATE,
      g_param_spec_double("template-update", "Template update",
                          "mode=track: after each match a track's own copy of its template becomes (1 - a) * copy + "
                          "a * matched patch, so slow changes of appearance are followed (0: the template stays "
                          "as loaded). Settable while PLAYING",
                          0.0, 1.0, nccmatch::plugin::kDefaultTemplateUpdate, kPlayingFlags));
}

}  // namespace

void installProperties(GObjectClass* gobject_class) {
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
      gobject_class, PROP_REGISTER_UPSTREAM,
      g_param_spec_boolean("register-upstream", "Register upstream memory",
                           "With the CUDA backend, page-lock the system memory of a producer that refuses the "
                           "element's pinned buffer pool once a memory comes back (its own pool recycles it), so "
                           "that frames in it are uploaded without a staging copy and a tracker's windows are "
                           "gathered on the GPU; unregistered when the memory is freed. No effect on the CPU "
                           "backend, on CUDA memory, on the element's own pinned memory or on other allocators' memory",
                           nccmatch::plugin::kDefaultRegisterUpstream, kPlayingFlags));
  g_object_class_install_property(
      gobject_class, PROP_WORKER_THREAD,
      g_param_spec_boolean("worker-thread", "Worker thread",
                           "Match, finish and push frames on a thread of the element's own: the upstream "
                           "thread only hands each buffer over (at most 2 wait), so a producer without a queue "
                           "after the element waits for none of its work, as with a queue. A failure reaches "
                           "upstream with its next buffer (the bus gets the error at once). Set before start",
                           nccmatch::plugin::kDefaultWorkerThread, kReadyFlags));
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
      gobject_class, PROP_MASKS,
      g_param_spec_string(
          "masks", "Masks",
          "Comma-separated mask image files, parallel to 'templates' (entry i is the mask of template i; an "
          "empty entry, as in \"a.png,,c.png\", gives none): pixels darker than mid-gray (gray level below 128) "
          "are ignored when matching, the others compared (scores as OpenCV's matchTemplate with a mask). A "
          "mask file replaces the alpha channel of its template file: without one, a template file with "
          "transparency masks itself (alpha below 128 ignored). grab-template patches are unmasked. A mask "
          "that does not decode, has another size than its template or has no template fails start with an "
          "error naming it, or set while PLAYING warns and keeps the previous templates",
          nullptr, kPlayingFlags));
  g_object_class_install_property(
      gobject_class, PROP_ANGLES,
      g_param_spec_string(
          "angles", "Angles",
          "Angles in degrees (counter-clockwise) at which every template is searched for, combined with "
          "'scales': a comma-separated list of angles and ranges start:stop:step (stop included; an angle "
          "repeating an earlier one modulo 360 is dropped), e.g. \"-10,0,10\" or \"0:360:5\" (72 angles). Each "
          "template is resampled once per scale and angle (bilinear, about its centre, the rotated support as "
          "its mask); the matches of all its variants are merged with one NMS, a match's 'angle' field says "
          "at which angle it was found, refined between the neighbouring angles by a parabola through their "
          "scores, and its box is the rotated template's bounding box. May be set while PLAYING; an invalid "
          "list warns naming the bad entry and keeps the previous angles (before start, start fails). Empty: 0",
          "0", kPlayingFlags));
  g_object_class_install_property(
      gobject_class, PROP_ROTATION_SUPPORT,
      g_param_spec_enum(
          "rotation-support", "Rotation support",
          "What the rotated variants of 'angles' compare: 'rectangle', the whole rotated template (its rotated "
          "support is its mask, every angle its own mask and bounding box), or 'disc', the disc inscribed in "
          "the template (a square of the template's shorter side, the same mask for every angle of a scale, "
          "so the CPU backend computes its window sums once a frame for all angles: several times less work, "
          "but the corners outside the disc are never compared). May be set while PLAYING",
          GST_TYPE_NCCMATCH_ROTATION_SUPPORT, int(nccmatch::RotationSupport::Rectangle), kPlayingFlags));
  g_object_class_install_property(
      gobject_class, PROP_PYRAMID_LEVELS,
      g_param_spec_uint(
          "pyramid-levels", "Pyramid levels",
          "Coarse-to-fine search of the 'scales' x 'angles' variants (mode=detect): the frame and every variant "
          "are halved this many times (2x2 averages), the smallest level is searched whole, and its best "
          "variants and positions (and every peak above the threshold lowered by 0.2) are refined level by "
          "level on the neighbouring angles and scales, a few pixels around each, up to full size, where the "
          "scores and matches are the exhaustive search's. Much less work with many variants; an object whose "
          "coarse score is poor (textures finer than the coarse pixels) can be missed. 0: every variant "
          "searched at full size. Needs a normalised method (matching fails with an error otherwise) and "
          "variants of at least 4 pixels a side at the smallest level (else the templates are refused with a "
          "message naming the variant). mode=track searches at full size whatever this says. May be set while "
          "PLAYING",
          0, guint(nccmatch::kMaxPyramidLevels), guint(nccmatch::plugin::kDefaultPyramidLevels), kPlayingFlags));
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
      gobject_class, PROP_CUDA_LANES,
      g_param_spec_uint("cuda-lanes", "CUDA matching lanes",
                        "Frames in flight the CUDA backend matches side by side, each on its own streams with its "
                        "own copy of the per-frame-size buffers (score maps, tables, transforms): with 2 or more, "
                        "frame n+1 is matched beside frame n's last steps (1080p: 10-15% less time a frame with 2 "
                        "in flight on an H100). Extra lanes only where they pay (not for fft templates above 4 M "
                        "pixels) and while GPU memory lasts. 1: one frame after another, the least GPU memory. "
                        "Useful up to frames-in-flight; the CPU backend ignores it. Read at start",
                        1, guint(nccmatch::Engine::kMaxFramesInFlight), guint(nccmatch::plugin::kDefaultCudaLanes),
                        kReadyFlags));
  g_object_class_install_property(
      gobject_class, PROP_STATS,
      g_param_spec_boxed("stats", "Statistics",
                         "Frames matched since start, mean and max wall-clock time of the engine's match per "
                         "frame in microseconds (CUDA: including the wait for the GPU), the element's mean time a "
                         "buffer in the streaming thread (streaming-us) over its input buffers (streaming-buffers), "
                         "the backend in use, the input memory and "
                         "the host threads matching (nccmatch-stats structure; also posted as an element message "
                         "at EOS)",
                         GST_TYPE_STRUCTURE, static_cast<GParamFlags>(G_PARAM_READABLE | G_PARAM_STATIC_STRINGS)));
  g_object_class_install_property(
      gobject_class, PROP_SETTINGS_GENERATION,
      g_param_spec_uint64("settings-generation", "Settings generation",
                          "Counts the property sets and grab-template requests so far (each one adds 1, also a "
                          "refused value). Each frame is matched with one copy of all the settings, and its "
                          "'nccmatch' message carries that copy's count in 'settings-generation': a value set "
                          "while PLAYING took effect on the first frame whose message has a count at least the "
                          "one read here right after the set",
                          0, G_MAXUINT64, 0, static_cast<GParamFlags>(G_PARAM_READABLE | G_PARAM_STATIC_STRINGS)));
  installTrackingProperties(gobject_class);
}

}  // namespace nccmatch::plugin::element
