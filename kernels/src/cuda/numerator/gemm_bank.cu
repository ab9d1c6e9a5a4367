#include "cuda/numerator/gemm_bank.hpp"

#include <algorithm>

#include "common/integer_math.hpp"
#include "cuda/cuda_check.hpp"
#include "cuda/numerator/image_tile.cuh"
#include "cuda/numerator/mma_u8.cuh"
#include "cuda/peaks/peaks_device.cuh"
#include "rules/score_rules.hpp"

namespace nccmatch::cuda {

namespace {

// Column sums of up to 128 + 63 columns, one thread each, stored one place to the right.
constexpr int kPrefixColumns = 192;
constexpr int kPrefixPitch = kPrefixColumns + 1;

// One template as the kernel sees it: statistics and outputs.
struct alignas(16) MemberDesc {
  double* map;
  Ranked* blockBest;
  int* above;
  int* aboveCount;
  TemplateStats stats;
  NormedConstants normed;
};

// What every block of a launch shares: the frame, the group's size and layout, the band of
// output rows and the image tile's geometry.
struct GemmGrid {
  const uint8_t* image;
  std::size_t pitch;
  int width, height;
  bool chunkAligned;  // image and pitch 16-byte aligned: the tile loads by cp.async
  int count;          // templates in the group
  int w, h, rowBytes, kSteps;
  int rowBegin, rowEnd;
  int chunksPerRow, pitchWords;  // the image tile: 16-byte chunks a row, words a row
};

// The block's shared memory: the chunk's B fragments, the image tile, the prefix sums of the
// column sums of I and I^2 per output row, the byte offset in the tile of every 4 bytes of K,
// the chunk's descriptors and each warp's best per template.
struct GemmShared {
  uint2* fragments;
  uint32_t* image;
  uint32_t* p1;
  uint32_t* p2;
  int* kOffset;
  MemberDesc* desc;
  Ranked* best;  // kGemmTileRows x chunkTemplates
};

struct SharedLayout {
  std::size_t fragments, image, prefix, kOffset, desc, best;
  std::size_t total() const { return fragments + image + 2 * prefix + kOffset + desc + best; }
};

__host__ __device__ inline SharedLayout sharedLayout(int kSteps, int nTiles, int h, int pitchWords) {
  SharedLayout l;
  l.fragments = std::size_t(kSteps) * nTiles * 256;
  l.image = std::size_t(kGemmTileRows + h - 1) * pitchWords * 4;
  l.prefix = std::size_t(kGemmTileRows) * kPrefixPitch * 4;
  l.kOffset = std::size_t(kSteps) * 8 * 4;
  l.desc = std::size_t(8 * nTiles) * sizeof(MemberDesc);
  l.best = std::size_t(kGemmTileRows) * 8 * nTiles * sizeof(Ranked);
  return l;
}
static_assert((kGemmTileRows * kPrefixPitch * 4) % 16 == 0, "the prefix arrays keep 16-byte alignment");

__device__ inline GemmShared carve(uint8_t* shared, const SharedLayout& l) {
  GemmShared s;
  uint8_t* p = shared;
  s.fragments = reinterpret_cast<uint2*>(p);
  p += l.fragments;
  s.image = reinterpret_cast<uint32_t*>(p);
  p += l.image;
  s.p1 = reinterpret_cast<uint32_t*>(p);
  p += l.prefix;
  s.p2 = reinterpret_cast<uint32_t*>(p);
  p += l.prefix;
  s.kOffset = reinterpret_cast<int*>(p);
  p += l.kOffset;
  s.desc = reinterpret_cast<MemberDesc*>(p);
  p += l.desc;
  s.best = reinterpret_cast<Ranked*>(p);
  return s;
}

// Once per block: the chunk's fragments (cp.async), its descriptors and the k offsets
// (k = r * rowBytes + c is tile byte r * pitch + c; K's padding reads byte 0 against zeros).
__device__ __forceinline__ void loadChunk(const GemmGrid& g, const GemmShared& s, const uint8_t* fragments,
                                          const MemberDesc* descs, std::size_t chunkBytes, int chunkTemplates,
                                          int count) {
  const uint8_t* src = fragments + std::size_t(blockIdx.y) * chunkBytes;
  uint8_t* dst = reinterpret_cast<uint8_t*>(s.fragments);
  for (std::size_t i = threadIdx.x; i < chunkBytes / 16; i += kGemmThreads)
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16;\n" ::"r"(
                     uint32_t(__cvta_generic_to_shared(dst + 16 * i))),
                 "l"(src + 16 * i));
  for (int i = threadIdx.x; i < count; i += kGemmThreads) s.desc[i] = descs[blockIdx.y * chunkTemplates + i];
  const int pitchBytes = 4 * g.pitchWords;
  for (int i = threadIdx.x; i < 8 * g.kSteps; i += kGemmThreads) {
    const int k = 4 * i, r = k / g.rowBytes, c = k - r * g.rowBytes;
    s.kOffset[i] = r < g.h ? r * pitchBytes + c : 0;
  }
  asm volatile("cp.async.wait_all;\n" ::: "memory");
  __syncthreads();
}

