// The element's templates and engine: settings copied under the lock, the bank loaded, refreshed
// and handed to the engine, the engine created, moved and destroyed in its CUDA context.
#include "element_engine.hpp"

#include <cstring>

#include "nccmatch/rotations.hpp"

#define GST_CAT_DEFAULT gst_nccmatch_debug

namespace nccmatch::plugin::element {

Settings copySettings(GstNccMatch* self) {
  NCCMATCH_OBJECT_LOCK(self);
  Settings copy = *self->settings;
  NCCMATCH_OBJECT_UNLOCK(self);
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
    case TemplateLoadFailure::BadMask:
      GST_ELEMENT_ERROR(self, RESOURCE, SETTINGS, ("%s", error.message.c_str()), (nullptr));
      break;
    default:
      GST_ELEMENT_ERROR(self, STREAM, DECODE, ("%s", error.message.c_str()), (nullptr));
      break;
  }
}

namespace {

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
    case TemplateLoadFailure::BadMask:
      GST_ELEMENT_WARNING(self, RESOURCE, SETTINGS, ("%s", text.c_str()), (nullptr));
      break;
    default:
      GST_ELEMENT_WARNING(self, STREAM, DECODE, ("%s", text.c_str()), (nullptr));
      break;
  }
}

}  // namespace

nccmatch::Status prepareVariants(const std::vector<nccmatch::TemplateImage>& bank, const std::vector<double>& scales,
                                 const std::vector<double>& angles, nccmatch::RotationSupport support,
                                 int pyramidLevels, nccmatch::ScaledBank* scaled, nccmatch::CoarseToFineSearch* search,
                                 const char** failed) {
  *failed = "Could not scale or rotate the templates";
  NCC_RETURN_IF_ERROR(nccmatch::rotateAndScaleTemplates(bank, scales, angles, scaled, support));
  if (pyramidLevels > 0 && !bank.empty()) {
    nccmatch::CoarseToFineOptions options;
    options.levels = pyramidLevels;
    *failed = "Could not prepare the templates for pyramid-levels";
    NCC_RETURN_IF_ERROR(nccmatch::CoarseToFineSearch::create(*scaled, options, search));
  }
  return nccmatch::Status();
}

nccmatch::Status handBank(GstNccMatch* self, std::vector<nccmatch::TemplateImage> bank, nccmatch::ScaledBank scaled,
                          const std::vector<double>& scales, const std::vector<double>& angles,
                          nccmatch::RotationSupport support, int pyramidLevels, nccmatch::CoarseToFineSearch search) {
  StreamState& stream = *self->stream;
  if (!bank.empty())
    NCC_RETURN_IF_ERROR(stream.engine->setTemplates(pyramidLevels > 0 ? search.engineTemplates() : scaled.templates));
  stream.names.clear();
  for (const nccmatch::TemplateImage& t : bank) stream.names.push_back(t.name);
  scaled.templates.clear();  // the engine keeps the images
  stream.scaled = std::move(scaled);
  stream.scales = scales;
  stream.angles = angles;
  stream.rotationSupport = support;
  stream.pyramidLevels = pyramidLevels;
  // The old search's refinement sets are freed on the engine (the new one prepares its own).
  if (stream.engine) stream.search.releasePrepared(*stream.engine);
  stream.search = std::move(search);
  stream.originals = std::move(bank);
  stream.oversizeWarned.assign(stream.scaled.original.size(), false);
  GST_INFO_OBJECT(self, "loaded %zu template(s), %zu scaled or rotated variant%s", stream.names.size(),
                  stream.scaled.original.size(), stream.scaled.original.size() == 1 ? "" : "s");
  return nccmatch::Status();
}

