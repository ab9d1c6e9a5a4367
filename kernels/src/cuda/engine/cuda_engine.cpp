#include "cuda/engine/cuda_engine.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <string>

#include "cuda/engine/cost_model.hpp"
#include "cuda/score/score_kernels.hpp"
#include "cuda/numerator/spatial_scores.hpp"
#include "cuda/cuda_check.hpp"
#include "common/validate.hpp"

namespace nccmatch {

Status createCudaEngine(const EngineOptions& options, std::unique_ptr<Engine>* engine) {
  return cuda::CudaEngine::create(options, engine);
}

namespace cuda {

namespace {

// A box of w*h pixels sums I^2 to at most w*h*255^2: below 2^32 for w*h <= 66051 (256x256 too).
bool boxSumsFit32(int w, int h) { return double(w) * h * 255.0 * 255.0 < 4294967296.0; }

std::size_t roundUp(std::size_t v, std::size_t m) { return (v + m - 1) / m * m; }

// The fft numerator in float (half the bytes of double) with exact recomputation of the windows
// its rounding bound does not clear.
constexpr FftPrecision kFftPrecision = FftPrecision::Float;

// Fused spatial templates take the integer tensor cores (exact; the fused kernel is 1.6x the
// dp4a one at 64x64 on the H200, bench/RESULTS.md).
constexpr FusedNumerator kFusedNumerator = FusedNumerator::TensorCores;

// Banded uploads: about 256 rows a band (a 1080p frame in 4, 2160p in 8), each a multiple of
// the fused kernel's tile height; fewer bands would start the scores later, more would cost
// more API calls than the overlap saves.
constexpr int kMaxBands = 8;
int bandRowsFor(int height) {
  const int bands = std::max(1, std::min(kMaxBands, height / 256));
  const int rows = (height + bands - 1) / bands;
  return int(roundUp(std::size_t(rows), std::size_t(kFusedTileHeight)));
}

// Layout of the results buffer for `templates` templates and `maxMatches` kept each.
struct ResultsLayout {
  std::size_t countsBytes, bestOffset, keptOffset, bytes;
  ResultsLayout(std::size_t templates, std::size_t maxMatches) {
    countsBytes = roundUp(templates * sizeof(int), 16);
    bestOffset = countsBytes;
    keptOffset = bestOffset + templates * sizeof(DeviceMatch);
    bytes = keptOffset + templates * maxMatches * sizeof(DeviceMatch);
  }
};

}  // namespace

CudaEngine::CudaEngine(int device, CudaNumerator numerator, bool useCurrentContext)
    : device_(device), useCurrentContext_(useCurrentContext), numeratorOption_(numerator) {}

Status CudaEngine::activate() const {
  // cudaSetDevice would bind the primary context, replacing a caller's current context.
  if (!useCurrentContext_) NCC_CUDA_CHECK(cudaSetDevice(device_));
  return Status();
}

CudaEngine::~CudaEngine() {
  if (stream_ != nullptr) {
    activate();
    cudaStreamSynchronize(stream_);
    if (copyStream_ != nullptr) {
      cudaStreamSynchronize(copyStream_);
      cudaStreamDestroy(copyStream_);
    }
    if (fftStream_ != nullptr) {
      cudaStreamSynchronize(fftStream_);
      cudaStreamDestroy(fftStream_);
    }
    for (FrameSlot& slot : slots_) {
      for (cudaEvent_t e : slot.bandEvents) cudaEventDestroy(e);
      if (slot.done != nullptr) cudaEventDestroy(slot.done);
      if (slot.graph != nullptr) cudaGraphExecDestroy(slot.graph);
    }
    for (cudaEvent_t e : {uploaded_, transformed_})
      if (e != nullptr) cudaEventDestroy(e);
    cudaStreamDestroy(stream_);
  }
}

Status CudaEngine::create(const EngineOptions& options, std::unique_ptr<Engine>* engine) {
  if (engine == nullptr) return Status::error("CudaEngine::create: engine pointer is null");
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
  std::unique_ptr<CudaEngine> e(new CudaEngine(device, options.cudaNumerator, options.useCurrentCudaContext));
  NCC_RETURN_IF_ERROR(e->activate());
  NCC_CUDA_CHECK(cudaDeviceGetAttribute(&e->smCount_, cudaDevAttrMultiProcessorCount, device));
  NCC_CUDA_CHECK(cudaStreamCreateWithFlags(&e->stream_, cudaStreamNonBlocking));
  NCC_CUDA_CHECK(cudaStreamCreateWithFlags(&e->copyStream_, cudaStreamNonBlocking));
  NCC_CUDA_CHECK(cudaStreamCreateWithFlags(&e->fftStream_, cudaStreamNonBlocking));
  NCC_CUDA_CHECK(cudaEventCreateWithFlags(&e->uploaded_, cudaEventDisableTiming));
  NCC_CUDA_CHECK(cudaEventCreateWithFlags(&e->transformed_, cudaEventDisableTiming));
  for (FrameSlot& slot : e->slots_) {
    NCC_CUDA_CHECK(cudaEventCreateWithFlags(&slot.done, cudaEventDisableTiming));
    for (int b = 0; b < kMaxBands; ++b) {
      cudaEvent_t event = nullptr;
      NCC_CUDA_CHECK(cudaEventCreateWithFlags(&event, cudaEventDisableTiming));
      slot.bandEvents.push_back(event);
    }
  }
  *engine = std::move(e);
  return Status();
}

CudaNumerator CudaEngine::numeratorFor(uint32_t i) const {
  return i < chosen_.size() ? chosen_[i] : numeratorOption_;
}

int CudaEngine::lastRecomputeCount() const {
  int count = 0;
  if (lastRecomputeCount_ == nullptr || !activate().ok()) return 0;
  if (cudaStreamSynchronize(stream_) != cudaSuccess ||
      cudaMemcpy(&count, lastRecomputeCount_, sizeof(int), cudaMemcpyDeviceToHost) != cudaSuccess)
    return -1;
  return count;
}

int* CudaEngine::recomputeCountFor(uint32_t i) const {
  return aboveCount_.as<int>() + std::max<std::size_t>(bank_.size(), 1) + i;
}

Status CudaEngine::zeroCounters(cudaStream_t stream) {
  if (aboveCount_.capacity() == 0) return Status();
  NCC_CUDA_CHECK(cudaMemsetAsync(aboveCount_.as<int>(), 0,
                                 2 * std::max<std::size_t>(bank_.size(), 1) * sizeof(int), stream));
  return Status();
}

Status CudaEngine::setTemplates(std::vector<TemplateImage> bank) {
  if (inFlight_ > 0)
    return Status::error("setTemplates: " + std::to_string(inFlight_) +
                         " frames in flight; collect them first");
  NCC_RETURN_IF_ERROR(validateTemplates(bank));
  NCC_RETURN_IF_ERROR(activate());
  NCC_CUDA_CHECK(cudaStreamSynchronize(stream_));  // old buffers may still be in use
  std::vector<TemplateStats> stats;
  std::vector<SpatialLayout> layouts;
  std::vector<std::unique_ptr<DeviceBuffer>> packed, pixels, fusedPacked;
  for (const TemplateImage& t : bank) {
    stats.push_back(templateStats(t));
    layouts.push_back(spatialLayout(t.width, t.height));
    const std::vector<uint8_t> bytes = spatialPack(t.pixels.data(), layouts.back());
    packed.push_back(std::make_unique<DeviceBuffer>());
    NCC_RETURN_IF_ERROR(packed.back()->reserve(bytes.size()));
    NCC_CUDA_CHECK(cudaMemcpy(packed.back()->as<uint8_t>(), bytes.data(), bytes.size(), cudaMemcpyHostToDevice));
    pixels.push_back(std::make_unique<DeviceBuffer>());
    NCC_RETURN_IF_ERROR(pixels.back()->reserve(t.pixels.size()));
    NCC_CUDA_CHECK(cudaMemcpy(pixels.back()->as<uint8_t>(), t.pixels.data(), t.pixels.size(), cudaMemcpyHostToDevice));
    fusedPacked.push_back(std::make_unique<DeviceBuffer>());
    if (fusedSpatialFits(t.width, t.height)) {
      const std::vector<uint8_t> words =
          kFusedNumerator == FusedNumerator::TensorCores
              ? fusedSpatialFragments(t.pixels.data(), t.width, t.height)
              : fusedSpatialPack(t.pixels.data(), t.width, t.height);
      NCC_RETURN_IF_ERROR(fusedPacked.back()->reserve(words.size()));
      NCC_CUDA_CHECK(cudaMemcpy(fusedPacked.back()->as<uint8_t>(), words.data(), words.size(), cudaMemcpyHostToDevice));
    }
  }
  bank_ = std::move(bank);
  stats_ = std::move(stats);
  layouts_ = std::move(layouts);
  packed_ = std::move(packed);
  pixels_ = std::move(pixels);
  fusedPacked_ = std::move(fusedPacked);
  bankChanged_ = true;
  chosen_.clear();
  return Status();
}

Status CudaEngine::prepareSize(int width, int height) {
  if (!bankChanged_ && width == frameWidth_ && height == frameHeight_) return Status();
  // Frames in flight still read the scratch below on stream_: let them finish first.
  NCC_CUDA_CHECK(cudaStreamSynchronize(stream_));
  frameWidth_ = frameHeight_ = 0;  // stays invalid if anything below fails
  const int W = width, H = height;
  auto fitsHere = [&](const TemplateImage& t) { return t.width <= W && t.height <= H; };

  // Numerator per template; fused spatial templates need no SAT, the others do.
  chosen_.assign(bank_.size(), CudaNumerator::Spatial);
  fftSlot_.assign(bank_.size(), -1);
  fused_.assign(bank_.size(), false);
  anyFft_ = false;
  needSat_ = false;
  std::size_t maxMap = 1, maxSpatialMap = 1;
  int maxBlocks = 1;
  for (std::size_t i = 0; i < bank_.size(); ++i) {
    const TemplateImage& t = bank_[i];
    if (!fitsHere(t)) continue;
    chosen_[i] = numeratorOption_ != CudaNumerator::Auto
                     ? numeratorOption_
                     : chooseNumerator(t.width, t.height, W, H, smCount_);
    const int mapW = W - t.width + 1, mapH = H - t.height + 1;
    const std::size_t positions = std::size_t(mapW) * mapH;
    maxMap = std::max(maxMap, positions);
    fused_[i] = chosen_[i] == CudaNumerator::Spatial && fusedSpatialFits(t.width, t.height);
    if (fused_[i]) maxBlocks = std::max(maxBlocks, fusedSpatialBlocks(mapW, mapH));
    else needSat_ = true;
    if (chosen_[i] == CudaNumerator::Spatial) {
      if (!fused_[i]) maxSpatialMap = std::max(maxSpatialMap, positions);
    } else {
      anyFft_ = true;
    }
  }

  // SAT: 32-bit tables when every box the bank asks for sums below 2^32.
  bool fit32 = true;
  for (const TemplateImage& t : bank_)
    if (fitsHere(t) && !boxSumsFit32(t.width, t.height)) fit32 = false;
  const SatBuild want = fit32 ? SatBuild::Fused32 : SatBuild::Fused;
  if (needSat_ && (!sat_ || want != satWanted_ || W > satMaxWidth_ || H > satMaxHeight_)) {
    sat_.reset();
    const int maxW = std::max(W, satMaxWidth_), maxH = std::max(H, satMaxHeight_);
    // Fused may not have landed yet in this tree: fall back to the int64 builds that exist.
    Status s;
    for (SatBuild b : {want, SatBuild::Fused, SatBuild::Dlb, SatBuild::Naive}) {
      if (b == SatBuild::Fused32 && !fit32) continue;
      s = SatBuilder::create(b, maxW, maxH, &sat_);
      if (s.ok()) {
        satKind_ = b;
        break;
      }
    }
    if (!sat_) return Status::error("no GPU SAT build available: " + s.message());
    satWanted_ = want;
    satMaxWidth_ = maxW;
    satMaxHeight_ = maxH;
  }
  if (needSat_) {
    const std::size_t entry = satEntryBytes(satKind_);
    NCC_RETURN_IF_ERROR(satSum_.reserve(std::size_t(W) * H * entry));
    NCC_RETURN_IF_ERROR(satSumSq_.reserve(std::size_t(W) * H * entry));
  }

  if (anyFft_) {
    NCC_RETURN_IF_ERROR(fft_.configure(W, H, stream_, kFftPrecision));
    for (std::size_t i = 0; i < bank_.size(); ++i) {
      if (!fitsHere(bank_[i]) || chosen_[i] != CudaNumerator::Fft) continue;
      const double mean = double(stats_[i].sum) / double(stats_[i].n);
      NCC_RETURN_IF_ERROR(fft_.addTemplate(pixels_[i]->as<uint8_t>(), bank_[i].width,
                                           bank_[i].height, mean, &fftSlot_[i]));
    }
    // From now on frames transform on fftStream_ and correlate on stream_, no switching.
    NCC_RETURN_IF_ERROR(fft_.setStreams(fftStream_, stream_));
  }
  NCC_RETURN_IF_ERROR(numerator_.reserve(maxSpatialMap * sizeof(int64_t)));
  NCC_RETURN_IF_ERROR(map_.reserve(maxMap * sizeof(double)));
  NCC_RETURN_IF_ERROR(peaks_.reserve(maxMap));
  NCC_RETURN_IF_ERROR(blockBest_.reserve(std::size_t(maxBlocks) * sizeof(Ranked)));
  NCC_RETURN_IF_ERROR(above_.reserve(maxMap * sizeof(int)));
  // Per template: positions above the threshold, then recomputed windows (one memset a frame).
  NCC_RETURN_IF_ERROR(aboveCount_.reserve(2 * std::max<std::size_t>(bank_.size(), 1) * sizeof(int)));
  if (anyFft_ && kFftPrecision == FftPrecision::Float)
    NCC_RETURN_IF_ERROR(recompute_.reserve(maxMap * sizeof(int)));
  frameWidth_ = W;
  frameHeight_ = H;
  maxPositions_ = maxMap;
  NCC_RETURN_IF_ERROR(prepareFusedBank());
  bankChanged_ = false;
  ++scratchGeneration_;
  return Status();
}

Status CudaEngine::prepareFusedBank() {
  // Ordered by height, so that templates of one height share the window sums in the kernel.
  std::vector<uint32_t> members;
  for (uint32_t i = 0; i < bank_.size(); ++i)
    if (fused_[i]) members.push_back(i);
  std::stable_sort(members.begin(), members.end(), [&](uint32_t a, uint32_t b) {
    return bank_[a].height != bank_[b].height ? bank_[a].height < bank_[b].height
                                              : bank_[a].width < bank_[b].width;
  });
  inBank_.assign(bank_.size(), false);
  if (members.size() < 2) return Status();
  std::size_t positions = 0, blocks = 0;
  bankMaxHeight_ = bankTallestMap_ = 0;
  for (uint32_t i : members) {
    const int mapW = frameWidth_ - bank_[i].width + 1, mapH = frameHeight_ - bank_[i].height + 1;
    positions += std::size_t(mapW) * mapH;
    blocks += std::size_t(fusedSpatialBlocks(mapW, mapH));
    bankMaxHeight_ = std::max(bankMaxHeight_, bank_[i].height);
    bankTallestMap_ = std::max(bankTallestMap_, mapH);
  }
  NCC_RETURN_IF_ERROR(bankMaps_.reserve(positions * sizeof(double)));
  NCC_RETURN_IF_ERROR(bankAbove_.reserve(positions * sizeof(int)));
  NCC_RETURN_IF_ERROR(bankBlockBest_.reserve(blocks * sizeof(Ranked)));
  // Each member's map, block bests and above list, for the bank's score launch and (the same
  // places) for its peak search in two launches.
  std::vector<FusedBankTemplate> descriptors;
  std::vector<BankPeakJob> jobs;
  std::size_t mapOffset = 0, blockOffset = 0;
  for (uint32_t i : members) {
    BankPeakJob j;
    j.mapWidth = frameWidth_ - bank_[i].width + 1;
    j.mapHeight = frameHeight_ - bank_[i].height + 1;
    j.map = bankMaps_.as<double>() + mapOffset;
    j.templateWidth = bank_[i].width;
    j.templateHeight = bank_[i].height;
    j.templateIndex = int(i);
    j.blockBest = bankBlockBest_.as<Ranked>() + blockOffset;
    j.partials = fusedSpatialBlocks(j.mapWidth, j.mapHeight);
    j.above = bankAbove_.as<int>() + mapOffset;
    j.aboveCount = aboveCount_.as<int>() + i;
    jobs.push_back(j);
    FusedBankTemplate d;
    d.packedTemplate = fusedPacked_[i]->as<uint8_t>();
    d.templateWidth = j.templateWidth;
    d.templateHeight = j.templateHeight;
    d.stats = stats_[i];
    d.map = bankMaps_.as<double>() + mapOffset;
    d.blockBest = bankBlockBest_.as<Ranked>() + blockOffset;
    d.above = bankAbove_.as<int>() + mapOffset;
    d.aboveCount = aboveCount_.as<int>() + i;
    descriptors.push_back(d);
    mapOffset += std::size_t(j.mapWidth) * j.mapHeight;
    blockOffset += std::size_t(j.partials);
  }
  NCC_RETURN_IF_ERROR(fusedBank_.set(descriptors, kFusedNumerator));
  NCC_RETURN_IF_ERROR(bankPeaks_.set(jobs));
  for (uint32_t i : members) inBank_[i] = true;
  return Status();
}

Status CudaEngine::scoreFusedBank(const MatchParams& params) {
  FusedBankRule rule;
  rule.sign = lowerIsBetter(params.method) ? -1.0 : 1.0;
  rule.goodEnough = rule.sign * params.threshold;
  rule.collect = params.maxMatches > 0;
  // The bank's tallest template bounds the frame rows each band of output rows reads.
  return forEachBand(bankTallestMap_, bankMaxHeight_, [&](int y0, int y1) {
    return fusedBank_.score(image_, imagePitch_, frameWidth_, frameHeight_, params.method, rule, y0, y1,
                            stream_);
  });
}

Status CudaEngine::forEachBand(int mapHeight, int templateHeight,
                               const std::function<Status(int, int)>& launch) {
  if (bandsWaited_ >= bands_) return launch(0, mapHeight);
  // Band b of output rows ends where its windows still lie inside frame bands 0..b (on a
  // tile-row boundary), so it starts as soon as frame band b has arrived.
  int y0 = 0;
  for (int b = 0; b < bands_ && y0 < mapHeight; ++b) {
    const int frameRows = std::min(frameHeight_, (b + 1) * bandRows_);
    const int y1 = b + 1 == bands_ ? mapHeight
                                   : std::min(mapHeight, (frameRows - templateHeight + 1) /
                                                             kFusedTileHeight * kFusedTileHeight);
    if (y1 <= y0) continue;
    NCC_RETURN_IF_ERROR(waitForRows(frameRows));
    NCC_RETURN_IF_ERROR(launch(y0, y1));
    y0 = y1;
  }
  return Status();
}

Status CudaEngine::uploadFrame(const FrameView& frame, FrameSlot& slot) {
  bands_ = bandsWaited_ = 0;
  bandEvents_ = slot.bandEvents.data();
  if (frame.memory == MemoryKind::Device) {
    image_ = frame.data;
    imagePitch_ = frame.stride;
    return Status();
  }
  const int W = frame.width, H = frame.height;
  const std::size_t pitch = roundUp(std::size_t(W), 128);
  NCC_RETURN_IF_ERROR(slot.frame.reserve(pitch * H));
  image_ = slot.frame.as<uint8_t>();
  imagePitch_ = pitch;
  // Pinned (or registered) host memory is copied from directly; anything else goes through the
  // staging buffer first, since an async copy from pageable memory is neither async nor fast.
  cudaPointerAttributes attributes{};
  const bool pinned = cudaPointerGetAttributes(&attributes, frame.data) == cudaSuccess &&
                      attributes.type == cudaMemoryTypeHost;
  cudaGetLastError();  // a failed query is not an error of ours
  const uint8_t* source = frame.data;
  std::size_t sourcePitch = frame.stride;
  if (!pinned) {
    NCC_RETURN_IF_ERROR(slot.staging.reserve(std::size_t(W) * H));
    source = slot.staging.as<uint8_t>();
    sourcePitch = W;
  }
  // The slot is free (its last frame was collected), so the copies need not wait for stream_.
  // Every fitting template fused and no other frame in flight: several bands, so scores start
  // with the first rows. Behind a frame in flight the whole upload overlaps that frame's work
  // anyway, and one launch over all rows beats one per band (no partial waves).
  const bool banded = !needSat_ && inFlight_ == 0;
  const int bandRows = banded ? bandRowsFor(H) : H;
  for (int y0 = 0, band = 0; y0 < H; y0 += bandRows, ++band) {
    const int rows = std::min(bandRows, H - y0);
    if (!pinned) {
      uint8_t* staged = slot.staging.as<uint8_t>();
      for (int y = y0; y < y0 + rows; ++y)
        std::memcpy(staged + std::size_t(y) * W, frame.data + std::size_t(y) * frame.stride, W);
    }
    NCC_CUDA_CHECK(cudaMemcpy2DAsync(slot.frame.as<uint8_t>() + std::size_t(y0) * pitch, pitch,
                                     source + std::size_t(y0) * sourcePitch, sourcePitch, W, rows,
                                     cudaMemcpyHostToDevice, copyStream_));
    NCC_CUDA_CHECK(cudaEventRecord(slot.bandEvents[band], copyStream_));
  }
  bandRows_ = bandRows;
  bands_ = (H + bandRows - 1) / bandRows;
  return Status();
}

Status CudaEngine::waitForRows(int rows) {
  if (bands_ == 0 || rows <= 0) return Status();
  const int last = std::min(bands_, (rows + bandRows_ - 1) / bandRows_) - 1;
  if (last < bandsWaited_) return Status();
  NCC_CUDA_CHECK(cudaStreamWaitEvent(stream_, bandEvents_[last], 0));
  bandsWaited_ = last + 1;
  return Status();
}

Status CudaEngine::buildFrame(const FrameView& frame, FrameSlot& slot) {
  NCC_RETURN_IF_ERROR(validateFrame(frame));
  NCC_RETURN_IF_ERROR(prepareSize(frame.width, frame.height));
  NCC_RETURN_IF_ERROR(uploadFrame(frame, slot));
  if (!needSat_) return Status();  // every fitting template fused: no SAT, no FFT
  NCC_RETURN_IF_ERROR(waitForRows(frame.height));
  if (anyFft_) {
    // The forward transform (offset: the frame's own mean) on fftStream_, beside the SAT. The
    // event orders it after the upload and after the previous frame's use of the spectrum.
    NCC_CUDA_CHECK(cudaEventRecord(uploaded_, stream_));
    NCC_CUDA_CHECK(cudaStreamWaitEvent(fftStream_, uploaded_, 0));
    NCC_RETURN_IF_ERROR(fft_.transformFrame(image_, imagePitch_));
    NCC_CUDA_CHECK(cudaEventRecord(transformed_, fftStream_));
  }
  NCC_RETURN_IF_ERROR(sat_->build(image_, imagePitch_, frame.width, frame.height,
                                  satSum_.as<void>(), satSumSq_.as<void>(), stream_));
  if (anyFft_) NCC_CUDA_CHECK(cudaStreamWaitEvent(stream_, transformed_, 0));
  return Status();
}

PeakHandoff CudaEngine::handoffFor(uint32_t i, const MatchParams& params) {
  PeakHandoff h;
  h.blockBest = blockBest_.as<Ranked>();
  h.above = above_.as<int>();
  h.aboveCount = aboveCount_.as<int>() + i;
  h.sign = lowerIsBetter(params.method) ? -1.0 : 1.0;
  h.goodEnough = h.sign * params.threshold;
  h.collect = params.maxMatches > 0;
  return h;
}

Status CudaEngine::computeMap(uint32_t i, Method method, const PeakHandoff& handoff) {
  const TemplateImage& t = bank_[i];
  if (fused_[i]) {
    FusedSpatialArgs a;
    a.image = image_;
    a.pitch = imagePitch_;
    a.width = frameWidth_;
    a.height = frameHeight_;
    a.numerator = kFusedNumerator;
    a.packedTemplate = fusedPacked_[i]->as<uint8_t>();
    a.templateWidth = t.width;
    a.templateHeight = t.height;
    a.stats = stats_[i];
    a.method = method;
    a.map = map_.as<double>();
    return forEachBand(frameHeight_ - t.height + 1, t.height,
                       [&](int y0, int y1) { return fusedSpatialScores(a, y0, y1, handoff, stream_); });
  }
  NCC_RETURN_IF_ERROR(waitForRows(frameHeight_));
  ScoreInputs in;
  in.sum = satSum_.as<void>();
  in.sumSq = satSumSq_.as<void>();
  in.sat32 = satKind_ == SatBuild::Fused32;
  in.frameWidth = frameWidth_;
  in.frameHeight = frameHeight_;
  in.templateWidth = t.width;
  in.templateHeight = t.height;
  in.stats = stats_[i];
  in.method = method;
  in.smCount = smCount_;
  if (chosen_[i] == CudaNumerator::Spatial) {
    NCC_RETURN_IF_ERROR(spatialNumerator(image_, imagePitch_, frameWidth_, frameHeight_,
                                         packed_[i]->as<uint8_t>(), layouts_[i],
                                         numerator_.as<int64_t>(), stream_));
    return scoreFromExactNumerator(in, numerator_.as<int64_t>(), map_.as<double>(), stream_);
  }
  if (fft_.precision() == FftPrecision::Float) {
    const float* centred = nullptr;
    NCC_RETURN_IF_ERROR(fft_.correlate(fftSlot_[i], &centred));
    const double templateNorm = std::sqrt(double(stats_[i].centredSq()) / double(stats_[i].n));
    int* recomputeCount = recomputeCountFor(i);  // zeroed with the frame's counters
    lastRecomputeCount_ = recomputeCount;
    NCC_RETURN_IF_ERROR(scoreFromFloatCentredNumerator(
        in, centred, std::size_t(fft_.fftWidth()), fft_.errorScale(), fft_.frameNormSq(),
        templateNorm, map_.as<double>(), recompute_.as<int>(), recomputeCount, stream_));
    return recomputeExactScores(in, image_, imagePitch_, pixels_[i]->as<uint8_t>(),
                                recompute_.as<int>(), recomputeCount, map_.as<double>(), stream_);
  }
  const double* centred = nullptr;
  NCC_RETURN_IF_ERROR(fft_.correlate(fftSlot_[i], &centred));
  return scoreFromCentredNumerator(in, centred, std::size_t(fft_.fftWidth()), map_.as<double>(), stream_);
}

Status CudaEngine::match(const FrameView& frame, const MatchParams& params, FrameResult* result) {
  if (result == nullptr) return Status::error("match: result pointer is null");
  if (inFlight_ > 0)
    return Status::error("match: " + std::to_string(inFlight_) +
                         " frames in flight; collect them first (or use submit/collect only)");
  NCC_RETURN_IF_ERROR(submit(frame, params));
  return collect(result);
}

Status CudaEngine::submit(const FrameView& frame, const MatchParams& params) {
  if (inFlight_ >= kMaxFramesInFlight)
    return Status::error("submit: " + std::to_string(inFlight_) +
                         " frames already in flight; collect one first");
  NCC_RETURN_IF_ERROR(validateParams(params));
  NCC_RETURN_IF_ERROR(activate());
  FrameSlot& slot = nextSlot();
  const Status status = submitInto(frame, params, slot);
  if (!status.ok()) {
    // Work already enqueued may still read the slot: finish it before the slot is reused.
    cudaStreamSynchronize(copyStream_);
    cudaStreamSynchronize(fftStream_);
    cudaStreamSynchronize(stream_);
    cudaGetLastError();
    return status;
  }
  ++inFlight_;
  return Status();
}

Status CudaEngine::submitInto(const FrameView& frame, const MatchParams& params, FrameSlot& slot) {
  NCC_RETURN_IF_ERROR(buildFrame(frame, slot));

  // No template can keep more matches than it has positions: bounding M by that keeps the
  // results buffer finite for any max-matches (the element allows up to INT_MAX).
  MatchParams bounded = params;
  bounded.maxMatches = int(std::min<std::size_t>(std::size_t(params.maxMatches), maxPositions_));
  const std::size_t T = bank_.size(), M = std::size_t(bounded.maxMatches);
  const ResultsLayout layout(T, M);
  NCC_RETURN_IF_ERROR(slot.results.reserve(std::max<std::size_t>(layout.bytes, 16)));
  NCC_RETURN_IF_ERROR(slot.hostResults.reserve(std::max<std::size_t>(layout.bytes, 16)));
  slot.maxMatches = M;
  // A graph needs fixed pointers and no event from outside it: a host frame in the slot's own
  // buffer, uploaded in one band (waited for here), and no SAT (whose build is stamped per call).
  // Nor may its calls allocate: the sorted NMS (max-matches above kSelectRoundsLimit) sizes its
  // scratch on first use, so those frames launch one by one.
  const bool graph = !needSat_ && image_ == slot.frame.as<uint8_t>() && bands_ == 1 &&
                     bounded.maxMatches <= kSelectRoundsLimit && slot.graphFailedAt != int64_t(scratchGeneration_);
  if (graph) {
    NCC_RETURN_IF_ERROR(waitForRows(frameHeight_));
    NCC_RETURN_IF_ERROR(launchMatchingGraph(params, bounded, slot));
  } else {
    NCC_RETURN_IF_ERROR(enqueueMatching(params, bounded, slot));
  }
  NCC_CUDA_CHECK(cudaEventRecord(slot.done, stream_));
  slot.frameWidth = frameWidth_;
  slot.frameHeight = frameHeight_;
  return Status();
}

Status CudaEngine::enqueueMatching(const MatchParams& params, const MatchParams& bounded, FrameSlot& slot) {
  const std::size_t T = bank_.size(), M = slot.maxMatches;
  const ResultsLayout layout(T, M);
  uint8_t* dev = slot.results.as<uint8_t>();
  int* counts = reinterpret_cast<int*>(dev);
  DeviceMatch* best = reinterpret_cast<DeviceMatch*>(dev + layout.bestOffset);
  DeviceMatch* kept = reinterpret_cast<DeviceMatch*>(dev + layout.keptOffset);
  NCC_RETURN_IF_ERROR(zeroCounters(stream_));
  // Fused templates of a bank of two or more: one launch per band scores them all.
  if (std::find(inBank_.begin(), inBank_.end(), true) != inBank_.end()) {
    NCC_RETURN_IF_ERROR(scoreFusedBank(bounded));
    NCC_RETURN_IF_ERROR(bankPeaks_.find(bounded, best, kept, counts, stream_));
  }
  for (uint32_t i = 0; i < T; ++i) {
    if (!fits(i) || inBank_[i]) continue;
    const TemplateImage& t = bank_[i];
    const int mapW = frameWidth_ - t.width + 1, mapH = frameHeight_ - t.height + 1;
    const PeakHandoff handoff = handoffFor(i, bounded);
    NCC_RETURN_IF_ERROR(computeMap(i, params.method, handoff));
    const DeviceScoreMap map{map_.as<double>(), mapW, mapH, t.width, t.height};
    const MatchSlots slots{best + i, kept + i * M, counts + i};
    if (fused_[i]) {
      NCC_RETURN_IF_ERROR(
          peaks_.findFromHandoff(map, bounded, handoff, fusedSpatialBlocks(mapW, mapH), slots, stream_));
    } else {
      NCC_RETURN_IF_ERROR(peaks_.find(map, bounded, slots, stream_));
    }
  }
  NCC_RETURN_IF_ERROR(waitForRows(frameHeight_));  // the slot's copies end before `done`
  NCC_CUDA_CHECK(cudaMemcpyAsync(slot.hostResults.as<uint8_t>(), dev, layout.bytes,
                                 cudaMemcpyDeviceToHost, stream_));
  return Status();
}

Status CudaEngine::launchMatchingGraph(const MatchParams& params, const MatchParams& bounded, FrameSlot& slot) {
  auto bits = [](double v) {
    uint64_t u = 0;
    std::memcpy(&u, &v, sizeof u);
    return u;
  };
  // Everything the captured launches baked in: scratch layout, pointers, sizes, the rule.
  const std::vector<uint64_t> key = {
      scratchGeneration_, uint64_t(reinterpret_cast<std::uintptr_t>(image_)), uint64_t(imagePitch_),
      uint64_t(reinterpret_cast<std::uintptr_t>(slot.results.as<void>())),
      uint64_t(reinterpret_cast<std::uintptr_t>(slot.hostResults.as<void>())), uint64_t(frameWidth_),
      uint64_t(frameHeight_), uint64_t(params.method), bits(params.threshold), uint64_t(bounded.maxMatches),
      bits(params.nmsIou)};
  if (slot.graph == nullptr || slot.graphKey != key) {
    if (slot.graph != nullptr) NCC_CUDA_CHECK(cudaGraphExecDestroy(slot.graph));
    slot.graph = nullptr;
    NCC_CUDA_CHECK(cudaStreamBeginCapture(stream_, cudaStreamCaptureModeThreadLocal));
    const Status enqueued = enqueueMatching(params, bounded, slot);
    cudaGraph_t captured = nullptr;
    const cudaError_t ended = cudaStreamEndCapture(stream_, &captured);
    cudaError_t made = cudaErrorUnknown;
    if (enqueued.ok() && ended == cudaSuccess && captured != nullptr)
      made = cudaGraphInstantiate(&slot.graph, captured, 0);
    if (captured != nullptr) cudaGraphDestroy(captured);
    if (made != cudaSuccess) {
      // Not capturable here: this slot enqueues its calls one by one from now on.
      cudaGetLastError();
      slot.graph = nullptr;
      slot.graphFailedAt = int64_t(scratchGeneration_);  // tried again after the next relayout
      return enqueueMatching(params, bounded, slot);
    }
    slot.graphKey = key;
  }
  NCC_CUDA_CHECK(cudaGraphLaunch(slot.graph, stream_));
  return Status();
}

Status CudaEngine::collect(FrameResult* result) {
  if (result == nullptr) return Status::error("collect: result pointer is null");
  if (inFlight_ == 0) return Status::error("collect: no frame in flight");
  FrameSlot& slot = slots_[head_];
  head_ = (head_ + 1) % kMaxFramesInFlight;
  --inFlight_;
  NCC_RETURN_IF_ERROR(activate());
  NCC_CUDA_CHECK(cudaEventSynchronize(slot.done));

  const std::size_t T = bank_.size(), M = slot.maxMatches;
  const ResultsLayout layout(T, M);
  const uint8_t* host = slot.hostResults.as<uint8_t>();
  const int* hostCounts = reinterpret_cast<const int*>(host);
  const DeviceMatch* hostBest = reinterpret_cast<const DeviceMatch*>(host + layout.bestOffset);
  const DeviceMatch* hostKept = reinterpret_cast<const DeviceMatch*>(host + layout.keptOffset);
  auto toMatch = [&](const DeviceMatch& d, uint32_t i) {
    Match m;
    m.templateIndex = i;
    m.x = d.x;
    m.y = d.y;
    m.width = bank_[i].width;
    m.height = bank_[i].height;
    m.score = d.score;
    m.subX = d.subX;
    m.subY = d.subY;
    return m;
  };
  result->matches.clear();
  result->best.assign(T, std::nullopt);
  for (uint32_t i = 0; i < T; ++i) {
    if (bank_[i].width > slot.frameWidth || bank_[i].height > slot.frameHeight) continue;
    result->best[i] = toMatch(hostBest[i], i);
    for (int k = 0; k < hostCounts[i]; ++k) result->matches.push_back(toMatch(hostKept[i * M + k], i));
  }
  return Status();
}

Status CudaEngine::scoreMap(const FrameView& frame, Method method, uint32_t templateIndex,
                            std::vector<double>* map) {
  NCC_RETURN_IF_ERROR(validateScoreMapRequest(bank_, frame, method, templateIndex, map));
  NCC_RETURN_IF_ERROR(activate());
  const TemplateImage& t = bank_[templateIndex];
  if (inFlight_ > 0)
    return Status::error("scoreMap: " + std::to_string(inFlight_) + " frames in flight; collect them first");
  NCC_RETURN_IF_ERROR(buildFrame(frame, nextSlot()));
  NCC_RETURN_IF_ERROR(zeroCounters(stream_));
  MatchParams noMatches;
  noMatches.method = method;
  noMatches.maxMatches = 0;
  NCC_RETURN_IF_ERROR(computeMap(templateIndex, method, handoffFor(0, noMatches)));
  NCC_RETURN_IF_ERROR(waitForRows(frameHeight_));
  map->resize(std::size_t(frame.width - t.width + 1) * (frame.height - t.height + 1));
  NCC_CUDA_CHECK(cudaMemcpyAsync(map->data(), map_.as<double>(), map->size() * sizeof(double),
                                 cudaMemcpyDeviceToHost, stream_));
  NCC_CUDA_CHECK(cudaStreamSynchronize(stream_));
  return Status();
}

}  // namespace cuda
}  // namespace nccmatch
