#include "cuda/numerator/numerator_spatial.hpp"

#include <type_traits>

#include "cuda/cuda_check.hpp"
#include "common/integer_math.hpp"

namespace nccmatch::cuda {

namespace {

constexpr int kThreadsX = 16;
constexpr int kThreadsY = kSpatialTileHeight;
constexpr int kOutputsPerThread = kSpatialTileWidth / kThreadsX;  // 8
constexpr int kMaxChunkWidth = 64;
constexpr int kMaxChunkHeight = 16;
constexpr int kTileRows = kThreadsY + kMaxChunkHeight - 1;
// Words a row of the tile needs: 32 for the outputs, 16 for the widest chunk, 1 look-ahead.
// Odd on purpose: rows then start on alternating banks, so the two half-warps never collide.
constexpr int kTilePitchWords = kSpatialTileWidth / 4 + kMaxChunkWidth / 4 + 1;
static_assert(kOutputsPerThread == 8, "the inner loop below is written for eight outputs");

template <bool Wide>
__global__ void __launch_bounds__(kThreadsX * kThreadsY)
    spatialKernel(const uint8_t* __restrict__ image, std::size_t pitch, int width, int height,
                  const uint8_t* __restrict__ tpl, int chunkWidth, int chunkHeight,
                  int paddedWidth, int paddedHeight, int mapWidth, int mapHeight,
                  bool wordAligned, int64_t* __restrict__ out) {
  __shared__ uint32_t sImage[kTileRows * kTilePitchWords];
  __shared__ uint32_t sTemplate[kMaxChunkHeight * kMaxChunkWidth / 4];
  using Total = std::conditional_t<Wide, unsigned long long, uint32_t>;

  const int tid = threadIdx.y * kThreadsX + threadIdx.x;
  const int outX0 = blockIdx.x * kSpatialTileWidth;
  const int outY0 = blockIdx.y * kSpatialTileHeight;
  const int chunkWords = chunkWidth / 4;
  const int tileRows = kThreadsY + chunkHeight - 1;
  const int tileWords = kSpatialTileWidth / 4 + chunkWords;

  Total total[kOutputsPerThread];
#pragma unroll
  for (int k = 0; k < kOutputsPerThread; ++k) total[k] = 0;

  for (int cy = 0; cy < paddedHeight; cy += chunkHeight) {
    for (int cx = 0; cx < paddedWidth; cx += chunkWidth) {
      __syncthreads();  // the previous chunk is consumed
      const int gx0 = outX0 + cx, gy0 = outY0 + cy;
      for (int i = tid; i < tileRows * tileWords; i += kThreadsX * kThreadsY) {
        const int r = i / tileWords, q = i - r * tileWords;
        const int gy = gy0 + r, gx = gx0 + 4 * q;
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
      for (int i = tid; i < chunkHeight * chunkWords; i += kThreadsX * kThreadsY) {
        const int r = i / chunkWords, q = i - r * chunkWords;
        sTemplate[i] = *reinterpret_cast<const uint32_t*>(
            tpl + std::size_t(cy + r) * paddedWidth + cx + 4 * q);
      }
      __syncthreads();

      // One chunk sums to at most 16*64*255^2 < 2^32: uint32 is exact here.
      uint32_t acc[kOutputsPerThread];
#pragma unroll
      for (int k = 0; k < kOutputsPerThread; ++k) acc[k] = 0;
      for (int r = 0; r < chunkHeight; ++r) {
        const uint32_t* row = sImage + (threadIdx.y + r) * kTilePitchWords + 2 * threadIdx.x;
        const uint32_t* trow = sTemplate + r * chunkWords;
        uint32_t a = row[0], b = row[1];
#pragma unroll 4
        for (int j = 0; j < chunkWords; ++j) {
          const uint32_t c = row[j + 2];
          const uint32_t t = trow[j];
          // Output k needs image bytes k..k+3 of the eight in (a, b) (then of (b, c)).
          acc[0] = __dp4a(a, t, acc[0]);
          acc[1] = __dp4a(__byte_perm(a, b, 0x4321), t, acc[1]);
          acc[2] = __dp4a(__byte_perm(a, b, 0x5432), t, acc[2]);
          acc[3] = __dp4a(__byte_perm(a, b, 0x6543), t, acc[3]);
          acc[4] = __dp4a(b, t, acc[4]);
          acc[5] = __dp4a(__byte_perm(b, c, 0x4321), t, acc[5]);
          acc[6] = __dp4a(__byte_perm(b, c, 0x5432), t, acc[6]);
          acc[7] = __dp4a(__byte_perm(b, c, 0x6543), t, acc[7]);
          a = b;
          b = c;
        }
      }
#pragma unroll
      for (int k = 0; k < kOutputsPerThread; ++k) total[k] += acc[k];
    }
  }

  const int oy = outY0 + threadIdx.y;
  const int ox = outX0 + threadIdx.x * kOutputsPerThread;
  if (oy >= mapHeight) return;
  int64_t* dst = out + std::size_t(oy) * mapWidth;
#pragma unroll
  for (int k = 0; k < kOutputsPerThread; ++k)
    if (ox + k < mapWidth) dst[ox + k] = int64_t(total[k]);
}

}  // namespace

SpatialLayout spatialLayout(int width, int height) {
  SpatialLayout l;
  l.width = width;
  l.height = height;
  // Even chunks: a 100-wide template becomes two chunks of 52, not 64 + 64.
  const int chunksX = ceilDiv(width, kMaxChunkWidth);
  l.chunkWidth = ceilDiv(ceilDiv(width, chunksX), 4) * 4;
  const int chunksY = ceilDiv(height, kMaxChunkHeight);
  l.chunkHeight = ceilDiv(height, chunksY);
  l.paddedWidth = chunksX * l.chunkWidth;
  l.paddedHeight = chunksY * l.chunkHeight;
  l.wide = double(width) * height * 255.0 * 255.0 >= 2147483648.0;
  return l;
}

std::vector<uint8_t> spatialPack(const uint8_t* pixels, const SpatialLayout& l) {
  std::vector<uint8_t> packed(std::size_t(l.paddedWidth) * l.paddedHeight, 0);
  for (int y = 0; y < l.height; ++y)
    for (int x = 0; x < l.width; ++x)
      packed[std::size_t(y) * l.paddedWidth + x] = pixels[std::size_t(y) * l.width + x];
  return packed;
}

Status spatialNumerator(const uint8_t* image, std::size_t pitch, int width, int height,
                        const uint8_t* packedTemplate, const SpatialLayout& l, int64_t* out,
                        cudaStream_t stream) {
  if (l.width > width || l.height > height)
    return Status::error("spatialNumerator: template larger than the frame");
  if (l.chunkWidth % 4 != 0 || l.chunkWidth > kMaxChunkWidth || l.chunkHeight > kMaxChunkHeight)
    return Status::error("spatialNumerator: layout not made by spatialLayout");
  const int mapWidth = width - l.width + 1, mapHeight = height - l.height + 1;
  const bool wordAligned = (reinterpret_cast<std::uintptr_t>(image) % 4 == 0) && (pitch % 4 == 0);
  dim3 block(kThreadsX, kThreadsY);
  dim3 grid(ceilDiv(mapWidth, kSpatialTileWidth), ceilDiv(mapHeight, kSpatialTileHeight));
  if (l.wide) {
    spatialKernel<true><<<grid, block, 0, stream>>>(image, pitch, width, height, packedTemplate,
                                                    l.chunkWidth, l.chunkHeight, l.paddedWidth,
                                                    l.paddedHeight, mapWidth, mapHeight,
                                                    wordAligned, out);
  } else {
    spatialKernel<false><<<grid, block, 0, stream>>>(image, pitch, width, height, packedTemplate,
                                                     l.chunkWidth, l.chunkHeight, l.paddedWidth,
                                                     l.paddedHeight, mapWidth, mapHeight,
                                                     wordAligned, out);
  }
  NCC_CUDA_CHECK(cudaGetLastError());
  return Status();
}

}  // namespace nccmatch::cuda
