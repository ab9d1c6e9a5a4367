// The CUDA backend of the engine: frames uploaded on a copy stream (from pinned memory directly,
// pageable memory through a pinned staging buffer) or used in place when already on the device,
// SAT from SatBuilder, per-template numerator (spatial or fft, by the cost model or by option),
// score map and peaks on the GPU, on a lane's compute stream; the host waits once per frame, when
// the few matches come back (collect). Each frame in flight has its own slot (device copy of the
// frame, upload events, results), so frame n+1 uploads while frame n is matched, and consecutive
// frames in flight take different lanes (EngineOptions::cudaMatchingLanes), each with its own
// streams and scratch, so frame n+1 is matched beside frame n's last steps. Spatial
// templates up to 64x64 take one fused kernel (numerator, window sums, score, peak handoff) that
// needs no SAT (two or more of them: one bank launch and one bank peak search); when every
// template of the bank does and no other frame is in flight, a host frame is uploaded in bands of
// rows and each band of scores starts as soon as its rows have arrived.
//
// The parts: template_bank (per bank and frame size), frame_upload (the row bands),
// matching_graph (the captured matching), frame_results (the results buffer and its decoding),
// cuda_handles and device_buffer (owning handles). This class orders them per frame.
#pragma once

#include <cuda_runtime_api.h>

#include <array>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "cuda/engine/cuda_handles.hpp"
#include "cuda/engine/device_sharing.hpp"
#include "cuda/engine/frame_results.hpp"
#include "cuda/engine/frame_upload.hpp"
#include "cuda/engine/matching_graph.hpp"
#include "cuda/engine/region_search.hpp"
#include "cuda/engine/template_bank.hpp"
#include "cuda/score/score_kernels.hpp"
#include "nccmatch/engine.hpp"
#include "nccmatch/sat_cuda.hpp"

namespace nccmatch::cuda {

class CudaEngine final : public Engine {
 public:
  static Status create(const EngineOptions& options, std::unique_ptr<Engine>* engine);
  ~CudaEngine() override;

  Backend backend() const override { return Backend::Cuda; }
  Status setTemplates(std::vector<TemplateImage> bank) override;
  const std::vector<TemplateImage>& templates() const override { return bank_.images(); }
  Status match(const FrameView& frame, const MatchParams& params, FrameResult* result) override;
  Status submit(const FrameView& frame, const MatchParams& params) override;
  Status collect(FrameResult* result) override;
  int framesInFlight() const override { return inFlight_; }
  Status scoreMap(const FrameView& frame, Method method, uint32_t templateIndex,
                  std::vector<double>* map) override;
  // Every region scored on the GPU (region_search.hpp); refused while frames are in flight.
  Status matchRegions(const FrameView& frame, const std::vector<RegionQuery>& regions,
                      const MatchParams& params, std::vector<RegionResult>* results) override;
  // A set's layouts and statistics made once and kept on the device (region_templates.hpp).
  Status prepareRegionTemplates(std::vector<TemplateImage> templates, RegionTemplateSet* set) override;
  Status releaseRegionTemplates(RegionTemplateSet* set) override;
  bool holdsRegionTemplates(const RegionTemplateSet& set) const override { return regionSets_.holds(set); }
  // Host frames as the base class; device frames by one 2D copy.
  Status copyPatch(const FrameView& frame, int x, int y, int width, int height,
                   std::vector<uint8_t>* pixels) override;

  // The numerator template i uses for frames of the last size seen (Spatial or Fft), and the SAT
  // build in use: for tests, tools and the benchmark.
  CudaNumerator numeratorFor(uint32_t templateIndex) const;
  SatBuild satBuild() const { return size().sat.kind(); }
  // Whether frames of the last size build a SAT (false when every fitting template is fused).
  bool usesSat() const { return size().plan.needSat; }
  // Matching lanes (EngineOptions::cudaMatchingLanes), and the lane the newest frame took: for
  // tests and the benchmark.
  int matchingLanes() const { return laneCount_; }
  int lastLane() const { return int(lane_ - lanes_.data()); }
  // Windows the last float-fft score map recomputed exactly (its rounding bound did not clear
  // them); synchronises. For tests and the benchmark.
  int lastRecomputeCount() const;
  // Whether the newest frame's matching after its upload was one replayed or freshly captured
  // CUDA graph rather than calls one by one, and whether that graph also built its SAT and
  // forward transform (else enqueued before it). For tests and the benchmark.
  bool lastFrameGraphed() const { return lastFrameGraphed_; }
  bool lastFrameTablesGraphed() const { return lastFrameTablesGraphed_; }
  // Float-fft templates' peaks: from the score and recompute kernels' hand-off (on) or from a
  // scan of the whole map afterwards (off). By default the size plan picks per template
  // (fftPeakHandoffPays: the hand-off on maps of 5 M positions or more). The same matches
  // either way. For tests and the benchmark; takes effect with the next frame.
  void setFftPeakHandoff(bool on) { fftPeakHandoff_ = on; }
  void setFftPeakHandoffAuto() { fftPeakHandoff_.reset(); }
  // Whether template i's peaks came from the hand-off on frames of the last size seen (false for
  // templates not scored through the float fft). For tests and the benchmark.
  bool fftPeaksHandedOver(uint32_t templateIndex) const;
  // The float fft path's conjugate product formed in the inverse transform's load callback (on,
  // the default where built) or by the product kernel (off): FftCorrelator::setProductInLoad. For
  // tests and the benchmark; takes effect for sizes prepared afterwards (set it before the first
  // frame). fftProductInLoad(): whether the last size prepared on the current lane has it
  // (false where cuFFT refused the callback: fftProductInLoadRefusal() says why).
  void setFftProductInLoad(bool on) { fftProductInLoad_ = on; }
  bool fftProductInLoad() const { return size().fft.productInLoad(); }
  const std::string& fftProductInLoadRefusal() const { return size().fft.productInLoadRefusal(); }

