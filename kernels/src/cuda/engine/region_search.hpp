// Engine::matchRegions on the CUDA backend: every region whose template is at most 64x64 is scored
// by one launch of the fused region kernel (numerator/region_scores.hpp) into its own map on the
// device, whose last block of each region picks that region's candidates and best there
// (peaks/region_peaks.cuh); only those samples come back (one copy, a second only when more than
// 256 positions pass), and the host ranks, suppresses and refines them as findPeaks does
// (common/region_peaks.hpp). Up goes one copy: the descriptors, the zeroed counters and, for host
// frames, only the regions' pixels, packed. Regions with larger templates take the CPU backend's
// exact path on the region's pixels. Results are the CPU's bit for bit.
#pragma once

#include <cuda_runtime_api.h>

#include <memory>
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
  // The regions whose templates do not fit the fused kernel, matched by the CPU backend.
  Status runOnCpu(const TemplateBank& bank, const FrameView& frame, const std::vector<RegionQuery>& regions,
                  const std::vector<std::size_t>& which, const MatchParams& params,
                  std::vector<RegionResult>* results);

  PinnedBuffer hostWork_;     // the work area's copy on the host (region_search.cpp: WorkLayout)
  DeviceBuffer work_, maps_;
  std::unique_ptr<Engine> cpu_;  // one thread, Direct path
};

}  // namespace nccmatch::cuda
