// The GPU SAT builds (naive, cub, dlb, fused, fused32) against the CPU tables, bit for bit.
// GPU cases skip with a reason where no CUDA device is present; argument checks run anywhere.
#include <gtest/gtest.h>

#include <cuda_runtime_api.h>

#include <algorithm>
#include <cstring>
#include <memory>
#include <string>
#include <tuple>
#include <vector>

#include "cuda/sat/sat_fused.hpp"
#include "nccmatch/engine.hpp"
#include "nccmatch/sat.hpp"
#include "nccmatch/sat_cuda.hpp"
#include "test_support.hpp"

namespace nccmatch::test {
namespace {

using cuda::SatBuild;
using cuda::SatBuilder;

const SatBuild kAllBuilds[] = {SatBuild::Naive, SatBuild::Cub, SatBuild::Dlb, SatBuild::Fused,
                               SatBuild::Fused32};

#define CUDA_OK(call) ASSERT_EQ((call), cudaSuccess) << #call

struct CudaFree {
  void operator()(void* p) const { cudaFree(p); }
};
using DevicePtr = std::unique_ptr<void, CudaFree>;

// The stream tests' frames are this many times smaller a side where NCCMATCH_SAT_STREAM_DIVISOR
// says so (at least 1). scripts/gpu-sanitize.sh sets 2: racecheck's host memory grows with every
// block it watches, and their 90 and 40 builds of 1-4 MP frames outgrew 48 GB (session 28); a
// quarter of the blocks runs the same kernels and tile code in the same stream order.
int streamTestDivisor() { return int(envSetting("NCCMATCH_SAT_STREAM_DIVISOR", 1, 1, 16)); }

DevicePtr deviceAlloc(std::size_t bytes) {
  void* p = nullptr;
  if (cudaMalloc(&p, std::max<std::size_t>(bytes, 1)) != cudaSuccess) return DevicePtr();
  return DevicePtr(p);
}

bool gpuPresent(std::string* why) { return cudaAvailable(why); }

#define SKIP_WITHOUT_GPU()                                   \
  do {                                                       \
    std::string why_;                                        \
    if (!gpuPresent(&why_)) GTEST_SKIP() << "no GPU: " << why_; \
  } while (0)

// One image on the device with its tables, and the host copies of what a build wrote.
struct DeviceFrame {
  DevicePtr image, sum, sumSq;
  std::size_t pitch = 0;
  std::size_t entries = 0;
};

// Uploads img (with its padding, which holds poison) and allocates tables poisoned with 0xA5.
::testing::AssertionResult upload(const Image& img, SatBuild build, DeviceFrame* f) {
  f->pitch = img.stride;
  f->entries = std::size_t(img.width) * img.height;
  const std::size_t tableBytes = f->entries * cuda::satEntryBytes(build);
  f->image = deviceAlloc(img.bytes.size());
  f->sum = deviceAlloc(tableBytes);
  f->sumSq = deviceAlloc(tableBytes);
  if (!f->image || !f->sum || !f->sumSq) return ::testing::AssertionFailure() << "cudaMalloc failed";
  if (cudaMemcpy(f->image.get(), img.bytes.data(), img.bytes.size(), cudaMemcpyHostToDevice) != cudaSuccess ||
      cudaMemset(f->sum.get(), 0xA5, tableBytes) != cudaSuccess ||
      cudaMemset(f->sumSq.get(), 0xA5, tableBytes) != cudaSuccess)
    return ::testing::AssertionFailure() << "upload failed";
  return ::testing::AssertionSuccess();
}

Status enqueue(SatBuilder* builder, const Image& img, DeviceFrame* f, cudaStream_t stream) {
  return builder->build(static_cast<const uint8_t*>(f->image.get()), f->pitch, img.width, img.height,
                        f->sum.get(), f->sumSq.get(), stream);
}

// Compares the device tables with the CPU tables: exact for int64 builds, mod 2^32 for fused32.
::testing::AssertionResult matchesCpu(const Image& img, SatBuild build, const DeviceFrame& f) {
  std::vector<int64_t> S(f.entries), Q(f.entries);
  Status st = buildSatCpu(img.bytes.data(), img.stride, img.width, img.height, S.data(), Q.data());
  if (!st.ok()) return ::testing::AssertionFailure() << st.message();
  const std::size_t bytes = f.entries * cuda::satEntryBytes(build);
  std::vector<unsigned char> gs(bytes), gq(bytes);
  if (cudaMemcpy(gs.data(), f.sum.get(), bytes, cudaMemcpyDeviceToHost) != cudaSuccess ||
      cudaMemcpy(gq.data(), f.sumSq.get(), bytes, cudaMemcpyDeviceToHost) != cudaSuccess)
    return ::testing::AssertionFailure() << "download failed: " << cudaGetErrorString(cudaGetLastError());
  for (std::size_t i = 0; i < f.entries; ++i) {
    int64_t s, q;
    if (build == SatBuild::Fused32) {
      uint32_t s32, q32;
      std::memcpy(&s32, gs.data() + 4 * i, 4);
      std::memcpy(&q32, gq.data() + 4 * i, 4);
      s = s32;
      q = q32;
      if (uint32_t(S[i]) == s32 && uint32_t(Q[i]) == q32) continue;
    } else {
      std::memcpy(&s, gs.data() + 8 * i, 8);
      std::memcpy(&q, gq.data() + 8 * i, 8);
      if (S[i] == s && Q[i] == q) continue;
    }
    return ::testing::AssertionFailure()
           << cuda::satBuildName(build) << " " << describe(img.width, img.height, img.stride - img.width)
           << ": first mismatch at x=" << i % img.width << " y=" << i / img.width << ": got S=" << s
           << " Q=" << q << ", CPU S=" << S[i] << " Q=" << Q[i] << " (seed " << testSeed() << ")";
  }
  return ::testing::AssertionSuccess();
}

struct SizeCase {
  int width, height;
  std::size_t padding;
  Fill fill;
  uint8_t flatValue;
};

std::string caseName(SatBuild build, const SizeCase& c) {
  return std::string(cuda::satBuildName(build)) + "_" + std::to_string(c.width) + "x" +
         std::to_string(c.height) + "_pad" + std::to_string(c.padding) +
         (c.fill == Fill::Flat ? "_flat" + std::to_string(c.flatValue) : "");
}

// Sizes through 1, around the tiles (fused: 256 x 32, the 64x64 variant; dlb: 256 columns x 16
// rows; transposes: 32),
// odd sizes, strides with padding, and a frame whose sums pass 2^32.
const SizeCase kSizes[] = {
    // width, height, padding, fill, flat value
    {1, 1, 0, Fill::Random, 0},
    {1, 1, 5, Fill::Random, 0},
    {1, 777, 3, Fill::Random, 0},     // 1 x N
    {913, 1, 0, Fill::Random, 0},     // N x 1
    {31, 17, 0, Fill::Random, 0},
    {31, 17, 9, Fill::Random, 0},
    {63, 63, 1, Fill::Random, 0},     // fused tile - 1
    {64, 64, 0, Fill::Random, 0},     // fused tile
    {65, 65, 0, Fill::Random, 0},     // fused tile + 1
    {127, 129, 2, Fill::Random, 0},
    {255, 15, 0, Fill::Random, 0},    // dlb tile - 1
    {256, 16, 0, Fill::Random, 0},    // dlb tile
    {257, 17, 7, Fill::Random, 0},    // dlb tile + 1
    {255, 31, 0, Fill::Random, 0},    // fused tile - 1
    {256, 32, 0, Fill::Random, 0},    // fused tile
    {513, 33, 3, Fill::Random, 0},    // fused tiles + 1
    {1023, 513, 0, Fill::Binary, 0},
    {4097, 2049, 0, Fill::Random, 0},
    {4097, 2049, 61, Fill::Random, 0},
    {1920, 1080, 0, Fill::Random, 0},
    {1920, 1080, 128, Fill::Smooth, 0},
    {8192, 8192, 0, Fill::Flat, 255},  // sums pass 2^32
};

class SatGpuExact : public ::testing::TestWithParam<std::tuple<SatBuild, SizeCase>> {};

TEST_P(SatGpuExact, MatchesCpuTables) {
  SKIP_WITHOUT_GPU();
  const auto [build, c] = GetParam();
  Image img = makeImage(c.width, c.height, c.fill, c.padding, c.flatValue);
  std::unique_ptr<SatBuilder> builder;
  Status st = SatBuilder::create(build, c.width, c.height, &builder);
  ASSERT_TRUE(st.ok()) << st.message();
  ASSERT_EQ(builder->kind(), build);
  DeviceFrame f;
  ASSERT_TRUE(upload(img, build, &f));
  st = enqueue(builder.get(), img, &f, nullptr);
  ASSERT_TRUE(st.ok()) << st.message();
  CUDA_OK(cudaDeviceSynchronize());
  EXPECT_TRUE(matchesCpu(img, build, f));
}

INSTANTIATE_TEST_SUITE_P(Builds, SatGpuExact,
                         ::testing::Combine(::testing::ValuesIn(kAllBuilds), ::testing::ValuesIn(kSizes)),
                         [](const auto& info) {
                           return caseName(std::get<0>(info.param), std::get<1>(info.param));
                         });

// A builder made for a large maximum builds smaller frames too (tile counts differ per frame).
TEST(SatGpu, SmallFramesOnLargeBuilder) {
  SKIP_WITHOUT_GPU();
  for (SatBuild build : kAllBuilds) {
    std::unique_ptr<SatBuilder> builder;
    Status st = SatBuilder::create(build, 3000, 2000, &builder);
    ASSERT_TRUE(st.ok()) << st.message();
    for (auto [w, h] : {std::pair{3000, 2000}, std::pair{17, 1999}, std::pair{2999, 3}, std::pair{640, 480}}) {
      Image img = makeImage(w, h, Fill::Random, 3);
      DeviceFrame f;
      ASSERT_TRUE(upload(img, build, &f));
      st = enqueue(builder.get(), img, &f, nullptr);
      ASSERT_TRUE(st.ok()) << st.message();
      CUDA_OK(cudaDeviceSynchronize());
      EXPECT_TRUE(matchesCpu(img, build, f));
    }
  }
}

// Every compiled tile shape of the fused build (the benchmark times them all) on the whole size
// table, so that whichever shape is the default is exact everywhere.
TEST(SatGpu, EveryFusedTileShapeIsExact) {
  SKIP_WITHOUT_GPU();
  for (const cuda::FusedSatConfig& config : cuda::fusedSatConfigs()) {
    for (SatBuild build : {SatBuild::Fused, SatBuild::Fused32}) {
      for (const SizeCase& c : kSizes) {
        Image img = makeImage(c.width, c.height, c.fill, c.padding, c.flatValue);
        std::unique_ptr<SatBuilder> builder;
        Status st = cuda::createFusedSatBuilderWithConfig(build, c.width, c.height, config, &builder);
        ASSERT_TRUE(st.ok()) << st.message();
        DeviceFrame f;
        ASSERT_TRUE(upload(img, build, &f));
        st = enqueue(builder.get(), img, &f, nullptr);
        ASSERT_TRUE(st.ok()) << st.message();
        CUDA_OK(cudaDeviceSynchronize());
        EXPECT_TRUE(matchesCpu(img, build, f))
            << "tile " << config.tileWidth << " columns, " << config.warps << " warps x " << config.rowsPerWarp
            << " rows, window " << config.window << ", " << config.pixelsPerLane << " px per lane";
      }
    }
  }
}

// Back-to-back builds on one stream with no synchronisation between them: tickets and flags
// must reset themselves from one build to the next.
TEST(SatGpu, RepeatedBuildsOnOneStream) {
  SKIP_WITHOUT_GPU();
  const int d = streamTestDivisor();
  cudaStream_t stream;
  CUDA_OK(cudaStreamCreate(&stream));
  for (SatBuild build : kAllBuilds) {
    std::unique_ptr<SatBuilder> builder;
    Status st = SatBuilder::create(build, 1500 / d, 900 / d, &builder);
    ASSERT_TRUE(st.ok()) << st.message();
    std::vector<Image> images;
    std::vector<DeviceFrame> frames(6);
    for (int k = 0; k < 6; ++k)
      images.push_back(makeImage((1500 - 37 * k) / d, (900 - 101 * k) / d, Fill::Random, k));
    for (int k = 0; k < 6; ++k) ASSERT_TRUE(upload(images[k], build, &frames[k]));
    for (int round = 0; round < 3; ++round)  // the same frames again: each build must overwrite fully
      for (int k = 0; k < 6; ++k) {
        st = enqueue(builder.get(), images[k], &frames[k], stream);
        ASSERT_TRUE(st.ok()) << st.message();
      }
    CUDA_OK(cudaStreamSynchronize(stream));
    for (int k = 0; k < 6; ++k) EXPECT_TRUE(matchesCpu(images[k], build, frames[k])) << "frame " << k;
  }
  CUDA_OK(cudaStreamDestroy(stream));
}

// Two builders on two streams at once give the same tables as the CPU.
TEST(SatGpu, TwoBuildersOnTwoStreams) {
  SKIP_WITHOUT_GPU();
  const int d = streamTestDivisor();
  cudaStream_t streams[2];
  for (auto& s : streams) CUDA_OK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  for (SatBuild build : kAllBuilds) {
    std::unique_ptr<SatBuilder> builders[2];
    for (auto& b : builders) {
      Status st = SatBuilder::create(build, 2048 / d, 2048 / d, &b);
      ASSERT_TRUE(st.ok()) << st.message();
    }
    std::vector<Image> images;
    std::vector<DeviceFrame> frames(8);
    for (int k = 0; k < 8; ++k)
      images.push_back(makeImage((2048 - 13 * k) / d, (2048 - 29 * k) / d, Fill::Random, k % 3));
    for (int k = 0; k < 8; ++k) ASSERT_TRUE(upload(images[k], build, &frames[k]));
    for (int k = 0; k < 8; ++k) {
      Status st = enqueue(builders[k % 2].get(), images[k], &frames[k], streams[k % 2]);
      ASSERT_TRUE(st.ok()) << st.message();
    }
    CUDA_OK(cudaDeviceSynchronize());
    for (int k = 0; k < 8; ++k) EXPECT_TRUE(matchesCpu(images[k], build, frames[k])) << "frame " << k;
  }
  for (auto& s : streams) CUDA_OK(cudaStreamDestroy(s));
}

// fused32 box sums are exact while the true box sum is below 2^32: a box of N pixels of 255 has
// sumSq = N * 255^2, below 2^32 up to N = 66051 (369 x 179) and above it from N = 66052 (196 x 337).
TEST(SatGpu, Fused32BoxSumsExactBelowTwoToThe32) {
  SKIP_WITHOUT_GPU();
  const int w = 700, h = 600;  // whole-image sums wrap many times over
  Image img = makeImage(w, h, Fill::Flat, 4, 255);
  std::unique_ptr<SatBuilder> builder;
  Status st = SatBuilder::create(SatBuild::Fused32, w, h, &builder);
  ASSERT_TRUE(st.ok()) << st.message();
  DeviceFrame f;
  ASSERT_TRUE(upload(img, SatBuild::Fused32, &f));
  ASSERT_TRUE(enqueue(builder.get(), img, &f, nullptr).ok());
  std::vector<uint32_t> S(f.entries), Q(f.entries);
  CUDA_OK(cudaMemcpy(S.data(), f.sum.get(), f.entries * 4, cudaMemcpyDeviceToHost));
  CUDA_OK(cudaMemcpy(Q.data(), f.sumSq.get(), f.entries * 4, cudaMemcpyDeviceToHost));
  ASSERT_GT(int64_t(w) * h * 255 * 255, int64_t(1) << 33) << "the table itself must wrap";
  std::uniform_int_distribution<int> any(0, 1 << 20);
  for (int k = 0; k < 50; ++k) {
    // At the limit: exact.
    {
      const int bw = 369, bh = 179, x0 = any(rng()) % (w - bw + 1), y0 = any(rng()) % (h - bh + 1);
      const int64_t n = int64_t(bw) * bh, trueQ = n * 255 * 255;
      ASSERT_EQ(n, 66051);
      ASSERT_LT(trueQ, int64_t(1) << 32);
      EXPECT_EQ(int64_t(satBox(Q.data(), w, x0, y0, x0 + bw, y0 + bh)), trueQ) << x0 << "," << y0;
      EXPECT_EQ(int64_t(satBox(S.data(), w, x0, y0, x0 + bw, y0 + bh)), n * 255);
    }
    // One pixel past: the true sum no longer fits, the result is it mod 2^32.
    {
      const int bw = 196, bh = 337, x0 = any(rng()) % (w - bw + 1), y0 = any(rng()) % (h - bh + 1);
      const int64_t n = int64_t(bw) * bh, trueQ = n * 255 * 255;
      ASSERT_EQ(n, 66052);
      ASSERT_GE(trueQ, int64_t(1) << 32);
      const uint32_t got = satBox(Q.data(), w, x0, y0, x0 + bw, y0 + bh);
      EXPECT_NE(int64_t(got), trueQ);
      EXPECT_EQ(got, uint32_t(trueQ));
    }
  }
}

// On random data every box whose true sums fit in 32 bits comes out exact from fused32 tables.
TEST(SatGpu, Fused32RandomBoxesMatchInt64Boxes) {
  SKIP_WITHOUT_GPU();
  const int w = 1920, h = 1080;
  Image img = makeImage(w, h, Fill::Random, 0);
  std::unique_ptr<SatBuilder> builder;
  ASSERT_TRUE(SatBuilder::create(SatBuild::Fused32, w, h, &builder).ok());
  DeviceFrame f;
  ASSERT_TRUE(upload(img, SatBuild::Fused32, &f));
  ASSERT_TRUE(enqueue(builder.get(), img, &f, nullptr).ok());
  std::vector<uint32_t> S(f.entries), Q(f.entries);
  CUDA_OK(cudaMemcpy(S.data(), f.sum.get(), f.entries * 4, cudaMemcpyDeviceToHost));
  CUDA_OK(cudaMemcpy(Q.data(), f.sumSq.get(), f.entries * 4, cudaMemcpyDeviceToHost));
  std::vector<int64_t> S64(f.entries), Q64(f.entries);
  ASSERT_TRUE(buildSatCpu(img.bytes.data(), img.stride, w, h, S64.data(), Q64.data()).ok());
  std::uniform_int_distribution<int> dx(0, w - 1), dy(0, h - 1), side(1, 257);
  for (int k = 0; k < 2000; ++k) {
    const int x0 = dx(rng()), y0 = dy(rng());
    const int x1 = std::min(w, x0 + side(rng())), y1 = std::min(h, y0 + side(rng()));
    const int64_t trueQ = satBox(Q64.data(), w, x0, y0, x1, y1);
    ASSERT_LT(trueQ, int64_t(1) << 32);  // at most 257 x 257 = 66049 pixels
    ASSERT_EQ(int64_t(satBox(Q.data(), w, x0, y0, x1, y1)), trueQ);
    ASSERT_EQ(int64_t(satBox(S.data(), w, x0, y0, x1, y1)), satBox(S64.data(), w, x0, y0, x1, y1));
  }
}

// Argument checks need no device: they fail before anything is allocated or launched.
TEST(SatGpuArguments, CreateRejectsBadSizesAndBuilds) {
  std::unique_ptr<SatBuilder> b;
  for (auto [w, h] : {std::pair{0, 10}, std::pair{10, 0}, std::pair{-1, 5}, std::pair{16385, 10},
                      std::pair{10, 16385}}) {
    Status st = SatBuilder::create(SatBuild::Fused, w, h, &b);
    EXPECT_FALSE(st.ok()) << w << "x" << h;
    EXPECT_FALSE(st.message().empty());
    EXPECT_EQ(b, nullptr);
  }
  EXPECT_FALSE(SatBuilder::create(static_cast<SatBuild>(99), 10, 10, &b).ok());
  EXPECT_FALSE(SatBuilder::create(SatBuild::Naive, 10, 10, nullptr).ok());
  EXPECT_FALSE(cuda::createFusedSatBuilderWithConfig(SatBuild::Fused, 10, 10, {3, 5, false, false}, &b).ok());
}

TEST(SatGpuArguments, BuildRejectsBadFrames) {
  std::unique_ptr<SatBuilder> b;
  // The naive builder allocates nothing at creation, so this runs without a device too.
  ASSERT_TRUE(SatBuilder::create(SatBuild::Naive, 100, 50, &b).ok());
  const auto* img = reinterpret_cast<const uint8_t*>(uintptr_t(0x1000));
  void* s = reinterpret_cast<void*>(uintptr_t(0x2000));
  void* q = reinterpret_cast<void*>(uintptr_t(0x3000));
  EXPECT_FALSE(b->build(nullptr, 100, 100, 50, s, q, nullptr).ok());
  EXPECT_FALSE(b->build(img, 100, 100, 50, nullptr, q, nullptr).ok());
  EXPECT_FALSE(b->build(img, 100, 100, 50, s, nullptr, nullptr).ok());
  EXPECT_FALSE(b->build(img, 100, 0, 50, s, q, nullptr).ok());
  EXPECT_FALSE(b->build(img, 100, 100, 0, s, q, nullptr).ok());
  EXPECT_FALSE(b->build(img, 200, 101, 50, s, q, nullptr).ok());  // wider than the maximum
  EXPECT_FALSE(b->build(img, 100, 100, 51, s, q, nullptr).ok());  // taller than the maximum
  Status st = b->build(img, 99, 100, 50, s, q, nullptr);          // pitch below width
  EXPECT_FALSE(st.ok());
  EXPECT_NE(st.message().find("pitch"), std::string::npos) << st.message();
}

TEST(SatGpuArguments, BuildNamesRoundTrip) {
  for (SatBuild build : kAllBuilds) {
    SatBuild parsed = SatBuild::Naive;
    ASSERT_TRUE(cuda::parseSatBuild(cuda::satBuildName(build), &parsed));
    EXPECT_EQ(parsed, build);
    EXPECT_EQ(cuda::satEntryBytes(build), build == SatBuild::Fused32 ? 4u : 8u);
  }
  EXPECT_FALSE(cuda::parseSatBuild("fast", nullptr));
}

}  // namespace
}  // namespace nccmatch::test
