#include "cuda/engine/template_bank.hpp"

#include <algorithm>
#include <map>
#include <tuple>

#include "cuda/cuda_check.hpp"
#include "cuda/engine/cost_model.hpp"
#include "cuda/score/score_kernels.hpp"
#include "rules/masked_score_rules.hpp"
#include "rules/peak_rules.hpp"

namespace nccmatch::cuda {

namespace {

// A box of w*h pixels sums I^2 to at most w*h*255^2: below 2^32 for w*h <= 66051 (256x256 too).
bool boxSumsFit32(int w, int h) { return double(w) * h * 255.0 * 255.0 < 4294967296.0; }

Status copyToDevice(const std::vector<uint8_t>& bytes, DeviceBuffer* buffer) {
  NCC_RETURN_IF_ERROR(buffer->reserve(bytes.size()));
  NCC_CUDA_CHECK(cudaMemcpy(buffer->as<uint8_t>(), bytes.data(), bytes.size(), cudaMemcpyHostToDevice));
  return Status();
}

Status prepareTemplate(const TemplateImage& t, PreparedTemplate* out) {
  out->stats = maskedTemplateStats(t);  // templateStats(t) when nothing is ignored
  out->masked = ignoresPixels(t);
  if (out->masked || !fusedSpatialFits(t.width, t.height)) {
    std::vector<uint8_t> packed(maskedLayoutBytes(t.width, t.height));
    packMaskedTemplate(t, packed.data());
    NCC_RETURN_IF_ERROR(copyToDevice(packed, &out->maskedLayout));
  }
  out->layout = spatialLayout(t.width, t.height);
  NCC_RETURN_IF_ERROR(copyToDevice(spatialPack(t.pixels.data(), out->layout), &out->packed));
  NCC_RETURN_IF_ERROR(copyToDevice(t.pixels, &out->pixels));
  if (!fusedSpatialFits(t.width, t.height)) return Status();
  return copyToDevice(kFusedNumerator == FusedNumerator::TensorCores
                          ? fusedSpatialFragments(t.pixels.data(), t.width, t.height)
                          : fusedSpatialPack(t.pixels.data(), t.width, t.height),
                      &out->fusedPacked);
}

// Spectra of the fft templates that fit; frames then transform on fftStream and correlate on
// stream, with no switching per frame.
Status prepareFft(const TemplateBank& bank, const SizePlan& plan, int width, int height,
                  cudaStream_t stream, cudaStream_t fftStream, FftCorrelator* fft,
                  std::vector<int>* fftSlot) {
  NCC_RETURN_IF_ERROR(fft->configure(width, height, stream, kFftPrecision));
  for (uint32_t i = 0; i < bank.size(); ++i) {
    const TemplateImage& t = bank.image(i);
    if (t.width > width || t.height > height || plan.numerator[i] != CudaNumerator::Fft) continue;
    const TemplateStats& stats = bank.prepared(i).stats;
    const double mean = double(stats.sum) / double(stats.n);
    NCC_RETURN_IF_ERROR(fft->addTemplate(bank.prepared(i).pixels.as<uint8_t>(), t.width, t.height,
                                         mean, &(*fftSlot)[i]));
  }
  return fft->setStreams(fftStream, stream);
}

// A bank member's slots: its tile bests (the fused kernel's blocks or the GEMM's tiles, whichever
// are more, so either launch may score it) and, in a GEMM group, one bit a map position.
std::size_t tileBestSlots(int mapWidth, int mapHeight) {
  return std::size_t(std::max(fusedSpatialBlocks(mapWidth, mapHeight), gemmBankTiles(mapWidth, mapHeight)));
}

std::size_t bitWords(int mapWidth, int mapHeight) { return (std::size_t(mapWidth) * mapHeight + 31) / 32; }
// A GEMM member's words of sparse-map state, zeroed each frame: its bits, then its frame floor.
std::size_t sparseWords(int mapWidth, int mapHeight) { return bitWords(mapWidth, mapHeight) + 1; }

}  // namespace

std::vector<int> sharedMaskGroups(const std::vector<TemplateImage>& bank) {
  // Key: size and the compared pixels as 0/1.
  std::map<std::tuple<int, int, std::vector<bool>>, std::vector<uint32_t>> byMask;
  for (std::size_t i = 0; i < bank.size(); ++i) {
    const TemplateImage& t = bank[i];
    if (!ignoresPixels(t)) continue;
    std::vector<bool> compared(t.mask.size());
    for (std::size_t k = 0; k < t.mask.size(); ++k) compared[k] = t.mask[k] != 0;
    byMask[std::make_tuple(t.width, t.height, std::move(compared))].push_back(uint32_t(i));
  }
  // Groups numbered by their first member, so the numbering follows the bank's order.
  std::vector<std::vector<uint32_t>> groups;
  for (auto& entry : byMask)
    if (entry.second.size() >= 2) groups.push_back(std::move(entry.second));
  std::sort(groups.begin(), groups.end());
  std::vector<int> out(bank.size(), -1);
  for (std::size_t g = 0; g < groups.size(); ++g)
    for (uint32_t i : groups[g]) out[i] = int(g);
  return out;
}

Status TemplateBank::prepare(std::vector<TemplateImage> images, TemplateBank* bank) {
  std::vector<PreparedTemplate> prepared(images.size());
  for (std::size_t i = 0; i < images.size(); ++i)
    NCC_RETURN_IF_ERROR(prepareTemplate(images[i], &prepared[i]));
  bank->maskGroup_ = sharedMaskGroups(images);
  bank->maskGroups_.clear();
  for (std::size_t i = 0; i < images.size(); ++i) {
    const int g = bank->maskGroup_[i];
    if (g < 0) continue;
    if (std::size_t(g) >= bank->maskGroups_.size()) bank->maskGroups_.resize(std::size_t(g) + 1);
    bank->maskGroups_[std::size_t(g)].push_back(uint32_t(i));
  }
  bank->images_ = std::move(images);
  bank->prepared_ = std::move(prepared);
  return Status();
}

SizePlan planForSize(const std::vector<TemplateImage>& bank, int W, int H, CudaNumerator option,
                     int smCount) {
  SizePlan plan;
  plan.numerator.assign(bank.size(), CudaNumerator::Spatial);
  plan.fused.assign(bank.size(), false);
  plan.exactAfterRounding.assign(bank.size(), false);
  plan.fftPeaksHandedOver.assign(bank.size(), false);
  const std::vector<int> maskGroups = sharedMaskGroups(bank);
  for (std::size_t i = 0; i < bank.size(); ++i) {
    const TemplateImage& t = bank[i];
    if (t.width > W || t.height > H) continue;
    // A masked template takes the masked spatial kernel whatever the option (never fused or fft).
    const bool masked = ignoresPixels(t);
    const CudaNumerator numerator = masked ? CudaNumerator::Spatial
                                    : option != CudaNumerator::Auto ? option
                                                                    : chooseNumerator(t.width, t.height, W, H, smCount);
    plan.numerator[i] = numerator;
    const int mapW = W - t.width + 1, mapH = H - t.height + 1;
    const std::size_t positions = std::size_t(mapW) * mapH;
    plan.maxPositions = std::max(plan.maxPositions, positions);
    if (maskGroups[i] >= 0) plan.maxSharedMaskPositions = std::max(plan.maxSharedMaskPositions, positions);
    if (masked) plan.maxMaskedPositions = std::max(plan.maxMaskedPositions, positions);
    plan.fused[i] = numerator == CudaNumerator::Spatial && fusedSpatialFits(t.width, t.height) && !masked;
    if (plan.fused[i]) plan.maxFusedBlocks = std::max(plan.maxFusedBlocks, fusedSpatialBlocks(mapW, mapH));
    else plan.needSat = true;
    if (numerator == CudaNumerator::Spatial) {
      if (!plan.fused[i])
        plan.maxUnfusedSpatialPositions = std::max(plan.maxUnfusedSpatialPositions, positions);
    } else {
      plan.anyFft = true;
      plan.exactAfterRounding[i] = true;
      plan.fftPeaksHandedOver[i] = fftPeakHandoffPays(mapW, mapH);
      plan.maxFftHandoffSlots = std::max(plan.maxFftHandoffSlots, floatScoreHandoffSlots(mapW, mapH, smCount));
    }
    if (!boxSumsFit32(t.width, t.height)) plan.sat32 = false;
  }
  return plan;
}

Status SatTables::prepare(bool sat32, int width, int height) {
  const SatBuild want = sat32 ? SatBuild::Fused32 : SatBuild::Fused;
  if (!builder_ || want != kind_ || width > maxWidth_ || height > maxHeight_) {
    builder_.reset();
    const int maxW = std::max(width, maxWidth_), maxH = std::max(height, maxHeight_);
    replayable_ = nullptr;
    NCC_RETURN_IF_ERROR(SatBuilder::create(want, maxW, maxH, &builder_));
    replayable_ = dynamic_cast<ReplayableSatBuild*>(builder_.get());
    kind_ = want;
    maxWidth_ = maxW;
    maxHeight_ = maxH;
  }
  const std::size_t entry = satEntryBytes(kind_);
  NCC_RETURN_IF_ERROR(sum_.reserve(std::size_t(width) * height * entry));
  return sumSq_.reserve(std::size_t(width) * height * entry);
}

Status SatTables::build(const UploadedFrame& frame, cudaStream_t stream) {
  return builder_->build(frame.image, frame.pitch, frame.width, frame.height, sum_.as<void>(),
                         sumSq_.as<void>(), stream);
}

Status SatTables::restamp(cudaGraphExec_t exec, cudaGraphNode_t node, cudaStream_t stream) {
  if (replayable_ == nullptr || node == nullptr) return Status::error("SatTables::restamp: no captured SAT build");
  return replayable_->restamp(exec, node, stream);
}

Status MapScratch::reserve(const SizePlan& plan, std::size_t templates) {
  NCC_RETURN_IF_ERROR(numerator.reserve(plan.maxUnfusedSpatialPositions * sizeof(int64_t)));
  NCC_RETURN_IF_ERROR(map.reserve(plan.maxPositions * sizeof(double)));
  NCC_RETURN_IF_ERROR(peaks.reserve(plan.maxPositions));
  NCC_RETURN_IF_ERROR(
      blockBest.reserve(std::size_t(std::max(plan.maxFusedBlocks, plan.maxFftHandoffSlots)) * sizeof(Ranked)));
  NCC_RETURN_IF_ERROR(above.reserve(plan.maxPositions * sizeof(int)));
  NCC_RETURN_IF_ERROR(aboveCount.reserve(2 * std::max<std::size_t>(templates, 1) * sizeof(int)));
  if (plan.anyFft && kFftPrecision == FftPrecision::Float)
    NCC_RETURN_IF_ERROR(recompute.reserve(plan.maxPositions * sizeof(int)));
  return Status();
}

Status MapScratch::zeroCounters(std::size_t templates, cudaStream_t stream) {
  if (aboveCount.capacity() == 0) return Status();
  NCC_CUDA_CHECK(cudaMemsetAsync(aboveCount.as<int>(), 0,
                                 2 * std::max<std::size_t>(templates, 1) * sizeof(int), stream));
  return Status();
}

int* MapScratch::recomputeCountFor(uint32_t i, std::size_t templates) const {
  return aboveCount.as<int>() + std::max<std::size_t>(templates, 1) + i;
}

PeakHandoff MapScratch::handoffFor(uint32_t i, const MatchParams& params) const {
  PeakHandoff h;
  h.blockBest = blockBest.as<Ranked>();
  h.above = above.as<int>();
  h.aboveCount = aboveCount.as<int>() + i;
  h.sign = goodnessSign(params.method);
  h.goodEnough = h.sign * params.threshold;
  h.collect = params.maxMatches > 0;
  return h;
}

std::vector<uint32_t> FusedBankLaunch::orderedMembers(const TemplateBank& bank, const SizePlan& plan) {
  std::vector<uint32_t> members;
  for (uint32_t i = 0; i < bank.size(); ++i)
    if (plan.fused[i]) members.push_back(i);
  std::stable_sort(members.begin(), members.end(), [&](uint32_t a, uint32_t b) {
    const TemplateImage &ta = bank.image(a), &tb = bank.image(b);
    return ta.height != tb.height ? ta.height < tb.height : ta.width < tb.width;
  });
  return members;
}

Status FusedBankLaunch::reserve(const TemplateBank& bank, const std::vector<uint32_t>& members,
                                int frameWidth, int frameHeight) {
  std::size_t positions = 0, blocks = 0;
  maxHeight_ = tallestMap_ = 0;
  sparseWords_ = 0;
  for (uint32_t i : members) {
    const TemplateImage& t = bank.image(i);
    const int mapW = frameWidth - t.width + 1, mapH = frameHeight - t.height + 1;
    positions += std::size_t(mapW) * mapH;
    blocks += tileBestSlots(mapW, mapH);
    if (inGemm_[i]) sparseWords_ += sparseWords(mapW, mapH);
    maxHeight_ = std::max(maxHeight_, t.height);
    tallestMap_ = std::max(tallestMap_, mapH);
  }
  NCC_RETURN_IF_ERROR(maps_.reserve(positions * sizeof(double)));
  NCC_RETURN_IF_ERROR(above_.reserve(positions * sizeof(int)));
  NCC_RETURN_IF_ERROR(sparse_.reserve(std::max<std::size_t>(sparseWords_, 1) * sizeof(uint32_t)));
  return blockBest_.reserve(blocks * sizeof(Ranked));
}

Status FusedBankLaunch::setMembers(const TemplateBank& bank, const std::vector<uint32_t>& members,
                                   int frameWidth, int frameHeight, int smCount,
                                   CudaGemmTemplates gemmTemplates, int* aboveCounts) {
  // Each member's map, block bests and above list (and, in a GEMM group, bits), for the score
  // launches and (the same places) for the peak search.
  std::vector<FusedBankTemplate> loopMembers;
  std::vector<BankPeakJob> jobs;
  // GEMM groups by size, in member order: pixels and descriptors.
  struct Group {
    int width, height;
    std::vector<const uint8_t*> pixels;
    std::vector<FusedBankTemplate> members;
  };
  std::vector<Group> groups;
  std::size_t mapOffset = 0, blockOffset = 0, sparseOffset = 0;
  for (uint32_t i : members) {
    const TemplateImage& t = bank.image(i);
    BankPeakJob j;
    j.mapWidth = frameWidth - t.width + 1;
    j.mapHeight = frameHeight - t.height + 1;
    j.map = maps_.as<double>() + mapOffset;
    j.templateWidth = t.width;
    j.templateHeight = t.height;
    j.templateIndex = int(i);
    j.blockBest = blockBest_.as<Ranked>() + blockOffset;
    j.above = above_.as<int>() + mapOffset;
    j.aboveCount = aboveCounts + i;
    FusedBankTemplate d;
    d.packedTemplate = bank.prepared(i).fusedPacked.as<uint8_t>();
    d.templateWidth = t.width;
    d.templateHeight = t.height;
    d.stats = bank.prepared(i).stats;
    d.map = maps_.as<double>() + mapOffset;
    d.blockBest = blockBest_.as<Ranked>() + blockOffset;
    d.above = above_.as<int>() + mapOffset;
    d.aboveCount = aboveCounts + i;
    if (inGemm_[i]) {
      j.partials = gemmBankTiles(j.mapWidth, j.mapHeight);
      j.aboveBits = d.aboveBits = sparse_.as<uint32_t>() + sparseOffset;
      d.frameFloor = d.aboveBits + bitWords(j.mapWidth, j.mapHeight);
      j.templatePixels = bank.prepared(i).pixels.as<uint8_t>();
      j.stats = d.stats;
      sparseOffset += sparseWords(j.mapWidth, j.mapHeight);
      if (groups.empty() || groups.back().width != t.width || groups.back().height != t.height)
        groups.push_back(Group{t.width, t.height, {}, {}});
      groups.back().pixels.push_back(t.pixels.data());
      groups.back().members.push_back(d);
    } else {
      j.partials = fusedSpatialBlocks(j.mapWidth, j.mapHeight);
      loopMembers.push_back(d);
    }
    jobs.push_back(j);
    mapOffset += std::size_t(j.mapWidth) * j.mapHeight;
    blockOffset += tileBestSlots(j.mapWidth, j.mapHeight);
  }
  launch_ = FusedSpatialBank();
  if (!loopMembers.empty()) NCC_RETURN_IF_ERROR(launch_.set(loopMembers, kFusedNumerator));
  gemmGroups_.clear();
  for (const Group& g : groups) {
    auto group = std::make_unique<GemmGroup>();
    const bool zeroMean = gemmTemplates == CudaGemmTemplates::ZeroMean ||
                          (gemmTemplates == CudaGemmTemplates::Auto && gemmZeroMeanPays(int(g.members.size())));
    NCC_RETURN_IF_ERROR(group->launch.set(g.pixels, g.width, g.height, g.members, smCount, 4, zeroMean));
    group->mapHeight = frameHeight - g.height + 1;
    gemmGroups_.push_back(std::move(group));
  }
  return peaks_.set(jobs);
}

Status FusedBankLaunch::prepare(const TemplateBank& bank, const SizePlan& plan, int frameWidth,
                                int frameHeight, int smCount, CudaGemmTemplates gemmTemplates, int* aboveCounts) {
  const std::vector<uint32_t> members = orderedMembers(bank, plan);
  inBank_.assign(bank.size(), false);
  inGemm_.assign(bank.size(), false);
  gemmGroups_.clear();
  if (members.size() < 2) return Status();
  // Members are ordered by height, then width: equal sizes are neighbours.
  for (std::size_t a = 0; a < members.size();) {
    std::size_t b = a;
    const TemplateImage& first = bank.image(members[a]);
    while (b < members.size() && bank.image(members[b]).width == first.width &&
           bank.image(members[b]).height == first.height)
      ++b;
    if (gemmGroupPays(first.width, first.height, int(b - a)))
      for (std::size_t k = a; k < b; ++k) inGemm_[members[k]] = true;
    a = b;
  }
  NCC_RETURN_IF_ERROR(reserve(bank, members, frameWidth, frameHeight));
  NCC_RETURN_IF_ERROR(setMembers(bank, members, frameWidth, frameHeight, smCount, gemmTemplates, aboveCounts));
  for (uint32_t i : members) inBank_[i] = true;
  return Status();
}

bool FusedBankLaunch::active() const {
  return std::find(inBank_.begin(), inBank_.end(), true) != inBank_.end();
}

Status FusedBankLaunch::score(UploadedFrame& frame, const MatchParams& params, bool sliced,
                              cudaStream_t stream) const {
  FusedBankRule rule;
  rule.sign = goodnessSign(params.method);
  rule.goodEnough = rule.sign * params.threshold;
  rule.collect = params.maxMatches > 0;
  FusedBankRule sparse = rule;
  sparse.everyScore = false;
  if (sparseWords_ > 0)
    NCC_CUDA_CHECK(cudaMemsetAsync(sparse_.as<uint32_t>(), 0, sparseWords_ * sizeof(uint32_t), stream));
  // The bank's tallest template bounds the frame rows each band of output rows reads.
  return frame.forEachBand(tallestMap_, maxHeight_, stream, [&](int y0, int y1) {
    if (launch_.size() > 0)
      NCC_RETURN_IF_ERROR(launch_.score(frame.image, frame.pitch, frame.width, frame.height, params.method, rule,
                                        y0, y1, stream));
    for (const auto& g : gemmGroups_) {
      const int end = std::min(y1, g->mapHeight);
      const int step = sliced ? g->launch.sliceRows(frame.width) : std::max(1, end - y0);
      for (int from = y0; from < end; from += step)
        NCC_RETURN_IF_ERROR(g->launch.score(frame.image, frame.pitch, frame.width, frame.height, params.method,
                                            sparse, from, std::min(end, from + step), stream));
    }
    return Status();
  });
}

Status FusedBankLaunch::findPeaks(const MatchParams& params, const UploadedFrame& frame, DeviceMatch* best,
                                  DeviceMatch* kept, int* counts, cudaStream_t stream) const {
  return peaks_.find(params, DeviceFrame{frame.image, frame.pitch}, best, kept, counts, stream);
}

Status PreparedSize::prepare(const TemplateBank& bank, int W, int H, CudaNumerator option,
                             CudaGemmTemplates gemmTemplates, int smCount, cudaStream_t stream,
                             cudaStream_t fftStream) {
  width = height = 0;  // stays invalid if anything below fails
  plan = planForSize(bank.images(), W, H, option, smCount);
  fftSlot.assign(bank.size(), -1);
  if (plan.needSat) NCC_RETURN_IF_ERROR(sat.prepare(plan.sat32, W, H));
  if (plan.anyFft) NCC_RETURN_IF_ERROR(prepareFft(bank, plan, W, H, stream, fftStream, &fft, &fftSlot));
  NCC_RETURN_IF_ERROR(scratch.reserve(plan, bank.size()));
  if (plan.maxMaskedPositions > 0)
    NCC_RETURN_IF_ERROR(maskedLanes.reserve(plan.maxMaskedPositions, plan.maxSharedMaskPositions));
  width = W;
  height = H;
  return fusedBank.prepare(bank, plan, W, H, smCount, gemmTemplates, scratch.aboveCount.as<int>());
}

}  // namespace nccmatch::cuda
