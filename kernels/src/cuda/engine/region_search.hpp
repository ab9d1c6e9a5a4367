// Engine::matchRegions on the CUDA backend: every region is scored on the GPU into its own map on
// the device, in at most two launches: the fused region kernel (numerator/region_scores.hpp) for
// templates up to 64x64 that compare every pixel, the masked kernel (numerator/masked_scores.hpp)
// for masked templates and larger ones. One launch of the region peak kernel
// (peaks/region_peaks.hpp) then picks each region's candidates and best there; only those samples
// come back (one copy, a second only when more than 256 positions pass), and the host ranks,
// suppresses and refines them as findPeaks does (common/region_peaks.hpp). Host frames: only the
// regions' pixels are uploaded, packed, in one copy (or the rectangle holding them all, where that
// is smaller: overlapping regions); own images (RegionQuery::image) are laid out
// and uploaded once a call however many regions name them. Results are the CPU's bit for bit.
#pragma once

#include <cuda_runtime_api.h>

#include <vector>

#include "cuda/engine/device_buffer.hpp"
#include "cuda/engine/template_bank.hpp"
#include "nccmatch/engine.hpp"
#include "nccmatch/regions.hpp"

namespace nccmatch::cuda {

class RegionSearch {
 public:
  // Regions already validated (validateRegions); waits for the stream before it returns.
  Status run(const TemplateBank& bank, const FrameView& frame, const std::vector<RegionQuery>& regions,
             const MatchParams& params, cudaStream_t stream, std::vector<RegionResult>* results);

 private:
  PinnedBuffer hostDescs_, hostMaskedDescs_, hostPixels_, hostOwnTemplates_, hostPeaks_;
  DeviceBuffer descs_, maskedDescs_, pixels_, ownTemplates_, maps_, peaks_;
};

}  // namespace nccmatch::cuda