// The numerator of one warp's output row: kMTiles x 16 positions times kNTiles x 8 templates.
// Per k-step, lane (g, t) forms A rows g, g+8 of each m-tile at k 4t.. and 16+4t.. from two
// neighbouring tile words each (a funnel shift: the window starts at any byte) and reads its
// B fragments whole (8 bytes a lane, no bank conflicts).
template <int kNTiles>
__device__ __forceinline__ void mainLoop(const GemmShared& s, int kSteps, int rowOffsetBytes,
                                         uint32_t (&acc)[16 / kNTiles][kNTiles][4]) {
  constexpr int kMTiles = 16 / kNTiles;
  const int lane = threadIdx.x & 31, g = lane >> 2, t = lane & 3;
#pragma unroll 2
  for (int step = 0; step < kSteps; ++step) {
    uint2 b[kNTiles];
#pragma unroll
    for (int n = 0; n < kNTiles; ++n) b[n] = s.fragments[(step * kNTiles + n) * 32 + lane];
    const int lo = s.kOffset[8 * step + t] + rowOffsetBytes + g;
    const int hi = s.kOffset[8 * step + 4 + t] + rowOffsetBytes + g;
    const uint32_t* wLo = s.image + (lo >> 2);
    const uint32_t* wHi = s.image + (hi >> 2);
    const uint32_t shLo = 8 * (lo & 3), shHi = 8 * (hi & 3);
#pragma unroll
    for (int m = 0; m < kMTiles; ++m) {
      uint4 a;
      a.x = __funnelshift_r(wLo[4 * m], wLo[4 * m + 1], shLo);
      a.y = __funnelshift_r(wLo[4 * m + 2], wLo[4 * m + 3], shLo);
      a.z = __funnelshift_r(wHi[4 * m], wHi[4 * m + 1], shHi);
      a.w = __funnelshift_r(wHi[4 * m + 2], wHi[4 * m + 3], shHi);
#pragma unroll
      for (int n = 0; n < kNTiles; ++n) mmaU8(acc[m][n], a, b[n].x, b[n].y);
    }
  }
}

// One (position, template) score by the rules. Not inlined: the epilogue calls it from 2 * 16
// unrolled places per n-tile, and one copy keeps the kernel's code (and binaries) small.
__device__ __noinline__ double scoreOf(Method method, const TemplateStats& stats, const NormedConstants& normed,
                                       int64_t s1, int64_t s2, int64_t c) {
  return method == Method::CCoeffNormed && stats.n <= kInt64SafePixels ? ccoeffNormedScore(stats, normed, s1, s2, c)
                                                                       : scoreFromSums(method, stats, s1, s2, c);
}