 private:
  // Where a frame is matched: the compute stream (stream) runs its matching; fft runs the frame's
  // forward transform beside the SAT build, ordered by the two events; `size` is everything
  // prepared for the bank and frame size that a frame's matching writes (scratch, SAT, spectra).
  // Frames on one lane run one after another; frames on two lanes side by side.
  struct Lane {
    Stream stream, fft;
    Event uploaded, transformed;
    std::unique_ptr<PreparedSize> size = std::make_unique<PreparedSize>();
    uint64_t bankGeneration = 0;     // the bank `size` was prepared for (0: none yet)
    uint64_t scratchGeneration = 0;  // bumped whenever prepareSize (re)lays out the scratch
    // The recompute count of the last fft template its frames score (lastRecomputeCount): set
    // when a frame's matching is enqueued or captured, so a replayed graph's too.
    int* lastRecomputeCount = nullptr;
  };

  // One frame in flight: what its upload and matching write, and what collect() reads.
  struct FrameSlot {
    UploadBuffers upload;
    FrameResults results;
    Event done;  // on its lane's compute stream: results.host is complete
    int lane = 0;  // the lane its frame is matched on
    // The slot's matching on each lane (a host frame uploaded in one band, no masked template).
    std::array<MatchingGraph, kMaxFramesInFlight> graphs;
    // The SAT build's kernel node in each lane's graph (SatTables::restamp), where it holds one.
    std::array<cudaGraphNode_t, kMaxFramesInFlight> satNodes{};
    MatchingGraph& graph() { return graphs[std::size_t(lane)]; }
    const MatchingGraph& graph() const { return graphs[std::size_t(lane)]; }
    cudaGraphNode_t& satNode() { return satNodes[std::size_t(lane)]; }
  };

  CudaEngine(int device, CudaNumerator numerator, bool useCurrentContext, int lanes);
  // Makes the engine's context current: the device's primary context, or nothing to do when the
  // caller keeps its own context current (EngineOptions::useCurrentCudaContext).
  Status activate() const;
  Status createStreamsAndEvents();
  // The current lane (lane_): the one the call in progress enqueues on, between calls the newest
  // frame's; its compute stream and prepared size.
  cudaStream_t stream() const { return lane_->stream.get(); }
  PreparedSize& size() const { return *lane_->size; }
  // The lane a frame of width x height submitted now takes: lane 0 unless extraLanesFor; else the
  // lane after the newest frame in flight's, with none in flight the current one (match() keeps
  // to one lane).
  int nextLane(int width, int height) const;
  // Whether frames of width x height may take lanes beyond the first: lane 0 holds this bank and
  // size (a new size or bank is prepared on lane 0 first), no spare lane failed to prepare for
  // them, and extraLanesPay for its plan.
  bool extraLanesFor(int width, int height) const;
  // Frees what a lane prepared (after its streams are idle): a spare lane that could not be
  // prepared, or one whose size lane 0 left.
  void releaseLane(Lane& lane);
  // Waits for the copy stream and every lane's streams; the first error.
  cudaError_t synchronizeLanes() const;

