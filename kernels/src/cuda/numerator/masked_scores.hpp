// Score maps of masked templates, and of unmasked ones the fused kernel does not take (wider or
// taller than 64), on the GPU: per position the exact integer sums under the mask, sum I*T*M,
// sum I*M and sum I^2*M (the correlations of the frame and its square with the mask, not box
// sums), then the score from rules/masked_score_rules.hpp, the same function the CPU reference
// calls: bit-identical scores. One kernel (masked_tiles.cuh) serves a whole frame (one region) and
// a list of regions of one frame in one launch (blockIdx.z = region, as region_scores.hpp): an
// image tile and a chunk of the template's rows in shared memory, four positions a thread, __dp4a
// on packed bytes. Each template row is read only over its span of compared words, so a rotated
// template's empty corners cost nothing. Any template size: rows are taken in chunks that fit.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>
#include <vector>

#include "nccmatch/status.hpp"
#include "nccmatch/types.hpp"
#include "rules/score_rules.hpp"

namespace nccmatch::cuda {

// Bytes of one template row in the layout: the width rounded up to whole 32-bit words.
NCC_HOST_DEVICE constexpr int maskedRowBytes(int width) { return (width + 3) / 4 * 4; }

// A template laid out for the kernel, one block: taps (per pixel T where compared, else 0), then
// weights (0xFF where compared, else 0: a byte mask for I), each in rows of maskedRowBytes(width)
// bytes with zero padding, then per row the first and one-past-last 32-bit word holding a
// compared pixel (int32 pairs; 0, 0: none). A template without a mask (or one ignoring nothing)
// compares every pixel: all weights 0xFF.
std::size_t maskedLayoutBytes(int width, int height);
// Writes t's layout to out (maskedLayoutBytes(t.width, t.height) bytes, 4-byte aligned) and
// returns its statistics over the compared pixels (maskedTemplateStats).
TemplateStats packMaskedTemplate(const TemplateImage& t, uint8_t* out);

// Device pointers to one template's layout.
struct MaskedTemplateDevice {
  const uint8_t* taps = nullptr;     // 4-byte aligned
  const uint8_t* weights = nullptr;  // 4-byte aligned
  const int32_t* spans = nullptr;    // int2 pairs
  int width = 0, height = 0;
  TemplateStats stats;

  // The layout of a width x height template packed (packMaskedTemplate) at `block` (4-byte
  // aligned; device memory for the kernel, host memory to inspect it).
  static MaskedTemplateDevice at(const uint8_t* block, int width, int height, const TemplateStats& stats) {
    const std::size_t plane = std::size_t(maskedRowBytes(width)) * height;
    return {block, block + plane, reinterpret_cast<const int32_t*>(block + 2 * plane), width, height, stats};
  }
};

// One region (or a whole frame) as the kernel reads it.
struct MaskedScoreDesc {
  const uint8_t* image = nullptr;  // device: the region's first pixel
  std::size_t pitch = 0;           // bytes between its rows
  int width = 0, height = 0;       // at least the template's size
  MaskedTemplateDevice t;
  double* map = nullptr;  // device: (width - t.width + 1) x (height - t.height + 1), dense
  int64_t* windowSums = nullptr;  // device, shared window sums only: sum I M, then sum I^2 M, each map-sized
};

// What one masked frame launch computes. Templates of one mask (a disc support's rotations of one
// scale) have the same window sums sum I M and sum I^2 M: WindowSums computes them once (into
// windowSums), and each template's ScoresFromWindowSums then only its cross term sum I T M, about
// a third of the work. Scores computes all three.
enum class MaskedPass { Scores, WindowSums, ScoresFromWindowSums };

// map[y * mapW + x] = maskedScoreFromSums(method, stats, sum I M, sum I^2 M, sum I T M) for the
// (width - tw + 1) x (height - th + 1) windows of the image (device memory, pitch in bytes).
// WindowSums writes windowSums instead (2 x mapW x mapH int64: sum I M, then sum I^2 M), the
// map untouched; ScoresFromWindowSums reads them there (from a template of the same mask).
Status maskedScoreMap(const uint8_t* image, std::size_t pitch, int width, int height,
                      const MaskedTemplateDevice& t, Method method, double* map, cudaStream_t stream,
                      MaskedPass pass = MaskedPass::Scores, int64_t* windowSums = nullptr);

// Every region's whole map in one launch on `stream` (never syncs). descs: `count` descriptors in
// device or mapped host memory (each block reads its own once); maxTemplateWidth,
// maxTemplateHeight the largest template sides among them;
// maxMapWidth, maxMapHeight the largest map sides.
Status maskedRegionScores(const MaskedScoreDesc* descs, int count, int maxTemplateWidth, int maxTemplateHeight,
                          int maxMapWidth, int maxMapHeight, Method method, cudaStream_t stream);

}  // namespace nccmatch::cuda
