// drawMatchBoxesOnDevice against a CPU oracle drawing rectangles in order (the element's CPU
// drawing): planes from 1x1 to padded 1080p rows, boxes clipped on every side, through 1x1, too
// small for the inner ring, overlapping (order matters), more than one launch's batch, none.
#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <random>

#include "gpu_test_support.hpp"
#include "nccmatch/draw.hpp"
#include "test_support.hpp"

namespace nccmatch::test {
namespace {

void fillRect(Image* p, long x0, long y0, long x1, long y1, uint8_t v) {
  x0 = std::max(x0, 0L), y0 = std::max(y0, 0L);
  x1 = std::min(x1, long(p->width)), y1 = std::min(y1, long(p->height));
  for (long y = y0; y < y1; ++y)
    for (long x = x0; x < x1; ++x) p->at(int(x), int(y)) = v;
}

void ring(Image* p, DrawBox b, int t, uint8_t v) {
  if (b.width <= 0 || b.height <= 0) return;
  long x0 = b.x, y0 = b.y, x1 = x0 + b.width, y1 = y0 + b.height;
  fillRect(p, x0, y0, x1, std::min(y0 + t, y1), v);
  fillRect(p, x0, std::max(y1 - t, y0), x1, y1, v);
  fillRect(p, x0, y0, std::min(x0 + t, x1), y1, v);
  fillRect(p, std::max(x1 - t, x0), y0, x1, y1, v);
}

void oracle(Image* p, const std::vector<DrawBox>& boxes) {
  const int t = kMatchRingThickness;
  for (const DrawBox& b : boxes) {
    ring(p, b, t, 255);
    if (b.width <= 2 * t || b.height <= 2 * t || b.x > p->width || b.y > p->height) continue;
    ring(p, {b.x + t, b.y + t, b.width - 2 * t, b.height - 2 * t}, 1, 0);
  }
}

std::vector<DrawBox> randomBoxes(int count, int width, int height) {
  std::vector<DrawBox> boxes;
  std::uniform_int_distribution<int> x(-20, width + 5), y(-20, height + 5), w(1, std::max(2, width / 2)),
      h(1, std::max(2, height / 2));
  for (int i = 0; i < count; ++i) boxes.push_back({x(rng()), y(rng()), w(rng()), h(rng())});
  return boxes;
}

struct DrawCase {
  int width, height, padding;  // the plane
  std::vector<DrawBox> fixed;  // boxes drawn first
  int random;                  // then this many random ones
};

TEST(DrawGpu, MatchesTheCpuDrawingPixelForPixel) {
  SKIP_WITHOUT_GPU();
  const DrawCase cases[] = {
      {1, 1, 0, {{0, 0, 1, 1}}, 0},                                 // 1x1 plane and box
      {17, 9, 3, {{-1, -1, 5, 5}, {14, 6, 6, 6}, {3, 2, 5, 4}}, 0},  // clipped; 5x4: no inner ring
      {64, 48, 0, {{10, 10, 20, 20}, {15, 15, 20, 20}, {12, 8, 5, 5}}, 0},  // overlapping, in order
      {64, 48, 0, {{64, 0, 4, 4}, {0, 48, 9, 9}, {-9, -9, 9, 9}}, 0},        // wholly outside
      {333, 217, 51, {}, 300},                                               // > one launch's batch
      {1920, 1080, 128, {{0, 0, 1920, 1080}, {1800, 1000, 200, 200}}, 40},
      {100, 100, 0, {}, 0},                                                  // nothing to draw
  };
  for (const DrawCase& c : cases) {
    SCOPED_TRACE(describe(c.width, c.height, c.padding));
    Image plane = makeImage(c.width, c.height, Fill::Random, c.padding);
    std::vector<DrawBox> boxes = c.fixed;
    for (const DrawBox& b : randomBoxes(c.random, c.width, c.height)) boxes.push_back(b);
    Image expected = plane;
    oracle(&expected, boxes);

    uint8_t* device = nullptr;
    ASSERT_EQ(cudaMalloc(&device, plane.bytes.size()), cudaSuccess);
    ASSERT_EQ(cudaMemcpy(device, plane.bytes.data(), plane.bytes.size(), cudaMemcpyHostToDevice), cudaSuccess);
    Status s = drawMatchBoxesOnDevice(device, c.width, c.height, plane.stride, boxes);
    ASSERT_TRUE(s.ok()) << s.message();
    std::vector<uint8_t> drawn(plane.bytes.size());
    ASSERT_EQ(cudaMemcpy(drawn.data(), device, drawn.size(), cudaMemcpyDeviceToHost), cudaSuccess);
    cudaFree(device);
    std::size_t differing = 0, first = drawn.size();
    for (std::size_t i = 0; i < drawn.size(); ++i)
      if (drawn[i] != expected.bytes[i]) differing++, first = std::min(first, i);
    EXPECT_EQ(differing, 0u) << "first difference at row " << first / plane.stride << ", column "
                             << first % plane.stride << " (padding included: it must stay untouched)";
  }
}

TEST(DrawGpu, BadPlanesAreErrorsAndNothingIsLaunched) {
  SKIP_WITHOUT_GPU();
  std::vector<DrawBox> one = {{0, 0, 4, 4}};
  uint8_t* device = nullptr;
  ASSERT_EQ(cudaMalloc(&device, 64), cudaSuccess);
  EXPECT_FALSE(drawMatchBoxesOnDevice(nullptr, 8, 8, 8, one).ok());
  EXPECT_FALSE(drawMatchBoxesOnDevice(device, 0, 8, 8, one).ok());
  EXPECT_FALSE(drawMatchBoxesOnDevice(device, 8, 0, 8, one).ok());
  EXPECT_FALSE(drawMatchBoxesOnDevice(device, 8, 8, 7, one).ok());
  EXPECT_TRUE(drawMatchBoxesOnDevice(nullptr, 8, 8, 8, {}).ok()) << "no boxes: nothing to do";
  cudaFree(device);
}

}  // namespace
}  // namespace nccmatch::test
