// SAT_FUSED and SAT_FUSED32: both tables in one pass over 2D tiles (decoupled look-back in two dimensions).
//
// A tile is 64 columns (two per lane) by TH = warps * rowsPerWarp rows. With L the tile-local 2D
// prefix, HC(y) the running sum down the tile's rows of each row's carry from the tiles to its
// left, and VC(x) = S(x, y0 - 1) the carry from the tiles above:
//     S(x, y) = VC(x) + HC(y) + L(x, y).
// Each tile publishes per-row aggregates (its row sums) at once, looks back left for the row
// carries (decoupled look-back), publishes per-row prefixes, then publishes per-column aggregates
// HC(last) + L(x, last) and looks back up for VC. The image is read once; the only other traffic
// is the per-tile carries (a few percent of the tables' bytes).
//
// Row carries travel packed in one uint64 (sum << 30 | sumSq): a whole image row has sum < 2^22
// and sumSq <= 16384 * 255^2 < 2^30 for widths up to 16384, so the fields never carry into each
// other. Two publication protocols are compiled: per-tile flags (release/acquire through
// cuda::atomic_ref, epoch-stamped) and self-stamped carry words (see sat_lookback.cuh).
// Fused32 does the same arithmetic in uint32: every value is the true one mod 2^32.
#include <cuda_runtime.h>

#include <string>

#include "cuda/sat/sat_builders.hpp"
#include "cuda/sat/sat_fused.hpp"
#include "cuda/sat/sat_fused_params.cuh"
#include "cuda/sat/sat_fused_wide.cuh"
#include "cuda/sat/sat_lookback.cuh"
#include "cuda/sat/sat_narrow_lookback.cuh"
#include "cuda/sat/sat_tile_load.cuh"
#include "cuda/sat/sat_tile_scans.cuh"
#include "cuda/sat/sat_tile_stores.cuh"
#include "cuda/cuda_check.hpp"

