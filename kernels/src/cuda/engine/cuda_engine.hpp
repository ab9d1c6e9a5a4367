// The CUDA backend of the engine: frames uploaded on a copy stream (from pinned memory directly,
// pageable memory through a pinned staging buffer) or used in place when already on the device,
// SAT from SatBuilder, per-template numerator (spatial or fft, by the cost model or by option),
// score map and peaks on the GPU, all on one compute stream; the host waits once per frame, when
// the few matches come back (collect). Each frame in flight has its own slot (device copy of the
// frame, upload events, results), so frame n+1 uploads while frame n is matched. Spatial
// templates up to 64x64 take one fused kernel (numerator, window sums, score, peak handoff) that
// needs no SAT (two or more of them: one bank launch and one bank peak search); when every
// template of the bank does and no other frame is in flight, a host frame is uploaded in bands of
// rows and each band of scores starts as soon as its rows have arrived.
#pragma once

#include <cuda_runtime_api.h>

#include <array>
#include <functional>
#include <memory>
#include <vector>

#include "cuda/engine/device_buffer.hpp"
#include "cuda/numerator/numerator_fft.hpp"
#include "cuda/numerator/numerator_spatial.hpp"
#include "cuda/peaks/peaks_kernels.hpp"
#include "cuda/numerator/spatial_scores.hpp"
#include "nccmatch/engine.hpp"
#include "nccmatch/sat_cuda.hpp"
#include "rules/score_rules.hpp"

namespace nccmatch::cuda {

class CudaEngine final : public Engine {
 public:
  static Status create(const EngineOptions& options, std::unique_ptr<Engine>* engine);
  ~CudaEngine() override;

  Backend backend() const override { return Backend::Cuda; }
  Status setTemplates(std::vector<TemplateImage> bank) override;
  const std::vector<TemplateImage>& templates() const override { return bank_; }
  Status match(const FrameView& frame, const MatchParams& params, FrameResult* result) override;
  Status submit(const FrameView& frame, const MatchParams& params) override;
  Status collect(FrameResult* result) override;
  int framesInFlight() const override { return inFlight_; }
  Status scoreMap(const FrameView& frame, Method method, uint32_t templateIndex,
                  std::vector<double>* map) override;

  // The numerator template i uses for frames of the last size seen (Spatial or Fft), and the SAT
  // build in use: for tests, tools and the benchmark.
  CudaNumerator numeratorFor(uint32_t templateIndex) const;
  SatBuild satBuild() const { return satKind_; }
  // Whether frames of the last size build a SAT (false when every fitting template is fused).
  bool usesSat() const { return needSat_; }
  // Windows the last float-fft score map recomputed exactly (its rounding bound did not clear
  // them); synchronises. For tests and the benchmark.
  int lastRecomputeCount() const;

 private:
  CudaEngine(int device, CudaNumerator numerator, bool useCurrentContext);
  // Makes the engine's context current: the device's primary context, or nothing to do when the
  // caller keeps its own context current (EngineOptions::useCurrentCudaContext).
  Status activate() const;

  // One frame in flight: what its upload and matching write, and what collect() reads.
  struct FrameSlot {
    PinnedBuffer staging;  // a pageable frame is copied here first
    DeviceBuffer frame;    // the uploaded frame
    DeviceBuffer results;  // per template: kept count, best, kept matches
    PinnedBuffer hostResults;
    std::vector<cudaEvent_t> bandEvents;  // on copyStream_: rows of band b are on the device
    cudaEvent_t done = nullptr;           // on stream_: hostResults is complete
    int frameWidth = 0, frameHeight = 0;
    std::size_t maxMatches = 0;
    // The slot's matching as a CUDA graph (every template fused, host frame), replayed while
    // what it was captured for stays the same (GraphKey); one launch instead of a dozen calls.
    cudaGraphExec_t graph = nullptr;
    std::vector<uint64_t> graphKey;
    // The scratch generation at which capture or instantiation failed (-1: never): plain launches
    // until prepareSize lays the scratch out again.
    int64_t graphFailedAt = -1;
  };

