// The template bank on the device, prepared once per bank (statistics, the packed layout of each
// numerator, device copies) and once per frame size (each template's numerator, the SAT tables,
// the FFT spectra, the scratch of score maps and peaks, and the fused bank's launch).
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include "cuda/engine/device_buffer.hpp"
#include "cuda/engine/frame_upload.hpp"
#include "cuda/engine/masked_lanes.hpp"
#include "cuda/numerator/gemm_bank.hpp"
#include "cuda/numerator/masked_scores.hpp"
#include "cuda/numerator/numerator_fft.hpp"
#include "cuda/numerator/numerator_spatial.hpp"
#include "cuda/numerator/spatial_scores.hpp"
#include "cuda/peaks/peaks_kernels.hpp"
#include "nccmatch/engine.hpp"
#include "cuda/sat/sat_builders.hpp"
#include "nccmatch/sat_cuda.hpp"
#include "rules/score_rules.hpp"

namespace nccmatch::cuda {

// The fft numerator in float (half the bytes of double) with exact recomputation of the windows
// its rounding bound does not clear.
constexpr FftPrecision kFftPrecision = FftPrecision::Float;

// Fused spatial templates take the integer tensor cores (exact; the fused kernel is 1.6x the
// dp4a one at 64x64 on the H200, bench/RESULTS.md).
constexpr FusedNumerator kFusedNumerator = FusedNumerator::TensorCores;

// One template's statistics and its device copies in the layout each numerator reads.
struct PreparedTemplate {
  TemplateStats stats;
  SpatialLayout layout;
  DeviceBuffer packed;       // spatialPack's layout: the dp4a numerator
  DeviceBuffer pixels;       // tightly packed: FFT spectra, exact recomputation
  DeviceBuffer fusedPacked;  // the fused kernel's layout (templates up to 64x64 only)
  // A template whose mask ignores some pixel takes the masked kernel (stats are then over its
  // compared pixels). Its taps, weights and row spans (packMaskedTemplate) are held by
  // masked templates and by those larger than the fused kernel's 64x64, whose regions the masked
  // kernel scores (region_search.hpp).
  bool masked = false;
  DeviceBuffer maskedLayout;
  MaskedTemplateDevice maskedDevice(const TemplateImage& t) const {
    return MaskedTemplateDevice::at(maskedLayout.as<uint8_t>(), t.width, t.height, stats);
  }
};

// Masked templates (ignoresPixels) of one size and one set of compared pixels, in groups of two
// or more (a disc support's rotations of one scale): per template its group, -1 for none. Their
// window sums under the mask are computed once a frame (MaskedPass::WindowSums).
std::vector<int> sharedMaskGroups(const std::vector<TemplateImage>& bank);

class TemplateBank {
 public:
  // Statistics and device copies of every template (synchronous copies).
  static Status prepare(std::vector<TemplateImage> images, TemplateBank* bank);

  const std::vector<TemplateImage>& images() const { return images_; }
  std::size_t size() const { return images_.size(); }
  const TemplateImage& image(uint32_t i) const { return images_[i]; }
  const PreparedTemplate& prepared(uint32_t i) const { return prepared_[i]; }
  // sharedMaskGroups of the bank, and each group's members in bank order.
  int maskGroup(uint32_t i) const { return maskGroup_[i]; }
  const std::vector<uint32_t>& maskGroupMembers(int group) const { return maskGroups_[std::size_t(group)]; }
  std::size_t maskGroupCount() const { return maskGroups_.size(); }