// The epilogue of one warp's output row y: each (position, template) scored from the window
// sums and C, written to the template's map and, reaching the threshold, to its above list; the
// row's best per template (lanes of one t hold the same templates) goes to bestRow.
template <int kNTiles>
__device__ __forceinline__ void epilogue(const uint32_t (&acc)[16 / kNTiles][kNTiles][4], const GemmShared& s,
                                         const uint32_t* p1, const uint32_t* p2, int count, int w, int x0,
                                         int y, bool rowValid, int mapWidth, Method method,
                                         const FusedBankRule& rule, Ranked* bestRow) {
  constexpr int kMTiles = 16 / kNTiles;
  const int lane = threadIdx.x & 31, g = lane >> 2, t = lane & 3;
#pragma unroll
  for (int n = 0; n < kNTiles; ++n) {  // one template at a time: few registers beside acc
#pragma unroll
    for (int j = 0; j < 2; ++j) {
      const int member = 8 * n + 2 * t + j;
      // The template's descriptor, read from shared memory once (not per position).
      const MemberDesc e = s.desc[min(member, count - 1)];
      Ranked best{0.0, -1};
#pragma unroll
      for (int m = 0; m < kMTiles; ++m) {
#pragma unroll
        for (int half = 0; half < 2; ++half) {
          const int xl = 16 * m + 8 * half + g, x = x0 + xl;
          if (member >= count || !rowValid || x >= mapWidth) continue;
          const int64_t s1 = int64_t(p1[xl + w] - p1[xl]), s2 = int64_t(p2[xl + w] - p2[xl]);
          const int index = y * mapWidth + x;
          const int64_t c = int64_t(acc[m][n][2 * half + j]);
          const double score = scoreOf(method, e.stats, e.normed, s1, s2, c);
          e.map[index] = score;
          const Ranked here{rule.sign * score, index};
          if (better(here, best)) best = here;
          if (rule.collect && here.goodness >= rule.goodEnough) e.above[atomicAdd(e.aboveCount, 1)] = index;
        }
      }
      for (int offset = 4; offset < 32; offset <<= 1) {
        Ranked o;
        o.goodness = __shfl_xor_sync(0xffffffffu, best.goodness, offset);
        o.index = __shfl_xor_sync(0xffffffffu, best.index, offset);
        if (better(o, best)) best = o;
      }
      if (g == 0) bestRow[member] = best;
    }
  }
}

// Persistent blocks: blockIdx.y is the chunk of templates (its fragments stay in shared memory),
// blockIdx.x walks the band's tiles of kGemmTileRows x tileWidth outputs: load the image tile,
// the window sums, the numerator (warp w: output row w), the epilogue, the tile's best per
// template.
template <int kNTiles>
__global__ void __launch_bounds__(kGemmThreads, 2)
    gemmBankKernel(const GemmGrid g, const MemberDesc* __restrict__ descs, const uint8_t* __restrict__ fragments,
                   Method method, FusedBankRule rule) {
  constexpr int kTileWidth = 16 * (16 / kNTiles), kChunk = 8 * kNTiles;
  extern __shared__ __align__(16) uint8_t shared[];
  const SharedLayout layout = sharedLayout(g.kSteps, kNTiles, g.h, g.pitchWords);
  const GemmShared s = carve(shared, layout);
  const int count = min(kChunk, g.count - int(blockIdx.y) * kChunk);
  loadChunk(g, s, fragments, descs, layout.fragments, kChunk, count);

  const int mapWidth = g.width - g.w + 1, mapHeight = g.height - g.h + 1;
  const int rowLimit = min(g.rowEnd, mapHeight);
  const int tilesX = ceilDiv(mapWidth, kTileWidth), firstTileRow = g.rowBegin / kGemmTileRows;
  const int tiles = tilesX * (ceilDiv(rowLimit, kGemmTileRows) - firstTileRow);
  const int warp = threadIdx.x >> 5;
  const uint32_t* p1 = s.p1 + warp * kPrefixPitch;
  const uint32_t* p2 = s.p2 + warp * kPrefixPitch;
  for (int tile = blockIdx.x; tile < tiles; tile += gridDim.x) {
    const int ty = firstTileRow + tile / tilesX, tx = tile % tilesX;
    const int x0 = tx * kTileWidth, y0 = ty * kGemmTileRows;
    image_tile::load<kGemmThreads>(g.image, g.pitch, g.width, g.height, g.chunkAligned, x0, y0,
                                   kGemmTileRows + g.h - 1, g.chunksPerRow, g.pitchWords, s.image);
    image_tile::windowSums<kGemmThreads, kGemmTileRows, kPrefixColumns>(
        s.image, g.pitchWords, g.h, kTileWidth + g.w - 1, kPrefixPitch, s.p1, s.p2);
    __syncthreads();
    uint32_t acc[16 / kNTiles][kNTiles][4] = {};
    mainLoop<kNTiles>(s, g.kSteps, warp * 4 * g.pitchWords, acc);
    const int y = y0 + warp;
    epilogue<kNTiles>(acc, s, p1, p2, count, g.w, x0, y, y < rowLimit, mapWidth, method, rule,
                      s.best + warp * kChunk);
    // Every warp is past its reads of the tile, the sums and the fragments of this tile.
    __syncthreads();
    if (int(threadIdx.x) < count) {
      Ranked r = s.best[threadIdx.x];
      for (int row = 1; row < kGemmTileRows; ++row)
        if (better(s.best[row * kChunk + threadIdx.x], r)) r = s.best[row * kChunk + threadIdx.x];
      s.desc[threadIdx.x].blockBest[ty * tilesX + tx] = r;
    }
  }
}