  // Per bank and frame size: a no-op while neither changes.
  Status prepareSize(int width, int height);
  // Validation, preparation, upload into the slot (a pageable frame staged by `staging`), SAT and
  // forward FFT; uploadIntoSlot: all but the SAT and forward FFT (buildTables).
  Status buildFrame(const FrameView& frame, FrameSlot& slot, CudaStagingCopy staging, UploadedFrame* uploaded);
  Status uploadIntoSlot(const FrameView& frame, FrameSlot& slot, CudaStagingCopy staging, UploadedFrame* uploaded);
  Status buildTables(UploadedFrame& frame);
  // submit() with the staging copy made by `staging` (match() stages on the calling thread).
  Status submitStaged(const FrameView& frame, const MatchParams& params, CudaStagingCopy staging);
  Status submitInto(const FrameView& frame, const MatchParams& params, CudaStagingCopy staging, FrameSlot& slot);
  // Whether the slot's matching can replay a graph: fixed pointers and no event from outside it
  // (a host frame in the slot's own buffer, uploaded in one band), no masked template (its
  // lanes' streams), and no allocation inside (the sorted NMS above kSelectRoundsLimit sizes its
  // scratch on first use). The SAT build and forward transform join the graph where the build
  // is restamped before each replay (tablesInGraph), else they are enqueued before it.
  bool graphable(const UploadedFrame& frame, const MatchParams& bounded, const FrameSlot& slot) const;
  Status launchMatchingGraph(UploadedFrame& frame, const MatchParams& params,
                             const MatchParams& bounded, FrameSlot& slot, bool tablesInGraph);
  // Everything a frame's matching enqueues on the compute stream after the upload and SAT/FFT:
  // scores, peaks, the copy of the results to the host.
  Status enqueueMatching(UploadedFrame& frame, const MatchParams& params,
                         const MatchParams& bounded, FrameSlot& slot);
  // Template i's score map into the scratch map; fused templates also fill the peak handoff.
  // (A frame's masked templates take MaskedLanes instead, in enqueueMatching.)
  Status computeMap(UploadedFrame& frame, uint32_t templateIndex, Method method, const PeakHandoff& handoff);
  // handoff: also hand the peaks over (setFftPeakHandoff); null: the map alone.
  Status computeFftMap(const UploadedFrame& frame, uint32_t templateIndex, const ScoreInputs& in,
                       const PeakHandoff* handoff);
  // Whether template i's peaks come from its score kernels' hand-off rather than a map scan.
  bool peaksHandedOver(uint32_t templateIndex) const;
  // Whether template i's map comes from the fft numerator (rounded: computeFftMap).
  bool scoredByFft(uint32_t templateIndex) const;
  ScoreInputs scoreInputs(uint32_t templateIndex, Method method) const;
  FrameSlot& nextSlot() { return slots_[(head_ + inFlight_) % kMaxFramesInFlight]; }
  // Lets enqueued work that may still read a slot finish after a failed submit.
  void drainAfterError();

  int device_ = 0;
  DeviceShare share_;  // whether other engines of the process use the device (sliced launches)
  bool useCurrentContext_ = false;
  int smCount_ = 1;
  CudaNumerator numeratorOption_;
  CudaStagingCopy submitStaging_ = CudaStagingCopy::CallerThread;  // EngineOptions::cudaStagingCopy, for submit()
  std::optional<bool> fftProductInLoad_;  // setFftProductInLoad; unset: the correlator's default
  std::optional<bool> fftPeakHandoff_;                               // setFftPeakHandoff; unset: the plan's
  CudaGemmTemplates gemmTemplates_ = CudaGemmTemplates::Auto;       // EngineOptions::cudaGemmTemplates
  Stream copy_;  // uploads host frames, every lane's

  TemplateBank bank_;
  uint64_t bankGeneration_ = 1;  // bumped by setTemplates; a lane prepared for another re-prepares
  int laneCount_ = 1;            // EngineOptions::cudaMatchingLanes
  std::array<Lane, kMaxFramesInFlight> lanes_;
  Lane* lane_ = &lanes_[0];
  // The bank generation and frame size for which a spare lane could not be prepared (device
  // memory): their frames keep to lane 0.
  struct SizeKey {
    uint64_t bankGeneration = 0;
    int width = 0, height = 0;
    bool operator==(const SizeKey& o) const {
      return bankGeneration == o.bankGeneration && width == o.width && height == o.height;
    }
  };
  SizeKey spareLanesRefused_;

  // Frames in flight: slots_[head_] is the oldest, inFlight_ of them are in use.
  std::array<FrameSlot, kMaxFramesInFlight> slots_;
  int head_ = 0, inFlight_ = 0;
  bool lastFrameGraphed_ = false;      // lastFrameGraphed()
  bool lastFrameTablesGraphed_ = false;  // lastFrameTablesGraphed()
  RegionSearch regions_;               // matchRegions' buffers
  RegionTemplateSets<PreparedRegionTemplates> regionSets_;  // prepareRegionTemplates' sets
};

}  // namespace nccmatch::cuda
