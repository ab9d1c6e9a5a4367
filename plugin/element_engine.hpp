// The element's templates and engine: settings copied under the object lock, the bank loaded,
// refreshed and handed to the engine, the engine created, moved and destroyed in its CUDA context.
#pragma once

#include <gst/gst.h>

#include <string>
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
// The bank's variants at every scale and angle, and with pyramidLevels > 0 the coarse-to-fine
// search's pyramid of them (it refuses variants too small for it); *failed says which step failed.
nccmatch::Status prepareVariants(const std::vector<nccmatch::TemplateImage>& bank, const std::vector<double>& scales,
                                 const std::vector<double>& angles, nccmatch::RotationSupport support,
                                 int pyramidLevels, nccmatch::ScaledBank* scaled, nccmatch::CoarseToFineSearch* search,
                                 const char** failed);
// Hands `bank`, already scaled and rotated into `scaled` (and with pyramidLevels > 0 made into
// `search`), to the engine and keeps what the element needs of it; posts nothing (the engine's
// Status says what failed).
nccmatch::Status handBank(GstNccMatch* self, std::vector<nccmatch::TemplateImage> bank, nccmatch::ScaledBank scaled,
                          const std::vector<double>& scales, const std::vector<double>& angles,
                          nccmatch::RotationSupport support, int pyramidLevels, nccmatch::CoarseToFineSearch search);
// Reloads the bank when `template`/`templates`/`masks`/`scales`/`angles`/`rotation-support`/
// `pyramid-levels`/`grab-template` (or the mode, with pyramid-levels set) changed since the last
// load; a failure while running keeps the previous bank and posts a warning. `grabbed`: the patch
// cut for a pending grab-template (null when it could not be cut: the previous bank stays).
// With `cpuMayTakeOver` (device=auto, a CUDA engine, a frame in system memory), a bank the CUDA
// engine cannot take (out of device memory) hands over to a CPU engine holding it, with one warning.
bool refreshBank(GstNccMatch* self, const Settings& settings, const nccmatch::TemplateImage* grabbed,
                 bool cpuMayTakeOver);
// The engine's result for the loaded bank: each template's scaled copies merged (scales.hpp).
nccmatch::FrameResult mergeScales(GstNccMatch* self, const nccmatch::FrameResult& engineResult,
                                  const Settings& settings);
// One warning per template (and scale) larger than the area searched (the engine skips it): the
// frame, or the search region when `region` is true. Posted again when that size changes.
void warnOversizedTemplates(GstNccMatch* self, int width, int height, bool region);
// The engine for `backend` (Cpu or Cuda), in `context` when one is given; false after posting an
// error.
bool createEngine(GstNccMatch* self, nccmatch::Backend backend, int deviceId, GstCudaContext* context);
// createEngine without posting anything.
nccmatch::Status newEngine(GstNccMatch* self, nccmatch::Backend backend, int deviceId, GstCudaContext* context);
// Publishes the engine's backend and threads (the stats property) and whether CUDA caps are
// accepted; with `resetStats` (at start) the stats' counts start again.
void publishEngine(GstNccMatch* self, bool resetStats);
// device=auto when the CUDA engine failed while running (`why`): one warning, then a CPU engine
// holding the loaded bank in its place. False after posting an error (the CPU engine failed too).
bool fallBackToCpu(GstNccMatch* self, const std::string& why);
// Destroys the engine inside its context.
void destroyEngine(GstNccMatch* self);
#ifdef NCCMATCH_HAVE_GST_CUDA
// The shared gstcuda context (from a neighbour, the application, or made here and announced).
GstCudaContext* ensureCudaContext(GstNccMatch* self, int deviceId);
// Makes a new CUDA engine in `context` holding the loaded bank, in place of the current one, so
// that CUDA memory of that context is read in place. False after posting an error.
bool moveEngineToContext(GstNccMatch* self, GstCudaContext* context);
#endif

// Cuts the patch of a grab-template request from `buffer`'s luma plane. onDevice (CUDA memory of
// the engine's own context): the plane is mapped as CUDA memory and the engine copies only the box
// (GStreamer's host mapping would download the whole plane, padding included); else it is mapped
// for reading on the host. False, with a warning, when the box is not inside the frame or the
// buffer cannot be read.
bool cutGrabbedTemplate(GstNccMatch* self, GstBuffer* buffer, const GrabRequest& request, bool onDevice,
                        nccmatch::TemplateImage* out);

}  // namespace nccmatch::plugin::element
