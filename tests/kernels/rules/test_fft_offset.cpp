// The fft path's sampled frame offset (rules/fft_offset.hpp): every sample lies inside frames of
// 1 to 4 099 pixels a side, the grid covers the frame evenly (each stripe's centre), a flat frame
// gives its value exactly, and on random frames of many kinds the offset is near the frame's
// mean, so the transform's input stays small (the float rounding bound follows ||I - offset||).
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <random>
#include <vector>

#include "rules/fft_offset.hpp"
#include "test_support.hpp"

namespace nccmatch {
namespace {

TEST(FftOffset, SamplesStayInsideEverySide) {
  for (int length : {1, 2, 3, 31, 32, 33, 63, 64, 65, 255, 1079, 1080, 1920, 4099}) {
    int previous = -1;
    for (int i = 0; i < kFftOffsetGrid; ++i) {
      const int at = fftOffsetSampleAt(i, length);
      ASSERT_GE(at, 0) << "length " << length << " sample " << i;
      ASSERT_LT(at, length) << "length " << length << " sample " << i;
      ASSERT_GE(at, previous) << "samples out of order, length " << length;
      previous = at;
    }
    // At 32 pixels or more, every sample is its own stripe's centre: all distinct.
    if (length >= kFftOffsetGrid) {
      for (int i = 1; i < kFftOffsetGrid; ++i)
        EXPECT_GT(fftOffsetSampleAt(i, length), fftOffsetSampleAt(i - 1, length)) << "length " << length;
    }
  }
  EXPECT_EQ(fftOffsetSampleAt(0, 64), 1);
  EXPECT_EQ(fftOffsetSampleAt(31, 64), 63);
  EXPECT_EQ(fftOffsetSampleAt(0, 1920), 30);
  EXPECT_EQ(fftOffsetSampleAt(31, 1920), 1890);
}

TEST(FftOffset, FlatFrameGivesItsValue) {
  for (int value : {0, 1, 128, 254, 255}) {
    for (auto [w, h] : {std::pair{1, 1}, {7, 3}, {640, 360}}) {
      const std::size_t pitch = std::size_t(w) + 5;
      std::vector<uint8_t> frame(pitch * h, uint8_t(value));
      EXPECT_EQ(fftSampledOffset(frame.data(), pitch, w, h), double(value)) << w << "x" << h;
    }
  }
}

TEST(FftOffset, OnlyTheGridIsRead) {
  // The pitch's padding and the pixels between samples do not change the offset; a sample does.
  const int w = 200, h = 100;
  const std::size_t pitch = 256;
  std::vector<uint8_t> frame(pitch * h, 50);
  const double flat = fftSampledOffset(frame.data(), pitch, w, h);
  for (int y = 0; y < h; ++y)
    for (std::size_t x = w; x < pitch; ++x) frame[y * pitch + x] = 255;
  frame[0] = 255;  // (0, 0) lies between samples for 200 x 100
  EXPECT_EQ(fftSampledOffset(frame.data(), pitch, w, h), flat);
  const int sx = fftOffsetSampleAt(5, w), sy = fftOffsetSampleAt(7, h);
  frame[std::size_t(sy) * pitch + sx] = 50 + 128;
  EXPECT_EQ(fftSampledOffset(frame.data(), pitch, w, h), flat + 128.0 / kFftOffsetSamples);
}

TEST(FftOffset, NearTheMeanOfRandomFrames) {
  std::mt19937_64& gen = test::rng();
  for (int round = 0; round < 40; ++round) {
    const int w = 1 + int(gen() % 1500), h = 1 + int(gen() % 900);
    const int level = int(gen() % 200), spread = 1 + int(gen() % 55), gradient = int(gen() % 3);
    std::vector<uint8_t> frame(std::size_t(w) * h);
    double total = 0;
    for (int y = 0; y < h; ++y)
      for (int x = 0; x < w; ++x) {
        const int v = level + int(gen() % spread) + gradient * (x * 20 / w + y * 10 / h);
        frame[std::size_t(y) * w + x] = uint8_t(v > 255 ? 255 : v);
        total += frame[std::size_t(y) * w + x];
      }
    const double mean = total / (double(w) * h);
    // Noise of at most 55 levels averaged over 1 024 samples, plus the gradient's stripes.
    EXPECT_NEAR(fftSampledOffset(frame.data(), w, w, h), mean, 4.0 + gradient)
        << w << "x" << h << " level " << level << " spread " << spread;
  }
}

}  // namespace
}  // namespace nccmatch
