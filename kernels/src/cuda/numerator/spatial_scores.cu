#include "cuda/numerator/spatial_scores.hpp"

#include <algorithm>
#include <cmath>

#include "cuda/peaks/peaks_device.cuh"
#include "cuda/cuda_check.hpp"
#include "rules/score_rules.hpp"

namespace nccmatch::cuda {

namespace {

// 256 threads (8 warps) per 128 x 16 output tile. Tensor cores: warp (group, half) forms output
// rows 4*group..4*group+3 over one half of the template rows, with four independent
// accumulators: each A fragment is loaded once per template row and used for all four rows, and
// each frame row's B fragments are loaded once and slid down the four (output row v and template
// row r read frame row v + r). The two halves' partial sums meet in shared memory. Epilogue:
// warp w scores rows 2w and 2w+1, lane l outputs l + 32k (coalesced stores), window sums from
// per-row prefix sums of the column sums, so their cost does not grow with the template width.
constexpr int kThreads = 256;
constexpr int kWarps = kThreads / 32;
constexpr int kRowsPerWarp = 4;
constexpr int kRowGroups = kFusedTileHeight / kRowsPerWarp;
static_assert(kWarps / kRowGroups == 2, "the template rows are split in two halves");
constexpr int kEpilogueRows = kFusedTileHeight / kWarps;
constexpr int kEpilogueOutputs = kFusedTileWidth / 32;
static_assert(kEpilogueRows == 2 && kEpilogueOutputs == 4, "the epilogue is written for 2 x 4");
constexpr int kMaxTemplateWords = kFusedMaxSide / 4;
// Words a tile row needs: dp4a 32 + w/4 (outputs, template, look-ahead); tensor cores
// 28 + 8 * kSteps (the last group of 16 outputs starts at byte 112 and reads K bytes), loaded in
// whole 16-byte chunks. Every warp reads within one row at a time, so rows may share banks.
constexpr int kMaxKSteps = (kFusedMaxSide + 15 + 31) / 32;
constexpr int kTilePitchWords = 56;
static_assert(kTilePitchWords % 4 == 0, "rows start on 16-byte boundaries");
static_assert(kTilePitchWords >= kFusedTileWidth / 4 + kMaxTemplateWords + 1, "dp4a tile row");
static_assert(kTilePitchWords >= (28 + 8 * kMaxKSteps + 3) / 4 * 4, "tensor-core tile row");
// Column sums (then their prefix sums) of 192 columns (>= 128 + 63, six per lane), stored one
// place to the right so that entry 0 is the empty prefix.
constexpr int kPrefixColumns = 192;
constexpr int kPrefixPitch = kPrefixColumns + 1;
static_assert(kPrefixColumns >= kFusedTileWidth + kFusedMaxSide - 1 && kPrefixColumns % 32 == 0 &&
                  kPrefixColumns <= kThreads,
              "one thread per column, whole lanes in the scan");
constexpr int kFixedSharedWords = kFusedTileHeight * kFusedTileWidth + 2 * kFusedTileHeight * kPrefixPitch;
static_assert(kFixedSharedWords % 4 == 0, "the image tile starts on a 16-byte boundary");
constexpr int kMaxSharedBytes =
    4 * (kFixedSharedWords + (kFusedTileHeight + kFusedMaxSide - 1) * kTilePitchWords);
constexpr int kStaticSharedLimit = 48 * 1024;

__host__ __device__ inline int ceilDiv(int a, int b) { return (a + b - 1) / b; }

__host__ __device__ inline int kStepsFor(int w) { return (w + 15 + 31) / 32; }

int sharedBytesFor(int maxHeight) {
  return 4 * (kFixedSharedWords + (kFusedTileHeight + maxHeight - 1) * kTilePitchWords);
}

// D (16x8, s32) += A (16x32, u8, row) * B (32x8, u8, col): exact integer products.
__device__ inline void mmaU8(uint32_t (&d)[4], const uint4& a, uint32_t b0, uint32_t b1) {
  asm("mma.sync.aligned.m16n8k32.row.col.s32.u8.u8.s32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
      "{%0,%1,%2,%3};\n"
      : "+r"(d[0]), "+r"(d[1]), "+r"(d[2]), "+r"(d[3])
      : "r"(a.x), "r"(a.y), "r"(a.z), "r"(a.w), "r"(b0), "r"(b1));
}

// The same with K = 16: A (16x16) in two registers, B (16x8) in one.
__device__ inline void mmaU8K16(uint32_t (&d)[4], const uint2& a, uint32_t b0) {
  asm("mma.sync.aligned.m16n8k16.row.col.s32.u8.u8.s32 {%0,%1,%2,%3}, {%4,%5}, {%6}, "
      "{%0,%1,%2,%3};\n"
      : "+r"(d[0]), "+r"(d[1]), "+r"(d[2]), "+r"(d[3])
      : "r"(a.x), "r"(a.y), "r"(b0));
}

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

// Template rows [rBegin, rEnd) applied to output rows v0..v0+3 (tile rows), K in S32 steps of
// 32 and, with HALF, one of 16. B fragments of frame row y: lane (g, t) holds frame bytes
// 16g + 32s + 4t (and +16), B's column g, rows 4t..4t+3 (and +16) of step s. The window b[j]
// holds frame row v0 + r + j.
template <int S32, bool HALF>
__device__ inline void mmaFourRows(const uint32_t* sImage, const uint8_t* frags, int v0, int rBegin,
                                   int rEnd, uint32_t (&d)[kRowsPerWarp][4]) {
  if (rBegin >= rEnd) return;
  constexpr int kRowBytes = S32 * 512 + (HALF ? 256 : 0);
  constexpr int kRegs = 2 * S32 + (HALF ? 1 : 0);  // B registers of one frame row
  const int lane = threadIdx.x & 31, g = lane >> 2, t = lane & 3;
  const uint32_t* base = sImage + 4 * g + t;
  auto loadRow = [&](int y, uint32_t (&dst)[kRegs]) {
    const uint32_t* row = base + y * kTilePitchWords;
#pragma unroll
    for (int s = 0; s < S32; ++s) {
      dst[2 * s] = row[8 * s];
      dst[2 * s + 1] = row[8 * s + 4];
    }
    if (HALF) dst[kRegs - 1] = row[8 * S32];
  };
  uint32_t b[kRowsPerWarp][kRegs];
#pragma unroll
  for (int j = 0; j < kRowsPerWarp - 1; ++j) loadRow(v0 + rBegin + j, b[j]);
#pragma unroll 2
  for (int r = rBegin; r < rEnd; ++r) {
    loadRow(v0 + r + kRowsPerWarp - 1, b[kRowsPerWarp - 1]);
    const uint8_t* rowFrags = frags + std::size_t(r) * kRowBytes;
    uint4 a[S32 > 0 ? S32 : 1];
#pragma unroll
    for (int s = 0; s < S32; ++s) a[s] = __ldg(reinterpret_cast<const uint4*>(rowFrags + s * 512) + lane);
    uint2 aHalf = make_uint2(0, 0);
    if (HALF) aHalf = __ldg(reinterpret_cast<const uint2*>(rowFrags + S32 * 512) + lane);
#pragma unroll
    for (int s = 0; s < S32; ++s)
#pragma unroll
      for (int j = 0; j < kRowsPerWarp; ++j) mmaU8(d[j], a[s], b[j][2 * s], b[j][2 * s + 1]);
    if (HALF)
#pragma unroll
      for (int j = 0; j < kRowsPerWarp; ++j) mmaU8K16(d[j], aHalf, b[j][kRegs - 1]);
#pragma unroll
    for (int j = 0; j < kRowsPerWarp - 1; ++j)
#pragma unroll
      for (int q = 0; q < kRegs; ++q) b[j][q] = b[j + 1][q];
  }
}

// Scores `count` templates (descs in device memory, or `single` when descs is null) on one
// image tile, loaded for the largest template (maxW x maxH) of the launch.
template <FusedNumerator Kind>
__global__ void __launch_bounds__(kThreads, 4)
    fusedSpatialKernel(const uint8_t* __restrict__ image, std::size_t pitch, int width, int height,
                       bool chunkAligned, const TemplateDesc* __restrict__ descs, TemplateDesc single,
                       int count, int maxW, int maxH, int rowBegin, int rowEnd, Method method,
                       FusedBankRule rule) {
  constexpr bool kTensor = Kind == FusedNumerator::TensorCores;
  extern __shared__ uint32_t shared[];
  // The numerators of the tile, then per output row the prefix sums of the column sums of I
  // (< 2^32: 192 * 64 * 255) and I^2 (192 * 64 * 255^2 < 2^32), then the image tile.
  uint32_t* sNum = shared;
  uint32_t* sP1 = sNum + kFusedTileHeight * kFusedTileWidth;
  uint32_t* sP2 = sP1 + kFusedTileHeight * kPrefixPitch;
  uint32_t* sImage = sP2 + kFusedTileHeight * kPrefixPitch;

  const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
  const int outX0 = blockIdx.x * kFusedTileWidth;
  const int outY0 = rowBegin + blockIdx.y * kFusedTileHeight;
  const int maxWords = (maxW + 3) / 4;
  const int tileRows = kFusedTileHeight + maxH - 1;
  const int tileWords = kTensor ? max(kFusedTileWidth / 4 + maxWords, 28 + 8 * kStepsFor(maxW))
                                : kFusedTileWidth / 4 + maxWords;

  // The tile in 16-byte chunks: cp.async where the chunk lies whole in the frame and both
  // sides are 16-byte aligned (every load in flight at once), bytes with zeros elsewhere.
  const int chunks = (tileWords + 3) / 4;
  for (int i = tid; i < tileRows * chunks; i += kThreads) {
    const int r = i / chunks, q = i - r * chunks;
    const int gy = outY0 + r, gx = outX0 + 16 * q;
    uint32_t* dst = sImage + r * kTilePitchWords + 4 * q;
    const uint8_t* p = image + std::size_t(gy) * pitch + gx;
    if (chunkAligned && gy < height && gx + 15 < width) {
      asm volatile("cp.async.cg.shared.global [%0], [%1], 16;\n" ::"r"(
                       uint32_t(__cvta_generic_to_shared(dst))),
                   "l"(p));
    } else {
      uint4 chunk = make_uint4(0, 0, 0, 0);
#pragma unroll
      for (int b = 0; b < 16; ++b) {
        const uint32_t v = gy < height && gx + b < width ? uint32_t(p[b]) << (8 * (b & 3)) : 0u;
        if (b < 4) chunk.x |= v;
        else if (b < 8) chunk.y |= v;
        else if (b < 12) chunk.z |= v;
        else chunk.w |= v;
      }
      *reinterpret_cast<uint4*>(dst) = chunk;
    }
  }
  asm volatile("cp.async.wait_all;\n" ::: "memory");
  __syncthreads();

  int sumsHeight = -1;  // the template height the prefix sums are for
  for (int i = 0; i < count; ++i) {
    const TemplateDesc e = descs != nullptr ? descs[i] : single;
    const int w = e.w, h = e.h;
    const int mapWidth = width - w + 1, mapHeight = height - h + 1;
    const int rowLimit = min(rowEnd, mapHeight);
    if (outX0 >= mapWidth || outY0 >= rowLimit) continue;  // the same for the whole block

    // Every earlier reader of sP1/sP2/sNum passed blockBest's final barrier.
    if (h != sumsHeight) {
      // One column per thread: a running sum down the rows (exact in uint32).
      const int c = tid;
      if (c < kPrefixColumns) {
        uint32_t* p1 = sP1 + c + 1;
        uint32_t* p2 = sP2 + c + 1;
        if (c < 4 * tileWords) {
          const uint8_t* bytes = reinterpret_cast<const uint8_t*>(sImage) + c;
          constexpr int kPitchBytes = kTilePitchWords * 4;
          uint32_t s1 = 0, s2 = 0;
#pragma unroll 4
          for (int r = 0; r < h; ++r) {
            const uint32_t v = bytes[r * kPitchBytes];
            s1 += v;
            s2 += v * v;
          }
          p1[0] = s1;
          p2[0] = s2;
#pragma unroll 4
          for (int oy = 1; oy < kFusedTileHeight; ++oy) {
            const uint32_t in = bytes[(oy + h - 1) * kPitchBytes], out = bytes[(oy - 1) * kPitchBytes];
            s1 = s1 + in - out;
            s2 = s2 + in * in - out * out;
            p1[oy * kPrefixPitch] = s1;
            p2[oy * kPrefixPitch] = s2;
          }
        } else {
          for (int oy = 0; oy < kFusedTileHeight; ++oy) p1[oy * kPrefixPitch] = p2[oy * kPrefixPitch] = 0;
        }
      }
      __syncthreads();
      // Prefix sums along each row: six columns per lane, then the lanes' totals.
      for (int row = warp; row < kFusedTileHeight; row += kWarps) {
        uint32_t* p1 = sP1 + row * kPrefixPitch;
        uint32_t* p2 = sP2 + row * kPrefixPitch;
        constexpr int kPerLane = kPrefixColumns / 32;
        uint32_t a1[kPerLane], a2[kPerLane];
#pragma unroll
        for (int j = 0; j < kPerLane; ++j) {
          a1[j] = p1[1 + lane * kPerLane + j] + (j > 0 ? a1[j - 1] : 0u);
          a2[j] = p2[1 + lane * kPerLane + j] + (j > 0 ? a2[j - 1] : 0u);
        }
        uint32_t t1 = a1[kPerLane - 1], t2 = a2[kPerLane - 1];
#pragma unroll
        for (int offset = 1; offset < 32; offset <<= 1) {
          const uint32_t u1 = __shfl_up_sync(0xffffffffu, t1, offset);
          const uint32_t u2 = __shfl_up_sync(0xffffffffu, t2, offset);
          if (lane >= offset) {
            t1 += u1;
            t2 += u2;
          }
        }
        t1 -= a1[kPerLane - 1];  // the lanes before this one
        t2 -= a2[kPerLane - 1];
#pragma unroll
        for (int j = 0; j < kPerLane; ++j) {
          p1[1 + lane * kPerLane + j] = a1[j] + t1;
          p2[1 + lane * kPerLane + j] = a2[j] + t2;
        }
        if (lane == 0) p1[0] = p2[0] = 0;
      }
      sumsHeight = h;
      // The numerator's barriers below order these writes before the epilogue reads them.
    }

    if (kTensor) {
      const int group = warp % kRowGroups, half = warp / kRowGroups;
      const int v0 = group * kRowsPerWarp;
      const int split = (h + 1) / 2;
      const int rBegin = half == 0 ? 0 : split, rEnd = half == 0 ? split : h;
      uint32_t d[kRowsPerWarp][4];
#pragma unroll
      for (int j = 0; j < kRowsPerWarp; ++j) d[j][0] = d[j][1] = d[j][2] = d[j][3] = 0;
      const uint8_t* frags = reinterpret_cast<const uint8_t*>(e.packed);
      const FusedKSteps k = fusedKSteps(w);
      switch (k.steps32 * 2 + (k.step16 ? 1 : 0)) {  // the five shapes w = 1..64 takes
        case 1: mmaFourRows<0, true>(sImage, frags, v0, rBegin, rEnd, d); break;
        case 2: mmaFourRows<1, false>(sImage, frags, v0, rBegin, rEnd, d); break;
        case 3: mmaFourRows<1, true>(sImage, frags, v0, rBegin, rEnd, d); break;
        case 4: mmaFourRows<2, false>(sImage, frags, v0, rBegin, rEnd, d); break;
        default: mmaFourRows<2, true>(sImage, frags, v0, rBegin, rEnd, d); break;
      }
      // D[m][n] is output 16n + m: lane (g, t) holds m = g, g+8 and n = 2t, 2t+1.
      const int g = lane >> 2, t = lane & 3;
      if (half == 1) {
#pragma unroll
        for (int j = 0; j < kRowsPerWarp; ++j) {
          uint32_t* out = sNum + (v0 + j) * kFusedTileWidth;
          out[32 * t + g] = d[j][0];
          out[32 * t + 16 + g] = d[j][1];
          out[32 * t + 8 + g] = d[j][2];
          out[32 * t + 24 + g] = d[j][3];
        }
      }
      __syncthreads();
      if (half == 0) {
#pragma unroll
        for (int j = 0; j < kRowsPerWarp; ++j) {
          uint32_t* out = sNum + (v0 + j) * kFusedTileWidth;
          out[32 * t + g] += d[j][0];
          out[32 * t + 16 + g] += d[j][1];
          out[32 * t + 8 + g] += d[j][2];
          out[32 * t + 24 + g] += d[j][3];
        }
      }
      __syncthreads();
    } else {
      // dp4a: rows 2w and 2w+1, four neighbouring outputs per lane.
      const int words = (w + 3) / 4;
      for (int k = 0; k < kEpilogueRows; ++k) {
        const int oy = warp * kEpilogueRows + k;
        uint32_t acc[4] = {0, 0, 0, 0};
        for (int r = 0; r < h; ++r) {
          const uint32_t* row = sImage + (oy + r) * kTilePitchWords + lane;
          const uint32_t* trow = e.packed + r * words;
          uint32_t a = row[0];
#pragma unroll 4
          for (int j = 0; j < words; ++j) {
            const uint32_t b = row[j + 1];
            const uint32_t tw = __ldg(trow + j);
            // Output k needs image bytes k..k+3 of the eight in (a, b).
            acc[0] = __dp4a(a, tw, acc[0]);
            acc[1] = __dp4a(__byte_perm(a, b, 0x4321), tw, acc[1]);
            acc[2] = __dp4a(__byte_perm(a, b, 0x5432), tw, acc[2]);
            acc[3] = __dp4a(__byte_perm(a, b, 0x6543), tw, acc[3]);
            a = b;
          }
        }
        uint32_t* out = sNum + oy * kFusedTileWidth + 4 * lane;
#pragma unroll
        for (int q = 0; q < 4; ++q) out[q] = acc[q];
      }
      __syncthreads();
    }

    Ranked best{0.0, -1};
#pragma unroll
    for (int k = 0; k < kEpilogueRows; ++k) {
      const int row = warp * kEpilogueRows + k;
      const int oy = outY0 + row;
      const bool rowValid = oy < rowLimit;
      const uint32_t* p1 = sP1 + row * kPrefixPitch;
      const uint32_t* p2 = sP2 + row * kPrefixPitch;
      const uint32_t* num = sNum + row * kFusedTileWidth;
      double score[kEpilogueOutputs];
      uint32_t s1[kEpilogueOutputs], s2[kEpilogueOutputs], c[kEpilogueOutputs];
#pragma unroll
      for (int q = 0; q < kEpilogueOutputs; ++q) {
        const int x = lane + 32 * q;
        s1[q] = p1[x + w] - p1[x];
        s2[q] = p2[x + w] - p2[x];
        c[q] = num[x];
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
    best = blockBest(best);  // ends with a barrier: sNum and the sums may be rewritten after it
    if (tid == 0)
      e.blockBest[(outY0 / kFusedTileHeight) * ceilDiv(mapWidth, kFusedTileWidth) + blockIdx.x] = best;
  }
}

// Launches the kernel for `count` templates of at most maxW x maxH over output rows
// [rowBegin, rowEnd) of a grid as wide as the widest map.
Status launchFused(FusedNumerator numerator, const uint8_t* image, std::size_t pitch, int width,
                   int height, const TemplateDesc* descs, const TemplateDesc& single, int count,
                   int maxW, int maxH, int widestMap, int rowBegin, int rowEnd, Method method,
                   const FusedBankRule& rule, cudaStream_t stream) {
  const bool chunkAligned = (reinterpret_cast<std::uintptr_t>(image) % 16 == 0) && (pitch % 16 == 0);
  const dim3 grid(ceilDiv(widestMap, kFusedTileWidth), ceilDiv(rowEnd - rowBegin, kFusedTileHeight));
  const int shared = sharedBytesFor(maxH);
  if (numerator == FusedNumerator::TensorCores) {
    if (shared > kStaticSharedLimit)
      NCC_CUDA_CHECK(cudaFuncSetAttribute(fusedSpatialKernel<FusedNumerator::TensorCores>,
                                          cudaFuncAttributeMaxDynamicSharedMemorySize, kMaxSharedBytes));
    fusedSpatialKernel<FusedNumerator::TensorCores><<<grid, kThreads, shared, stream>>>(
        image, pitch, width, height, chunkAligned, descs, single, count, maxW, maxH, rowBegin,
        rowEnd, method, rule);
  } else {
    if (shared > kStaticSharedLimit)
      NCC_CUDA_CHECK(cudaFuncSetAttribute(fusedSpatialKernel<FusedNumerator::Dp4a>,
                                          cudaFuncAttributeMaxDynamicSharedMemorySize, kMaxSharedBytes));
    fusedSpatialKernel<FusedNumerator::Dp4a><<<grid, kThreads, shared, stream>>>(
        image, pitch, width, height, chunkAligned, descs, single, count, maxW, maxH, rowBegin,
        rowEnd, method, rule);
  }
  NCC_CUDA_CHECK(cudaGetLastError());
  return Status();
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
  FusedBankRule rule;
  rule.sign = handoff.sign;
  rule.goodEnough = handoff.goodEnough;
  rule.collect = handoff.collect;
  return launchFused(a.numerator, a.image, a.pitch, a.width, a.height, nullptr, single, 1, w, h,
                     mapWidth, rowBegin, rowEnd, a.method, rule, stream);
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
  if (rule.collect && !canCollect_)
    return Status::error("FusedSpatialBank::score: above-threshold buffers missing");
  return launchFused(numerator_, image, pitch, width, height, descriptors_.as<TemplateDesc>(),
                     TemplateDesc{}, int(sizes_.size()), maxW, maxH, widestMap, rowBegin, rowEnd,
                     method, rule, stream);
}

}  // namespace nccmatch::cuda