namespace nccmatch::cuda {
namespace {

using narrow::kTileWidth;

// Registers capped at 64 per thread for tiles of up to 8 rows per warp (1024 threads per SM),
// 128 beyond: the tile's latency is hidden by the other tiles resident on the multiprocessor.
template <int kWarps, int kRowsPerWarp>
constexpr int fusedMinBlocks() { return (kRowsPerWarp <= 8 ? 1024 : 512) / (kWarps * 32); }

// A tile is 64 columns (two per lane) by kWarps * kRowsPerWarp rows. The phases: load the warp's
// rows, scan them (publishing row aggregates), look back left (warp 0, then HC and the column
// aggregates) and up (warp 1) at once, publish the column prefixes, store both tables.
template <typename Out, int kWarps, int kRowsPerWarp, bool kStreaming, bool kStamped>
__global__ void __launch_bounds__(kWarps * 32, (fusedMinBlocks<kWarps, kRowsPerWarp>()))
    fusedSatKernel(const FusedParams<Out> p) {
  constexpr int kTileHeight = kWarps * kRowsPerWarp;
  constexpr int kRowsPerLane = kTileHeight / 32;  // rows each lane of warp 0 carries in the look-back
  static_assert(kWarps >= 2 && kTileHeight % 64 == 0, "tile shape");

  __shared__ uint32_t sTicket;
  __shared__ uint4 sColTotal[kWarps][32];             // per warp: {s0, q0, s1, q1} of its rows
  __shared__ uint64_t sRowAgg[kTileHeight];           // packed row sums of the tile
  __shared__ MomentPair<Out> sRowCarry[kTileHeight];  // HC(y)
  __shared__ MomentPair<Out> sColCarry[kTileWidth];   // VC(x)
  __shared__ MomentPair<Out> sColAgg[kTileWidth];     // HC(last) + L(x, last)

  const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
  const TilePosition t = claimTile(p, sTicket);
  const int x = t.tx * kTileWidth + 2 * lane;
  const int yWarp = t.ty * kTileHeight + warp * kRowsPerWarp;

  uint32_t pa[kRowsPerWarp], pb[kRowsPerWarp];
  narrow::loadPixelPairs(p.image, p.pitch, p.width, p.height, p.alignedLoads, x, yWarp, pa, pb);
  narrow::WarpPrefix<kRowsPerWarp> L;
  narrow::scanPixelPairs(pa, pb, lane, L, sColTotal[warp][lane], [&](int i, uint64_t packed) {
    narrow::publishRowAggregate<kStamped, kTileHeight>(p, t, warp * kRowsPerWarp + i, packed, sRowAgg);
  });
  __syncthreads();
  if (!kStamped && threadIdx.x == 0 && t.tx > 0 && !t.lastCol)
    publishFlag(&p.flagH[t.tile], p.epoch, kFlagAggregate);
  const narrow::ColumnOffsets offsets = narrow::columnOffsets(sColTotal, lane, warp);

  if (warp == 0) {
    uint64_t carry[kRowsPerLane];
    narrow::sumRowCarries<kStamped, kRowsPerLane, kTileHeight>(p, t, lane, carry);
    narrow::publishRowPrefixes<kStamped, kRowsPerLane, kTileHeight>(p, t, lane, carry, sRowAgg);
    const MomentPair<Out> rowTotal =
        tile_scans::rowCarryRunningSums<Out, kRowsPerLane, kTileHeight>(carry, lane, sRowCarry);
    narrow::publishColumnAggregates<kStamped>(p, t, lane, rowTotal, sColTotal, sColAgg);
  } else if (warp == 1) {
    narrow::sumColumnCarries<kStamped>(p, t, lane, sColCarry);
  }
  __syncthreads();

  if (warp == 1 && !t.lastRow) narrow::publishColumnPrefixes<kStamped>(p, t, lane, sColCarry, sColAgg);
  narrow::storeTables<kStreaming>(p, lane, x, yWarp, L, offsets, sRowCarry + warp * kRowsPerWarp, sColCarry);
}

template <typename Out>
using FusedLaunch = void (*)(const FusedParams<Out>&, unsigned grid, cudaStream_t);
template <typename Out>
using WideLaunch = void (*)(const WideFusedParams<Out>&, unsigned grid, cudaStream_t);

template <typename Out, int kWarps, int kRowsPerWarp, bool kStreaming, bool kStamped>
void launchFused(const FusedParams<Out>& params, unsigned grid, cudaStream_t stream) {
  fusedSatKernel<Out, kWarps, kRowsPerWarp, kStreaming, kStamped><<<grid, kWarps * 32, 0, stream>>>(params);
}
template <typename Out, int kPx, int kChunks, int kWarps, int kRowsPerWarp, int kWindow, int kMinBlocks, int kBackoffNs>
void launchWide(const WideFusedParams<Out>& params, unsigned grid, cudaStream_t stream) {
  wideFusedSatKernel<Out, kPx, kChunks, kWarps, kRowsPerWarp, kWindow, kMinBlocks, kBackoffNs, true>
      <<<grid, kWarps * 32, 0, stream>>>(params);
}

// One compiled configuration: the 64-column kernel (window 0) or the wide kernel.
struct FusedVariant {
  FusedSatConfig config;
  FusedLaunch<int64_t> launch64 = nullptr;
  FusedLaunch<uint32_t> launch32 = nullptr;
  WideLaunch<int64_t> wide64 = nullptr;
  WideLaunch<uint32_t> wide32 = nullptr;
};

#define NCC_FUSED_VARIANT(w, r, cs, st) \
  FusedVariant { {w, r, cs, st}, &launchFused<int64_t, w, r, cs, st>, &launchFused<uint32_t, w, r, cs, st> }
// Wide tiles: chunks of 32 * px columns (px pixels per lane), warps * rows rows, vertical look-back
// window, blocks per SM the register budget is set for, poll back-off (ns); always streaming stores
// and stamped words. Measured alternatives are in bench/RESULTS.md.
#define NCC_WIDE_VARIANT(px, chunks, w, r, window, blocks, backoff)                        \
  FusedVariant {                                                                           \
    {w, r, true, true, 32 * px * chunks, window, backoff, px}, nullptr, nullptr,           \
        &launchWide<int64_t, px, chunks, w, r, window, blocks, backoff>,                   \
        &launchWide<uint32_t, px, chunks, w, r, window, blocks, backoff>                   \
  }
const FusedVariant kFusedVariants[] = {
    // warps, rows per warp, streaming stores, stamped words
    NCC_FUSED_VARIANT(8, 8, false, false),  NCC_FUSED_VARIANT(8, 8, true, false),
    NCC_FUSED_VARIANT(8, 8, true, true),
    // pixels per lane, chunks, warps, rows per warp, window, blocks per SM, poll back-off (ns)
    NCC_WIDE_VARIANT(2, 4, 8, 4, 2, 2, 128),  NCC_WIDE_VARIANT(4, 2, 8, 4, 1, 2, 128),
};
#undef NCC_FUSED_VARIANT
#undef NCC_WIDE_VARIANT

template <typename Out>
FusedLaunch<Out> narrowLaunch(const FusedVariant& v);
template <>
FusedLaunch<int64_t> narrowLaunch<int64_t>(const FusedVariant& v) { return v.launch64; }
template <>
FusedLaunch<uint32_t> narrowLaunch<uint32_t>(const FusedVariant& v) { return v.launch32; }
template <typename Out>
WideLaunch<Out> wideLaunch(const FusedVariant& v);
template <>
WideLaunch<int64_t> wideLaunch<int64_t>(const FusedVariant& v) { return v.wide64; }
template <>
WideLaunch<uint32_t> wideLaunch<uint32_t>(const FusedVariant& v) { return v.wide32; }

template <typename Out>
class FusedSatBuilder final : public SatBuilder, public ReplayableSatBuild {
 public:
  FusedSatBuilder(SatBuild kind, int maxWidth, int maxHeight, const FusedVariant& variant)
      : kind_(kind), maxWidth_(maxWidth), maxHeight_(maxHeight), config_(variant.config),
        launch_(narrowLaunch<Out>(variant)), wide_(wideLaunch<Out>(variant)) {}
  SatBuild kind() const override { return kind_; }

