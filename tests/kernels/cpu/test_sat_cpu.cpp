// The CPU SAT build and the four-corner query against direct sums.
#include <gtest/gtest.h>

#include "nccmatch/sat.hpp"
#include "test_support.hpp"

namespace nccmatch::test {
namespace {

struct SatCase {
  int width, height;
  std::size_t padding;
};

class SatCpu : public ::testing::TestWithParam<SatCase> {};

TEST_P(SatCpu, BoxSumsMatchDirectSums) {
  const SatCase c = GetParam();
  Image img = makeImage(c.width, c.height, Fill::Random, c.padding);
  std::vector<int64_t> S(std::size_t(c.width) * c.height), Q(S.size());
  ASSERT_TRUE(buildSatCpu(img.bytes.data(), img.stride, c.width, c.height, S.data(), Q.data()).ok());
  std::uniform_int_distribution<int> dx(0, c.width - 1), dy(0, c.height - 1);
  for (int k = 0; k < 200; ++k) {
    int x0 = dx(rng()), x1 = dx(rng()), y0 = dy(rng()), y1 = dy(rng());
    if (x0 > x1) std::swap(x0, x1);
    if (y0 > y1) std::swap(y0, y1);
    ++x1; ++y1;
    int64_t sum = 0, sumSq = 0;
    for (int y = y0; y < y1; ++y)
      for (int x = x0; x < x1; ++x) { sum += img.at(x, y); sumSq += img.at(x, y) * img.at(x, y); }
    ASSERT_EQ(satBox(S.data(), c.width, x0, y0, x1, y1), sum) << describe(c.width, c.height, c.padding);
    ASSERT_EQ(satBox(Q.data(), c.width, x0, y0, x1, y1), sumSq);
  }
  // The last entry is the whole-image sum.
  int64_t total = 0;
  for (int y = 0; y < c.height; ++y) for (int x = 0; x < c.width; ++x) total += img.at(x, y);
  EXPECT_EQ(S.back(), total);
}

INSTANTIATE_TEST_SUITE_P(Sizes, SatCpu, ::testing::Values(
    //       width height padding
    SatCase{1, 1, 0}, SatCase{1, 37, 3}, SatCase{41, 1, 0}, SatCase{31, 17, 5},
    SatCase{64, 64, 0}, SatCase{65, 63, 1}, SatCase{257, 129, 7}, SatCase{640, 480, 0}));

TEST(SatCpu, AllWhiteLargeFramePassesInt32) {
  // 3000x3000 of 255: sum of squares ~5.9e11, far past 2^32; int64 must hold it exactly.
  const int w = 3000, h = 3000;
  std::vector<uint8_t> img(std::size_t(w) * h, 255);
  std::vector<int64_t> S(img.size()), Q(img.size());
  ASSERT_TRUE(buildSatCpu(img.data(), w, w, h, S.data(), Q.data()).ok());
  EXPECT_EQ(S.back(), int64_t(w) * h * 255);
  EXPECT_EQ(Q.back(), int64_t(w) * h * 255 * 255);
}

TEST(SatCpu, RejectsBadArguments) {
  std::vector<uint8_t> img(16, 1);
  std::vector<int64_t> S(16), Q(16);
  EXPECT_FALSE(buildSatCpu(nullptr, 4, 4, 4, S.data(), Q.data()).ok());
  EXPECT_FALSE(buildSatCpu(img.data(), 4, 0, 4, S.data(), Q.data()).ok());
  Status s = buildSatCpu(img.data(), 3, 4, 4, S.data(), Q.data());
  EXPECT_FALSE(s.ok());
  EXPECT_NE(s.message().find("stride"), std::string::npos) << s.message();
}

}  // namespace
}  // namespace nccmatch::test
