// The FFT numerator alone: fast sizes, and sum(I*T') with T' = T - mean(T) against the exact
// value, within a bound proportional to float rounding of the transform's energy.
#include <gtest/gtest.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <climits>
#include <cstdlib>
#include <cstring>
#include <string>
#include <utility>
#include <vector>

#include "cuda/numerator/numerator_fft.hpp"
#include "gpu_test_support.hpp"
#include "rules/fft_offset.hpp"
#include "test_support.hpp"

namespace nccmatch::test {
namespace {

// Transforms of one frame compared run to run: 300, or NCCMATCH_RUN_TO_RUN_REPEATS (at least 2).
// scripts/gpu-sanitize.sh sets 20: under racecheck every transform's kernels are instrumented, and
// 600 transforms of a 1080p frame there outgrew the GPU host's memory (killed by signal 9).
std::size_t runToRunRepeats() { return std::size_t(envSetting("NCCMATCH_RUN_TO_RUN_REPEATS", 300, 2, LLONG_MAX)); }

TEST(FastFftSize, OnlySmallFactorsAndEvenWhenAsked) {
  EXPECT_EQ(cuda::fastFftSize(1, false), 1);
  EXPECT_EQ(cuda::fastFftSize(1, true), 2);
  EXPECT_EQ(cuda::fastFftSize(1920, true), 1920);
  EXPECT_EQ(cuda::fastFftSize(1080, false), 1080);
  EXPECT_EQ(cuda::fastFftSize(2160, false), 2160);
  EXPECT_EQ(cuda::fastFftSize(11, false), 12);
  EXPECT_EQ(cuda::fastFftSize(1001, false), 1008);
  EXPECT_EQ(cuda::fastFftSize(1025, true), 1050);
  for (int n = 1; n < 3000; n += 37) {
    int m = cuda::fastFftSize(n, n % 2 == 0);
    EXPECT_GE(m, n);
    for (int p : {2, 3, 5, 7})
      while (m % p == 0) m /= p;
    EXPECT_EQ(m, 1) << n;
  }
}

TEST(PreferredFftSize, PowersOfTwoTimesOneThreeOrNineWithinSevenPercent) {
  EXPECT_EQ(cuda::preferredFftSize(1920, true), 2048);
  EXPECT_EQ(cuda::preferredFftSize(1080, false), 1152);
  EXPECT_EQ(cuda::preferredFftSize(3840, true), 4096);
  EXPECT_EQ(cuda::preferredFftSize(2160, false), 2304);
  EXPECT_EQ(cuda::preferredFftSize(1001, false), 1024);  // 1008 = 2^4 * 9 * 7 is fastFftSize
  EXPECT_EQ(cuda::preferredFftSize(1, true), 2);
  for (int n = 1; n < 5000; n += 13) {
    for (bool even : {false, true}) {
      const int m = cuda::preferredFftSize(n, even);
      const int fast = cuda::fastFftSize(n, even);
      EXPECT_GE(m, n);
      EXPECT_LE(m, std::max(fast, fast * 107 / 100)) << n;
      if (even) {
        EXPECT_EQ(m % 2, 0) << n;
      }
      int r = m;
      for (int p : {2, 3, 5, 7})
        while (r % p == 0) r /= p;
      EXPECT_EQ(r, 1) << n;
    }
  }
}

struct FftCase {
  int frameW, frameH, tplW, tplH;
  std::size_t padding;
  Fill frameFill, tplFill;
};

std::ostream& operator<<(std::ostream& os, const FftCase& c) {
  return os << describe(c.frameW, c.frameH, c.padding) << " template " << c.tplW << "x" << c.tplH;
}

class FftNumerator : public ::testing::TestWithParam<FftCase> {};

TEST_P(FftNumerator, CentredNumeratorWithinRounding) {
  SKIP_WITHOUT_GPU();
  const FftCase c = GetParam();
  Image img = makeImage(c.frameW, c.frameH, c.frameFill, c.padding);
  TemplateImage t = makeTemplate(c.tplW, c.tplH, c.tplFill);
  double sumT = 0;
  for (uint8_t v : t.pixels) sumT += v;
  const double meanT = sumT / t.pixels.size();
  double normT = 0;  // ||T'||
  for (uint8_t v : t.pixels) normT += (v - meanT) * (v - meanT);
  normT = std::sqrt(normT);
  double rms = 0;  // of the frame minus 128 (no SAT here, so the offset is 128)
  for (int y = 0; y < c.frameH; ++y)
    for (int x = 0; x < c.frameW; ++x) rms += (img.at(x, y) - 128.0) * (img.at(x, y) - 128.0);
  rms = std::sqrt(rms / (double(c.frameW) * c.frameH));

  cudaStream_t stream;
  ASSERT_EQ(cudaStreamCreate(&stream), cudaSuccess);
  uint8_t *dImage = nullptr, *dTpl = nullptr;
  ASSERT_EQ(cudaMalloc(&dImage, img.bytes.size()), cudaSuccess);
  ASSERT_EQ(cudaMalloc(&dTpl, t.pixels.size()), cudaSuccess);
  ASSERT_EQ(cudaMemcpy(dImage, img.bytes.data(), img.bytes.size(), cudaMemcpyHostToDevice), cudaSuccess);
  ASSERT_EQ(cudaMemcpy(dTpl, t.pixels.data(), t.pixels.size(), cudaMemcpyHostToDevice), cudaSuccess);
  std::vector<double> got;
  int fftW = 0;
  {
    cuda::FftCorrelator fft;
    Status s = fft.configure(c.frameW, c.frameH, stream);
    ASSERT_TRUE(s.ok()) << s.message();
    fftW = fft.fftWidth();
    EXPECT_GE(fft.fftWidth(), c.frameW);
    EXPECT_GE(fft.fftHeight(), c.frameH);
    int slot = -1;
    s = fft.addTemplate(dTpl, t.width, t.height, meanT, &slot);
    ASSERT_TRUE(s.ok()) << s.message();
    s = fft.transformFrame(dImage, img.stride, cuda::FrameOffset::Fixed128);
    ASSERT_TRUE(s.ok()) << s.message();
    const double* out = nullptr;
    s = fft.correlate(slot, &out);
    ASSERT_TRUE(s.ok()) << s.message();
    got.resize(std::size_t(fft.fftWidth()) * fft.fftHeight());
    ASSERT_EQ(cudaMemcpyAsync(got.data(), out, got.size() * sizeof(double), cudaMemcpyDeviceToHost, stream), cudaSuccess);
    ASSERT_EQ(cudaStreamSynchronize(stream), cudaSuccess);
  }
  cudaFree(dImage);
  cudaFree(dTpl);
  cudaStreamDestroy(stream);

  const int mapW = c.frameW - c.tplW + 1, mapH = c.frameH - c.tplH + 1;
  // Double rounding of a transform of this energy is ~1e-15 * log(size) * rms(I) * ||T'|| * sqrt(n);
  // 1e-9 leaves a wide margin and still fails any indexing, scaling or float-precision path.
  const double tol = 1e-9 * std::max(rms, 1.0) * std::max(normT, 1.0) * std::sqrt(double(t.width) * t.height);
  std::vector<std::pair<int, int>> at;
  if (double(mapW) * mapH * t.width * t.height < 2e8) {
    for (int y = 0; y < mapH; ++y)
      for (int x = 0; x < mapW; ++x) at.push_back({x, y});
  } else {
    at = {{0, 0}, {mapW - 1, mapH - 1}};
    for (int k = 0; k < 300; ++k) at.push_back({int(rng()() % mapW), int(rng()() % mapH)});
  }
  for (auto [x, y] : at) {
    double want = 0;
    for (int ty = 0; ty < t.height; ++ty)
      for (int tx = 0; tx < t.width; ++tx)
        want += img.at(x + tx, y + ty) * (t.pixels[std::size_t(ty) * t.width + tx] - meanT);
    const double g = got[std::size_t(y) * fftW + x];
    ASSERT_TRUE(std::isfinite(g));
    ASSERT_NEAR(g, want, tol) << "at " << x << "," << y << " " << c;
  }
}

// The float correlator: every output within its own bound errorScale * ||I - offset|| * ||T'||,
// and the frame norm it reports equal to the frame's; offset 128, or the frame's sampled mean.
TEST_P(FftNumerator, FloatWithinItsBound) {
  SKIP_WITHOUT_GPU();
  const FftCase c = GetParam();
  for (bool ownMean : {false, true}) {
  SCOPED_TRACE(ownMean ? "sampled mean" : "offset 128");
  Image img = makeImage(c.frameW, c.frameH, c.frameFill, c.padding);
  TemplateImage t = makeTemplate(c.tplW, c.tplH, c.tplFill);
  double sumT = 0;
  for (uint8_t v : t.pixels) sumT += v;
  const double meanT = sumT / t.pixels.size();
  double normT = 0;
  for (uint8_t v : t.pixels) normT += (v - meanT) * (v - meanT);
  normT = std::sqrt(normT);
  // The offset as the transform sees it: rounded to float.
  const float offset =
      ownMean ? float(fftSampledOffset(img.bytes.data(), img.stride, c.frameW, c.frameH)) : 128.f;
  double normI = 0;  // ||I - offset||^2
  for (int y = 0; y < c.frameH; ++y)
    for (int x = 0; x < c.frameW; ++x) {
      const double v = double(float(img.at(x, y)) - offset);
      normI += v * v;
    }

  cudaStream_t stream;
  ASSERT_EQ(cudaStreamCreate(&stream), cudaSuccess);
  uint8_t *dImage = nullptr, *dTpl = nullptr;
  ASSERT_EQ(cudaMalloc(&dImage, img.bytes.size()), cudaSuccess);
  ASSERT_EQ(cudaMalloc(&dTpl, t.pixels.size()), cudaSuccess);
  ASSERT_EQ(cudaMemcpy(dImage, img.bytes.data(), img.bytes.size(), cudaMemcpyHostToDevice), cudaSuccess);
  ASSERT_EQ(cudaMemcpy(dTpl, t.pixels.data(), t.pixels.size(), cudaMemcpyHostToDevice), cudaSuccess);
  std::vector<float> got;
  double normSq = -1, scale = 0;
  int fftW = 0;
  {
    cuda::FftCorrelator fft;
    Status s = fft.configure(c.frameW, c.frameH, stream, cuda::FftPrecision::Float);
    ASSERT_TRUE(s.ok()) << s.message();
    // The default: the product in the inverse transform's load, which this bound then covers.
    EXPECT_TRUE(fft.productInLoad()) << fft.productInLoadRefusal();
    fftW = fft.fftWidth();
    int slot = -1;
    ASSERT_TRUE(fft.addTemplate(dTpl, t.width, t.height, meanT, &slot).ok());
    ASSERT_TRUE((ownMean ? fft.transformFrame(dImage, img.stride)
                         : fft.transformFrame(dImage, img.stride, cuda::FrameOffset::Fixed128)).ok());
    const double* asDouble = nullptr;
    EXPECT_FALSE(fft.correlate(slot, &asDouble).ok());  // wrong precision
    const float* out = nullptr;
    s = fft.correlate(slot, &out);
    ASSERT_TRUE(s.ok()) << s.message();
    got.resize(std::size_t(fft.fftWidth()) * fft.fftHeight());
    ASSERT_EQ(cudaMemcpyAsync(got.data(), out, got.size() * sizeof(float), cudaMemcpyDeviceToHost, stream), cudaSuccess);
    ASSERT_EQ(cudaMemcpyAsync(&normSq, fft.frameNormSq(), sizeof(double), cudaMemcpyDeviceToHost, stream), cudaSuccess);
    ASSERT_EQ(cudaStreamSynchronize(stream), cudaSuccess);
    scale = fft.errorScale();
  }
  cudaFree(dImage);
  cudaFree(dTpl);
  cudaStreamDestroy(stream);
  EXPECT_NEAR(normSq, normI, 1e-9 * std::max(1.0, normI));
  const double bound = scale * std::sqrt(normI) * normT;

  const int mapW = c.frameW - c.tplW + 1, mapH = c.frameH - c.tplH + 1;
  std::vector<std::pair<int, int>> at = {{0, 0}, {mapW - 1, mapH - 1}};
  for (int k = 0; k < 300; ++k) at.push_back({int(rng()() % mapW), int(rng()() % mapH)});
  for (auto [x, y] : at) {
    double want = 0;
    for (int ty = 0; ty < t.height; ++ty)
      for (int tx = 0; tx < t.width; ++tx)
        want += img.at(x + tx, y + ty) * (t.pixels[std::size_t(ty) * t.width + tx] - meanT);
    const double g = got[std::size_t(y) * fftW + x];
    ASSERT_TRUE(std::isfinite(g));
    ASSERT_LE(std::fabs(g - want), std::max(bound, 1e-3)) << "at " << x << "," << y << " " << c;
  }
  }
}

// The frame norm behind the rounding bound has the same bits every time for the same frame
// (offset 128 and the frame's sampled mean): it decides which windows the score kernel recomputes
// exactly, so a varying last bit made the same frame give different scores now and then. Rows of
// 1921 bytes take the byte passes, rows of 1920 (4-byte aligned) the word passes.
TEST(FftCorrelator, FrameNormIsBitIdenticalRunToRun) {
  SKIP_WITHOUT_GPU();
  for (int width : {1921, 1920}) {
  SCOPED_TRACE("width " + std::to_string(width));
  Image img = makeImage(width, 1079, Fill::Random);  // no padding: the host sums below take every byte
  ASSERT_EQ(img.stride, std::size_t(img.width));
  cudaStream_t stream;
  ASSERT_EQ(cudaStreamCreate(&stream), cudaSuccess);
  uint8_t* dImage = nullptr;
  ASSERT_EQ(cudaMalloc(&dImage, img.bytes.size()), cudaSuccess);
  ASSERT_EQ(cudaMemcpy(dImage, img.bytes.data(), img.bytes.size(), cudaMemcpyHostToDevice), cudaSuccess);
  for (bool ownMean : {false, true}) {
    SCOPED_TRACE(ownMean ? "sampled mean" : "offset 128");
    cuda::FftCorrelator fft;
    Status s = fft.configure(img.width, img.height, stream, cuda::FftPrecision::Float);
    ASSERT_TRUE(s.ok()) << s.message();
    std::vector<double> norms(runToRunRepeats(), -1.0);
    for (double& n : norms) {
      ASSERT_TRUE((ownMean ? fft.transformFrame(dImage, img.stride)
                           : fft.transformFrame(dImage, img.stride, cuda::FrameOffset::Fixed128)).ok());
      ASSERT_EQ(cudaMemcpyAsync(&n, fft.frameNormSq(), sizeof(double), cudaMemcpyDeviceToHost, stream), cudaSuccess);
    }
    ASSERT_EQ(cudaStreamSynchronize(stream), cudaSuccess);
    const float offset =
        ownMean ? float(fftSampledOffset(img.bytes.data(), img.stride, img.width, img.height)) : 128.f;
    double want = 0;
    for (uint8_t p : img.bytes) want += double(float(p) - offset) * double(float(p) - offset);
    EXPECT_NEAR(norms[0], want, 1e-9 * want);
    std::size_t differing = 0;
    for (double n : norms) differing += std::memcmp(&n, &norms[0], sizeof(double)) != 0;
    EXPECT_EQ(differing, 0u) << "of " << norms.size() << " transforms of one frame";
  }
  cudaFree(dImage);
  cudaStreamDestroy(stream);
  }
}

// The conjugate product formed in the inverse transform's load callback gives the product
// kernel's correlation to float rounding (measured 3-4e-7 of the largest output), for each of
// several templates in turn (the callback's template switched between correlations) and frames
// in turn; the kernel path's correlator says it has no callback.
TEST(FftCorrelator, ProductInTheLoadMatchesTheProductKernel) {
  SKIP_WITHOUT_GPU();
  struct Case {
    int frameW, frameH, tplW, tplH;
  };
  const Case cases[] = {{1, 1, 1, 1}, {7, 5, 3, 2}, {101, 77, 13, 9}, {640, 480, 64, 48}, {1920, 1080, 128, 128}};
  cudaStream_t stream;
  ASSERT_EQ(cudaStreamCreate(&stream), cudaSuccess);
  for (const Case& c : cases) {
    SCOPED_TRACE(std::to_string(c.frameW) + "x" + std::to_string(c.frameH));
    const std::vector<TemplateImage> templates = {makeTemplate(c.tplW, c.tplH, Fill::Random),
                                                  makeTemplate(c.tplW, c.tplH, Fill::Smooth)};
    const Image frames[] = {makeImage(c.frameW, c.frameH, Fill::Random), makeImage(c.frameW, c.frameH, Fill::Smooth)};
    std::vector<uint8_t*> device;
    for (const TemplateImage& t : templates) {
      device.push_back(nullptr);
      ASSERT_EQ(cudaMalloc(&device.back(), t.pixels.size()), cudaSuccess);
      ASSERT_EQ(cudaMemcpy(device.back(), t.pixels.data(), t.pixels.size(), cudaMemcpyHostToDevice), cudaSuccess);
    }
    for (const Image& f : frames) {
      device.push_back(nullptr);
      ASSERT_EQ(cudaMalloc(&device.back(), f.bytes.size()), cudaSuccess);
      ASSERT_EQ(cudaMemcpy(device.back(), f.bytes.data(), f.bytes.size(), cudaMemcpyHostToDevice), cudaSuccess);
    }
    // Outputs of (frame, slot) in the order 0/0, 0/1, 1/1, 1/0, for each way.
    std::vector<std::vector<float>> outputs[2];
    for (int way = 0; way < 2; ++way) {
      const bool inLoad = way == 0;
      cuda::FftCorrelator fft;
      fft.setProductInLoad(inLoad);
      Status s = fft.configure(c.frameW, c.frameH, stream, cuda::FftPrecision::Float);
      ASSERT_TRUE(s.ok()) << s.message();
      ASSERT_EQ(fft.productInLoad(), inLoad) << fft.productInLoadRefusal();
      int slots[2] = {-1, -1};
      for (int i = 0; i < 2; ++i) {
        const TemplateImage& t = templates[std::size_t(i)];
        double mean = 0;
        for (uint8_t v : t.pixels) mean += v;
        mean /= double(t.pixels.size());
        ASSERT_TRUE(fft.addTemplate(device[std::size_t(i)], t.width, t.height, mean, &slots[i]).ok());
      }
      for (auto [frame, slot] : {std::pair{0, 0}, std::pair{0, 1}, std::pair{1, 1}, std::pair{1, 0}}) {
        if (slot == frame) {
          ASSERT_TRUE(fft.transformFrame(device[std::size_t(2 + frame)], frames[frame].stride).ok());
        }
        const float* out = nullptr;
        s = fft.correlate(slots[slot], &out);
        ASSERT_TRUE(s.ok()) << s.message();
        outputs[way].emplace_back(std::size_t(fft.fftWidth()) * fft.fftHeight());
        ASSERT_EQ(cudaMemcpyAsync(outputs[way].back().data(), out, outputs[way].back().size() * sizeof(float),
                                  cudaMemcpyDeviceToHost, stream), cudaSuccess);
        ASSERT_EQ(cudaStreamSynchronize(stream), cudaSuccess);
      }
    }
    for (std::size_t k = 0; k < outputs[0].size(); ++k) {
      const std::vector<float>&a = outputs[0][k], &b = outputs[1][k];
      double largest = 0, difference = 0;
      for (std::size_t i = 0; i < a.size(); ++i) {
        ASSERT_TRUE(std::isfinite(a[i])) << i;
        largest = std::max(largest, double(std::fabs(b[i])));
        difference = std::max(difference, double(std::fabs(a[i] - b[i])));
      }
      EXPECT_LE(difference, 1e-5 * std::max(largest, 1.0)) << "correlation " << k;
    }
    for (uint8_t* p : device) cudaFree(p);
  }
  cudaStreamDestroy(stream);
}

INSTANTIATE_TEST_SUITE_P(Sizes, FftNumerator, ::testing::Values(
    //      frame        template   pad  frame fill     template fill
    FftCase{1, 1,        1, 1,      0,   Fill::Random, Fill::Random},
    FftCase{7, 5,        3, 2,      1,   Fill::Random, Fill::Random},
    FftCase{64, 64,      64, 64,    0,   Fill::Random, Fill::Random},   // template == frame
    FftCase{101, 77,     13, 9,     3,   Fill::Smooth, Fill::Random},   // odd, padded to 7-smooth
    FftCase{300, 200,    32, 32,    0,   Fill::Smooth, Fill::Smooth},
    FftCase{256, 256,    100, 50,   0,   Fill::Flat,   Fill::Random},
    FftCase{200, 150,    20, 20,    0,   Fill::Random, Fill::Flat},     // T' == 0
    FftCase{1920, 1080,  256, 256,  0,   Fill::Random, Fill::Random},
    FftCase{3840, 2160,  64, 64,    0,   Fill::Smooth, Fill::Random}));

}  // namespace
}  // namespace nccmatch::test
