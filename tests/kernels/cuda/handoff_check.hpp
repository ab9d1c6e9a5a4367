// Checks of what a score kernel hands to peak finding, shared by the fused and GEMM bank tests:
// the map bit-identical to the CPU's, each tile's best the first best in raster order, and the
// above-threshold list exactly the positions whose goodness reaches the threshold.
#pragma once

#include <gtest/gtest.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <vector>

#include "cuda/peaks/peaks_kernels.hpp"

namespace nccmatch::test {

// Device outputs of one template: map (mapW x mapH), per-tile bests (tileW x tileH tiles), above
// list and its count.
struct HandoffView {
  int mapW = 0, mapH = 0, tileW = 0, tileH = 0;
  const double* map = nullptr;
  const cuda::Ranked* best = nullptr;
  const int* above = nullptr;
  const int* count = nullptr;
};

// Device buffers of one template's handoff: map, per-tile bests, above-threshold list and count.
struct HandoffBuffers {
  int mapW = 0, mapH = 0, tiles = 0;
  double* map = nullptr;
  cuda::Ranked* best = nullptr;
  int *above = nullptr, *count = nullptr;
  HandoffBuffers(int mapWidth, int mapHeight, int tileCount) : mapW(mapWidth), mapH(mapHeight), tiles(tileCount) {
    const std::size_t n = std::size_t(mapW) * mapH;
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
  }
  // NaN maps and bests, a zero count: what a kernel leaves unwritten shows.
  void poison() const {
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
  for (std::size_t i = 0; i < n; ++i)
    ASSERT_EQ(got[i], want[i]) << "at " << i % mapW << "," << i / mapW;
  std::vector<double> good(n);
  for (std::size_t i = 0; i < n; ++i) good[i] = sign * want[i];

  for (int b = 0; b < tiles; ++b) {
    const int x0 = (b % tilesX) * o.tileW, y0 = (b / tilesX) * o.tileH;
    int at = -1;
    for (int y = y0; y < std::min(mapH, y0 + o.tileH); ++y)
      for (int x = x0; x < std::min(mapW, x0 + o.tileW); ++x) {
        const int i = y * mapW + x;
        if (at < 0 || good[i] > good[at] || (good[i] == good[at] && i < at)) at = i;
      }
    ASSERT_EQ(best[b].index, at) << "tile " << b;
    ASSERT_EQ(best[b].goodness, good[at]) << "tile " << b;
  }

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

// A threshold that some but not all positions pass: the median goodness.
inline double medianGoodness(const std::vector<double>& map, double sign) {
  std::vector<double> good(map.size());
  for (std::size_t i = 0; i < map.size(); ++i) good[i] = sign * map[i];
  std::nth_element(good.begin(), good.begin() + good.size() / 2, good.end());
  return good[good.size() / 2];
}

}  // namespace nccmatch::test
