// The spatial numerator alone: sum(I*T) at every position, exact against a plain CPU loop, for
// template sizes through chunk boundaries and into 64-bit sums, aligned and unaligned pitches.
#include <gtest/gtest.h>
#include <cuda_runtime.h>

#include "cuda/numerator/numerator_spatial.hpp"
#include "gpu_test_support.hpp"
#include "test_support.hpp"

namespace nccmatch::test {
namespace {

struct SpatialCase {
  int frameW, frameH, tplW, tplH;
  std::size_t padding;  // an odd stride sends the kernel down its byte-load path
  Fill fill;
};

std::ostream& operator<<(std::ostream& os, const SpatialCase& c) {
  return os << describe(c.frameW, c.frameH, c.padding) << " template " << c.tplW << "x" << c.tplH;
}

TEST(SpatialLayout, ChunksAreEvenAndWholeWords) {
  for (int w : {1, 3, 4, 5, 63, 64, 65, 100, 128, 129, 256, 1920}) {
    for (int h : {1, 15, 16, 17, 33, 256}) {
      cuda::SpatialLayout l = cuda::spatialLayout(w, h);
      EXPECT_EQ(l.chunkWidth % 4, 0);
      EXPECT_LE(l.chunkWidth, 64);
      EXPECT_LE(l.chunkHeight, 16);
      EXPECT_GE(l.paddedWidth, w);
      EXPECT_LT(l.paddedWidth - w, l.paddedWidth / l.chunkWidth * 4) << w;  // < 4 bytes waste per chunk
      EXPECT_EQ(l.paddedHeight % l.chunkHeight, 0);
      EXPECT_LT(l.paddedHeight - h, l.paddedHeight / l.chunkHeight) << h;
      EXPECT_EQ(l.wide, double(w) * h * 65025.0 >= 2147483648.0);
    }
  }
}

class SpatialNumerator : public ::testing::TestWithParam<SpatialCase> {};

TEST_P(SpatialNumerator, ExactAgainstTheDirectSum) {
  SKIP_WITHOUT_GPU();
  const SpatialCase c = GetParam();
  Image img = makeImage(c.frameW, c.frameH, c.fill, c.padding);
  TemplateImage t = makeTemplate(c.tplW, c.tplH, Fill::Random);
  const cuda::SpatialLayout layout = cuda::spatialLayout(t.width, t.height);
  const std::vector<uint8_t> packed = cuda::spatialPack(t.pixels.data(), layout);
  const int mapW = c.frameW - c.tplW + 1, mapH = c.frameH - c.tplH + 1;
  const std::size_t n = std::size_t(mapW) * mapH;

  uint8_t *dImage = nullptr, *dTpl = nullptr;
  int64_t* dOut = nullptr;
  ASSERT_EQ(cudaMalloc(&dImage, img.bytes.size()), cudaSuccess);
  ASSERT_EQ(cudaMalloc(&dTpl, packed.size()), cudaSuccess);
  ASSERT_EQ(cudaMalloc(&dOut, n * sizeof(int64_t)), cudaSuccess);
  ASSERT_EQ(cudaMemcpy(dImage, img.bytes.data(), img.bytes.size(), cudaMemcpyHostToDevice), cudaSuccess);
  ASSERT_EQ(cudaMemcpy(dTpl, packed.data(), packed.size(), cudaMemcpyHostToDevice), cudaSuccess);
  ASSERT_EQ(cudaMemset(dOut, 0xff, n * sizeof(int64_t)), cudaSuccess);  // poison: -1 everywhere
  Status s = cuda::spatialNumerator(dImage, img.stride, img.width, img.height, dTpl, layout, dOut, nullptr);
  std::vector<int64_t> got(n);
  const cudaError_t copied = cudaMemcpy(got.data(), dOut, n * sizeof(int64_t), cudaMemcpyDeviceToHost);
  cudaFree(dImage);
  cudaFree(dTpl);
  cudaFree(dOut);
  ASSERT_TRUE(s.ok()) << s.message();
  ASSERT_EQ(copied, cudaSuccess);

  // Every position when cheap, else a sample that always includes the four corners.
  const double work = double(n) * t.width * t.height;
  std::vector<std::pair<int, int>> at;
  if (work < 3e8) {
    for (int y = 0; y < mapH; ++y)
      for (int x = 0; x < mapW; ++x) at.push_back({x, y});
  } else {
    at = {{0, 0}, {mapW - 1, 0}, {0, mapH - 1}, {mapW - 1, mapH - 1}};
    for (int k = 0; k < 2000; ++k) at.push_back({int(rng()() % mapW), int(rng()() % mapH)});
  }
  for (auto [x, y] : at) {
    int64_t want = 0;
    for (int ty = 0; ty < t.height; ++ty)
      for (int tx = 0; tx < t.width; ++tx)
        want += int64_t(img.at(x + tx, y + ty)) * t.pixels[std::size_t(ty) * t.width + tx];
    ASSERT_EQ(got[std::size_t(y) * mapW + x], want) << "at " << x << "," << y << " " << c;
  }
}

INSTANTIATE_TEST_SUITE_P(Sizes, SpatialNumerator, ::testing::Values(
    //          frame        template   pad  fill
    SpatialCase{1, 1,        1, 1,      0,   Fill::Random},
    SpatialCase{5, 4,        5, 4,      3,   Fill::Random},   // template == frame, byte loads
    SpatialCase{129, 17,     1, 1,      0,   Fill::Random},   // tile width + 1
    SpatialCase{130, 18,     3, 3,      1,   Fill::Random},
    SpatialCase{300, 200,    4, 16,     0,   Fill::Binary},
    SpatialCase{300, 200,    64, 16,    0,   Fill::Random},   // one whole chunk
    SpatialCase{300, 200,    65, 17,    2,   Fill::Random},   // one past a chunk both ways
    SpatialCase{257, 250,    128, 33,   0,   Fill::Smooth},
    SpatialCase{200, 200,    181, 181,  0,   Fill::Random},   // last 32-bit size
    SpatialCase{200, 200,    182, 182,  6,   Fill::Random},   // first 64-bit size
    SpatialCase{300, 270,    256, 256,  0,   Fill::Random},
    SpatialCase{1920, 1080,  16, 16,    0,   Fill::Random},
    SpatialCase{3840, 2160,  7, 5,      0,   Fill::Random},
    SpatialCase{1000, 999,   999, 998,  3,   Fill::Random})); // near the frame size

}  // namespace
}  // namespace nccmatch::test
