// SAT_FUSED and SAT_FUSED32: both tables in one pass over 2D tiles (seed 000, figure 15-9).
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
#include "cuda/sat/sat_fused_wide.cuh"
#include "cuda/sat/sat_lookback.cuh"
#include "cuda/sat/sat_tile_scans.cuh"
#include "cuda/sat/sat_tile_stores.cuh"
#include "cuda/cuda_check.hpp"

namespace nccmatch::cuda {
namespace {

constexpr int kTileWidth = 64;
using tile_scans::kFullMask;
using tile_scans::kRowSumShift;

template <typename Out>
struct FusedParams {
  const uint8_t* image;
  std::size_t pitch;
  int width, height, tilesX, tilesY;
  Out* S;
  Out* Q;
  uint32_t* ticket;
  uint32_t* flagH;             // per tile: row aggregates / prefixes published
  uint32_t* flagV;             // per tile: column aggregates / prefixes published
  uint64_t* aggH;              // per tile, per row: packed row sums of the tile
  uint64_t* preH;              // per tile, per row: packed row sums from column 0 to the tile's end
  MomentPair<Out>* aggV;       // per tile, per column: sums over the tile's rows of the row prefixes
  MomentPair<Out>* preV;       // per tile, per column: S and Q on the tile's last row
  uint64_t* aggVw;             // the same two as stamped words: per tile, per column, {s, q}
  uint64_t* preVw;
  uint32_t epoch;
  uint32_t stamp;
  bool alignedLoads;           // image and pitch even: two pixels per 16-bit load
  bool vectorStores;           // tables aligned to a pair of entries
};

// Registers capped at 64 per thread for tiles of up to 8 rows per warp (1024 threads per SM),
// 128 beyond: the tile's latency is hidden by the other tiles resident on the multiprocessor.
template <int kWarps, int kRowsPerWarp>
constexpr int fusedMinBlocks() { return (kRowsPerWarp <= 8 ? 1024 : 512) / (kWarps * 32); }

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
  if (threadIdx.x == 0) sTicket = drawTicket(p.ticket, uint32_t(p.tilesX) * uint32_t(p.tilesY));
  __syncthreads();
  const uint32_t tile = sTicket;
  const int ty = int(tile / uint32_t(p.tilesX)), tx = int(tile % uint32_t(p.tilesX));
  const bool lastCol = tx == p.tilesX - 1, lastRow = ty == p.tilesY - 1;
  const int x = tx * kTileWidth + 2 * lane;
  const int yWarp = ty * kTileHeight + warp * kRowsPerWarp;

  // Load the warp's rows: two adjacent pixels per lane, zero outside the image.
  uint32_t pa[kRowsPerWarp], pb[kRowsPerWarp];
#pragma unroll
  for (int i = 0; i < kRowsPerWarp; ++i) {
    pa[i] = pb[i] = 0;
    const int y = yWarp + i;
    if (y < p.height) {
      const uint8_t* row = p.image + std::size_t(y) * p.pitch;
      if (p.alignedLoads && x + 1 < p.width) {
        const uint32_t v = __ldg(reinterpret_cast<const unsigned short*>(row + x));
        pa[i] = v & 0xffu;
        pb[i] = v >> 8;
      } else {
        if (x < p.width) pa[i] = __ldg(row + x);
        if (x + 1 < p.width) pb[i] = __ldg(row + x + 1);
      }
    }
  }

  // Row scans across the warp, then running column sums down the warp's rows: warp-local 2D prefix.
  uint32_t ls0[kRowsPerWarp], ls1[kRowsPerWarp], lq0[kRowsPerWarp], lq1[kRowsPerWarp];
  uint32_t runS0 = 0, runS1 = 0, runQ0 = 0, runQ1 = 0;
#pragma unroll
  for (int i = 0; i < kRowsPerWarp; ++i) {
    const uint32_t a = pa[i], b = pb[i], bb = b * b;
    const uint32_t s = a + b, q = a * a + bb;
    uint32_t is = s, iq = q;
    tile_scans::warpInclusiveScan2(is, iq, lane);
    runS0 += is - b;
    runS1 += is;
    runQ0 += iq - bb;
    runQ1 += iq;
    ls0[i] = runS0;
    ls1[i] = runS1;
    lq0[i] = runQ0;
    lq1[i] = runQ1;
    if (lane == 31) {
      const uint64_t packed = (uint64_t(is) << kRowSumShift) | iq;
      sRowAgg[warp * kRowsPerWarp + i] = packed;
      if (tx > 0 && !lastCol) {
        uint64_t* dst = p.aggH + std::size_t(tile) * kTileHeight + warp * kRowsPerWarp + i;
        if constexpr (kStamped) storeStamped(dst, packed, p.stamp);
        else *dst = packed;
      }
    }
  }
  sColTotal[warp][lane] = make_uint4(runS0, runQ0, runS1, runQ1);
  __syncthreads();
  if (!kStamped && threadIdx.x == 0 && tx > 0 && !lastCol)
    publishFlag(&p.flagH[tile], p.epoch, kFlagAggregate);

