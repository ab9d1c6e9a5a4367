// The bank numerator as a matrix product on the integer tensor cores: for the templates of one
// size, C = A * B with A the frame's windows (positions x K, formed from a shared-memory image
// tile by address arithmetic: no im2col matrix in global memory), B the templates (K x templates,
// each template row zero-padded to whole 4-byte words) and C = sum(I*T) for every position and
// template, u8 x u8 -> s32 by mma.sync (exact: w*h*255^2 < 2^31 for w, h <= 64). The epilogue
// scores every (position, template) from the window sums of the same tile with the rules of
// score_rules.hpp and hands each template's peaks over as the fused bank does (map, per-tile
// bests, positions reaching the threshold).
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>
#include <vector>

#include "cuda/engine/device_buffer.hpp"
#include "cuda/numerator/spatial_scores.hpp"
#include "nccmatch/status.hpp"
#include "nccmatch/types.hpp"

namespace nccmatch::cuda {

constexpr int kGemmMaxSide = 64;
// A block tile is kGemmTileRows output rows (one per warp) by GemmBankShape::tileWidth outputs.
constexpr int kGemmTileRows = 8;
constexpr int kGemmThreads = 32 * kGemmTileRows;
// Shared memory the templates of one block may take (two blocks fit an H100/H200 SM).
constexpr std::size_t kGemmChunkBytesLimit = 72 * 1024;

inline bool gemmBankFits(int templateWidth, int templateHeight) {
  return templateWidth >= 1 && templateHeight >= 1 && templateWidth <= kGemmMaxSide &&
         templateHeight <= kGemmMaxSide;
}

// How `count` templates of width x height are cut for the kernel. A warp forms one output row
// of tileWidth = 16 * mTiles positions for chunkTemplates = 8 * nTiles templates, mTiles * nTiles
// = 16 (each A fragment serves nTiles MMAs, each B fragment mTiles); blockIdx.y picks the chunk.
struct GemmBankShape {
  int width = 0, height = 0;
  int rowBytes = 0;        // a template row in K: width rounded up to 4
  int kSteps = 0;          // K = height * rowBytes rounded up to 32, in steps of 32
  int nTiles = 0;          // 2, 4 or 8
  int mTiles = 0;          // 16 / nTiles
  int tileWidth = 0;       // 16 * mTiles
  int chunkTemplates = 0;  // 8 * nTiles
  int chunks = 0;          // ceil(count / chunkTemplates)
  std::size_t chunkBytes() const { return std::size_t(kSteps) * nTiles * 256; }
};

// The shape for a group, or one with kSteps == 0 when the size does not fit (gemmBankFits).
GemmBankShape gemmBankShape(int width, int height, int count);

// The group's B fragments, ready to upload: per chunk, per k-step s, per n-tile j, 32 lanes x
// 8 bytes, lane (g, t) holding template 8j + g at k = 32s + 4t .. +3 and 32s + 16 + 4t .. +3,
// where k = r * rowBytes + c is template byte (r, c) (zero beyond the template).
std::vector<uint8_t> gemmBankFragments(const std::vector<const uint8_t*>& pixels, const GemmBankShape& shape);

// Per-tile bests (PeakHandoff::blockBest entries) of one template's map of mapWidth x mapHeight.
int gemmBankTiles(int mapWidth, int mapHeight, const GemmBankShape& shape);

// One launch per band of output rows scores every template of the group; each template's map,
// tile bests and above-threshold list are what FusedSpatialBank writes for it, with
// gemmBankTiles(...) tiles of tileWidth x kGemmTileRows in place of the fused kernel's blocks.
class GemmBank {
 public:
  // pixels[i]: template i, width x height, tightly packed (host); members[i]: its statistics and
  // outputs (packedTemplate unused). Uploads synchronously; once per bank and set of buffers.
  Status set(const std::vector<const uint8_t*>& pixels, int width, int height,
             const std::vector<FusedBankTemplate>& members, int smCount);
  std::size_t size() const { return std::size_t(count_); }
  const GemmBankShape& shape() const { return shape_; }
  // Output rows [rowBegin, rowEnd) (rowBegin a multiple of kGemmTileRows, rowEnd at most the map
  // height); reads frame rows below min(height, rowEnd + h - 1) only. Enqueues, never syncs.
  Status score(const uint8_t* image, std::size_t pitch, int width, int height, Method method,
               const FusedBankRule& rule, int rowBegin, int rowEnd, cudaStream_t stream) const;

 private:
  DeviceBuffer fragments_, descriptors_;
  GemmBankShape shape_;
  int count_ = 0;
  int smCount_ = 1;
  bool canCollect_ = false;
};

}  // namespace nccmatch::cuda
