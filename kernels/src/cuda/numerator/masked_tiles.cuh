// The phases of the masked score kernel (masked_scores.cu), one device function each: load the
// image tile of a chunk of template rows, load that chunk's taps, weights and spans, the three
// sums under the mask by __dp4a, and the epilogue (the rules' score).
//
// A block scores a kTileWidth x kTileHeight tile of positions: warp w row w of it, lane l the four
// positions 4l..4l+3, sliding the four-byte windows of two neighbouring image words over each
// template word (__byte_perm). Per template word and position: sum I*T*M = dp4a(I, taps),
// sum I*M = dp4a(I & weights, 1), sum I^2*M = dp4a(I & weights, I), weights being 0xFF where
// compared. Template words are the same for the whole warp (shared-memory broadcasts), image
// words consecutive across lanes (no bank conflicts).
//
// Exact integers: a chunk holds rows * rowBytes <= kChunkPixels pixels, so each sum of a chunk is
// below kChunkPixels * 255^2 < 2^32 (uint32, as dp4a accumulates); chunks add up in int64.
#pragma once

#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>

#include "cuda/numerator/masked_scores.hpp"
#include "rules/masked_score_rules.hpp"

namespace nccmatch::cuda::masked_tiles {

constexpr int kThreads = 256;
constexpr int kTileHeight = kThreads / 32;  // a warp a row
constexpr int kPositionsPerLane = 4;
constexpr int kTileWidth = 32 * kPositionsPerLane;
constexpr int kChunkPixels = 65536;
static_assert(double(kChunkPixels) * 255 * 255 < 4294967296.0, "a chunk's sums fit 32 bits");

// Shared memory of a launch whose templates are at most maxWords words wide, in chunks of
// `rows` template rows: the spans (rows int2, first: 8-byte aligned), the image tile
// (kTileHeight + rows - 1 rows of 32 + maxWords words: the tile's 128 bytes, the template's
// width and one word of look-ahead), then taps and weights (rows x maxWords words each).
NCC_HOST_DEVICE constexpr int imagePitchWords(int maxWords) { return kTileWidth / 4 + maxWords; }
NCC_HOST_DEVICE constexpr std::size_t sharedBytes(int maxWords, int rows) {
  return 4 * (std::size_t(kTileHeight + rows - 1) * imagePitchWords(maxWords) + 2 * std::size_t(rows) * maxWords +
              2 * std::size_t(rows));
}

struct SharedChunk {
  uint32_t* image;
  uint32_t* taps;
  uint32_t* weights;
  int2* spans;
};

__device__ __forceinline__ SharedChunk carveShared(uint32_t* shared, int maxWords, int rows) {
  SharedChunk s;
  s.spans = reinterpret_cast<int2*>(shared);
  s.image = shared + 2 * rows;
  s.taps = s.image + (kTileHeight + rows - 1) * imagePitchWords(maxWords);
  s.weights = s.taps + rows * maxWords;
  return s;
}

// The image rows y0 .. y0 + kTileHeight + rows - 2 of the region, bytes x0 .. x0 + 4 * pitchWords - 1,
// as words; bytes outside the region are 0 (they only meet zero taps or positions not stored).
__device__ __forceinline__ void loadImageChunk(const MaskedScoreDesc& r, int x0, int y0, int rows, int pitchWords,
                                               uint32_t* tile) {
  const int tileRows = kTileHeight + rows - 1;
  const int words = tileRows * pitchWords;
  for (int i = threadIdx.x; i < words; i += kThreads) {
    const int row = i / pitchWords, word = i - row * pitchWords;
    const int y = y0 + row, x = x0 + 4 * word;
    uint32_t v = 0;
    if (y < r.height) {
      const uint8_t* src = r.image + std::size_t(y) * r.pitch;
#pragma unroll
      for (int b = 0; b < 4; ++b)
        if (x + b < r.width) v |= uint32_t(__ldg(src + x + b)) << (8 * b);
    }
    tile[i] = v;
  }
}

// Template rows ty0 .. ty0 + rows - 1: taps and weights (words rows of `words`, contiguous in the
// layout) and the spans.
__device__ __forceinline__ void loadTemplateChunk(const MaskedTemplateDevice& t, int ty0, int rows, int words,
                                                  const SharedChunk& s) {
  const uint32_t* taps = reinterpret_cast<const uint32_t*>(t.taps) + std::size_t(ty0) * words;
  const uint32_t* weights = reinterpret_cast<const uint32_t*>(t.weights) + std::size_t(ty0) * words;
  for (int i = threadIdx.x; i < rows * words; i += kThreads) {
    s.taps[i] = __ldg(taps + i);
    s.weights[i] = __ldg(weights + i);
  }
  for (int i = threadIdx.x; i < rows; i += kThreads)
    s.spans[i] = make_int2(__ldg(t.spans + 2 * (ty0 + i)), __ldg(t.spans + 2 * (ty0 + i) + 1));
}

// What a pass computes (MaskedPass in masked_scores.hpp): all three sums, the window sums alone,
// or the cross term alone.
template <MaskedPass P>
constexpr bool kCross = P != MaskedPass::WindowSums;
template <MaskedPass P>
constexpr bool kWindow = P != MaskedPass::ScoresFromWindowSums;

// The sums of one lane's four positions over one chunk (uint32: see kChunkPixels).
struct LaneSums {
  uint32_t s1[kPositionsPerLane], s2[kPositionsPerLane], c[kPositionsPerLane];
};

// Positions 4*lane + j of tile row `row` over the chunk's rows: image word lane + k and the next
// one hold the bytes of template word k for all four positions.
template <MaskedPass P>
__device__ __forceinline__ LaneSums chunkSums(const SharedChunk& s, int row, int lane, int rows, int words,
                                              int pitchWords) {
  LaneSums sums;
#pragma unroll
  for (int j = 0; j < kPositionsPerLane; ++j) sums.s1[j] = sums.s2[j] = sums.c[j] = 0;
  for (int r = 0; r < rows; ++r) {
    const int2 span = s.spans[r];
    const uint32_t* image = s.image + (row + r) * pitchWords + lane;
    const uint32_t* taps = s.taps + r * words;
    const uint32_t* weights = s.weights + r * words;
    uint32_t a = span.x < span.y ? image[span.x] : 0;
    for (int k = span.x; k < span.y; ++k) {
      const uint32_t b = image[k + 1];
      const uint32_t tap = taps[k], weight = weights[k];
#pragma unroll
      for (int j = 0; j < kPositionsPerLane; ++j) {
        const uint32_t window = __byte_perm(a, b, 0x3210 + 0x1111 * j);  // bytes j..j+3 of (a, b)
        if constexpr (kCross<P>) sums.c[j] = __dp4a(window, tap, sums.c[j]);
        if constexpr (kWindow<P>) {
          const uint32_t compared = window & weight;
          sums.s1[j] = __dp4a(compared, 0x01010101u, sums.s1[j]);
          sums.s2[j] = __dp4a(compared, window, sums.s2[j]);
        }
      }
      a = b;
    }
  }
  return sums;
}

// Scores the tile at (outX0, outY0) of region r: every chunk of template rows loaded and summed,
// then for each position inside the map the rules' score (MaskedPass::Scores), the window sums
// written to r.windowSums (WindowSums), or the score from the cross term and the window sums
// read there (ScoresFromWindowSums). chunkRows and maxWords as the launch's shared memory was
// sized.
template <MaskedPass P>
__device__ __forceinline__ void scoreTile(const MaskedScoreDesc& r, int outX0, int outY0, int chunkRows, int maxWords,
                                          Method method, uint32_t* shared) {
  const int mapWidth = r.width - r.t.width + 1, mapHeight = r.height - r.t.height + 1;
  const int words = maskedRowBytes(r.t.width) / 4;
  const int pitchWords = imagePitchWords(maxWords);
  const SharedChunk s = carveShared(shared, maxWords, chunkRows);
  const int row = threadIdx.x >> 5, lane = threadIdx.x & 31;
  int64_t s1[kPositionsPerLane] = {}, s2[kPositionsPerLane] = {}, c[kPositionsPerLane] = {};
  for (int ty0 = 0; ty0 < r.t.height; ty0 += chunkRows) {
    const int rows = min(chunkRows, r.t.height - ty0);
    __syncthreads();  // the previous chunk is summed
    loadImageChunk(r, outX0, outY0 + ty0, rows, pitchWords, s.image);
    loadTemplateChunk(r.t, ty0, rows, words, s);
    __syncthreads();
    const LaneSums sums = chunkSums<P>(s, row, lane, rows, words, pitchWords);
#pragma unroll
    for (int j = 0; j < kPositionsPerLane; ++j) {
      s1[j] += sums.s1[j];
      s2[j] += sums.s2[j];
      c[j] += sums.c[j];
    }
  }
  const int y = outY0 + row;
  if (y >= mapHeight) return;
  const std::size_t plane = std::size_t(mapWidth) * mapHeight;
#pragma unroll
  for (int j = 0; j < kPositionsPerLane; ++j) {
    const int x = outX0 + kPositionsPerLane * lane + j;
    if (x >= mapWidth) continue;
    const std::size_t at = std::size_t(y) * mapWidth + x;
    if constexpr (P == MaskedPass::WindowSums) {
      r.windowSums[at] = s1[j];
      r.windowSums[plane + at] = s2[j];
    } else if constexpr (P == MaskedPass::ScoresFromWindowSums) {
      r.map[at] = maskedScoreFromSums(method, r.t.stats, r.windowSums[at], r.windowSums[plane + at], c[j]);
    } else {
      r.map[at] = maskedScoreFromSums(method, r.t.stats, s1[j], s2[j], c[j]);
    }
  }
}

}  // namespace nccmatch::cuda::masked_tiles
