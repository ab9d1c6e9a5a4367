#include "cuda/numerator/spatial_scores.hpp"

#include <algorithm>
#include <cmath>

#include "cuda/numerator/fused_spatial_tiles.cuh"
#include "cuda/peaks/peaks_device.cuh"
#include "cuda/cuda_check.hpp"
#include "rules/score_rules.hpp"

namespace nccmatch::cuda {

namespace {

using fused_spatial::kEpilogueOutputs;
using fused_spatial::kEpilogueRows;
using fused_spatial::kPrefixPitch;
using fused_spatial::kThreads;
using fused_spatial::SharedTile;

// One template as the kernel sees it: its packed bytes, sizes, statistics and outputs.
struct TemplateDesc {
  const uint32_t* packed;
  double* map;
  Ranked* blockBest;
  int* above;
  int* aboveCount;
  TemplateStats stats;
  NormedConstants normed;
  int w, h;
};

TemplateDesc describe(const uint8_t* packed, int w, int h, const TemplateStats& stats, double* map,
                      Ranked* blockBest, int* above, int* aboveCount) {
  TemplateDesc d;
  d.packed = reinterpret_cast<const uint32_t*>(packed);
  d.map = map;
  d.blockBest = blockBest;
  d.above = above;
  d.aboveCount = aboveCount;
  d.stats = stats;
  d.normed = normedConstantsFor(stats);
  d.w = w;
  d.h = h;
  return d;
}

// A frame on the device, row pitch in bytes.
struct DeviceImage {
  const uint8_t* pixels;
  std::size_t pitch;
  int width, height;
};

// What every block of a launch shares: the frame, the number of templates and the largest of
// them (the image tile is loaded for it), and the band of output rows [rowBegin, rowEnd).
struct FusedGrid {
  DeviceImage image;
  bool chunkAligned;  // image and pitch 16-byte aligned: the tile loads by cp.async
  int count, maxW, maxH;
  int rowBegin, rowEnd;
};

// One launch: the grid, the template when there are no descriptors, the method and the threshold
// rule.
struct FusedKernelArgs {
  FusedGrid grid;
  TemplateDesc single;
  Method method;
  FusedBankRule rule;
};

// The epilogue of one template: warp w scores output rows 2w and 2w+1 of the tile, lane l
// outputs l + 32k (coalesced stores), from the numerators and the window sums (prefix sums of
// the column sums, so their cost does not grow with the template width). Writes the map, hands
// the positions reaching the threshold to the template's above-threshold list and returns the
// thread's best position.
__device__ __forceinline__ Ranked scoreTile(const SharedTile& s, const TemplateDesc& e, int outX0, int outY0,
                                            int rowLimit, int mapWidth, Method method, const FusedBankRule& rule) {
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  const int w = e.w;
  Ranked best{0.0, -1};
#pragma unroll
  for (int k = 0; k < kEpilogueRows; ++k) {
    const int row = warp * kEpilogueRows + k;
    const int oy = outY0 + row;
    const bool rowValid = oy < rowLimit;
    const uint32_t* p1 = s.p1 + row * kPrefixPitch;
    const uint32_t* p2 = s.p2 + row * kPrefixPitch;
    const uint32_t* num = s.num + row * kFusedTileWidth;
    double score[kEpilogueOutputs];
    uint32_t s1[kEpilogueOutputs], s2[kEpilogueOutputs], c[kEpilogueOutputs];
#pragma unroll
    for (int q = 0; q < kEpilogueOutputs; ++q) {
      const int x = lane + 32 * q;
      s1[q] = p1[x + w] - p1[x];
      s2[q] = p2[x + w] - p2[x];
      c[q] = num[fused_spatial::numeratorSlot(x)];
    }
    if (method == Method::CCoeffNormed && e.stats.n <= kInt64SafePixels) {
#pragma unroll
      for (int q = 0; q < kEpilogueOutputs; ++q)
        score[q] = ccoeffNormedScore(e.stats, e.normed, int64_t(s1[q]), int64_t(s2[q]), int64_t(c[q]));
    } else {
#pragma unroll
      for (int q = 0; q < kEpilogueOutputs; ++q)
        score[q] = scoreFromSums(method, e.stats, int64_t(s1[q]), int64_t(s2[q]), int64_t(c[q]));
    }
#pragma unroll
    for (int q = 0; q < kEpilogueOutputs; ++q) {
      const int ox = outX0 + lane + 32 * q;
      const bool valid = rowValid && ox < mapWidth;
      const int index = oy * mapWidth + ox;
      const double goodness = rule.sign * score[q];
      if (valid) {
        e.map[index] = score[q];
        const Ranked here{goodness, index};
        if (better(here, best)) best = here;
      }
      appendWarp(valid && rule.collect && goodness >= rule.goodEnough, index, e.above, e.aboveCount);
    }
  }
  return best;
}

// Scores `count` templates (descs in device memory, or `single` when descs is null) on one image
// tile: load the tile, then per template the window sums (where its height differs from the last
// one's), the numerator, and the epilogue with the block's best. The descriptors, `single`, the
// method and the rule are kernel parameters of their own: the compiler specialises the epilogue
// on them there, not when they travel inside a struct.
template <FusedNumerator Kind>
__global__ void __launch_bounds__(kThreads, 4)
    fusedSpatialKernel(const FusedGrid g, const TemplateDesc* __restrict__ descs, TemplateDesc single, Method method,
                       FusedBankRule rule) {
  extern __shared__ uint32_t shared[];
  const SharedTile s = fused_spatial::carveSharedTile(shared);
  const int outX0 = blockIdx.x * kFusedTileWidth;
  const int outY0 = g.rowBegin + blockIdx.y * kFusedTileHeight;
  const int maxWords = (g.maxW + 3) / 4;
  const int tileRows = kFusedTileHeight + g.maxH - 1;
  const int tileWords = Kind == FusedNumerator::TensorCores
                            ? max(kFusedTileWidth / 4 + maxWords, 28 + 8 * fused_spatial::kStepsFor(g.maxW))
                            : kFusedTileWidth / 4 + maxWords;
  const DeviceImage& image = g.image;
  fused_spatial::loadImageTile(image.pixels, image.pitch, image.width, image.height, g.chunkAligned, outX0, outY0,
                               tileRows, tileWords, s.image);

  int sumsHeight = -1;  // the template height the window sums are for
  for (int i = 0; i < g.count; ++i) {
    const TemplateDesc e = descs != nullptr ? descs[i] : single;
    const int mapWidth = image.width - e.w + 1, mapHeight = image.height - e.h + 1;
    const int rowLimit = min(g.rowEnd, mapHeight);
    if (outX0 >= mapWidth || outY0 >= rowLimit) continue;  // the same for the whole block

    // Every earlier reader of the sums and numerators passed blockBest's final barrier; the
    // numerator's barriers order the new sums before the epilogue reads them.
    if (e.h != sumsHeight) {
      fused_spatial::windowSums(s, e.h, tileWords);
      sumsHeight = e.h;
    }
    if constexpr (Kind == FusedNumerator::TensorCores)
      fused_spatial::tensorNumerator(s, reinterpret_cast<const uint8_t*>(e.packed), e.w, e.h);
    else
      fused_spatial::dp4aNumerator(s, e.packed, e.w, e.h);

    const Ranked best = blockBest(scoreTile(s, e, outX0, outY0, rowLimit, mapWidth, method, rule));
    // blockBest ends with a barrier: the sums and numerators may be rewritten after it.
    if (threadIdx.x == 0)
      e.blockBest[(outY0 / kFusedTileHeight) * ceilDiv(mapWidth, kFusedTileWidth) + blockIdx.x] = best;
  }
}

template <FusedNumerator Kind>
Status launchKernel(const FusedKernelArgs& args, const TemplateDesc* descs, dim3 grid, cudaStream_t stream) {
  const int shared = fused_spatial::sharedBytesFor(args.grid.maxH);
  if (shared > fused_spatial::kStaticSharedLimit)
    NCC_CUDA_CHECK(cudaFuncSetAttribute(fusedSpatialKernel<Kind>, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                        fused_spatial::kMaxSharedBytes));
  fusedSpatialKernel<Kind><<<grid, kThreads, shared, stream>>>(args.grid, descs, args.single, args.method, args.rule);
  NCC_CUDA_CHECK(cudaGetLastError());
  return Status();
}

// Launches the kernel over output rows [rowBegin, rowEnd) of a grid as wide as the widest map
// (args.grid.chunkAligned is set here).
Status launchFused(FusedNumerator numerator, FusedKernelArgs args, const TemplateDesc* descs, int widestMap,
                   cudaStream_t stream) {
  FusedGrid& g = args.grid;
  g.chunkAligned = (reinterpret_cast<std::uintptr_t>(g.image.pixels) % 16 == 0) && (g.image.pitch % 16 == 0);
  const dim3 grid(ceilDiv(widestMap, kFusedTileWidth), ceilDiv(g.rowEnd - g.rowBegin, kFusedTileHeight));
  if (numerator == FusedNumerator::TensorCores)
    return launchKernel<FusedNumerator::TensorCores>(args, descs, grid, stream);
  return launchKernel<FusedNumerator::Dp4a>(args, descs, grid, stream);
}

}  // namespace

std::vector<uint8_t> fusedSpatialPack(const uint8_t* pixels, int width, int height) {
  const int paddedWidth = (width + 3) / 4 * 4;
  std::vector<uint8_t> packed(std::size_t(paddedWidth) * height, 0);
  for (int y = 0; y < height; ++y)
    for (int x = 0; x < width; ++x)
      packed[std::size_t(y) * paddedWidth + x] = pixels[std::size_t(y) * width + x];
  return packed;
}

std::vector<uint8_t> fusedSpatialFragments(const uint8_t* pixels, int width, int height) {
  const FusedKSteps k = fusedKSteps(width);
  const std::size_t rowBytes = std::size_t(k.steps32) * 512 + (k.step16 ? 256 : 0);
  std::vector<uint8_t> out(std::size_t(height) * rowBytes, 0);
  // A[m][k] = T[r][k - m]: output 16n + m sees frame byte 16n + k through template column k - m.
  auto a = [&](int r, int m, int kk) -> uint8_t {
    const int c = kk - m;
    return c >= 0 && c < width ? pixels[std::size_t(r) * width + c] : 0;
  };
  for (int r = 0; r < height; ++r) {
    uint8_t* row = out.data() + std::size_t(r) * rowBytes;
    for (int lane = 0; lane < 32; ++lane) {
      const int g = lane >> 2, t = lane & 3;
      for (int step = 0; step < k.steps32; ++step) {
        uint8_t* dst = row + (std::size_t(step) * 32 + lane) * 16;
        // Registers a0..a3: (row g, k 4t..), (row g+8, k 4t..), (row g, k 16+4t..), (row g+8, k 16+4t..).
        const int rows[4] = {g, g + 8, g, g + 8};
        const int cols[4] = {4 * t, 4 * t, 16 + 4 * t, 16 + 4 * t};
        for (int reg = 0; reg < 4; ++reg)
          for (int b = 0; b < 4; ++b) dst[reg * 4 + b] = a(r, rows[reg], 32 * step + cols[reg] + b);
      }
      if (k.step16) {
        // m16n8k16: a0 (row g, k 4t..), a1 (row g+8, k 4t..) of the last 16 columns of K.
        uint8_t* dst = row + std::size_t(k.steps32) * 512 + lane * 8;
        for (int b = 0; b < 4; ++b) {
          dst[b] = a(r, g, 32 * k.steps32 + 4 * t + b);
          dst[4 + b] = a(r, g + 8, 32 * k.steps32 + 4 * t + b);
        }
      }
    }
  }
  return out;
}

int fusedSpatialBlocks(int mapWidth, int mapHeight) {
  return ceilDiv(mapWidth, kFusedTileWidth) * ceilDiv(mapHeight, kFusedTileHeight);
}

Status fusedSpatialScores(const FusedSpatialArgs& a, int rowBegin, int rowEnd,
                          const PeakHandoff& handoff, cudaStream_t stream) {
  const int w = a.templateWidth, h = a.templateHeight;
  if (!fusedSpatialFits(w, h) || w > a.width || h > a.height)
    return Status::error("fusedSpatialScores: template does not fit the frame or the kernel");
  const int mapWidth = a.width - w + 1, mapHeight = a.height - h + 1;
  if (rowBegin < 0 || rowBegin % kFusedTileHeight != 0 || rowEnd > mapHeight)
    return Status::error("fusedSpatialScores: bad band of output rows");
  if (rowEnd <= rowBegin) return Status();
  if (handoff.blockBest == nullptr || (handoff.collect && (handoff.above == nullptr || handoff.aboveCount == nullptr)))
    return Status::error("fusedSpatialScores: peak handoff buffers missing");
  const TemplateDesc single = describe(a.packedTemplate, w, h, a.stats, a.map, handoff.blockBest,
                                       handoff.above, handoff.aboveCount);
  FusedKernelArgs args{};
  args.grid.image = DeviceImage{a.image, a.pitch, a.width, a.height};
  args.grid.count = 1;
  args.grid.maxW = w;
  args.grid.maxH = h;
  args.grid.rowBegin = rowBegin;
  args.grid.rowEnd = rowEnd;
  args.single = single;
  args.method = a.method;
  args.rule = FusedBankRule{handoff.sign, handoff.goodEnough, handoff.collect};
  return launchFused(a.numerator, args, nullptr, mapWidth, stream);
}

Status FusedSpatialBank::set(const std::vector<FusedBankTemplate>& templates, FusedNumerator numerator) {
  sizes_.clear();
  if (templates.empty()) return Status::error("FusedSpatialBank::set: empty bank");
  std::vector<TemplateDesc> descs;
  std::vector<std::pair<int, int>> sizes;
  bool collect = true;
  for (const FusedBankTemplate& t : templates) {
    if (!fusedSpatialFits(t.templateWidth, t.templateHeight))
      return Status::error("FusedSpatialBank::set: template larger than the fused kernel takes");
    if (t.packedTemplate == nullptr || t.map == nullptr || t.blockBest == nullptr)
      return Status::error("FusedSpatialBank::set: template, map or block-best buffer missing");
    descs.push_back(describe(t.packedTemplate, t.templateWidth, t.templateHeight, t.stats, t.map,
                             t.blockBest, t.above, t.aboveCount));
    sizes.emplace_back(t.templateWidth, t.templateHeight);
    collect = collect && t.above != nullptr && t.aboveCount != nullptr;
  }
  const std::size_t bytes = descs.size() * sizeof(TemplateDesc);
  NCC_RETURN_IF_ERROR(descriptors_.reserve(bytes));
  NCC_CUDA_CHECK(cudaMemcpy(descriptors_.as<void>(), descs.data(), bytes, cudaMemcpyHostToDevice));
  sizes_ = std::move(sizes);
  numerator_ = numerator;
  canCollect_ = collect;
  return Status();
}

Status FusedSpatialBank::score(const uint8_t* image, std::size_t pitch, int width, int height,
                               Method method, const FusedBankRule& rule, int rowBegin, int rowEnd,
                               cudaStream_t stream) const {
  if (sizes_.empty()) return Status::error("FusedSpatialBank::score: no templates set");
  int maxW = 0, maxH = 0, minW = kFusedMaxSide + 1, minH = kFusedMaxSide + 1;
  for (const auto& [w, h] : sizes_) {
    maxW = std::max(maxW, w);
    maxH = std::max(maxH, h);
    minW = std::min(minW, w);
    minH = std::min(minH, h);
  }
  if (maxW > width || maxH > height)
    return Status::error("FusedSpatialBank::score: a template is larger than the frame");
  const int widestMap = width - minW + 1, tallestMap = height - minH + 1;
  if (rowBegin < 0 || rowBegin % kFusedTileHeight != 0 || rowEnd > tallestMap)
    return Status::error("FusedSpatialBank::score: bad band of output rows");
  if (rowEnd <= rowBegin) return Status();
  if (!rule.everyScore) return Status::error("FusedSpatialBank::score: sparse maps are the GEMM bank's alone");
  if (rule.collect && !canCollect_)
    return Status::error("FusedSpatialBank::score: above-threshold buffers missing");
  FusedKernelArgs args{};
  args.grid.image = DeviceImage{image, pitch, width, height};
  args.grid.count = int(sizes_.size());
  args.grid.maxW = maxW;
  args.grid.maxH = maxH;
  args.grid.rowBegin = rowBegin;
  args.grid.rowEnd = rowEnd;
  args.method = method;
  args.rule = rule;
  return launchFused(numerator_, args, descriptors_.as<TemplateDesc>(), widestMap, stream);
}

}  // namespace nccmatch::cuda