  // Column offsets of this warp's rows inside the tile: totals of the warps above it.
  uint32_t offS0 = 0, offS1 = 0, offQ0 = 0, offQ1 = 0;
#pragma unroll
  for (int w = 0; w < kWarps; ++w) {
    if (w < warp) {
      const uint4 c = sColTotal[w][lane];
      offS0 += c.x;
      offQ0 += c.y;
      offS1 += c.z;
      offQ1 += c.w;
    }
  }

  if (warp == 0) {
    // Horizontal look-back for rows kRowsPerLane*lane ..; each lane acquires the flags itself.
    uint64_t carry[kRowsPerLane];
#pragma unroll
    for (int k = 0; k < kRowsPerLane; ++k) carry[k] = 0;
    if constexpr (kStamped) {
      for (int px = tx - 1; px >= 0;) {
        const std::size_t base = std::size_t(tile - uint32_t(tx - px)) * kTileHeight + kRowsPerLane * lane;
        uint64_t v[kRowsPerLane];
        bool ready = true;
#pragma unroll
        for (int k = 0; k < kRowsPerLane; ++k) ready &= loadStamped(p.preH + base + k, p.stamp, &v[k]);
        if (ready) {
#pragma unroll
          for (int k = 0; k < kRowsPerLane; ++k) carry[k] += v[k];
          break;
        }
        ready = true;
#pragma unroll
        for (int k = 0; k < kRowsPerLane; ++k) ready &= loadStamped(p.aggH + base + k, p.stamp, &v[k]);
        if (ready) {
#pragma unroll
          for (int k = 0; k < kRowsPerLane; ++k) carry[k] += v[k];
          --px;
        }
      }
    }
    for (int px = kStamped ? -1 : tx - 1; px >= 0; --px) {
      const uint32_t t2 = tile - uint32_t(tx - px);
      const uint32_t state = waitForFlag(&p.flagH[t2], p.epoch);
      const uint64_t* src =
          (state == kFlagPrefix ? p.preH : p.aggH) + std::size_t(t2) * kTileHeight + kRowsPerLane * lane;
#pragma unroll
      for (int k = 0; k < kRowsPerLane; k += 2) {
        const ulonglong2 v = *reinterpret_cast<const ulonglong2*>(src + k);
        carry[k] += v.x;
        carry[k + 1] += v.y;
      }
      if (state == kFlagPrefix) break;
    }
    if (kStamped && !lastCol) {
      uint64_t* dst = p.preH + std::size_t(tile) * kTileHeight + kRowsPerLane * lane;
#pragma unroll
      for (int k = 0; k < kRowsPerLane; ++k)
        storeStamped(dst + k, carry[k] + sRowAgg[kRowsPerLane * lane + k], p.stamp);
    } else if (!lastCol) {
      uint64_t* dst = p.preH + std::size_t(tile) * kTileHeight + kRowsPerLane * lane;
#pragma unroll
      for (int k = 0; k < kRowsPerLane; k += 2)
        *reinterpret_cast<ulonglong2*>(dst + k) =
            make_ulonglong2(carry[k] + sRowAgg[kRowsPerLane * lane + k],
                            carry[k + 1] + sRowAgg[kRowsPerLane * lane + k + 1]);
      __syncwarp();
      if (lane == 0) publishFlag(&p.flagH[tile], p.epoch, kFlagPrefix);
    }

    // HC(y): running sum of the row carries down the tile.
    const MomentPair<Out> rowTotal =
        tile_scans::rowCarryRunningSums<Out, kRowsPerLane, kTileHeight>(carry, lane, sRowCarry);
    const Out totS = rowTotal.s, totQ = rowTotal.q;

    // Column aggregates: HC(last) + L(x, last), L(x, last) being the tile's column totals.
    uint32_t tS0 = 0, tS1 = 0, tQ0 = 0, tQ1 = 0;
#pragma unroll
    for (int w = 0; w < kWarps; ++w) {
      const uint4 c = sColTotal[w][lane];
      tS0 += c.x;
      tQ0 += c.y;
      tS1 += c.z;
      tQ1 += c.w;
    }
    const MomentPair<Out> a0{totS + Out(tS0), totQ + Out(tQ0)};
    const MomentPair<Out> a1{totS + Out(tS1), totQ + Out(tQ1)};
    sColAgg[2 * lane] = a0;
    sColAgg[2 * lane + 1] = a1;
    if (kStamped && ty > 0 && !lastRow) {
      uint64_t* dst = p.aggVw + (std::size_t(tile) * kTileWidth + 2 * lane) * 2;
      storeStamped(dst + 0, uint64_t(a0.s), p.stamp);
      storeStamped(dst + 1, uint64_t(a0.q), p.stamp);
      storeStamped(dst + 2, uint64_t(a1.s), p.stamp);
      storeStamped(dst + 3, uint64_t(a1.q), p.stamp);
    } else if (ty > 0 && !lastRow) {
      MomentPair<Out>* dst = p.aggV + std::size_t(tile) * kTileWidth + 2 * lane;
      dst[0] = a0;
      dst[1] = a1;
      __syncwarp();
      if (lane == 0) publishFlag(&p.flagV[tile], p.epoch, kFlagAggregate);
    }
  } else if (warp == 1) {
    // Vertical look-back for columns 2*lane, 2*lane+1, concurrent with warp 0's work.
    MomentPair<Out> c0{0, 0}, c1{0, 0};
    if constexpr (kStamped) {
      for (int qy = ty - 1; qy >= 0;) {
        const std::size_t base =
            (std::size_t(tile - uint32_t(ty - qy) * uint32_t(p.tilesX)) * kTileWidth + 2 * lane) * 2;
        uint64_t v[4];
        bool ready = true;
#pragma unroll
        for (int k = 0; k < 4; ++k) ready &= loadStamped(p.preVw + base + k, p.stamp, &v[k]);
        if (!ready) {
          ready = true;
#pragma unroll
          for (int k = 0; k < 4; ++k) ready &= loadStamped(p.aggVw + base + k, p.stamp, &v[k]);
          if (!ready) continue;  // nothing published yet: look again
          --qy;
        } else {
          qy = -1;  // a prefix ends the look-back
        }
        c0.s += Out(v[0]);
        c0.q += Out(v[1]);
        c1.s += Out(v[2]);
        c1.q += Out(v[3]);
      }
    }
    for (int qy = kStamped ? -1 : ty - 1; qy >= 0; --qy) {
      const uint32_t t2 = tile - uint32_t(ty - qy) * uint32_t(p.tilesX);
      const uint32_t state = waitForFlag(&p.flagV[t2], p.epoch);
      const MomentPair<Out>* src =
          (state == kFlagPrefix ? p.preV : p.aggV) + std::size_t(t2) * kTileWidth + 2 * lane;
      const MomentPair<Out> v0 = src[0], v1 = src[1];
      c0.s += v0.s;
      c0.q += v0.q;
      c1.s += v1.s;
      c1.q += v1.q;
      if (state == kFlagPrefix) break;
    }
    sColCarry[2 * lane] = c0;
    sColCarry[2 * lane + 1] = c1;
  }
  __syncthreads();