template <int kNTiles>
Status launch(const GemmGrid& g, const MemberDesc* descs, const uint8_t* fragments, Method method,
              const FusedBankRule& rule, int chunks, int blocksX, cudaStream_t stream) {
  const std::size_t shared = sharedLayout(g.kSteps, kNTiles, g.h, g.pitchWords).total();
  NCC_CUDA_CHECK(cudaFuncSetAttribute(gemmBankKernel<kNTiles>, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                      int(shared)));
  gemmBankKernel<kNTiles><<<dim3(blocksX, chunks), kGemmThreads, shared, stream>>>(g, descs, fragments, method,
                                                                                   rule);
  NCC_CUDA_CHECK(cudaGetLastError());
  return Status();
}

int roundUpPowerOfTwo(int v) {
  int p = 1;
  while (p < v) p <<= 1;
  return p;
}

}  // namespace

GemmBankShape gemmBankShape(int width, int height, int count) {
  GemmBankShape s;
  if (!gemmBankFits(width, height) || count < 1) return s;
  s.width = width;
  s.height = height;
  s.rowBytes = int(roundUp(std::size_t(width), 4));
  s.kSteps = ceilDiv(height * s.rowBytes, 32);
  // The widest n-tiles the bank fills and shared memory holds (two always do: 64x64 is 64 KB).
  const int wanted = std::max(2, roundUpPowerOfTwo(ceilDiv(count, 8)));
  s.nTiles = 8;
  while (s.nTiles > 2 && (s.nTiles > wanted || s.chunkBytes() > kGemmChunkBytesLimit)) s.nTiles /= 2;
  s.mTiles = 16 / s.nTiles;
  s.tileWidth = 16 * s.mTiles;
  s.chunkTemplates = 8 * s.nTiles;
  s.chunks = ceilDiv(count, s.chunkTemplates);
  return s;
}

std::vector<uint8_t> gemmBankFragments(const std::vector<const uint8_t*>& pixels, const GemmBankShape& shape) {
  std::vector<uint8_t> out(std::size_t(shape.chunks) * shape.chunkBytes(), 0);
  const int count = int(pixels.size());
  auto byteAt = [&](int member, int k) -> uint8_t {
    const int r = k / shape.rowBytes, c = k % shape.rowBytes;
    return r < shape.height && c < shape.width ? pixels[member][std::size_t(r) * shape.width + c] : 0;
  };
  for (int chunk = 0; chunk < shape.chunks; ++chunk)
    for (int step = 0; step < shape.kSteps; ++step)
      for (int n = 0; n < shape.nTiles; ++n)
        for (int lane = 0; lane < 32; ++lane) {
          const int g = lane >> 2, t = lane & 3;
          const int member = chunk * shape.chunkTemplates + 8 * n + g;
          if (member >= count) continue;
          uint8_t* dst = out.data() + std::size_t(chunk) * shape.chunkBytes() +
                         (std::size_t(step) * shape.nTiles + n) * 256 + lane * 8;
          for (int b = 0; b < 4; ++b) {
            dst[b] = byteAt(member, 32 * step + 4 * t + b);
            dst[4 + b] = byteAt(member, 32 * step + 16 + 4 * t + b);
          }
        }
  return out;
}

int gemmBankTiles(int mapWidth, int mapHeight, const GemmBankShape& shape) {
  return ceilDiv(mapWidth, shape.tileWidth) * ceilDiv(mapHeight, kGemmTileRows);
}

