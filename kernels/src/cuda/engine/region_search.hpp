// Engine::matchRegions on the CUDA backend: every region is scored on the GPU. Templates up to
// 64x64 that compare every pixel take one launch of the fused region kernel
// (numerator/region_scores.hpp), each of whose tiles hands over its own best and candidates (the
// host takes each region's best of its tiles' bests); masked templates and larger ones take the
// masked kernel (numerator/masked_scores.hpp) into a map on the device and then the region peak
// kernel (peaks/region_peaks.hpp). Only those samples come back, written by the kernels straight
// into the pinned host work area (the count, the bests, the first 256 candidates; a copy back only
// when more positions pass), and the host ranks, suppresses and refines them as findPeaks does
// (common/region_peaks.hpp). The kernels read the descriptors in that pinned area too, and each
// call leaves its device counter zero for the next, so a call on
// a device frame is its launches and one wait: no copy up or down. Up goes one copy only where
// there is something to upload: own images (RegionQuery::image: laid out and their statistics
// made once a call however many regions name them; a prepared set's templates are on the device
// already, region_templates.hpp) and, for pageable host frames, only the regions' pixels, packed
// (or the rectangle holding them all, where that is smaller: overlapping regions;
// CudaPackedWindows::Mapped leaves them in the pinned host copy for the kernels to read there).
// Device frames are read in place. Host frames in pinned or registered memory that the device can
// address (the element's buffer pool) are not packed or uploaded by the CPU: their windows (or
// that rectangle) are gathered into the work area by a copy kernel reading over the bus
// (copy/window_gather.hpp), or, with CudaMappedFrames::InPlace, read in place by the scoring
// kernels. Results are the CPU's bit for bit.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>
#include <optional>
#include <utility>
#include <vector>

#include "common/region_peaks.hpp"
#include "common/region_template_sets.hpp"
#include "cuda/engine/device_buffer.hpp"
#include "cuda/engine/region_templates.hpp"
#include "cuda/engine/template_bank.hpp"
#include "nccmatch/engine.hpp"
#include "nccmatch/regions.hpp"

namespace nccmatch::cuda {

class RegionSearch {
 public:
  explicit RegionSearch(CudaPackedWindows packedWindows = CudaPackedWindows::Upload,
                        CudaMappedFrames mappedFrames = CudaMappedFrames::Gather)
      : packedWindows_(packedWindows), mappedFrames_(mappedFrames) {}

  // Regions already validated (validateRegions, against `sets`); waits for the stream before it
  // returns.
  Status run(const TemplateBank& bank, const RegionTemplateSets<PreparedRegionTemplates>& sets,
             const FrameView& frame, const std::vector<RegionQuery>& regions, const MatchParams& params,
             cudaStream_t stream, std::vector<RegionResult>* results);

 private:
  // The calls' two counters (RegionPeakJob::callCounter, nextCounter), zeroed when new; released
  // (so the next call zeroes new ones) when a call fails with the kernels perhaps half done.
  Status reserveCounters(cudaStream_t stream);

  CudaPackedWindows packedWindows_;
  CudaMappedFrames mappedFrames_;
  PinnedBuffer hostWork_;  // the work area's copy on the host (region_search.cpp: WorkLayout)
  std::pair<const uint8_t*, uint8_t*> mappedHostWork_{nullptr, nullptr};  // hostWork_ and where kernels address it
  DeviceBuffer work_, maps_;
  DeviceBuffer counters_;  // two: a call counts in counters_[counterParity_] and zeroes the other
  int counterParity_ = 0;
  // Whether the device takes programmatic dependent launches: asked once, on the first gathered call.
  std::optional<bool> overlapGather_;
  // The host's grouping of a call's candidates by region: memory kept from call to call.
  RegionCandidates candidates_;
};

}  // namespace nccmatch::cuda