  Status prepareSize(int width, int height);   // per bank and frame size: SAT, FFT spectra, scratch
  Status uploadFrame(const FrameView& frame, FrameSlot& slot);  // sets image_, imagePitch_, bands
  Status buildFrame(const FrameView& frame, FrameSlot& slot);   // upload, SAT, forward FFT
  Status submitInto(const FrameView& frame, const MatchParams& params, FrameSlot& slot);
  // Everything a frame's matching enqueues on stream_ after the upload and SAT/FFT: scores,
  // peaks, the results' copy to slot.hostResults.
  Status enqueueMatching(const MatchParams& params, const MatchParams& bounded, FrameSlot& slot);
  // enqueueMatching through the slot's graph (captured again when its key changes).
  Status launchMatchingGraph(const MatchParams& params, const MatchParams& bounded, FrameSlot& slot);
  FrameSlot& nextSlot() { return slots_[(head_ + inFlight_) % kMaxFramesInFlight]; }
  // Into map_; fused templates also fill the peak handoff.
  Status computeMap(uint32_t templateIndex, Method method, const PeakHandoff& handoff);
  PeakHandoff handoffFor(uint32_t templateIndex, const MatchParams& params);
  // Two or more fused templates: set up in prepareSize, scored by one launch per band.
  Status prepareFusedBank();
  Status scoreFusedBank(const MatchParams& params);
  // Launches output rows [0, mapHeight) of a fused template (or bank) whose tallest template is
  // templateHeight: all at once when the frame is on the device, else band by band, each after
  // the frame rows it reads have arrived.
  Status forEachBand(int mapHeight, int templateHeight, const std::function<Status(int, int)>& launch);
  // Makes stream_ wait until frame rows [0, rows) are on the device (banded uploads).
  Status waitForRows(int rows);
  // aboveCount_ holds per template the count of positions above the threshold, then the count
  // of windows to recompute; zeroed once a frame.
  int* recomputeCountFor(uint32_t templateIndex) const;
  Status zeroCounters(cudaStream_t stream);
  bool fits(uint32_t i) const {
    return bank_[i].width <= frameWidth_ && bank_[i].height <= frameHeight_;
  }

  int device_ = 0;
  bool useCurrentContext_ = false;
  int smCount_ = 1;
  cudaStream_t stream_ = nullptr;
  CudaNumerator numeratorOption_;

  std::vector<TemplateImage> bank_;
  std::vector<TemplateStats> stats_;
  std::vector<SpatialLayout> layouts_;
  std::vector<std::unique_ptr<DeviceBuffer>> packed_;  // spatial layout, device
  std::vector<std::unique_ptr<DeviceBuffer>> pixels_;  // tightly packed, device (fft spectra)
  std::vector<std::unique_ptr<DeviceBuffer>> fusedPacked_;  // fused kernel's layout (<= 64x64)
  bool bankChanged_ = true;
  uint64_t scratchGeneration_ = 0;  // bumped whenever prepareSize (re)lays out the scratch

  int frameWidth_ = 0, frameHeight_ = 0;  // size the resources below are prepared for
  std::size_t maxPositions_ = 1;           // the largest map of a fitting template (at least 1)
  std::vector<CudaNumerator> chosen_;
  std::vector<int> fftSlot_;
  std::vector<bool> fused_;  // spatial through the fused kernel
  bool anyFft_ = false;
  bool needSat_ = true;      // some fitting template is not fused

  SatBuild satWanted_ = SatBuild::Fused;  // what the bank allows
  SatBuild satKind_ = SatBuild::Fused;    // what was built (an older build when it is missing)
  std::unique_ptr<SatBuilder> sat_;
  int satMaxWidth_ = 0, satMaxHeight_ = 0;
  DeviceBuffer satSum_, satSumSq_;

  // Frames in flight: slots_[head_] is the oldest, inFlight_ of them are in use.
  std::array<FrameSlot, kMaxFramesInFlight> slots_;
  int head_ = 0, inFlight_ = 0;
  const uint8_t* image_ = nullptr;  // the frame being enqueued, on the device
  std::size_t imagePitch_ = 0;

  // Host frames upload in bands_ bands of bandRows_ rows on copyStream_, each announced by one
  // of bandEvents_ (the current slot's); stream_ has waited for the first bandsWaited_ of them.
  // One band unless every template is fused (then scores start with the first rows).
  cudaStream_t copyStream_ = nullptr;
  const cudaEvent_t* bandEvents_ = nullptr;
  int bands_ = 0, bandRows_ = 0, bandsWaited_ = 0;
  // The fft path: the frame's forward transform on fftStream_ beside the SAT build on stream_.
  cudaStream_t fftStream_ = nullptr;
  cudaEvent_t uploaded_ = nullptr, transformed_ = nullptr;

  DeviceBuffer numerator_;  // int64 sums of the spatial path
  DeviceBuffer map_;        // doubles, one template at a time
  FftCorrelator fft_;
  PeakFinder peaks_;
  DeviceBuffer blockBest_;   // fused kernel's per-block bests, one template at a time
  DeviceBuffer above_;       // positions above the threshold, one template at a time
  DeviceBuffer aboveCount_;  // their count, per template, then recompute counts (zeroCounters)
  DeviceBuffer recompute_;       // float fft path: positions to score exactly
  int* lastRecomputeCount_ = nullptr;  // their count for the last template scored (aboveCount_)

  // The fused bank: every fused template scored from shared image tiles in one launch, each
  // with its own map, block bests and above-threshold list at the offsets below.
  FusedSpatialBank fusedBank_;
  BankPeakFinder bankPeaks_;  // the bank's peaks, from its handoffs
  std::vector<bool> inBank_;
  int bankMaxHeight_ = 0, bankTallestMap_ = 0;
  DeviceBuffer bankMaps_, bankBlockBest_, bankAbove_;
};

}  // namespace nccmatch::cuda
