// The spatial path in one kernel for templates up to 64x64: the exact numerator sum(I*T) by
// integer tensor-core MMA (u8 x u8 -> s32, exact) or by __dp4a, the window sums sum(I) and sum(I^2) from column sums of the same shared-memory tile
// (no SAT needed), the score of every position (bit-identical to the CPU's scoreFromSums) and
// the peak handoff (per-block best, positions above the threshold). A launch may cover a band
// of output rows, so it can start as soon as the frame rows it reads are on the device. A bank
// launch scores several templates from one image tile per block (FusedSpatialBank).
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>
#include <utility>
#include <vector>

#include "cuda/engine/device_buffer.hpp"
#include "cuda/peaks/peaks_kernels.hpp"
#include "nccmatch/status.hpp"
#include "rules/score_rules.hpp"

namespace nccmatch::cuda {

constexpr int kFusedMaxSide = 64;
// Output tile of one block; a band of output rows starts at a multiple of the tile height.
constexpr int kFusedTileWidth = 128;
constexpr int kFusedTileHeight = 16;

inline bool fusedSpatialFits(int templateWidth, int templateHeight) {
  return templateWidth >= 1 && templateHeight >= 1 && templateWidth <= kFusedMaxSide &&
         templateHeight <= kFusedMaxSide;
}

// How the numerator is formed. Tensor cores: per template row, a 16 x K Toeplitz matrix of the
// template (16 neighbouring outputs) times a K x 8 matrix of frame bytes (8 groups of 16 outputs),
// K = w + 15 in steps of 32 (mma.m16n8k32) and, where 16 or fewer remain, one last step of 16
// (mma.m16n8k16): 80 instead of 96 at w = 64, 48 instead of 64 at w = 32.
enum class FusedNumerator { TensorCores, Dp4a };

struct FusedKSteps {
  int steps32 = 0;
  bool step16 = false;
  NCC_HOST_DEVICE constexpr int paddedK() const { return 32 * steps32 + (step16 ? 16 : 0); }
};
NCC_HOST_DEVICE constexpr FusedKSteps fusedKSteps(int templateWidth) {
  const int k = templateWidth + 15, rest = k % 32;
  return FusedKSteps{k / 32 + (rest > 16 ? 1 : 0), rest > 0 && rest <= 16};
}

// The template's rows zero-padded to whole 4-byte words (Dp4a), ready to upload.
std::vector<uint8_t> fusedSpatialPack(const uint8_t* pixels, int width, int height);
// The template's A fragments (TensorCores): for each row, each step of 32 in K as 32 lanes x 16
// bytes (mma.m16n8k32), then the step of 16, if any, as 32 lanes x 8 bytes (mma.m16n8k16), in
// the order the lanes load them.
std::vector<uint8_t> fusedSpatialFragments(const uint8_t* pixels, int width, int height);

// Blocks (and PeakHandoff::blockBest entries) of a whole map of mapWidth x mapHeight.
int fusedSpatialBlocks(int mapWidth, int mapHeight);

struct FusedSpatialArgs {
  const uint8_t* image = nullptr;  // device, row pitch in bytes
  std::size_t pitch = 0;
  int width = 0, height = 0;
  FusedNumerator numerator = FusedNumerator::TensorCores;
  // Device copy of fusedSpatialFragments' bytes (TensorCores) or fusedSpatialPack's (Dp4a).
  const uint8_t* packedTemplate = nullptr;
  int templateWidth = 0, templateHeight = 0;
  TemplateStats stats;
  Method method = Method::CCoeffNormed;
  double* map = nullptr;  // (width-w+1) x (height-h+1), dense
};

// Scores output rows [rowBegin, rowEnd) (rowBegin a multiple of kFusedTileHeight); reads frame
// rows below min(height, rowEnd + h - 1) only. Enqueues on stream, never syncs.
Status fusedSpatialScores(const FusedSpatialArgs& args, int rowBegin, int rowEnd,
                          const PeakHandoff& handoff, cudaStream_t stream);

// One template of a bank launch, with its own map and handoff buffers (device pointers).
struct FusedBankTemplate {
  const uint8_t* packedTemplate = nullptr;  // as FusedSpatialArgs::packedTemplate
  int templateWidth = 0, templateHeight = 0;
  TemplateStats stats;
  double* map = nullptr;            // (width-w+1) x (height-h+1), dense
  Ranked* blockBest = nullptr;      // fusedSpatialBlocks(map size) entries
  int* above = nullptr;             // room for every position of the map when collecting
  int* aboveCount = nullptr;        // zeroed before the launch
  // Sparse maps only (FusedBankRule::everyScore false, GemmBank): one bit a map position, set
  // where the position reaches the threshold; zeroed before the launch.
  uint32_t* aboveBits = nullptr;
  // Sparse maps only: one word, zeroed before the frame's first launch: the running floor under
  // the template's best over the whole frame (a key of gemm_tiles::frameFloorKey). A tile whose
  // pairs cannot reach it leaves its tile best empty (index -1): the best over the tiles stays the
  // map's best, and what is scored exactly shrinks to the tiles that raise the floor.
  uint32_t* frameFloor = nullptr;
};

// The threshold rule every template of a bank launch shares (PeakHandoff's last three fields).
struct FusedBankRule {
  double sign = 1.0;
  double goodEnough = 0.0;
  bool collect = false;
  // true: every position's score is written to the map. false (GemmBank only): a sparse map:
  // only the positions that reach the threshold get their score (and their bit in aboveBits);
  // the above lists are the same either way, and so is the best over the tiles, but a tile best
  // is empty (index -1) where none of the tile's pairs can reach the template's frame floor.
  bool everyScore = true;
};

// Several fused templates in one launch: each block loads its image tile once (sized for the
// largest template) and scores every template on it in order, recomputing the window sums only
// where the template height changes (order the bank by height to share them). Each template's
// map, block bests and above-threshold list are what fusedSpatialScores would write for it.
class FusedSpatialBank {
 public:
  // Uploads the descriptors (synchronously; once per bank and set of buffers).
  Status set(const std::vector<FusedBankTemplate>& templates, FusedNumerator numerator);
  std::size_t size() const { return sizes_.size(); }
  // Output rows [rowBegin, rowEnd) of every template, each clipped to its own map height;
  // rowBegin a multiple of kFusedTileHeight, rowEnd at most the largest map height. Reads frame
  // rows below min(height, rowEnd + maxHeight - 1) only. Enqueues on stream, never syncs.
  Status score(const uint8_t* image, std::size_t pitch, int width, int height, Method method,
               const FusedBankRule& rule, int rowBegin, int rowEnd, cudaStream_t stream) const;

 private:
  DeviceBuffer descriptors_;
  std::vector<std::pair<int, int>> sizes_;  // (w, h) of each template
  FusedNumerator numerator_ = FusedNumerator::TensorCores;
  bool canCollect_ = false;  // every template has above-threshold buffers
};

}  // namespace nccmatch::cuda