// Hands a freshly loaded bank to the engine, each template at each scale factor and angle. An
// empty bank stays here: with no names the engine is never asked to match, so frames pass
// unmatched on every backend.
bool installBank(GstNccMatch* self, std::vector<nccmatch::TemplateImage> bank, const std::vector<double>& scales,
                 const std::vector<double>& angles, nccmatch::RotationSupport support, int pyramidLevels,
                 bool keepOnFailure) {
  nccmatch::ScaledBank scaled;
  nccmatch::CoarseToFineSearch search;
  const char* failed = nullptr;
  nccmatch::Status status = prepareVariants(bank, scales, angles, support, pyramidLevels, &scaled, &search, &failed);
  if (!status.ok() && keepOnFailure) {  // the engine still holds the previous bank
    GST_ELEMENT_WARNING(self, LIBRARY, SETTINGS, ("%s: %s; keeping the previous templates", failed, status.message().c_str()),
                        (nullptr));
    return true;
  }
  if (status.ok())
    status = handBank(self, std::move(bank), std::move(scaled), scales, angles, support, pyramidLevels,
                      std::move(search));
  if (!status.ok()) {
    GST_ELEMENT_ERROR(self, LIBRARY, SETTINGS, ("Could not prepare the templates: %s", status.message().c_str()),
                      (nullptr));
    return false;
  }
  return true;
}

nccmatch::FrameResult mergeScales(GstNccMatch* self, const nccmatch::FrameResult& engineResult,
                                  const Settings& settings) {
  return nccmatch::mergeScaledResult(self->stream->scaled, engineResult, settings.matchParams());
}

namespace {

// A bank loaded while running: as installBank, except that when the CUDA engine cannot take it
// (e.g. out of device memory) and the CPU may take over, a CPU engine does, with one warning, and
// takes the bank.
bool installWhileRunning(GstNccMatch* self, std::vector<nccmatch::TemplateImage> bank, const Settings& settings,
                         int pyramidLevels, bool cpuMayTakeOver) {
  nccmatch::ScaledBank scaled;
  nccmatch::CoarseToFineSearch search;
  const char* failed = nullptr;
  if (!cpuMayTakeOver || !prepareVariants(bank, settings.scales, settings.angles, settings.rotationSupport,
                                          pyramidLevels, &scaled, &search, &failed)
                              .ok())
    return installBank(self, std::move(bank), settings.scales, settings.angles, settings.rotationSupport,
                       pyramidLevels, true);
  const nccmatch::Status status = handBank(self, bank, std::move(scaled), settings.scales, settings.angles,
                                           settings.rotationSupport, pyramidLevels, std::move(search));
  if (status.ok()) return true;
  if (!fallBackToCpu(self, "the CUDA backend could not take the new templates (" + status.message() + ")"))
    return false;
  return installBank(self, std::move(bank), settings.scales, settings.angles, settings.rotationSupport, pyramidLevels,
                     true);
}

}  // namespace

// Reloads the bank when `template`/`templates`/`scales`/... changed since the last load, and
// makes it again from the loaded templates when the mode changes what pyramid-levels asks of it. A
// failure while running keeps the previous bank (as templatematch) and posts a warning, once per
// change.
bool refreshBank(GstNccMatch* self, const Settings& settings, const nccmatch::TemplateImage* grabbed,
                 bool cpuMayTakeOver) {
  StreamState& stream = *self->stream;
  const int levels = settings.bankPyramidLevels();
  if (settings.templatesGeneration == stream.loadedGeneration) {
    if (levels == stream.requestedPyramidLevels) return true;
    stream.requestedPyramidLevels = levels;
    return installBank(self, stream.originals, stream.scales, stream.angles, stream.rotationSupport, levels, true);
  }
  stream.loadedGeneration = settings.templatesGeneration;
  stream.requestedPyramidLevels = levels;
  if (settings.grab) {
    if (grabbed == nullptr) return true;  // not cut (warned): the previous bank stays
    return installWhileRunning(self, {*grabbed}, settings, levels, cpuMayTakeOver);
  }
  std::vector<nccmatch::TemplateImage> bank;
  nccmatch::plugin::TemplateLoadError error;
  if (!nccmatch::plugin::loadTemplateBank(settings.templateFiles, settings.maskFiles, &bank, &error)) {
    postLoadWarning(self, error);
    return true;
  }
  return installWhileRunning(self, std::move(bank), settings, levels, cpuMayTakeOver);
}

