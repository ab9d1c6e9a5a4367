// The element's templates and engine: settings copied under the object lock, the bank loaded,
// refreshed and handed to the engine, the engine created, moved and destroyed in its CUDA context.
#pragma once

#include <gst/gst.h>

#include <vector>

#include "element_state.hpp"
#include "template_loader.hpp"

namespace nccmatch::plugin::element {

// The settings, copied under the object lock.
Settings copySettings(GstNccMatch* self);
// GST_ELEMENT_ERROR for a bank that cannot be loaded at start.
void postLoadError(GstNccMatch* self, const TemplateLoadError& error);
// Hands a freshly loaded bank to the engine at each of `scales` and `angles` (an empty bank stays
// here: nothing to match); with `pyramidLevels` > 0 the engine gets the coarse-to-fine search's
// coarse bank. A bank that cannot be scaled, rotated or prepared posts an error, or with
// `keepOnFailure` (while running) a warning, keeping the previous bank.
bool installBank(GstNccMatch* self, std::vector<nccmatch::TemplateImage> bank, const std::vector<double>& scales,
                 const std::vector<double>& angles, nccmatch::RotationSupport support, int pyramidLevels,
                 bool keepOnFailure);
// Reloads the bank when `template`/`templates`/`masks`/`scales`/`angles`/`rotation-support`/
// `pyramid-levels`/`grab-template` (or the mode, with pyramid-levels set) changed since the last
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
// Makes a new CUDA engine in `context` holding the loaded bank, in place of the current one, so
// that CUDA memory of that context is read in place. False after posting an error.
bool moveEngineToContext(GstNccMatch* self, GstCudaContext* context);
#endif

// Cuts the patch of a grab-template request from `buffer`'s luma plane (mapped for reading by
// itself, so CUDA memory comes to the host through GStreamer). False, with a warning, when the
// box is not inside the frame or the buffer cannot be read.
bool cutGrabbedTemplate(GstNccMatch* self, GstBuffer* buffer, const GrabRequest& request,
                        nccmatch::TemplateImage* out);

}  // namespace nccmatch::plugin::element