Status GemmBank::set(const std::vector<const uint8_t*>& pixels, int width, int height,
                     const std::vector<FusedBankTemplate>& members, int smCount) {
  count_ = 0;
  if (members.empty() || pixels.size() != members.size())
    return Status::error("GemmBank::set: empty bank, or pixels and members differ in number");
  const GemmBankShape shape = gemmBankShape(width, height, int(members.size()));
  if (shape.kSteps == 0) return Status::error("GemmBank::set: template size outside 1..64");
  std::vector<MemberDesc> descs;
  bool collect = true;
  for (std::size_t i = 0; i < members.size(); ++i) {
    const FusedBankTemplate& t = members[i];
    if (t.templateWidth != width || t.templateHeight != height || pixels[i] == nullptr)
      return Status::error("GemmBank::set: every template of a group must be " + std::to_string(width) + "x" +
                           std::to_string(height) + " with pixels");
    if (t.map == nullptr || t.blockBest == nullptr)
      return Status::error("GemmBank::set: map or tile-best buffer missing");
    descs.push_back(MemberDesc{t.map, t.blockBest, t.above, t.aboveCount, t.stats, normedConstantsFor(t.stats)});
    collect = collect && t.above != nullptr && t.aboveCount != nullptr;
  }
  const std::vector<uint8_t> fragments = gemmBankFragments(pixels, shape);
  NCC_RETURN_IF_ERROR(fragments_.reserve(fragments.size()));
  NCC_CUDA_CHECK(cudaMemcpy(fragments_.as<void>(), fragments.data(), fragments.size(), cudaMemcpyHostToDevice));
  const std::size_t bytes = descs.size() * sizeof(MemberDesc);
  NCC_RETURN_IF_ERROR(descriptors_.reserve(bytes));
  NCC_CUDA_CHECK(cudaMemcpy(descriptors_.as<void>(), descs.data(), bytes, cudaMemcpyHostToDevice));
  shape_ = shape;
  count_ = int(members.size());
  smCount_ = std::max(1, smCount);
  canCollect_ = collect;
  return Status();
}

Status GemmBank::score(const uint8_t* image, std::size_t pitch, int width, int height, Method method,
                       const FusedBankRule& rule, int rowBegin, int rowEnd, cudaStream_t stream) const {
  if (count_ == 0) return Status::error("GemmBank::score: no templates set");
  if (shape_.width > width || shape_.height > height)
    return Status::error("GemmBank::score: the templates are larger than the frame");
  const int mapWidth = width - shape_.width + 1, mapHeight = height - shape_.height + 1;
  if (rowBegin < 0 || rowBegin % kGemmTileRows != 0 || rowEnd > mapHeight)
    return Status::error("GemmBank::score: bad band of output rows");
  if (rowEnd <= rowBegin) return Status();
  if (rule.collect && !canCollect_) return Status::error("GemmBank::score: above-threshold buffers missing");
  GemmGrid g{};
  g.image = image;
  g.pitch = pitch;
  g.width = width;
  g.height = height;
  g.chunkAligned = reinterpret_cast<std::uintptr_t>(image) % 16 == 0 && pitch % 16 == 0;
  g.count = count_;
  g.w = shape_.width;
  g.h = shape_.height;
  g.rowBytes = shape_.rowBytes;
  g.kSteps = shape_.kSteps;
  g.rowBegin = rowBegin;
  g.rowEnd = rowEnd;
  // The warps read up to tileWidth + rowBytes + 3 bytes of a row (the last funnel shift's word).
  g.chunksPerRow = ceilDiv(shape_.tileWidth + shape_.rowBytes + 3, 16);
  g.pitchWords = 4 * g.chunksPerRow;
  const int tiles = ceilDiv(mapWidth, shape_.tileWidth) *
                    (ceilDiv(rowEnd, kGemmTileRows) - rowBegin / kGemmTileRows);
  // Two resident blocks an SM, shared between the chunks.
  const int blocksX = std::max(1, std::min(tiles, ceilDiv(2 * smCount_, shape_.chunks)));
  const MemberDesc* descs = descriptors_.as<MemberDesc>();
  const uint8_t* fragments = fragments_.as<uint8_t>();
  switch (shape_.nTiles) {
    case 8: return launch<8>(g, descs, fragments, method, rule, shape_.chunks, blocksX, stream);
    case 4: return launch<4>(g, descs, fragments, method, rule, shape_.chunks, blocksX, stream);
    default: return launch<2>(g, descs, fragments, method, rule, shape_.chunks, blocksX, stream);
  }
}

}  // namespace nccmatch::cuda
