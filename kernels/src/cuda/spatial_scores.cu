#include "cuda/spatial_scores.hpp"

#include <cmath>

#include "cuda/peaks_device.cuh"
#include "cuda/score_device.cuh"
#include "cuda_check.hpp"

namespace nccmatch::cuda {

namespace {

// 512 threads: one warp per output row of the tile (the tensor cores' m16n8 tile is one row of
// 128 outputs), four neighbouring outputs per thread in the epilogue. Few outputs per thread
// keep one block's latency short, so a band of rows finishes soon after its frame rows arrive.
constexpr int kThreadsX = 32;
constexpr int kThreadsY = kFusedTileHeight;
constexpr int kThreads = kThreadsX * kThreadsY;
constexpr int kOutputsPerThread = kFusedTileWidth / kThreadsX;  // 4
constexpr int kMaxTemplateWords = kFusedMaxSide / 4;
constexpr int kTileRows = kThreadsY + kFusedMaxSide - 1;
// Steps of 32 in K = w + 15 (tensor cores): at most 3 for w <= 64.
constexpr int kMaxKSteps = (kFusedMaxSide + 15 + 31) / 32;
// Words a tile row needs: dp4a 32 + w/4 (outputs, template, look-ahead); tensor cores
// 28 + 8 * kSteps (the last group of 16 outputs starts at byte 112 and reads K bytes). Odd so
// that rows start on alternating banks.
constexpr int kTilePitchWords = 53;
static_assert(kTilePitchWords >= kFusedTileWidth / 4 + kMaxTemplateWords + 1, "dp4a tile row");
static_assert(kTilePitchWords >= 28 + 8 * kMaxKSteps, "tensor-core tile row");
// Columns whose sums a tile needs: 128 outputs plus a template width minus one.
constexpr int kColumns = kFusedTileWidth + kFusedMaxSide - 1;
static_assert(kOutputsPerThread == 4, "the loops below are written for four outputs");
static_assert(kColumns <= kThreads, "one thread per column");

int ceilDiv(int a, int b) { return (a + b - 1) / b; }

__host__ __device__ inline int kStepsFor(int w) { return (w + 15 + 31) / 32; }

// D (16x8, s32) += A (16x32, u8, row) * B (32x8, u8, col): exact integer products.
__device__ inline void mmaU8(uint32_t (&d)[4], const uint4& a, uint32_t b0, uint32_t b1) {
  asm volatile(
      "mma.sync.aligned.m16n8k32.row.col.s32.u8.u8.s32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
      "{%0,%1,%2,%3};\n"
      : "+r"(d[0]), "+r"(d[1]), "+r"(d[2]), "+r"(d[3])
      : "r"(a.x), "r"(a.y), "r"(a.z), "r"(a.w), "r"(b0), "r"(b1));
}

// Per-template constants of the ccoeff-normed score, formed on the host with the same IEEE
// operations as exactScoreFast (so the doubles are the same): sqrt(varT / n), and 1/n where n
// is a power of two (a division by it is then an exact multiplication).
struct NormedConstants {
  double templateScale = 0.0;  // sqrt(varT / n); 0 for a flat template
  double inverseN = 0.0;       // 1/n when n is a power of two, else 0 (divide)
};

// exactScoreFast's ccoeff-normed branch with the constants above (t.n <= kInt64SafePixels).
__device__ inline double ccoeffNormedScore(const TemplateStats& t, const NormedConstants& k,
                                           int64_t s1, int64_t s2, int64_t c) {
  if (k.templateScale == 0.0) return 1.0;
  const double n = (double)t.n;
  const double a = (double)(t.n * c - s1 * t.sum), b = (double)(t.n * s2 - s1 * s1);
  const double num = k.inverseN != 0.0 ? a * k.inverseN : a / n;
  const double diff2 = k.inverseN != 0.0 ? b * k.inverseN : b / n;
  const double tt = windowIsFlat(diff2, (double)s2) ? 0.0 : sqrt(diff2) * k.templateScale;
  return normaliseScore(num, tt, false);
}

template <FusedNumerator Kind>
__global__ void __launch_bounds__(kThreads, 2)
    fusedSpatialKernel(const uint8_t* __restrict__ image, std::size_t pitch, int width, int height,
                       const uint32_t* __restrict__ tpl, int w, int h, int mapWidth, int mapHeight,
                       int rowBegin, int rowEnd, bool wordAligned, TemplateStats stats,
                       NormedConstants normed, Method method, double* __restrict__ map,
                       PeakHandoff handoff) {
  constexpr bool kTensor = Kind == FusedNumerator::TensorCores;
  __shared__ uint32_t sImage[kTileRows * kTilePitchWords];
  __shared__ uint32_t sTemplate[kTensor ? 1 : kFusedMaxSide * kMaxTemplateWords];
  // The tensor-core numerators, laid out for the epilogue's four-per-thread reads.
  __shared__ uint32_t sNumerator[kTensor ? kThreadsY * kFusedTileWidth : 1];
  // Column sums of I (< 2^16) and I^2 over h rows, for each of the block's 16 output rows.
  __shared__ uint16_t sCol1[kThreadsY * kColumns];
  __shared__ uint32_t sCol2[kThreadsY * kColumns];

  const int tid = threadIdx.y * kThreadsX + threadIdx.x;
  const int outX0 = blockIdx.x * kFusedTileWidth;
  const int outY0 = rowBegin + blockIdx.y * kFusedTileHeight;
  const int words = (w + 3) / 4;
  const int kSteps = kStepsFor(w);
  const int tileRows = kThreadsY + h - 1;
  const int tileWords = kTensor ? max(kFusedTileWidth / 4 + words, 28 + 8 * kSteps)
                                : kFusedTileWidth / 4 + words;

  for (int i = tid; i < tileRows * tileWords; i += kThreads) {
    const int r = i / tileWords, q = i - r * tileWords;
    const int gy = outY0 + r, gx = outX0 + 4 * q;
    uint32_t word = 0;
    if (gy < height && gx < width) {
      const uint8_t* p = image + std::size_t(gy) * pitch + gx;
      if (wordAligned && gx + 3 < width) {
        word = *reinterpret_cast<const uint32_t*>(p);
      } else {
        for (int b = 0; b < 4 && gx + b < width; ++b) word |= uint32_t(p[b]) << (8 * b);
      }
    }
    sImage[r * kTilePitchWords + q] = word;
  }
  if (!kTensor)
    for (int i = tid; i < h * words; i += kThreads) sTemplate[i] = tpl[i];
  __syncthreads();

  {
    // One column per thread: a running sum down the rows (exact in uint32: <= 64 * 255^2 * 64).
    const int c = tid;
    const int columns = kFusedTileWidth + w - 1;
    if (c < columns) {
      const uint8_t* bytes = reinterpret_cast<const uint8_t*>(sImage) + c;
      constexpr int kPitchBytes = kTilePitchWords * 4;
      uint32_t s1 = 0, s2 = 0;
      for (int r = 0; r < h; ++r) {
        const uint32_t v = bytes[r * kPitchBytes];
        s1 += v;
        s2 += v * v;
      }
      sCol1[c] = uint16_t(s1);
      sCol2[c] = s2;
      for (int oy = 1; oy < kThreadsY; ++oy) {
        const uint32_t in = bytes[(oy + h - 1) * kPitchBytes], out = bytes[(oy - 1) * kPitchBytes];
        s1 = s1 + in - out;
        s2 = s2 + in * in - out * out;
        sCol1[oy * kColumns + c] = uint16_t(s1);
        sCol2[oy * kColumns + c] = s2;
      }
    }
  }

  uint32_t acc[kOutputsPerThread] = {0, 0, 0, 0};
  if (kTensor) {
    // Warp v: output row v of the tile, one m16n8 tile (128 outputs). Lane (g, t) loads frame
    // bytes 16g + 32s + 4t (and +16) of the row: B's column g, rows 4t..4t+3 (and +16).
    const int g = threadIdx.x >> 2, t = threadIdx.x & 3;
    const uint4* frag = reinterpret_cast<const uint4*>(tpl) + threadIdx.x;
    uint32_t d[4] = {0, 0, 0, 0};
#pragma unroll 2
    for (int r = 0; r < h; ++r) {
      const uint32_t* row = sImage + (threadIdx.y + r) * kTilePitchWords + 4 * g + t;
      for (int step = 0; step < kSteps; ++step) {
        const uint4 a = frag[(r * kSteps + step) * 32];
        mmaU8(d, a, row[8 * step], row[8 * step + 4]);
      }
    }
    // D[m][n] is output 16n + m: lane (g, t) holds m = g, g+8 and n = 2t, 2t+1.
    uint32_t* out = sNumerator + threadIdx.y * kFusedTileWidth;
    out[32 * t + g] = d[0];
    out[32 * t + 16 + g] = d[1];
    out[32 * t + 8 + g] = d[2];
    out[32 * t + 24 + g] = d[3];
    __syncwarp();  // the row is this warp's own
    const uint32_t* mine = out + threadIdx.x * kOutputsPerThread;
#pragma unroll
    for (int k = 0; k < kOutputsPerThread; ++k) acc[k] = mine[k];
  }
  // The numerator by dp4a: one template row at a time, four neighbouring outputs per thread.
  for (int r = 0; !kTensor && r < h; ++r) {
    const uint32_t* row = sImage + (threadIdx.y + r) * kTilePitchWords + threadIdx.x;
    const uint32_t* trow = sTemplate + r * words;
    uint32_t a = row[0];
#pragma unroll 4
    for (int j = 0; j < words; ++j) {
      const uint32_t b = row[j + 1];
      const uint32_t t = trow[j];
      // Output k needs image bytes k..k+3 of the eight in (a, b).
      acc[0] = __dp4a(a, t, acc[0]);
      acc[1] = __dp4a(__byte_perm(a, b, 0x4321), t, acc[1]);
      acc[2] = __dp4a(__byte_perm(a, b, 0x5432), t, acc[2]);
      acc[3] = __dp4a(__byte_perm(a, b, 0x6543), t, acc[3]);
      a = b;
    }
  }
  __syncthreads();  // the column sums are complete

  // Window sums: a sliding sum of w column sums.
  const uint16_t* col1 = sCol1 + threadIdx.y * kColumns + threadIdx.x * kOutputsPerThread;
  const uint32_t* col2 = sCol2 + threadIdx.y * kColumns + threadIdx.x * kOutputsPerThread;
  uint32_t s1[kOutputsPerThread], s2[kOutputsPerThread];
  s1[0] = 0;
  s2[0] = 0;
  for (int c = 0; c < w; ++c) {
    s1[0] += col1[c];
    s2[0] += col2[c];
  }
#pragma unroll
  for (int k = 1; k < kOutputsPerThread; ++k) {
    s1[k] = s1[k - 1] + col1[k - 1 + w] - col1[k - 1];
    s2[k] = s2[k - 1] + col2[k - 1 + w] - col2[k - 1];
  }

  const int oy = outY0 + threadIdx.y;
  const int ox0 = outX0 + threadIdx.x * kOutputsPerThread;
  const bool rowValid = oy < mapHeight && oy < rowEnd;
  double score[kOutputsPerThread];
  if (method == Method::CCoeffNormed && stats.n <= kInt64SafePixels) {
#pragma unroll
    for (int k = 0; k < kOutputsPerThread; ++k)
      score[k] = ccoeffNormedScore(stats, normed, int64_t(s1[k]), int64_t(s2[k]), int64_t(acc[k]));
  } else {
#pragma unroll
    for (int k = 0; k < kOutputsPerThread; ++k)
      score[k] = exactScoreFast(method, stats, int64_t(s1[k]), int64_t(s2[k]), int64_t(acc[k]));
  }
  Ranked best{0.0, -1};
#pragma unroll
  for (int k = 0; k < kOutputsPerThread; ++k) {
    const int ox = ox0 + k;
    const bool valid = rowValid && ox < mapWidth;
    const int index = oy * mapWidth + ox;
    const double g = handoff.sign * score[k];
    if (valid) {
      map[index] = score[k];
      const Ranked here{g, index};
      if (better(here, best)) best = here;
    }
    appendWarp(valid && handoff.collect && g >= handoff.goodEnough, index, handoff.above,
               handoff.aboveCount);
  }
  best = blockBest(best);
  if (tid == 0) handoff.blockBest[(outY0 / kFusedTileHeight) * gridDim.x + blockIdx.x] = best;
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
  const int kSteps = kStepsFor(width);
  std::vector<uint8_t> out(std::size_t(height) * kSteps * 32 * 16, 0);
  // A[m][k] = T[r][k - m]: output 16n + m sees frame byte 16n + k through template column k - m.
  auto a = [&](int r, int m, int k) -> uint8_t {
    const int c = k - m;
    return c >= 0 && c < width ? pixels[std::size_t(r) * width + c] : 0;
  };
  for (int r = 0; r < height; ++r)
    for (int step = 0; step < kSteps; ++step)
      for (int lane = 0; lane < 32; ++lane) {
        const int g = lane >> 2, t = lane & 3;
        uint8_t* dst = out.data() + ((std::size_t(r) * kSteps + step) * 32 + lane) * 16;
        // Registers a0..a3: (row g, k 4t..), (row g+8, k 4t..), (row g, k 16+4t..), (row g+8, k 16+4t..).
        const int rows[4] = {g, g + 8, g, g + 8};
        const int cols[4] = {4 * t, 4 * t, 16 + 4 * t, 16 + 4 * t};
        for (int reg = 0; reg < 4; ++reg)
          for (int b = 0; b < 4; ++b) dst[reg * 4 + b] = a(r, rows[reg], 32 * step + cols[reg] + b);
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
  const bool wordAligned = (reinterpret_cast<std::uintptr_t>(a.image) % 4 == 0) && (a.pitch % 4 == 0);
  dim3 block(kThreadsX, kThreadsY);
  dim3 grid(ceilDiv(mapWidth, kFusedTileWidth), ceilDiv(rowEnd - rowBegin, kFusedTileHeight));
  const uint32_t* tpl = reinterpret_cast<const uint32_t*>(a.packedTemplate);
  NormedConstants normed;
  const int64_t n = a.stats.n, varT = n * a.stats.sumSq - a.stats.sum * a.stats.sum;  // n <= 4096
  if (varT != 0) normed.templateScale = std::sqrt((double)varT / (double)n);
  if ((n & (n - 1)) == 0) normed.inverseN = 1.0 / (double)n;
  if (a.numerator == FusedNumerator::TensorCores) {
    fusedSpatialKernel<FusedNumerator::TensorCores><<<grid, block, 0, stream>>>(
        a.image, a.pitch, a.width, a.height, tpl, w, h, mapWidth, mapHeight, rowBegin, rowEnd,
        wordAligned, a.stats, normed, a.method, a.map, handoff);
  } else {
    fusedSpatialKernel<FusedNumerator::Dp4a><<<grid, block, 0, stream>>>(
        a.image, a.pitch, a.width, a.height, tpl, w, h, mapWidth, mapHeight, rowBegin, rowEnd,
        wordAligned, a.stats, normed, a.method, a.map, handoff);
  }
  NCC_CUDA_CHECK(cudaGetLastError());
  return Status();
}

}  // namespace nccmatch::cuda