bool cutGrabbedTemplate(GstNccMatch* self, GstBuffer* buffer, const GrabRequest& request, bool onDevice,
                        nccmatch::TemplateImage* out) {
  GstVideoFrame frame;
  const GstMapFlags flags = GstMapFlags(GST_MAP_READ
#ifdef NCCMATCH_HAVE_GST_CUDA
                                        | (onDevice ? GST_MAP_CUDA : 0)
#endif
  );
  if (!gst_video_frame_map(&frame, &GST_VIDEO_FILTER(self)->in_info, buffer, flags)) {
    GST_ELEMENT_WARNING(self, STREAM, FAILED, ("grab-template: could not read the frame; keeping the previous templates"),
                        (nullptr));
    return false;
  }
  const int width = GST_VIDEO_FRAME_WIDTH(&frame), height = GST_VIDEO_FRAME_HEIGHT(&frame);
  const bool inside = (long long)request.x + request.width <= width && (long long)request.y + request.height <= height;
  if (inside) {
    out->name = request.name;
    out->width = request.width;
    out->height = request.height;
    out->pixels.resize(std::size_t(request.width) * request.height);
    const auto* plane = static_cast<const uint8_t*>(GST_VIDEO_FRAME_PLANE_DATA(&frame, 0));
    const std::size_t stride = std::size_t(GST_VIDEO_FRAME_PLANE_STRIDE(&frame, 0));
    if (onDevice) {
      // Only the box comes to the host (the engine's copy), not the whole plane and its padding.
      const nccmatch::FrameView view{plane, width, height, stride, nccmatch::MemoryKind::Device};
      nccmatch::plugin::CudaContextScope scope(self->stream->engineContext);
      const nccmatch::Status copied =
          self->stream->engine->copyPatch(view, request.x, request.y, request.width, request.height, &out->pixels);
      if (!copied.ok()) {
        gst_video_frame_unmap(&frame);
        GST_ELEMENT_WARNING(self, STREAM, FAILED,
                            ("grab-template: could not read the box from the frame's CUDA memory (%s); keeping the "
                             "previous templates",
                             copied.message().c_str()),
                            (nullptr));
        return false;
      }
    } else {
      for (int y = 0; y < request.height; ++y)
        std::memcpy(out->pixels.data() + std::size_t(y) * request.width,
                    plane + std::size_t(request.y + y) * stride + std::size_t(request.x), std::size_t(request.width));
    }
  }
  gst_video_frame_unmap(&frame);
  if (!inside)
    GST_ELEMENT_WARNING(self, STREAM, FORMAT,
                        ("grab-template: the box %d,%d,%d,%d is not inside the %dx%d frame; keeping the previous "
                         "templates",
                         request.x, request.y, request.width, request.height, width, height),
                        (nullptr));
  return inside;
}

// The engine skips templates larger than the area searched; say so once per template and size.
void warnOversizedTemplates(GstNccMatch* self, int width, int height, bool region) {
  StreamState& stream = *self->stream;
  if (width != stream.searchedWidth || height != stream.searchedHeight) {
    stream.oversizeWarned.assign(stream.oversizeWarned.size(), false);
    stream.searchedWidth = width;
    stream.searchedHeight = height;
  }
  // The full-size variants (the engine holds the coarse ones under pyramid-levels).
  const std::vector<nccmatch::TemplateImage>& bank =
      stream.pyramidLevels > 0 ? stream.search.variants().templates : stream.engine->templates();
  for (std::size_t i = 0; i < bank.size() && i < stream.oversizeWarned.size(); ++i) {
    if (stream.oversizeWarned[i]) continue;
    if (bank[i].width <= width && bank[i].height <= height) continue;
    stream.oversizeWarned[i] = true;
    const uint32_t original = stream.scaled.original[i];
    const double scale = stream.scaled.scale[i];
    const double angle = i < stream.scaled.angle.size() ? stream.scaled.angle[i] : 0.0;
    gchar* atScale = scale != 1.0 && angle != 0.0 ? g_strdup_printf(" at scale %g and angle %g", scale, angle)
                     : scale != 1.0               ? g_strdup_printf(" at scale %g", scale)
                     : angle != 0.0               ? g_strdup_printf(" at angle %g", angle)
                                                  : g_strdup("");
    GST_ELEMENT_WARNING(self, STREAM, FORMAT,
                        ("Template %u ('%s')%s, %dx%d, is larger than the %dx%d %s; it is skipped", original,
                         bank[i].name.c_str(), atScale, bank[i].width, bank[i].height, width, height,
                         region ? "search region" : "frame"),
                        (nullptr));
    g_free(atScale);
  }
}

