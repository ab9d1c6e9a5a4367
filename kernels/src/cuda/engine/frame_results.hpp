// One frame's matches as the peak searches write them on the device (per template: the kept
// count, the best match, the kept matches) and as collect() decodes them from the host copy.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <vector>

#include "cuda/engine/device_buffer.hpp"
#include "cuda/peaks/peaks_kernels.hpp"
#include "nccmatch/types.hpp"

namespace nccmatch::cuda {

// Layout of the results buffer for `templates` templates and `maxMatches` kept each: the counts
// (padded to 16 bytes), the best match of each template, then maxMatches kept matches each (the
// `bytes` copied to the host); after them, where a template's matches are rescored exactly
// (withExactSums), the sums of maxMatches + 1 matches (refineSubPixelExactly's, device only).
struct ResultsLayout {
  std::size_t countsBytes, bestOffset, keptOffset, bytes;
  std::size_t exactSumsOffset, deviceBytes;
  ResultsLayout(std::size_t templates, std::size_t maxMatches, bool withExactSums = false);
};

// Where the peak searches write a frame's results (device pointers).
struct ResultsOnDevice {
  int* counts = nullptr;
  DeviceMatch* best = nullptr;
  DeviceMatch* kept = nullptr;
  ExactMatchSums* exactSums = nullptr;  // null without exact rescoring
};

// One frame slot's results: the device buffer, its host copy, and what decoding needs.
struct FrameResults {
  DeviceBuffer device;
  PinnedBuffer host;
  std::size_t maxMatches = 0;
  int frameWidth = 0, frameHeight = 0;
  // The frame's parameters, and per template whether its matches' scores were made exact after a
  // rounding numerator chose them (the fft path): decode orders those again (orderExactMatches).
  MatchParams params;
  std::vector<bool> exactAfterRounding;

  // The layout for `templates` templates, with exact sums where any is exactAfterRounding.
  ResultsLayout layout(std::size_t templates) const;
  // Room for `templates` templates of maxMatches kept matches each. The copy to the host reads
  // every byte of the layout, and the peak searches write only the counts, the best matches and
  // each template's first `count` kept matches: the rest (kept slots past the count, the counts'
  // padding, templates larger than the frame) and the exact sums are zeroed on `stream` when the
  // device buffer grows or the layout changes, not per frame.
  Status reserve(std::size_t templates, cudaStream_t stream);
  ResultsOnDevice onDevice(const ResultsLayout& layout) const;
  // Enqueues the copy of the results to `host`.
  Status copyToHost(const ResultsLayout& layout, cudaStream_t stream) const;
  // The matches of the host copy (complete once the copy has finished): best[i] for every
  // template that fits the frame, and its kept matches (of an exactAfterRounding template: those
  // still passing the threshold, best first).
  void decode(const std::vector<TemplateImage>& bank, FrameResult* result) const;

 private:
  std::size_t zeroedBytes_ = 0, zeroedDeviceBytes_ = 0;  // the layout the device buffer was zeroed for
};

}  // namespace nccmatch::cuda
