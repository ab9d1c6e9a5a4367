// Box drawing on strided 8-bit planes: rings inside the box, clipping at every edge, padding untouched.
#include <gtest/gtest.h>

#include "box_drawing.hpp"
#include "test_support.hpp"

namespace nccmatch::plugin {
namespace {

using nccmatch::test::Fill;
using nccmatch::test::Image;
using nccmatch::test::makeImage;

PlaneView viewOf(Image* image) { return PlaneView{image->bytes.data(), image->width, image->height, image->stride}; }

bool inside(const Box& b, long x, long y) {
  return x >= b.x && y >= b.y && x < long(b.x) + b.width && y < long(b.y) + b.height;
}

// The value drawRing must leave at (x, y): `value` on the ring, the original elsewhere.
int expectedRing(const Image& before, const Box& b, int t, uint8_t value, int x, int y) {
  bool onRing = inside(b, x, y) && !inside(Box{b.x + t, b.y + t, b.width - 2 * t, b.height - 2 * t}, x, y);
  return onRing && t >= 1 ? value : before.at(x, y);
}

void expectPaddingUntouched(const Image& before, const Image& after) {
  for (int y = 0; y < after.height; ++y)
    for (std::size_t x = after.width; x < after.stride; ++x)
      ASSERT_EQ(after.bytes[y * after.stride + x], before.bytes[y * before.stride + x]) << "padding at row " << y;
}

struct RingCase {
  int width, height, padding;  // plane
  Box box;
  int thickness;
};

TEST(DrawRing, MatchesTheDefinitionWithClipping) {
  const RingCase cases[] = {
      {32, 24, 0, {4, 5, 10, 8}, 1},      // inside
      {32, 24, 7, {4, 5, 10, 8}, 2},      // padded rows
      {33, 17, 3, {0, 0, 33, 17}, 3},     // the whole plane
      {32, 24, 5, {-3, -2, 8, 6}, 2},     // over the top-left corner
      {32, 24, 5, {28, 20, 10, 10}, 2},   // over the bottom-right corner
      {32, 24, 1, {40, 30, 5, 5}, 2},     // wholly outside
      {32, 24, 0, {7, 7, 1, 1}, 2},       // 1x1 box
      {32, 24, 0, {7, 7, 3, 9}, 5},       // thicker than the box: filled
      {1, 1, 0, {0, 0, 1, 1}, 1},         // 1x1 plane
      {32, 24, 4, {3, 3, 0, 5}, 2},       // empty box
      {32, 24, 4, {3, 3, 5, 5}, 0},       // thickness 0
  };
  for (const RingCase& c : cases) {
    SCOPED_TRACE(::testing::Message() << c.width << "x" << c.height << "+" << c.padding << " box " << c.box.x << ","
                                      << c.box.y << " " << c.box.width << "x" << c.box.height << " t" << c.thickness);
    Image before = makeImage(c.width, c.height, Fill::Random, c.padding);
    Image after = before;
    uint8_t value = uint8_t(nccmatch::test::rng()() & 0xff);
    drawRing(viewOf(&after), c.box, c.thickness, value);
    for (int y = 0; y < c.height; ++y)
      for (int x = 0; x < c.width; ++x)
        ASSERT_EQ(after.at(x, y), expectedRing(before, c.box, c.thickness, value, x, y)) << "at " << x << "," << y;
    expectPaddingUntouched(before, after);
  }
}

TEST(DrawRing, ExtremeBoxesDoNotOverflow) {
  Image before = makeImage(16, 16, Fill::Random, 2);
  Image after = before;
  const Box boxes[] = {{INT32_MAX, INT32_MAX, INT32_MAX, INT32_MAX},
                       {INT32_MIN, INT32_MIN, INT32_MAX, INT32_MAX},
                       {-5, -5, -5, -5}};
  for (const Box& b : boxes) {
    drawRing(viewOf(&after), b, 3, 0);
    drawMatchBox(viewOf(&after), b);
  }
  // None of these boxes reaches the plane: nothing may change.
  EXPECT_EQ(after.bytes, before.bytes);
}

TEST(DrawMatchBox, WhiteRingThenBlackRingInside) {
  Image plane = makeImage(40, 30, Fill::Flat, 3, 100);
  Box b{5, 6, 12, 10};
  drawMatchBox(viewOf(&plane), b);
  const int t = kMatchRingThickness;
  for (int y = 0; y < plane.height; ++y) {
    for (int x = 0; x < plane.width; ++x) {
      int expected = 100;
      if (inside(b, x, y)) {
        if (!inside(Box{b.x + t, b.y + t, b.width - 2 * t, b.height - 2 * t}, x, y))
          expected = 255;
        else if (!inside(Box{b.x + t + 1, b.y + t + 1, b.width - 2 * t - 2, b.height - 2 * t - 2}, x, y))
          expected = 0;
      }
      ASSERT_EQ(plane.at(x, y), expected) << "at " << x << "," << y;
    }
  }
}

TEST(DrawMatchBox, SmallBoxIsAllWhite) {
  Image plane = makeImage(10, 10, Fill::Flat, 0, 50);
  drawMatchBox(viewOf(&plane), Box{2, 2, 2 * kMatchRingThickness, 3});
  for (int y = 2; y < 5; ++y)
    for (int x = 2; x < 2 + 2 * kMatchRingThickness; ++x) EXPECT_EQ(plane.at(x, y), 255);
  EXPECT_EQ(plane.at(1, 1), 50);
}

}  // namespace
}  // namespace nccmatch::plugin