 private:
  std::vector<TemplateImage> images_;
  std::vector<PreparedTemplate> prepared_;
  std::vector<int> maskGroup_;
  std::vector<std::vector<uint32_t>> maskGroups_;
};

// What each template of a bank does on frames of one size.
struct SizePlan {
  std::vector<CudaNumerator> numerator;  // Spatial or Fft (Spatial where it does not fit)
  std::vector<bool> fused;               // spatial through the fused kernel (no SAT)
  // Scored through the fft numerator (fits, unmasked, Fft): its reported matches are rescored
  // exactly, so collect drops and orders them again (FrameResults::exactAfterRounding).
  std::vector<bool> exactAfterRounding;
  // Scored through the fft numerator on a map large enough that its peaks are handed over by
  // the score kernels rather than scanned (fftPeakHandoffPays).
  std::vector<bool> fftPeaksHandedOver;
  bool anyFft = false;
  bool needSat = false;                  // some fitting template is not fused
  bool sat32 = true;                     // every box sum of a fitting template fits 32 bits
  std::size_t maxPositions = 1;          // the largest map of a fitting template (at least 1)
  std::size_t maxUnfusedSpatialPositions = 1;
  std::size_t maxSharedMaskPositions = 0;  // the largest map of a fitting template of a mask group
  std::size_t maxMaskedPositions = 0;      // the largest map of a fitting masked template
  int maxFusedBlocks = 1;
  int maxFftHandoffSlots = 0;  // the largest floatScoreHandoffSlots of a fitting fft template
};

// option: the engine's numerator option (Auto: the cost model picks per template).
SizePlan planForSize(const std::vector<TemplateImage>& bank, int width, int height,
                     CudaNumerator option, int smCount);

// The summed-area tables of a frame (sum of I, sum of I^2) and their builder, 32-bit when the
// bank allows it, grown to the largest frame seen.
class SatTables {
 public:
  Status prepare(bool sat32, int width, int height);
  Status build(const UploadedFrame& frame, cudaStream_t stream);
  SatBuild kind() const { return kind_; }
  // Whether a captured graph may hold the build (ReplayableSatBuild); the kernel node the last
  // build() added to a stream capture (null otherwise); the next build's stamps written into
  // such a node of exec before it is replayed on stream.
  bool replayable() const { return replayable_ != nullptr; }
  cudaGraphNode_t capturedNode() const { return replayable_ ? replayable_->capturedNode() : nullptr; }
  Status restamp(cudaGraphExec_t exec, cudaGraphNode_t node, cudaStream_t stream);
  const void* sum() const { return sum_.as<void>(); }
  const void* sumSq() const { return sumSq_.as<void>(); }

 private:
  std::unique_ptr<SatBuilder> builder_;
  ReplayableSatBuild* replayable_ = nullptr;  // builder_'s, where it is one
  SatBuild kind_ = SatBuild::Fused;
  int maxWidth_ = 0, maxHeight_ = 0;
  DeviceBuffer sum_, sumSq_;
};

// Scratch of one template at a time: its map, its peak search, its handoff. aboveCount holds per
// template the count of positions above the threshold, then the count of windows to recompute;
// both are zeroed once a frame.
struct MapScratch {
  DeviceBuffer numerator;  // int64 sums of the spatial path
  DeviceBuffer map;        // doubles
  PeakFinder peaks;
  DeviceBuffer blockBest;  // fused kernel's per-block bests, or an fft template's (handed over)
  DeviceBuffer above;      // positions above the threshold
  DeviceBuffer aboveCount;
  DeviceBuffer recompute;  // float fft path: positions to score exactly

