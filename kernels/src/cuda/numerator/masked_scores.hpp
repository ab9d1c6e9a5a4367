// Score maps of masked templates on the GPU: per position the exact integer sums under the mask,
// sum I*T*M, sum I*M and sum I^2*M (the correlations of the frame and its square with the mask,
// not box sums), then the score from rules/masked_score_rules.hpp, the same function the CPU
// reference calls: bit-identical scores. One thread a position; each template row is read only
// over its span of compared pixels, so a rotated template's empty corners cost nothing.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>
#include <vector>

#include "nccmatch/status.hpp"
#include "nccmatch/types.hpp"
#include "rules/score_rules.hpp"

namespace nccmatch::cuda {

// A masked template laid out for the kernel (host side; maskedTemplateLayout builds it).
struct MaskedTemplateLayout {
  std::vector<uint8_t> taps;     // per pixel: T where compared, else 0
  std::vector<uint8_t> weights;  // per pixel: 1 where compared, else 0
  std::vector<int32_t> spans;    // per row: first and one-past-last compared column (0, 0: none)
};
MaskedTemplateLayout maskedTemplateLayout(const TemplateImage& t);

// Device pointers to one masked template's layout (spans as int2 pairs).
struct MaskedTemplateDevice {
  const uint8_t* taps = nullptr;
  const uint8_t* weights = nullptr;
  const int32_t* spans = nullptr;
  int width = 0, height = 0;
  TemplateStats stats;  // maskedTemplateStats: over the compared pixels
};

// map[y * mapW + x] = maskedScoreFromSums(method, stats, sum I M, sum I^2 M, sum I T M) for the
// (width - tw + 1) x (height - th + 1) windows of the image (device memory, pitch in bytes).
Status maskedScoreMap(const uint8_t* image, std::size_t pitch, int width, int height,
                      const MaskedTemplateDevice& t, Method method, double* map, cudaStream_t stream);

}  // namespace nccmatch::cuda
