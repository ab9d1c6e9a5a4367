#include "cuda/engine/cuda_engine.hpp"

#include <algorithm>
#include <cmath>
#include <string>

#include "common/validate.hpp"
#include "cuda/cuda_check.hpp"
#include "cuda/device_info.hpp"
#include "cuda/engine/cost_model.hpp"
#include "cuda/numerator/spatial_scores.hpp"

namespace nccmatch {

Status createCudaEngine(const EngineOptions& options, std::unique_ptr<Engine>* engine) {
  return cuda::CudaEngine::create(options, engine);
}

namespace cuda {

CudaEngine::CudaEngine(int device, CudaNumerator numerator, bool useCurrentContext, int lanes)
    : device_(device),
      share_(device),
      useCurrentContext_(useCurrentContext),
      numeratorOption_(numerator),
      laneCount_(lanes) {}

Status CudaEngine::activate() const {
  // cudaSetDevice would bind the primary context, replacing a caller's current context.
  if (!useCurrentContext_) NCC_CUDA_CHECK(cudaSetDevice(device_));
  return Status();
}

// Work still enqueued reads the buffers the members free: it finishes first. The handles then
// destroy the streams, events and graphs.
CudaEngine::~CudaEngine() {
  if (!copy_) return;
  activate();
  for (const FrameSlot& slot : slots_) slot.upload.finishStaging();
  synchronizeLanes();
}

cudaError_t CudaEngine::synchronizeLanes() const {
  cudaError_t first = copy_ ? cudaStreamSynchronize(copy_.get()) : cudaSuccess;
  for (const Lane& lane : lanes_) {
    for (const Stream* s : {&lane.stream, &lane.fft}) {
      const cudaError_t e = *s ? cudaStreamSynchronize(s->get()) : cudaSuccess;
      if (first == cudaSuccess) first = e;
    }
  }
  return first;
}

Status CudaEngine::create(const EngineOptions& options, std::unique_ptr<Engine>* engine) {
  if (engine == nullptr) return Status::error("CudaEngine::create: engine pointer is null");
  if (options.cudaMatchingLanes < 1 || options.cudaMatchingLanes > kMaxFramesInFlight)
    return Status::error("cudaMatchingLanes " + std::to_string(options.cudaMatchingLanes) +
                         " is out of range: 1 to " + std::to_string(kMaxFramesInFlight));
  NCC_RETURN_IF_ERROR(faults::applyEnvironment());  // NCCMATCH_CUDA_* faults, for tests of the element
  int count = 0;
  NCC_CUDA_CHECK(cudaGetDeviceCount(&count));
  int device = options.cudaDevice;
  if (device < 0 || options.useCurrentCudaContext) {
    int current = 0;
    NCC_CUDA_CHECK(cudaGetDevice(&current));
    if (options.useCurrentCudaContext && device >= 0 && device != current)
      return Status::error("CUDA device " + std::to_string(device) +
                           " requested but the current context is on device " + std::to_string(current));
    device = current;
  }
  if (device >= count)
    return Status::error("CUDA device " + std::to_string(device) + " requested but only " +
                         std::to_string(count) + " present");
  std::unique_ptr<CudaEngine> e(
      new CudaEngine(device, options.cudaNumerator, options.useCurrentCudaContext, options.cudaMatchingLanes));
  e->regions_ = RegionSearch(options.cudaPackedWindows, options.cudaMappedFrames);
  e->submitStaging_ = options.cudaStagingCopy;
  e->gemmTemplates_ = options.cudaGemmTemplates;
  NCC_RETURN_IF_ERROR(e->activate());
  NCC_RETURN_IF_ERROR(multiprocessorCount(device, &e->smCount_));
  NCC_RETURN_IF_ERROR(e->createStreamsAndEvents());
  *engine = std::move(e);
  return Status();
}

Status CudaEngine::createStreamsAndEvents() {
  NCC_RETURN_IF_ERROR(createStream(&copy_));
  for (int i = 0; i < laneCount_; ++i) {
    Lane& lane = lanes_[std::size_t(i)];
    NCC_RETURN_IF_ERROR(createStream(&lane.stream));
    NCC_RETURN_IF_ERROR(createStream(&lane.fft));
    NCC_RETURN_IF_ERROR(createEvent(&lane.uploaded));
    NCC_RETURN_IF_ERROR(createEvent(&lane.transformed));
  }
  for (FrameSlot& slot : slots_) {
    NCC_RETURN_IF_ERROR(createEvent(&slot.done));
    NCC_RETURN_IF_ERROR(slot.upload.create());
  }
  return Status();
}

CudaNumerator CudaEngine::numeratorFor(uint32_t i) const {
  return i < size().plan.numerator.size() ? size().plan.numerator[i] : numeratorOption_;
}

int CudaEngine::lastRecomputeCount() const {
  int count = 0;
  if (lane_->lastRecomputeCount == nullptr || !activate().ok()) return 0;
  if (synchronizeLanes() != cudaSuccess ||
      cudaMemcpy(&count, lane_->lastRecomputeCount, sizeof(int), cudaMemcpyDeviceToHost) != cudaSuccess)
    return -1;
  return count;
}

Status CudaEngine::setTemplates(std::vector<TemplateImage> bank) {
  if (inFlight_ > 0)
    return Status::error("setTemplates: " + std::to_string(inFlight_) +
                         " frames in flight; collect them first");
  NCC_RETURN_IF_ERROR(validateTemplates(bank));
  NCC_RETURN_IF_ERROR(activate());
  NCC_CUDA_CHECK(synchronizeLanes());  // old buffers may still be in use
  TemplateBank prepared;
  NCC_RETURN_IF_ERROR(TemplateBank::prepare(std::move(bank), &prepared));
  bank_ = std::move(prepared);
  ++bankGeneration_;
  for (Lane& lane : lanes_) lane.size->plan.numerator.clear();
  return Status();
}

Status CudaEngine::prepareSize(int width, int height) {
  Lane& lane = *lane_;
  if (lane.bankGeneration == bankGeneration_ && width == lane.size->width && height == lane.size->height)
    return Status();
  // Frames in flight still read the scratch on the compute stream: let them finish first.
  NCC_CUDA_CHECK(cudaStreamSynchronize(stream()));
  // Lane 0 takes each new size or bank first: the other lanes' buffers (for another size or bank)
  // are freed, so that they never hold device memory lane 0 needs.
  if (&lane == &lanes_[0])
    for (int i = 1; i < laneCount_; ++i) releaseLane(lanes_[std::size_t(i)]);
  // Buffers move even when the preparation fails part way (out of memory): no captured graph may
  // replay them, and the next frame prepares again.
  ++lane.scratchGeneration;
  lane.lastRecomputeCount = nullptr;
  if (fftProductInLoad_) lane.size->fft.setProductInLoad(*fftProductInLoad_);
  const Status prepared = lane.size->prepare(bank_, width, height, numeratorOption_, gemmTemplates_, smCount_,
                                            lane.stream.get(), lane.fft.get());
  if (!prepared.ok()) {
    lane.size->width = lane.size->height = 0;
    return prepared;
  }
  lane.bankGeneration = bankGeneration_;
  return Status();
}

Status CudaEngine::buildFrame(const FrameView& frame, FrameSlot& slot, CudaStagingCopy staging,
                              UploadedFrame* uploaded) {
  NCC_RETURN_IF_ERROR(uploadIntoSlot(frame, slot, staging, uploaded));
  return size().plan.needSat ? buildTables(*uploaded) : Status();
}

Status CudaEngine::uploadIntoSlot(const FrameView& frame, FrameSlot& slot, CudaStagingCopy staging,
                                  UploadedFrame* uploaded) {
  NCC_RETURN_IF_ERROR(validateFrame(frame));
  NCC_RETURN_IF_ERROR(prepareSize(frame.width, frame.height));
  // Every fitting template fused and no other frame in flight: several bands, so scores start
  // with the first rows. Behind a frame in flight the whole upload overlaps that frame's work
  // anyway, and one launch over all rows beats one per band (no partial waves).
  const bool banded = !size().plan.needSat && inFlight_ == 0;
  return uploadFrame(frame, banded, staging, slot.upload, copy_.get(), uploaded);
}

Status CudaEngine::buildTables(UploadedFrame& frame) {
  NCC_RETURN_IF_ERROR(frame.waitForRows(frame.height, stream()));
  if (size().plan.anyFft) {
    // The forward transform (offset: the frame's own mean) on the fft stream, beside the SAT. The
    // event orders it after the upload and after the previous frame's use of the spectrum.
    NCC_CUDA_CHECK(cudaEventRecord(lane_->uploaded.get(), stream()));
    NCC_CUDA_CHECK(cudaStreamWaitEvent(lane_->fft.get(), lane_->uploaded.get(), 0));
    NCC_RETURN_IF_ERROR(size().fft.transformFrame(frame.image, frame.pitch));
    NCC_CUDA_CHECK(cudaEventRecord(lane_->transformed.get(), lane_->fft.get()));
  }
  NCC_RETURN_IF_ERROR(size().sat.build(frame, stream()));
  if (size().plan.anyFft) NCC_CUDA_CHECK(cudaStreamWaitEvent(stream(), lane_->transformed.get(), 0));
  return Status();
}

ScoreInputs CudaEngine::scoreInputs(uint32_t i, Method method) const {
  const TemplateImage& t = bank_.image(i);
  ScoreInputs in;
  in.sum = size().sat.sum();
  in.sumSq = size().sat.sumSq();
  in.sat32 = size().sat.kind() == SatBuild::Fused32;
  in.frameWidth = size().width;
  in.frameHeight = size().height;
  in.templateWidth = t.width;
  in.templateHeight = t.height;
  in.stats = bank_.prepared(i).stats;
  in.method = method;
  in.smCount = smCount_;
  return in;
}

Status CudaEngine::computeMap(UploadedFrame& frame, uint32_t i, Method method,
                              const PeakHandoff& handoff) {
  const TemplateImage& t = bank_.image(i);
  const PreparedTemplate& prepared = bank_.prepared(i);
  double* map = size().scratch.map.as<double>();
  if (size().plan.fused[i]) {
    FusedSpatialArgs a;
    a.image = frame.image;
    a.pitch = frame.pitch;
    a.width = frame.width;
    a.height = frame.height;
    a.numerator = kFusedNumerator;
    a.packedTemplate = prepared.fusedPacked.as<uint8_t>();
    a.templateWidth = t.width;
    a.templateHeight = t.height;
    a.stats = prepared.stats;
    a.method = method;
    a.map = map;
    return frame.forEachBand(frame.height - t.height + 1, t.height, stream(), [&](int y0, int y1) {
      return fusedSpatialScores(a, y0, y1, handoff, stream());
    });
  }
  NCC_RETURN_IF_ERROR(frame.waitForRows(frame.height, stream()));
  if (prepared.masked)  // sums under the mask and the score in one kernel (banks: MaskedLanes)
    return maskedScoreMap(frame.image, frame.pitch, frame.width, frame.height, prepared.maskedDevice(t), method, map,
                          stream());
  const ScoreInputs in = scoreInputs(i, method);
  if (scoredByFft(i)) return computeFftMap(frame, i, in, peaksHandedOver(i) ? &handoff : nullptr);
  int64_t* numerator = size().scratch.numerator.as<int64_t>();
  NCC_RETURN_IF_ERROR(spatialNumerator(frame.image, frame.pitch, frame.width, frame.height,
                                       prepared.packed.as<uint8_t>(), prepared.layout, numerator,
                                       stream()));
  return scoreFromExactNumerator(in, numerator, map, stream());
}

bool CudaEngine::scoredByFft(uint32_t i) const {
  return !size().plan.fused[i] && !bank_.prepared(i).masked && size().plan.numerator[i] != CudaNumerator::Spatial;
}

bool CudaEngine::fftPeaksHandedOver(uint32_t i) const {
  return i < size().plan.numerator.size() && scoredByFft(i) && peaksHandedOver(i);
}

bool CudaEngine::peaksHandedOver(uint32_t i) const {
  if (size().plan.fused[i]) return true;
  if (size().plan.numerator[i] != CudaNumerator::Fft || kFftPrecision != FftPrecision::Float || bank_.prepared(i).masked)
    return false;
  return fftPeakHandoff_.has_value() ? *fftPeakHandoff_ : bool(size().plan.fftPeaksHandedOver[i]);
}

Status CudaEngine::computeFftMap(const UploadedFrame& frame, uint32_t i, const ScoreInputs& in,
                                 const PeakHandoff* handoff) {
  double* map = size().scratch.map.as<double>();
  const int slot = size().fftSlot[i];
  const std::size_t fftPitch = std::size_t(size().fft.fftWidth());
  if (size().fft.precision() == FftPrecision::Double) {
    const double* centred = nullptr;
    NCC_RETURN_IF_ERROR(size().fft.correlate(slot, &centred));
    return scoreFromCentredNumerator(in, centred, fftPitch, map, stream());
  }
  const float* centred = nullptr;
  NCC_RETURN_IF_ERROR(size().fft.correlate(slot, &centred));
  const TemplateStats& stats = bank_.prepared(i).stats;
  const double templateNorm = std::sqrt(double(stats.centredSq()) / double(stats.n));
  int* recompute = size().scratch.recompute.as<int>();
  int* recomputeCount = size().scratch.recomputeCountFor(i, bank_.size());  // zeroed a frame
  lane_->lastRecomputeCount = recomputeCount;
  NCC_RETURN_IF_ERROR(scoreFromFloatCentredNumerator(in, centred, fftPitch, size().fft.errorScale(),
                                                     size().fft.frameNormSq(), templateNorm, map,
                                                     recompute, recomputeCount, stream(), handoff));
  return recomputeExactScores(in, frame.image, frame.pitch, bank_.prepared(i).pixels.as<uint8_t>(),
                              recompute, recomputeCount, map, stream(), handoff);
}

Status CudaEngine::match(const FrameView& frame, const MatchParams& params, FrameResult* result) {
  if (result == nullptr) return Status::error("match: result pointer is null");
  if (inFlight_ > 0)
    return Status::error("match: " + std::to_string(inFlight_) +
                         " frames in flight; collect them first (or use submit/collect only)");
  NCC_RETURN_IF_ERROR(submitStaged(frame, params, CudaStagingCopy::CallerThread));  // the caller waits anyway
  return collect(result);
}

Status CudaEngine::submit(const FrameView& frame, const MatchParams& params) {
  return submitStaged(frame, params, submitStaging_);
}

Status CudaEngine::submitStaged(const FrameView& frame, const MatchParams& params, CudaStagingCopy staging) {
  if (inFlight_ >= kMaxFramesInFlight)
    return Status::error("submit: " + std::to_string(inFlight_) +
                         " frames already in flight; collect one first");
  NCC_RETURN_IF_ERROR(validateParams(params));
  NCC_RETURN_IF_ERROR(activate());
  FrameSlot& slot = nextSlot();
  slot.lane = nextLane(frame.width, frame.height);
  lane_ = &lanes_[std::size_t(slot.lane)];
  if (slot.lane != 0 && validateFrame(frame).ok() && !prepareSize(frame.width, frame.height).ok()) {
    // A spare lane that cannot be prepared (device memory) is not a failed frame: it is freed and
    // this bank and size keep to lane 0, as with one lane.
    cudaGetLastError();  // a refused cudaMalloc's error is not left for the next launch check
    releaseLane(*lane_);
    spareLanesRefused_ = SizeKey{bankGeneration_, frame.width, frame.height};
    slot.lane = 0;
    lane_ = &lanes_[0];
  }
  const Status status = submitInto(frame, params, staging, slot);
  if (!status.ok()) {
    drainAfterError();
    return status;
  }
  ++inFlight_;
  return Status();
}

bool CudaEngine::extraLanesFor(int width, int height) const {
  const Lane& first = lanes_[0];
  if (laneCount_ < 2 || first.bankGeneration != bankGeneration_ || first.size->width != width ||
      first.size->height != height)
    return false;
  if (spareLanesRefused_ == SizeKey{bankGeneration_, width, height}) return false;
  return extraLanesPay(width, height, first.size->plan.anyFft);
}

void CudaEngine::releaseLane(Lane& lane) {
  if (lane.bankGeneration == 0 && lane.size->width == 0) return;  // nothing prepared
  if (lane.stream) cudaStreamSynchronize(lane.stream.get());
  if (lane.fft) cudaStreamSynchronize(lane.fft.get());
  lane.size = std::make_unique<PreparedSize>();
  lane.bankGeneration = 0;
  ++lane.scratchGeneration;  // no captured graph replays the freed buffers
  lane.lastRecomputeCount = nullptr;
}

int CudaEngine::nextLane(int width, int height) const {
  if (!extraLanesFor(width, height)) return 0;
  if (inFlight_ == 0) return lastLane();
  const FrameSlot& newest = slots_[std::size_t((head_ + inFlight_ - 1) % kMaxFramesInFlight)];
  return (newest.lane + 1) % laneCount_;
}

void CudaEngine::drainAfterError() {
  // A graph capture the failed call left open would refuse every later call on the stream.
  cudaStreamCaptureStatus capturing = cudaStreamCaptureStatusNone;
  if (cudaStreamIsCapturing(stream(), &capturing) == cudaSuccess && capturing != cudaStreamCaptureStatusNone) {
    cudaGraph_t abandoned = nullptr;
    cudaStreamEndCapture(stream(), &abandoned);
    if (abandoned != nullptr) cudaGraphDestroy(abandoned);
  }
  for (const FrameSlot& slot : slots_) slot.upload.finishStaging();  // they read the caller's frames
  synchronizeLanes();
  cudaGetLastError();
}

Status CudaEngine::submitInto(const FrameView& frame, const MatchParams& params, CudaStagingCopy staging,
                              FrameSlot& slot) {
  UploadedFrame uploaded;
  NCC_RETURN_IF_ERROR(uploadIntoSlot(frame, slot, staging, &uploaded));
  // No template can keep more matches than it has positions: bounding M by that keeps the
  // results buffer finite for any max-matches (the element allows up to INT_MAX).
  MatchParams bounded = params;
  bounded.maxMatches = int(std::min<std::size_t>(std::size_t(params.maxMatches), size().plan.maxPositions));
  slot.results.maxMatches = std::size_t(bounded.maxMatches);
  slot.results.params = bounded;
  slot.results.exactAfterRounding = size().plan.exactAfterRounding;
  NCC_RETURN_IF_ERROR(slot.results.reserve(bank_.size(), stream()));
  lastFrameGraphed_ = lastFrameTablesGraphed_ = false;
  if (graphable(uploaded, bounded, slot)) {
    NCC_RETURN_IF_ERROR(uploaded.waitForRows(uploaded.height, stream()));
    // The SAT and the forward transform join the graph where the SAT build can be restamped
    // before each replay (SatTables::replayable); else they are enqueued before it.
    const bool tablesInGraph = size().plan.needSat && size().sat.replayable();
    if (size().plan.needSat && !tablesInGraph) NCC_RETURN_IF_ERROR(buildTables(uploaded));
    NCC_RETURN_IF_ERROR(launchMatchingGraph(uploaded, params, bounded, slot, tablesInGraph));
    lastFrameGraphed_ = !slot.graph().failedFor(lane_->scratchGeneration);
    lastFrameTablesGraphed_ = lastFrameGraphed_ && tablesInGraph;
  } else {
    if (size().plan.needSat) NCC_RETURN_IF_ERROR(buildTables(uploaded));
    NCC_RETURN_IF_ERROR(enqueueMatching(uploaded, params, bounded, slot));
  }
  NCC_CUDA_CHECK(cudaEventRecord(slot.done.get(), stream()));
  slot.results.frameWidth = size().width;
  slot.results.frameHeight = size().height;
  return Status();
}

bool CudaEngine::graphable(const UploadedFrame& frame, const MatchParams& bounded,
                           const FrameSlot& slot) const {
  return size().plan.maxMaskedPositions == 0 && frame.image == slot.upload.frame.as<uint8_t>() && frame.bands == 1 &&
         bounded.maxMatches <= kSelectRoundsLimit && !slot.graph().failedFor(lane_->scratchGeneration);
}

Status CudaEngine::launchMatchingGraph(UploadedFrame& frame, const MatchParams& params,
                                       const MatchParams& bounded, FrameSlot& slot, bool tablesInGraph) {
  GraphKeyInputs key;
  key.scratchGeneration = lane_->scratchGeneration;
  key.image = frame.image;
  key.pitch = frame.pitch;
  key.results = slot.results.device.as<void>();
  key.hostResults = slot.results.host.as<void>();
  key.frameWidth = size().width;
  key.frameHeight = size().height;
  key.method = params.method;
  key.threshold = params.threshold;
  key.nmsIou = params.nmsIou;
  key.maxMatches = bounded.maxMatches;
  key.slicedLaunches = share_.shared();
  key.fftPeakHandoff = fftPeakHandoff_.has_value() ? (*fftPeakHandoff_ ? 2 : 1) : 0;
  key.tablesInGraph = tablesInGraph;
  cudaGraphNode_t& satNode = slot.satNode();
  const auto enqueue = [&]() -> Status {
    // A graph sets the fft callback's template pointer itself (FftCorrelator::forgetProductSlot).
    size().fft.forgetProductSlot();
    if (tablesInGraph) {
      NCC_RETURN_IF_ERROR(buildTables(frame));
      satNode = size().sat.capturedNode();
      cudaStreamCaptureStatus capturing = cudaStreamCaptureStatusNone;
      NCC_CUDA_CHECK(cudaStreamIsCapturing(stream(), &capturing));
      // Without its node a replay would reuse the captured stamp: capture fails, calls one by one.
      if (capturing == cudaStreamCaptureStatusActive && satNode == nullptr)
        return Status::error("the SAT build's kernel node was not found in the capture");
    }
    return enqueueMatching(frame, params, bounded, slot);
  };
  const auto restampSat = [&](cudaGraphExec_t exec) {
    return tablesInGraph ? size().sat.restamp(exec, satNode, stream()) : Status();
  };
  return slot.graph().launch(key, stream(), enqueue, restampSat);
}

Status CudaEngine::enqueueMatching(UploadedFrame& frame, const MatchParams& params,
                                   const MatchParams& bounded, FrameSlot& slot) {
  const std::size_t T = bank_.size(), M = slot.results.maxMatches;
  const ResultsLayout layout = slot.results.layout(T);
  const ResultsOnDevice out = slot.results.onDevice(layout);
  NCC_RETURN_IF_ERROR(size().scratch.zeroCounters(T, stream()));
  // Fused templates of a bank of two or more: one launch per band scores them all.
  if (size().fusedBank.active()) {
    NCC_RETURN_IF_ERROR(size().fusedBank.score(frame, bounded, share_.shared(), stream()));
    NCC_RETURN_IF_ERROR(size().fusedBank.findPeaks(bounded, frame, out.best, out.kept, out.counts, stream()));
  }
  const double* map = size().scratch.map.as<double>();
  // One template's map and peaks (into its own result slots).
  const auto matchOne = [&](uint32_t i) -> Status {
    const TemplateImage& t = bank_.image(i);
    const int mapW = size().width - t.width + 1, mapH = size().height - t.height + 1;
    const PeakHandoff handoff = size().scratch.handoffFor(i, bounded);
    NCC_RETURN_IF_ERROR(computeMap(frame, i, params.method, handoff));
    const DeviceScoreMap scores{map, mapW, mapH, t.width, t.height};
    const MatchSlots slots{out.best + i, out.kept + i * M, out.counts + i};
    if (peaksHandedOver(i)) {
      const int partials = size().plan.fused[i] ? fusedSpatialBlocks(mapW, mapH)
                                               : floatScoreHandoffSlots(mapW, mapH, smCount_);
      NCC_RETURN_IF_ERROR(size().scratch.peaks.findFromHandoff(scores, bounded, handoff, partials, slots, stream()));
    } else {
      NCC_RETURN_IF_ERROR(size().scratch.peaks.find(scores, bounded, slots, stream()));
    }
    if (!scoredByFft(i)) return Status();
    // The transform rounds: the matches' scores and sub-pixel offsets made exact (the CPU
    // reference's; collect drops and orders them again: FrameResults::exactAfterRounding).
    const PreparedTemplate& prepared = bank_.prepared(i);
    return refineSubPixelExactly(slots, ExactTemplate{prepared.pixels.as<uint8_t>(), t.width, t.height, prepared.stats},
                                 DeviceFrame{frame.image, frame.pitch}, bounded, mapW, mapH, out.exactSums, stream());
  };
  // Masked templates on the lanes (MaskedLanes): a template alone, or a mask group (its window
  // sums under the mask once, then each member's cross term alone), is one unit of a lane.
  const auto matchMasked = [&](uint32_t i, MaskedPass maskedPass, MaskedLane& lane) -> Status {
    const TemplateImage& t = bank_.image(i);
    const int mapW = size().width - t.width + 1, mapH = size().height - t.height + 1;
    NCC_RETURN_IF_ERROR(maskedScoreMap(frame.image, frame.pitch, frame.width, frame.height,
                                       bank_.prepared(i).maskedDevice(t), params.method, lane.map.as<double>(),
                                       lane.stream.get(), maskedPass, lane.windowSums.as<int64_t>()));
    const DeviceScoreMap scores{lane.map.as<double>(), mapW, mapH, t.width, t.height};
    return lane.peaks.find(scores, bounded, MatchSlots{out.best + i, out.kept + i * M, out.counts + i},
                           lane.stream.get());
  };
  bool lanesForked = false;
  const auto matchEach = [&]() -> Status {
    std::size_t units = 0;
    std::vector<bool> groupDone(bank_.maskGroupCount(), false);
    for (uint32_t i = 0; i < T; ++i) {
      const TemplateImage& t = bank_.image(i);
      if (!size().fits(t) || size().fusedBank.contains(i)) continue;
      if (!bank_.prepared(i).masked) {
        NCC_RETURN_IF_ERROR(matchOne(i));
        continue;
      }
      const int group = bank_.maskGroup(i);
      if (group >= 0 && groupDone[std::size_t(group)]) continue;
      if (!lanesForked) {  // the lanes read the whole frame
        NCC_RETURN_IF_ERROR(frame.waitForRows(frame.height, stream()));
        NCC_RETURN_IF_ERROR(size().maskedLanes.fork(stream()));
        lanesForked = true;
      }
      MaskedLane& lane = size().maskedLanes.lane(units++);
      if (group < 0) {
        NCC_RETURN_IF_ERROR(matchMasked(i, MaskedPass::Scores, lane));
        continue;
      }
      groupDone[std::size_t(group)] = true;
      NCC_RETURN_IF_ERROR(maskedScoreMap(frame.image, frame.pitch, frame.width, frame.height,
                                         bank_.prepared(i).maskedDevice(t), params.method, nullptr,
                                         lane.stream.get(), MaskedPass::WindowSums, lane.windowSums.as<int64_t>()));
      for (uint32_t member : bank_.maskGroupMembers(group))
        NCC_RETURN_IF_ERROR(matchMasked(member, MaskedPass::ScoresFromWindowSums, lane));
    }
    return Status();
  };
  const Status matched = matchEach();
  // Joined even after a failure, so that nothing of the lanes outlives the frame unordered.
  if (lanesForked) NCC_RETURN_IF_ERROR(size().maskedLanes.join(stream()));
  NCC_RETURN_IF_ERROR(matched);
  NCC_RETURN_IF_ERROR(frame.waitForRows(frame.height, stream()));  // the slot's copies end before `done`
  return slot.results.copyToHost(layout, stream());
}

Status CudaEngine::collect(FrameResult* result) {
  if (result == nullptr) return Status::error("collect: result pointer is null");
  if (inFlight_ == 0) return Status::error("collect: no frame in flight");
  FrameSlot& slot = slots_[head_];
  head_ = (head_ + 1) % kMaxFramesInFlight;
  --inFlight_;
  NCC_RETURN_IF_ERROR(activate());
  NCC_CUDA_CHECK(cudaEventSynchronize(slot.done.get()));
  slot.results.decode(bank_.images(), result);
  return Status();
}

Status CudaEngine::scoreMap(const FrameView& frame, Method method, uint32_t templateIndex,
                            std::vector<double>* map) {
  NCC_RETURN_IF_ERROR(validateScoreMapRequest(bank_.images(), frame, method, templateIndex, map));
  NCC_RETURN_IF_ERROR(activate());
  const TemplateImage& t = bank_.image(templateIndex);
  if (inFlight_ > 0)
    return Status::error("scoreMap: " + std::to_string(inFlight_) + " frames in flight; collect them first");
  UploadedFrame uploaded;
  NCC_RETURN_IF_ERROR(buildFrame(frame, nextSlot(), CudaStagingCopy::CallerThread, &uploaded));
  NCC_RETURN_IF_ERROR(size().scratch.zeroCounters(bank_.size(), stream()));
  MatchParams noMatches;
  noMatches.method = method;
  noMatches.maxMatches = 0;
  NCC_RETURN_IF_ERROR(computeMap(uploaded, templateIndex, method, size().scratch.handoffFor(0, noMatches)));
  NCC_RETURN_IF_ERROR(uploaded.waitForRows(uploaded.height, stream()));
  map->resize(std::size_t(frame.width - t.width + 1) * (frame.height - t.height + 1));
  NCC_CUDA_CHECK(cudaMemcpyAsync(map->data(), size().scratch.map.as<double>(),
                                 map->size() * sizeof(double), cudaMemcpyDeviceToHost, stream()));
  NCC_CUDA_CHECK(cudaStreamSynchronize(stream()));
  return Status();
}

Status CudaEngine::matchRegions(const FrameView& frame, const std::vector<RegionQuery>& regions,
                                const MatchParams& params, std::vector<RegionResult>* results) {
  NCC_RETURN_IF_ERROR(validateRegions(bank_.images(), regionSets_, frame, regions, results));
  NCC_RETURN_IF_ERROR(validateParams(params));
  if (inFlight_ > 0)
    return Status::error("matchRegions: " + std::to_string(inFlight_) + " frames in flight; collect them first");
  NCC_RETURN_IF_ERROR(activate());
  const Status status = regions_.run(bank_, regionSets_, frame, regions, params, stream(), results);
  if (!status.ok()) drainAfterError();
  return status;
}

Status CudaEngine::prepareRegionTemplates(std::vector<TemplateImage> templates, RegionTemplateSet* set) {
  if (set == nullptr) return Status::error("prepareRegionTemplates: set pointer is null");
  NCC_RETURN_IF_ERROR(RegionSetIds::validate(templates));
  NCC_RETURN_IF_ERROR(activate());
  PreparedRegionTemplates prepared;
  NCC_RETURN_IF_ERROR(cuda::prepareRegionTemplates(templates, &prepared));
  regionSets_.add(std::move(prepared), uint32_t(templates.size()), set);
  return Status();
}

Status CudaEngine::releaseRegionTemplates(RegionTemplateSet* set) {
  if (set == nullptr || !regionSets_.holds(*set)) return regionSets_.release(set);  // refused, naming why
  NCC_RETURN_IF_ERROR(activate());  // the set's device memory is freed in the engine's context
  return regionSets_.release(set);
}

Status CudaEngine::copyPatch(const FrameView& frame, int x, int y, int width, int height,
                             std::vector<uint8_t>* pixels) {
  if (frame.memory == MemoryKind::Host) return Engine::copyPatch(frame, x, y, width, height, pixels);
  if (pixels == nullptr) return Status::error("copyPatch: pixels pointer is null");
  NCC_RETURN_IF_ERROR(validatePatchBox(frame, x, y, width, height));
  NCC_RETURN_IF_ERROR(activate());
  pixels->resize(std::size_t(width) * height);
  NCC_CUDA_CHECK(cudaMemcpy2D(pixels->data(), std::size_t(width), frame.data + std::size_t(y) * frame.stride + x,
                              frame.stride, std::size_t(width), std::size_t(height), cudaMemcpyDeviceToHost));
  return Status();
}

}  // namespace cuda
}  // namespace nccmatch