  Status reserve(const SizePlan& plan, std::size_t templates);
  Status zeroCounters(std::size_t templates, cudaStream_t stream);
  int* recomputeCountFor(uint32_t templateIndex, std::size_t templates) const;
  // Fused templates also fill the handoff: at the template's own above count.
  PeakHandoff handoffFor(uint32_t templateIndex, const MatchParams& params) const;
};

// Groups of at least this many fused templates of one size take the GEMM bank with sparse maps,
// twice as many above 32x32 pixels (bench_bank on the H200, 1080p, GEMM against the fused loop:
// 16 x 16^2 225 against 355 us, 16 x 32^2 293 / 456, 16 x 64^2 822 / 767, 64 x 64^2 2485 / 3251).
constexpr int kGemmGroupLeast = 16;
inline bool gemmGroupPays(int width, int height, int count) {
  return gemmBankFits(width, height) && count >= (width * height <= 32 * 32 ? 1 : 2) * kGemmGroupLeast;
}

// Two or more fused templates: every one scored from shared image tiles by one launch per band,
// each with its own map, block bests and above-threshold list, and their peaks found together.
// Groups of one size where gemmGroupPays take a GEMM bank each (sparse maps: only the positions
// reaching the threshold are written); the other members the fused loop.
class FusedBankLaunch {
 public:
  // The plan's fused templates for frames of frameWidth x frameHeight (a bank only when there are
  // two or more), ordered by height so that templates of one height share the window sums in
  // the kernel. aboveCounts: MapScratch::aboveCount, indexed by template.
  // gemmTemplates: how the GEMM groups hold their templates (EngineOptions::cudaGemmTemplates).
  Status prepare(const TemplateBank& bank, const SizePlan& plan, int frameWidth, int frameHeight,
                 int smCount, CudaGemmTemplates gemmTemplates, int* aboveCounts);
  bool active() const;
  bool contains(uint32_t templateIndex) const { return inBank_[templateIndex]; }
  // sliced: the GEMM groups' bands launched in slices of a few tile rounds each (DeviceShare).
  Status score(UploadedFrame& frame, const MatchParams& params, bool sliced, cudaStream_t stream) const;
  Status findPeaks(const MatchParams& params, const UploadedFrame& frame, DeviceMatch* best, DeviceMatch* kept,
                   int* counts, cudaStream_t stream) const;

 private:
  // The fused templates by height, then width.
  static std::vector<uint32_t> orderedMembers(const TemplateBank& bank, const SizePlan& plan);
  // The members' maps, block bests and above lists, one after another, and the GEMM groups' bits and frame floors.
  Status reserve(const TemplateBank& bank, const std::vector<uint32_t>& members, int frameWidth,
                 int frameHeight);
  // Uploads where each member's buffers lie to the score launches and the peak search.
  Status setMembers(const TemplateBank& bank, const std::vector<uint32_t>& members,
                    int frameWidth, int frameHeight, int smCount, CudaGemmTemplates gemmTemplates,
                    int* aboveCounts);

  // The templates of one size that a GEMM bank scores, and the output rows of their maps.
  struct GemmGroup {
    GemmBank launch;
    int mapHeight = 0;
  };

  FusedSpatialBank launch_;  // the members outside GEMM groups (none: size() == 0)
  std::vector<std::unique_ptr<GemmGroup>> gemmGroups_;
  BankPeakFinder peaks_;
  std::vector<bool> inBank_, inGemm_;
  int maxHeight_ = 0, tallestMap_ = 0;
  std::size_t sparseWords_ = 0;  // the GEMM groups' sparse-map state (sparseWords a member), zeroed a frame
  DeviceBuffer maps_, blockBest_, above_, sparse_;
};

// Everything prepared for one bank and frame size.
struct PreparedSize {
  int width = 0, height = 0;  // 0 until prepared (and after a failed preparation)
  SizePlan plan;
  std::vector<int> fftSlot;   // each fft template's spectrum in fft
  SatTables sat;
  FftCorrelator fft;
  MapScratch scratch;
  FusedBankLaunch fusedBank;
  MaskedLanes maskedLanes;  // masked templates' maps and peaks, side by side

  // fftStream: the frame's forward transform; stream: everything else.
  Status prepare(const TemplateBank& bank, int frameWidth, int frameHeight, CudaNumerator option,
                 CudaGemmTemplates gemmTemplates, int smCount, cudaStream_t stream, cudaStream_t fftStream);
  bool fits(const TemplateImage& t) const { return t.width <= width && t.height <= height; }
};

}  // namespace nccmatch::cuda
