// Shared helpers for the kernels tests: fresh random data (seed printed for reproduction),
// padded frames, and the brute-force double-precision definitions of the six methods.
#pragma once

#include <cstdint>
#include <memory>
#include <ostream>
#include <random>
#include <string>
#include <vector>

#include "nccmatch/engine.hpp"
#include "nccmatch/types.hpp"

namespace nccmatch::test {

// A generator seeded freshly per process (or from NCCMATCH_TEST_SEED); the seed is printed once.
std::mt19937_64& rng();
uint64_t testSeed();

// A whole-number setting from the environment (the sanitizer script's scalings of heavy tests):
// `fallback` when `name` is unset, else its value kept within [least, most].
long long envSetting(const char* name, long long fallback, long long least, long long most);

// An 8-bit image with a row stride >= width; the padding bytes hold a poison value so that a
// kernel reading past the row shows up as a wrong result.
struct Image {
  int width = 0;
  int height = 0;
  std::size_t stride = 0;
  std::vector<uint8_t> bytes;
  uint8_t& at(int x, int y) { return bytes[std::size_t(y) * stride + x]; }
  uint8_t at(int x, int y) const { return bytes[std::size_t(y) * stride + x]; }
  FrameView view() const { return FrameView{bytes.data(), width, height, stride, MemoryKind::Host}; }
};

enum class Fill { Random, Flat, Smooth, Binary };
Image makeImage(int width, int height, Fill fill, std::size_t padding = 0, uint8_t flatValue = 77);
TemplateImage cutTemplate(const Image& image, int x, int y, int width, int height, std::string name = "t");
TemplateImage makeTemplate(int width, int height, Fill fill, std::string name = "t", uint8_t flatValue = 77);
void paste(Image* image, const TemplateImage& t, int x, int y);

// The definition of each method evaluated at one position with plain double loops
// (no tables, no shortcuts), with OpenCV's CPU rules for flat windows and templates. Under the
// template's mask, OpenCV's binary-mask definitions: sums, means and norms over compared pixels
// only; an empty mask scores as an all-zero template.
double bruteForceScore(const Image& image, const TemplateImage& t, Method method, int x, int y);

// Template masks for tests: every pixel (255, or assorted nonzero values), the centre pixel only,
// the inscribed disc, a ring (values 1), random (about a third ignored), none.
enum class MaskShape { Full, FullNonBinary, OnePixel, Disc, Ring, Random, Empty };
std::vector<uint8_t> makeMask(int width, int height, MaskShape shape);
const char* maskShapeName(MaskShape shape);

std::string describe(int w, int h, std::size_t padding);

// A CPU engine on the given path (a test failure, and null, if it cannot be made).
std::unique_ptr<Engine> makeCpuEngine(CpuPath path, int threads = 0);

// One row of a CPU score-map test table: frame and template sizes, row padding, fills.
struct ScoreMapCase {
  int frameW, frameH;
  int tplW, tplH;
  std::size_t padding;
  Fill frameFill, tplFill;
};
std::ostream& operator<<(std::ostream& os, const ScoreMapCase& c);

}  // namespace nccmatch::test

namespace nccmatch {
// gtest prints a Method parameter by its name (found by argument-dependent lookup).
inline void PrintTo(Method method, std::ostream* os) { *os << methodName(method); }
inline void PrintTo(MemoryKind memory, std::ostream* os) { *os << (memory == MemoryKind::Device ? "device" : "host"); }
}  // namespace nccmatch