  Status allocate() {
    const std::size_t tiles = std::size_t(tilesAcross(maxWidth_)) * tilesDown(maxHeight_);
    NCC_RETURN_IF_ERROR(flags_.create(tiles, wide_ ? 0 : 2));
    const std::size_t rowBytes = tiles * tileHeight() * sizeof(uint64_t);
    const std::size_t colBytes = tiles * config_.tileWidth * 2 * sizeof(uint64_t);  // fits either form
    carryBytes_ = 2 * rowBytes + 2 * colBytes;
    NCC_RETURN_IF_ERROR(allocateDevice(carryBytes_, &carries_));
    // Stamped words must start without any valid stamp.
    NCC_CUDA_CHECK(cudaMemset(carries_.get(), 0, carryBytes_));
    return Status();
  }

  Status build(const uint8_t* image, std::size_t pitch, int width, int height, void* sum,
               void* sumSq, cudaStream_t stream) override {
    NCC_RETURN_IF_ERROR(validateSatBuildArgs(kind_ == SatBuild::Fused ? "SatBuilder(fused)::build"
                                                                       : "SatBuilder(fused32)::build",
                                             image, pitch, width, height, sum, sumSq, maxWidth_,
                                             maxHeight_));
    capturedNode_ = nullptr;
    const std::size_t tiles = std::size_t(tilesAcross(maxWidth_)) * tilesDown(maxHeight_);
    auto* rows = static_cast<uint64_t*>(carries_.get());
    uint64_t* cols = rows + 2 * tiles * tileHeight();
    NCC_RETURN_IF_ERROR(nextStamp(stream));
    const std::uintptr_t loadAlign = wide_ ? std::uintptr_t(config_.pixelsPerLane) : 2;
    const bool alignedLoads = ((reinterpret_cast<std::uintptr_t>(image) | pitch) & (loadAlign - 1)) == 0;
    const bool vectorStores =
        ((reinterpret_cast<std::uintptr_t>(sum) | reinterpret_cast<std::uintptr_t>(sumSq)) & (2 * sizeof(Out) - 1)) == 0;
    const unsigned grid = unsigned(tilesAcross(width)) * unsigned(tilesDown(height));
    // What both kernels' parameters share.
    auto setCommon = [&](auto& p) {
      p.image = image;
      p.pitch = pitch;
      p.width = width;
      p.height = height;
      p.tilesX = tilesAcross(width);
      p.tilesY = tilesDown(height);
      p.S = static_cast<Out*>(sum);
      p.Q = static_cast<Out*>(sumSq);
      p.ticket = flags_.ticket();
      p.stamp = stamp_;
      p.alignedLoads = alignedLoads;
      p.vectorStores = vectorStores;
    };
    if (wide_) {
      WideFusedParams<Out> p{};
      setCommon(p);
      p.aggH = rows;
      p.aggV = cols;
      p.preV = cols + tiles * config_.tileWidth * 2;
      p.quadStores = ((reinterpret_cast<std::uintptr_t>(sum) | reinterpret_cast<std::uintptr_t>(sumSq)) & 15) == 0;
      wide_(p, grid, stream);
    } else {
      FusedParams<Out> p{};
      setCommon(p);
      p.flagH = flags_.flags(0);
      p.flagV = flags_.flags(1);
      p.aggH = rows;
      p.preH = rows + tiles * tileHeight();
      p.aggVw = cols;
      p.preVw = cols + tiles * kTileWidth * 2;
      p.aggV = reinterpret_cast<MomentPair<Out>*>(p.aggVw);
      p.preV = reinterpret_cast<MomentPair<Out>*>(p.preVw);
      NCC_RETURN_IF_ERROR(flags_.nextEpoch(stream, &p.epoch));
      launch_(p, grid, stream);
    }
    NCC_CUDA_CHECK(cudaGetLastError());
    return recordCapturedNode(stream);
  }

