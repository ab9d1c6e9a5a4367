// Window sums from the pixels (column sums slid down row by row) against brute-force sums over
// every window: blocks that start anywhere, templates through 1 and up to the frame, strides
// with padding, bright frames (the largest sums), and windowSumsAt at single positions.
#include <gtest/gtest.h>

#include "cpu/cpu_window_sums.hpp"
#include "test_support.hpp"

namespace nccmatch::test {
namespace {

struct SumsCase {
  int w, h, tw, th;
  std::size_t padding;
  Fill fill;
};

void bruteSums(const Image& img, int x, int y, int tw, int th, int64_t* s1, int64_t* s2) {
  int64_t a = 0, b = 0;
  for (int r = 0; r < th; ++r)
    for (int c = 0; c < tw; ++c) {
      const int64_t v = img.at(x + c, y + r);
      a += v, b += v * v;
    }
  *s1 = a, *s2 = b;
}

class CpuWindowSums : public ::testing::TestWithParam<SumsCase> {};

TEST_P(CpuWindowSums, EveryWindowOfABlockMatchesBruteForce) {
  const SumsCase c = GetParam();
  Image img = makeImage(c.w, c.h, c.fill, c.padding, 255);
  const int mapW = c.w - c.tw + 1, mapH = c.h - c.th + 1;
  // The whole map, and a block that starts inside it (as a tile or a thread's rows do).
  for (auto [x0, y0] : {std::pair{0, 0}, std::pair{mapW / 3, mapH / 2}}) {
    const int count = mapW - x0;
    WindowSumRows rows;
    rows.start(img.bytes.data(), img.stride, c.tw, c.th, x0, count, y0);
    std::vector<int64_t> s1(count), s2(count);
    for (int y = y0; y < mapH; ++y) {
      if (y > y0) rows.advance();
      rows.sums(s1.data(), s2.data());
      for (int i = 0; i < count; ++i) {
        int64_t want1, want2;
        bruteSums(img, x0 + i, y, c.tw, c.th, &want1, &want2);
        ASSERT_EQ(s1[i], want1) << "window " << x0 + i << "," << y << " " << describe(c.w, c.h, c.padding);
        ASSERT_EQ(s2[i], want2) << "window " << x0 + i << "," << y << " " << describe(c.w, c.h, c.padding);
        int64_t at1, at2;
        windowSumsAt(img.bytes.data(), img.stride, x0 + i, y, c.tw, c.th, &at1, &at2);
        ASSERT_EQ(at1, want1);
        ASSERT_EQ(at2, want2);
      }
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Sizes, CpuWindowSums, ::testing::Values(
    //       frame     template  pad  fill
    SumsCase{1, 1,     1, 1,     0,   Fill::Random},
    SumsCase{1, 29,    1, 4,     3,   Fill::Random},
    SumsCase{33, 1,    5, 1,     0,   Fill::Random},
    SumsCase{17, 13,   17, 13,   1,   Fill::Random},   // template == frame
    SumsCase{70, 45,   1, 1,     0,   Fill::Binary},
    SumsCase{70, 45,   9, 31,    5,   Fill::Smooth},
    SumsCase{131, 77,  64, 16,   0,   Fill::Random},
    SumsCase{90, 80,   40, 60,   2,   Fill::Flat}));    // all 255: the largest sums

}  // namespace
}  // namespace nccmatch::test
