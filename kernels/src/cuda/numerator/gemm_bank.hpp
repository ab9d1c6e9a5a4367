// The bank numerator as a matrix product on the integer tensor cores: for the templates of one
// size, C = A * B with A the frame's windows (positions x K) and B the templates (K x templates),
// C = sum(I*T) for every position and template, u8 x u8 -> s32 by mma.sync (exact: w*h*255^2 <
// 2^31 for w, h <= 64). K runs over template rows r and 16-byte column chunks j of a row: the
// "slice" (r, j). The block builds, in shared memory, each frame row's Hankel matrix (position x,
// chunk j: the 16 frame bytes from x + 16j), so every A fragment is one ldmatrix of 16-byte rows
// (no im2col matrix in global memory, no byte shifts in the main loop); the templates wait in
// shared memory in the same slice order, read by ldmatrix too. The epilogue scores every
// (position, template) from the window sums of the same tile with the rules of score_rules.hpp
// and hands each template's peaks over as the fused bank does (map, per-tile bests, positions
// reaching the threshold).
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
// A block tile is kGemmTileRows output rows (one per warp) by kGemmTileWidth positions.
constexpr int kGemmTileRows = 8;
constexpr int kGemmTileWidth = 64;
constexpr int kGemmThreads = 32 * kGemmTileRows;
// Shared memory a block may take: one block an SM where a warp holds 8 n-tiles (its accumulators
// fill the registers), two where it holds 4 or 2 (the kernel then keeps to 128 registers).
constexpr std::size_t kGemmSharedLimit = 220 * 1024;
constexpr std::size_t kGemmSharedLimitTwoBlocks = 112 * 1024;
// The most chunks of templates a block holds by default (GemmBankShape::groupChunks).
constexpr int kGemmMaxGroupChunks = 8;

inline bool gemmBankFits(int templateWidth, int templateHeight) {
  return templateWidth >= 1 && templateHeight >= 1 && templateWidth <= kGemmMaxSide &&
         templateHeight <= kGemmMaxSide;
}

// How `count` templates of width x height are cut for the kernel. A warp forms one output row
// of kGemmTileWidth positions (4 m-tiles of 16) for chunkTemplates = 8 * nTiles templates;
// blockIdx.y picks the chunk. K is cut into slabs of slabRows template rows (the Hankel rows of
// a slab, slabRows + kGemmTileRows - 1 frame rows, are what shared memory holds at once); a
// slab's slices, padded to an even number, make its k-steps of 32.
struct GemmBankShape {
  int width = 0, height = 0;
  int rowChunks = 0;       // 16-byte chunks a template row: ceil(width / 16), made even above 1
  int slabRows = 0;        // template rows a slab
  int slabSteps = 0;       // k-steps of a whole slab: ceil(slabRows * rowChunks / 2)
  int kSteps = 0;          // k-steps of all slabs (the last may be shorter)
  int nTiles = 0;          // 2, 4 or 8
  int tileWidth = 0;       // kGemmTileWidth
  int chunkTemplates = 0;  // 8 * nTiles
  int chunks = 0;          // ceil(count / chunkTemplates)
  // Chunks a block holds (their B operands and descriptors in shared memory), scored in turn on
  // each tile: the tile's load, window sums and folded windows (and, for a template of one slab,
  // its Hankel rows) are formed once for them all. A divisor of chunks.
  int groupChunks = 1;
  int groups() const { return chunks / groupChunks; }  // the launch's blockIdx.y
  bool zeroMean = false;   // shared memory also for the zero-mean screen's template constants
  std::size_t chunkBytes() const { return std::size_t(kSteps) * 2 * chunkTemplates * 16; }
  std::size_t sharedBytes() const;  // the block's shared memory
};

// The shape for a group, or one with kSteps == 0 when the size does not fit (gemmBankFits).
// sharedLimit: the device's limit for one block (two-block shapes take half of it at most);
// maxNTiles: 8, 4 or 2, the widest n-tiles allowed.
// The default 4: two blocks an SM beat one holding 8 n-tiles (bench_bank --max-n-tiles on the
// H200: 64 x 32^2 at 1080p 1114 against 1190 us).
// zeroMean: room for the zero-mean screen as well (GemmBank::set's zeroMeanScreen).
// maxGroupChunks: the most chunks a block may hold (groupChunks: the largest divisor of chunks up
// to it that keeps the shape's blocks an SM; 1: a chunk a block, as before groups existed).
GemmBankShape gemmBankShape(int width, int height, int count, std::size_t sharedLimit = kGemmSharedLimit,
                            int maxNTiles = 4, bool zeroMean = false, int maxGroupChunks = kGemmMaxGroupChunks);