nccmatch::Status newEngine(GstNccMatch* self, nccmatch::Backend backend, int deviceId, GstCudaContext* context) {
  StreamState& stream = *self->stream;
  nccmatch::EngineOptions options;
  options.backend = backend;
  options.cudaDevice = deviceId;
  const Settings settings = copySettings(self);
  options.threads = settings.cpuThreads;
  options.cudaMatchingLanes = settings.cudaLanes;
  options.useCurrentCudaContext = context != nullptr;
  // A pageable buffer (a producer that refused the pinned pool) is copied into the engine's
  // staging buffer by a host function on its copy stream, not in the streaming thread: the
  // element holds each buffer until its frame is finished, as submit() requires.
  options.cudaStagingCopy = nccmatch::CudaStagingCopy::HostFunction;
  nccmatch::plugin::CudaContextScope scope(context);
  if (!scope.ok()) return nccmatch::Status::error("could not make the GStreamer CUDA context current");
  NCC_RETURN_IF_ERROR(nccmatch::Engine::create(options, &stream.engine));
#ifdef NCCMATCH_HAVE_GST_CUDA
  if (context != nullptr) stream.engineContext = static_cast<GstCudaContext*>(gst_object_ref(context));
#endif
  return nccmatch::Status();
}

// Creates the engine for `backend` (Cpu or Cuda). A CUDA engine runs in `context` when one is
// given (made current here and around every later engine call), else in the primary context.
bool createEngine(GstNccMatch* self, nccmatch::Backend backend, int deviceId, GstCudaContext* context) {
  const nccmatch::Status status = newEngine(self, backend, deviceId, context);
  if (!status.ok()) {
    GST_ELEMENT_ERROR(self, RESOURCE, SETTINGS,
                      ("Could not start the matching engine (device=%s): %s", nccmatch::backendName(backend),
                       status.message().c_str()),
                      (nullptr));
    return false;
  }
  return true;
}

void publishEngine(GstNccMatch* self, bool resetStats) {
  StreamState& stream = *self->stream;
  GST_INFO_OBJECT(self, "engine backend: %s%s", nccmatch::backendName(stream.engine->backend()),
                  stream.engineContext != nullptr ? " (in the shared GStreamer CUDA context)" : "");
  NCCMATCH_OBJECT_LOCK(self);
  if (resetStats) self->published->stats.reset();
  self->published->backend = nccmatch::backendName(stream.engine->backend());
  self->published->threads = stream.engine->workerThreads();
  self->published->cudaCapsAllowed = stream.engineContext != nullptr || stream.cudaFellBack;
  NCCMATCH_OBJECT_UNLOCK(self);
}

bool fallBackToCpu(GstNccMatch* self, const std::string& why) {
  StreamState& stream = *self->stream;
  GST_ELEMENT_WARNING(self, RESOURCE, SETTINGS, ("device=auto: %s; matching on the CPU from here", why.c_str()),
                      (nullptr));
  std::vector<nccmatch::TemplateImage> bank = stream.originals;
  const std::vector<double> scales = stream.scales, angles = stream.angles;
  const nccmatch::RotationSupport support = stream.rotationSupport;
  const int pyramidLevels = stream.pyramidLevels;
  destroyEngine(self);
  if (!createEngine(self, nccmatch::Backend::Cpu, -1, nullptr)) return false;
  if (!installBank(self, std::move(bank), scales, angles, support, pyramidLevels, false)) return false;
  stream.cudaFellBack = nccmatch::plugin::kHaveGstCuda;  // CUDA memory still taken, read back
  publishEngine(self, false);  // the stream's counts go on
  // Upstream asks for an allocation again: the pinned pool proposed for the CUDA engine (whose
  // allocations a lost context would fail) gives way to downstream's answer.
  gst_pad_push_event(GST_BASE_TRANSFORM_SINK_PAD(self), gst_event_new_reconfigure());
  return true;
}