  cudaGraphNode_t capturedNode() const override { return capturedNode_; }

  Status restamp(cudaGraphExec_t exec, cudaGraphNode_t node, cudaStream_t stream) override {
    cudaKernelNodeParams k{};
    NCC_CUDA_CHECK(cudaGraphKernelNodeGetParams(node, &k));
    if (k.kernelParams == nullptr || k.kernelParams[0] == nullptr)
      return Status::error("SatBuilder(fused)::restamp: the node holds no kernel arguments");
    NCC_RETURN_IF_ERROR(nextStamp(stream));
    if (wide_) {
      WideFusedParams<Out> p = *static_cast<const WideFusedParams<Out>*>(k.kernelParams[0]);
      p.stamp = stamp_;
      return setArguments(exec, node, k, &p);
    }
    FusedParams<Out> p = *static_cast<const FusedParams<Out>*>(k.kernelParams[0]);
    p.stamp = stamp_;
    NCC_RETURN_IF_ERROR(flags_.nextEpoch(stream, &p.epoch));
    return setArguments(exec, node, k, &p);
  }

 private:
  // The stamp of the next build; once per 4095 builds the words of the last cycle are cleared.
  Status nextStamp(cudaStream_t stream) {
    if (++stamp_ >= kStampLimit) {
      stamp_ = 1;
      NCC_CUDA_CHECK(cudaMemsetAsync(carries_.get(), 0, carryBytes_, stream));
    }
    return Status();
  }
  // In a stream capture the launch just made is the capture's only leaf: its node, for restamp.
  Status recordCapturedNode(cudaStream_t stream) {
    cudaStreamCaptureStatus status = cudaStreamCaptureStatusNone;
    const cudaGraphNode_t* leaves = nullptr;
    std::size_t count = 0;
    NCC_CUDA_CHECK(cudaStreamGetCaptureInfo(stream, &status, nullptr, nullptr, &leaves, nullptr, &count));
    if (status == cudaStreamCaptureStatusActive && count == 1) capturedNode_ = leaves[0];
    return Status();
  }
  // The node's launch with `params` as its one argument.
  template <typename Params>
  static Status setArguments(cudaGraphExec_t exec, cudaGraphNode_t node, cudaKernelNodeParams k, Params* params) {
    void* arguments[] = {params};
    k.kernelParams = arguments;
    k.extra = nullptr;
    NCC_CUDA_CHECK(cudaGraphExecKernelNodeSetParams(exec, node, &k));
    return Status();
  }