// Whether a group of `count` templates takes the zero-mean screen (EngineOptions::cudaGemmTemplates
// Auto): more than 16 templates, where the bank's shape has 4 n-tiles a warp. Measured on the H200
// (session 30, bench/gemm_zero_mean.sh, 1080p, sparse launch): 64 x 16² 612 -> 492 µs, 256 x 16²
// 2485 -> 1955, 64 x 32² 832 -> 731; at 16 templates (2 n-tiles) 0-2% slower.
inline bool gemmZeroMeanPays(int count) { return count > 16; }

// The group's B operand, ready to upload: per chunk, per k-step, its two slices, per template of
// the chunk 16 bytes: template row r, columns 16j .. 16j+15 (zero beyond the template, and a
// whole zero slice where a slab's slices are odd in number). offsets: per template an r to take
// from each pixel, the bytes then the s8 values T - r (rules/zero_mean_screen.hpp).
std::vector<uint8_t> gemmBankFragments(const std::vector<const uint8_t*>& pixels, const GemmBankShape& shape,
                                       const std::vector<int>* offsets = nullptr);

// Whether the GEMM bank's code object loaded on the current device issues wgmma (its sm_90a
// code, Hopper) rather than mma.sync: a one-thread probe compiled with the kernel.
Status gemmBankUsesWgmma(bool* out);

// Per-tile bests (PeakHandoff::blockBest entries) of one template's map of mapWidth x mapHeight
// (every shape's tiles are kGemmTileWidth x kGemmTileRows).
int gemmBankTiles(int mapWidth, int mapHeight);

// The screens' pushes to exact scoring since the last reset, in a build of gemm_bank.cu with
// NCC_GEMM_COUNT_PUSHES 1 (bench_bank_pushes); counted false in every other build. Sparse
// launches only (a launch writing every score screens nothing).
struct GemmPushTally {
  bool counted = false;
  uint64_t pushes = 0;     // pairs pushed
  uint64_t screened = 0;   // (tile, chunk)s screened
  uint64_t overflows = 0;  // of those, lists past their capacity (the row epilogue scored them)
};
Status gemmBankPushTally(GemmPushTally* out, bool reset);

// One launch per band of output rows scores every template of the group; each template's map,
// tile bests and above-threshold list are what FusedSpatialBank writes for it, with
// gemmBankTiles(...) tiles of tileWidth x kGemmTileRows in place of the fused kernel's blocks.
constexpr int kGemmSliceRounds = 2;

class GemmBank {
 public:
  // pixels[i]: template i, width x height, tightly packed (host); members[i]: its statistics and
  // outputs (packedTemplate unused). Uploads synchronously; once per bank and set of buffers.
  // maxNTiles as gemmBankShape's. zeroMeanScreen: also the templates as s8 T - r, from which
  // ccoeff-normed launches screen each pair with one multiply-add and one bound a template and
  // tile (rules/zero_mean_screen.hpp); other methods are as without it. The engine asks for it
  // where gemmZeroMeanPays (EngineOptions::cudaGemmTemplates Auto).
  // maxGroupChunks as gemmBankShape's.
  Status set(const std::vector<const uint8_t*>& pixels, int width, int height,
             const std::vector<FusedBankTemplate>& members, int smCount, int maxNTiles = 4,
             bool zeroMeanScreen = false, int maxGroupChunks = kGemmMaxGroupChunks);
  std::size_t size() const { return std::size_t(count_); }
  const GemmBankShape& shape() const { return shape_; }
  // Output rows [rowBegin, rowEnd) (rowBegin a multiple of kGemmTileRows, rowEnd at most the map
  // height); reads frame rows below min(height, rowEnd + h - 1) only. Enqueues, never syncs.
  Status score(const uint8_t* image, std::size_t pitch, int width, int height, Method method,
               const FusedBankRule& rule, int rowBegin, int rowEnd, cudaStream_t stream) const;
  // Output rows a slice of a band takes on frames `width` wide (a multiple of kGemmTileRows):
  // kGemmSliceRounds tiles for each resident block, so that a slice holds the GPU for a few tiles'
  // time while the one wave of blocks still has work for every block.
  int sliceRows(int width) const;

 private:
  DeviceBuffer fragments_, descriptors_;
  DeviceBuffer zeroMeanFragments_, zeroMeanTemplates_;  // zeroMeanScreen only
  GemmBankShape shape_;
  int count_ = 0;
  int smCount_ = 1;
  int blocksPerSm_ = 1;
  bool canCollect_ = false;
  bool canSparse_ = false;  // every template has aboveBits as well
  bool hasFrameFloors_ = false;  // every template has a frameFloor (sparse launches need them)
};

}  // namespace nccmatch::cuda
