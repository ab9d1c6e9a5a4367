// Checks of what a score kernel hands to peak finding, shared by the fused and GEMM bank tests:
// the map bit-identical to the CPU's (a sparse map: at the positions that reach the threshold,
// which are exactly those with their bit set), each tile's best the first best in raster order
// (a sparse map's: empty, or one of the tile's positions with its exact goodness, and the best
// over the tiles the map's first best), and the above-threshold list exactly the positions whose
// goodness reaches the threshold.
#pragma once

#include <gtest/gtest.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <vector>

#include "cuda/peaks/peaks_kernels.hpp"
#include "rules/peak_rules.hpp"

namespace nccmatch::test {

// Device outputs of one template: map (mapW x mapH), per-tile bests (tileW x tileH tiles), above
// list and its count.
struct HandoffView {
  int mapW = 0, mapH = 0, tileW = 0, tileH = 0;
  const double* map = nullptr;
  const cuda::Ranked* best = nullptr;
  const int* above = nullptr;
  const int* count = nullptr;
  const uint32_t* bits = nullptr;  // a sparse map's bits; null: every position is in the map
};

// Device buffers of one template's handoff: map, per-tile bests, above-threshold list and count.
struct HandoffBuffers {
  int mapW = 0, mapH = 0, tiles = 0;
  double* map = nullptr;
  cuda::Ranked* best = nullptr;
  int *above = nullptr, *count = nullptr;
  uint32_t* bits = nullptr;
  uint32_t* frameFloor = nullptr;  // a sparse launch's running floor (FusedBankTemplate::frameFloor)
  std::size_t bitWords() const { return (std::size_t(mapW) * mapH + 31) / 32; }
  HandoffBuffers(int mapWidth, int mapHeight, int tileCount) : mapW(mapWidth), mapH(mapHeight), tiles(tileCount) {
    const std::size_t n = std::size_t(mapW) * mapH;
    EXPECT_EQ(cudaMalloc(&bits, bitWords() * sizeof(uint32_t)), cudaSuccess);
    EXPECT_EQ(cudaMalloc(&frameFloor, sizeof(uint32_t)), cudaSuccess);
    EXPECT_EQ(cudaMalloc(&map, n * sizeof(double)), cudaSuccess);
    EXPECT_EQ(cudaMalloc(&best, tiles * sizeof(cuda::Ranked)), cudaSuccess);
    EXPECT_EQ(cudaMalloc(&above, n * sizeof(int)), cudaSuccess);
    EXPECT_EQ(cudaMalloc(&count, sizeof(int)), cudaSuccess);
  }
  HandoffBuffers(const HandoffBuffers&) = delete;
  ~HandoffBuffers() {
    cudaFree(map);
    cudaFree(best);
    cudaFree(above);
    cudaFree(count);
    cudaFree(bits);
    cudaFree(frameFloor);
  }
  // NaN maps and bests, a zero count, no bits and no frame floor: what a kernel leaves unwritten
  // shows.
  void poison() const {
    EXPECT_EQ(cudaMemset(bits, 0, bitWords() * sizeof(uint32_t)), cudaSuccess);
    EXPECT_EQ(cudaMemset(frameFloor, 0, sizeof(uint32_t)), cudaSuccess);
    EXPECT_EQ(cudaMemset(map, 0xff, std::size_t(mapW) * mapH * sizeof(double)), cudaSuccess);
    EXPECT_EQ(cudaMemset(best, 0xff, tiles * sizeof(cuda::Ranked)), cudaSuccess);
    EXPECT_EQ(cudaMemset(count, 0, sizeof(int)), cudaSuccess);
  }
};

inline void expectHandoff(const HandoffView& o, const std::vector<double>& want, double sign, double goodEnough,
                          bool collect) {
  const int mapW = o.mapW, mapH = o.mapH;
  const int tilesX = (mapW + o.tileW - 1) / o.tileW, tiles = tilesX * ((mapH + o.tileH - 1) / o.tileH);
  const std::size_t n = std::size_t(mapW) * mapH;
  std::vector<double> got(n);
  std::vector<cuda::Ranked> best(tiles);
  int count = -1;
  ASSERT_EQ(cudaMemcpy(got.data(), o.map, n * sizeof(double), cudaMemcpyDeviceToHost), cudaSuccess);
  ASSERT_EQ(cudaMemcpy(best.data(), o.best, tiles * sizeof(cuda::Ranked), cudaMemcpyDeviceToHost), cudaSuccess);
  ASSERT_EQ(cudaMemcpy(&count, o.count, sizeof(int), cudaMemcpyDeviceToHost), cudaSuccess);
  std::vector<double> good(n);
  for (std::size_t i = 0; i < n; ++i) good[i] = sign * want[i];
  if (o.bits == nullptr) {
    for (std::size_t i = 0; i < n; ++i)
      ASSERT_EQ(got[i], want[i]) << "at " << i % mapW << "," << i / mapW;
  } else {
    std::vector<uint32_t> bits((n + 31) / 32);
    ASSERT_EQ(cudaMemcpy(bits.data(), o.bits, bits.size() * sizeof(uint32_t), cudaMemcpyDeviceToHost), cudaSuccess);
    for (std::size_t i = 0; i < n; ++i) {
      const bool reaches = collect && good[i] >= goodEnough;
      ASSERT_EQ((bits[i / 32] >> (i % 32)) & 1u, reaches ? 1u : 0u) << "bit at " << i % mapW << "," << i / mapW;
      if (reaches) {
        ASSERT_EQ(got[i], want[i]) << "at " << i % mapW << "," << i / mapW;
      }
    }
  }

  const auto firstBest = [&](int at, int i) { return at < 0 || rankedBefore(good[i], i, good[at], at); };
  int overall = -1, reported = -1;  // the map's first best; the best of the tiles' bests
  for (int b = 0; b < tiles; ++b) {
    const int x0 = (b % tilesX) * o.tileW, y0 = (b / tilesX) * o.tileH;
    int at = -1;
    for (int y = y0; y < std::min(mapH, y0 + o.tileH); ++y)
      for (int x = x0; x < std::min(mapW, x0 + o.tileW); ++x) {
        const int i = y * mapW + x;
        if (firstBest(at, i)) at = i;
      }
    if (firstBest(overall, at)) overall = at;
    if (o.bits != nullptr) {
      // Sparse: empty where the tile cannot hold the frame's best, else one of its positions,
      // exactly scored.
      if (best[b].index < 0) continue;
      const int x = best[b].index % mapW, y = best[b].index / mapW;
      ASSERT_TRUE(x >= x0 && x < x0 + o.tileW && y >= y0 && y < y0 + o.tileH && y < mapH) << "tile " << b;
      ASSERT_EQ(best[b].goodness, good[best[b].index]) << "tile " << b;
      if (firstBest(reported, best[b].index)) reported = best[b].index;
      continue;
    }
    ASSERT_EQ(best[b].index, at) << "tile " << b;
    ASSERT_EQ(best[b].goodness, good[at]) << "tile " << b;
  }
  if (o.bits != nullptr) ASSERT_EQ(reported, overall) << "the best over the tiles";

  if (!collect) {
    ASSERT_EQ(count, 0);
    return;
  }
  std::vector<int> above(std::max(count, 0));
  ASSERT_EQ(cudaMemcpy(above.data(), o.above, above.size() * sizeof(int), cudaMemcpyDeviceToHost), cudaSuccess);
  std::sort(above.begin(), above.end());
  std::vector<int> wantAbove;
  for (std::size_t i = 0; i < n; ++i)
    if (good[i] >= goodEnough) wantAbove.push_back(int(i));
  ASSERT_EQ(above, wantAbove);
}

// A threshold that a share 1 - q of the positions pass: the q-quantile of the goodness.
inline double quantileGoodness(const std::vector<double>& map, double sign, double q) {
  std::vector<double> good(map.size());
  for (std::size_t i = 0; i < map.size(); ++i) good[i] = sign * map[i];
  const std::size_t k = std::min(good.size() - 1, std::size_t(q * double(good.size())));
  std::nth_element(good.begin(), good.begin() + k, good.end());
  return good[k];
}

// A threshold that some but not all positions pass: the median goodness.
inline double medianGoodness(const std::vector<double>& map, double sign) { return quantileGoodness(map, sign, 0.5); }

}  // namespace nccmatch::test