  if (kStamped && warp == 1 && !lastRow) {
    uint64_t* dst = p.preVw + (std::size_t(tile) * kTileWidth + 2 * lane) * 2;
#pragma unroll
    for (int k = 0; k < 2; ++k) {
      const MomentPair<Out> c = sColCarry[2 * lane + k], a = sColAgg[2 * lane + k];
      storeStamped(dst + 2 * k, uint64_t(Out(c.s + a.s)), p.stamp);
      storeStamped(dst + 2 * k + 1, uint64_t(Out(c.q + a.q)), p.stamp);
    }
  } else if (warp == 1 && !lastRow) {
    MomentPair<Out>* dst = p.preV + std::size_t(tile) * kTileWidth + 2 * lane;
#pragma unroll
    for (int k = 0; k < 2; ++k) {
      const MomentPair<Out> c = sColCarry[2 * lane + k], a = sColAgg[2 * lane + k];
      dst[k] = MomentPair<Out>{c.s + a.s, c.q + a.q};
    }
    __syncwarp();
    if (lane == 0) publishFlag(&p.flagV[tile], p.epoch, kFlagPrefix);
  }

  // S(x, y) = VC(x) + HC(y) + L(x, y).
  const MomentPair<Out> vc0 = sColCarry[2 * lane], vc1 = sColCarry[2 * lane + 1];
#pragma unroll
  for (int i = 0; i < kRowsPerWarp; ++i) {
    const int y = yWarp + i;
    if (y < p.height) {
      const MomentPair<Out> hc = sRowCarry[warp * kRowsPerWarp + i];
      const std::size_t rowStart = std::size_t(y) * std::size_t(p.width);
      const bool vector = p.vectorStores && (rowStart & 1) == 0;
      storeRowPair<kStreaming>(p.S + rowStart, x, p.width, vector,
                               Out(vc0.s + hc.s + Out(offS0 + ls0[i])),
                               Out(vc1.s + hc.s + Out(offS1 + ls1[i])));
      storeRowPair<kStreaming>(p.Q + rowStart, x, p.width, vector,
                               Out(vc0.q + hc.q + Out(offQ0 + lq0[i])),
                               Out(vc1.q + hc.q + Out(offQ1 + lq1[i])));
    }
  }
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
// and stamped words. Measured alternatives are in bench/RESULTS.md (issue 3 sections).
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
class FusedSatBuilder final : public SatBuilder {
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
    const std::size_t tiles = std::size_t(tilesAcross(maxWidth_)) * tilesDown(maxHeight_);
    auto* rows = static_cast<uint64_t*>(carries_.get());
    uint64_t* cols = rows + 2 * tiles * tileHeight();
    if (++stamp_ >= kStampLimit) {  // once per 4095 builds: clear the words of the last cycle
      stamp_ = 1;
      NCC_CUDA_CHECK(cudaMemsetAsync(carries_.get(), 0, carryBytes_, stream));
    }
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
    return Status();
  }

 private:
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