  int tileHeight() const { return config_.warps * config_.rowsPerWarp; }
  int tilesAcross(int width) const { return (width + config_.tileWidth - 1) / config_.tileWidth; }
  int tilesDown(int height) const { return (height + tileHeight() - 1) / tileHeight(); }

  SatBuild kind_;
  int maxWidth_, maxHeight_;
  FusedSatConfig config_;
  FusedLaunch<Out> launch_;
  WideLaunch<Out> wide_;
  LookbackFlags flags_;
  DeviceMemory carries_;
  std::size_t carryBytes_ = 0;
  uint32_t stamp_ = 0;
  cudaGraphNode_t capturedNode_ = nullptr;  // capturedNode()
};

bool sameConfig(const FusedSatConfig& a, const FusedSatConfig& b) {
  return a.warps == b.warps && a.rowsPerWarp == b.rowsPerWarp && a.streamingStores == b.streamingStores &&
         a.stampedWords == b.stampedWords && a.tileWidth == b.tileWidth && a.window == b.window &&
         a.pollBackoffNs == b.pollBackoffNs && a.pixelsPerLane == b.pixelsPerLane;
}

}  // namespace

std::vector<FusedSatConfig> fusedSatConfigs() {
  std::vector<FusedSatConfig> configs;
  for (const FusedVariant& v : kFusedVariants) configs.push_back(v.config);
  return configs;
}

Status createFusedSatBuilderWithConfig(SatBuild build, int maxWidth, int maxHeight,
                                       FusedSatConfig config, std::unique_ptr<SatBuilder>* out) {
  if (out == nullptr) return Status::error("createFusedSatBuilder: null output pointer");
  out->reset();
  if (build != SatBuild::Fused && build != SatBuild::Fused32)
    return Status::error("createFusedSatBuilder: build must be fused or fused32");
  if (maxWidth < 1 || maxHeight < 1 || maxWidth > kSatMaxSide || maxHeight > kSatMaxSide)
    return Status::error("createFusedSatBuilder: maximum size out of range");
  for (const FusedVariant& v : kFusedVariants) {
    if (!sameConfig(v.config, config)) continue;
    if (build == SatBuild::Fused) {
      auto b = std::make_unique<FusedSatBuilder<int64_t>>(build, maxWidth, maxHeight, v);
      NCC_RETURN_IF_ERROR(b->allocate());
      *out = std::move(b);
    } else {
      auto b = std::make_unique<FusedSatBuilder<uint32_t>>(build, maxWidth, maxHeight, v);
      NCC_RETURN_IF_ERROR(b->allocate());
      *out = std::move(b);
    }
    return Status();
  }
  return Status::error("createFusedSatBuilder: tile " + std::to_string(config.tileWidth) + " columns x " +
                       std::to_string(config.warps) + " warps x " + std::to_string(config.rowsPerWarp) +
                       " rows (window " + std::to_string(config.window) + ") is not compiled in");
}

FusedSatConfig defaultFusedSatConfig(int maxWidth, int maxHeight) {
  return int64_t(maxWidth) * maxHeight > kWideFusedMinPixels ? kDefaultFusedSatConfig : kNarrowFusedSatConfig;
}

Status createFusedSatBuilder(SatBuild build, int maxWidth, int maxHeight,
                             std::unique_ptr<SatBuilder>* out) {
  return createFusedSatBuilderWithConfig(build, maxWidth, maxHeight, defaultFusedSatConfig(maxWidth, maxHeight), out);
}

}  // namespace nccmatch::cuda