// Destroys the engine inside its context (its stream and buffers belong to it).
void destroyEngine(GstNccMatch* self) {
  StreamState& stream = *self->stream;
  {
    nccmatch::plugin::CudaContextScope scope(stream.engineContext);
    stream.engine.reset();
  }
  ++stream.engineEpoch;  // frames submitted to it are matched again by the next engine
#ifdef NCCMATCH_HAVE_GST_CUDA
  gst_clear_object(&stream.engineContext);
#endif
}

#ifdef NCCMATCH_HAVE_GST_CUDA
// The shared gstcuda context: a neighbour's, the application's, or the process's (the primary
// context, announced).
GstCudaContext* ensureCudaContext(GstNccMatch* self, int deviceId) {
  if (!gst_cuda_load_library()) {
    GST_INFO_OBJECT(self, "gstcuda could not load the CUDA driver library");
    return nullptr;
  }
  GstCudaContext* context = nullptr;
  NCCMATCH_OBJECT_LOCK(self);
  if (self->cudaContext != nullptr) context = static_cast<GstCudaContext*>(gst_object_ref(self->cudaContext));
  NCCMATCH_OBJECT_UNLOCK(self);
  if (context != nullptr) return context;
  // A neighbour's, a bin's or the application's (taken by set_context into self->cudaContext).
  const auto taken = [self]() -> GstCudaContext* {
    NCCMATCH_OBJECT_LOCK(self);
    GstCudaContext* found =
        self->cudaContext != nullptr ? static_cast<GstCudaContext*>(gst_object_ref(self->cudaContext)) : nullptr;
    NCCMATCH_OBJECT_UNLOCK(self);
    return found;
  };
  nccmatch::plugin::askForCudaContext(GST_ELEMENT(self), [&] {
    GstCudaContext* found = taken();
    if (found != nullptr) gst_object_unref(found);
    return found != nullptr;
  });
  if ((context = taken()) != nullptr) return context;
  // None offered: the process's (the device's primary context), set here and announced to the
  // pipeline so that the elements after this one take it too.
  context = nccmatch::plugin::processCudaContext(deviceId);
  if (context == nullptr) return nullptr;
  GstContext* announced = gst_context_new_cuda_context(context);
  gst_element_set_context(GST_ELEMENT(self), announced);
  gst_element_post_message(GST_ELEMENT(self), gst_message_new_have_context(GST_OBJECT(self), announced));
  if (GstCudaContext* held = taken()) {  // what set_context kept (the same, unless one came first)
    gst_object_unref(context);
    return held;
  }
  return context;
}

// A decoder on another device (or with a context of its own) hands memory of another context than
// the one negotiated: the engine is made again in that context with the same bank and scales.
bool moveEngineToContext(GstNccMatch* self, GstCudaContext* context) {
  StreamState& stream = *self->stream;
  GST_INFO_OBJECT(self, "CUDA memory of another context: moving the engine to it");
  std::vector<nccmatch::TemplateImage> bank = stream.originals;
  const std::vector<double> scales = stream.scales, angles = stream.angles;
  const nccmatch::RotationSupport support = stream.rotationSupport;
  const int levels = stream.pyramidLevels;
  destroyEngine(self);
  if (!createEngine(self, nccmatch::Backend::Cuda, -1, context)) return false;
  nccmatch::plugin::CudaContextScope scope(stream.engineContext);
  return installBank(self, std::move(bank), scales, angles, support, levels, false);
}
#endif

}  // namespace nccmatch::plugin::element
