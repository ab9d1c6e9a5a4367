// shiftChunk (cuda/numerator/chunk_shift.hpp), the tile loads' unaligned path, on the host: every
// shift 0..15 of random 32-byte pairs gives bytes shift..shift+15 of the pair, byte for byte.
// Needs no device (the same code runs in the kernels' tile loads).
#include <gtest/gtest.h>

#include <cstring>

#include "cuda/numerator/chunk_shift.hpp"
#include "test_support.hpp"

namespace nccmatch::test {
namespace {

TEST(ChunkShift, EveryShiftGivesTheSixteenBytesFromThere) {
  std::mt19937_64& g = rng();
  for (int trial = 0; trial < 200; ++trial) {
    uint8_t bytes[32];
    for (uint8_t& b : bytes) b = uint8_t(g());
    if (trial == 0) std::memset(bytes, 0xff, sizeof(bytes));  // every bit set: no bit lost or added by the shifts
    uint32_t lo[4], hi[4];
    std::memcpy(lo, bytes, 16);  // the words as the device loads them (little-endian)
    std::memcpy(hi, bytes + 16, 16);
    for (unsigned shift = 0; shift < 16; ++shift) {
      uint32_t out[4];
      cuda::image_tile::shiftChunk(lo, hi, shift, out);
      uint8_t got[16];
      std::memcpy(got, out, 16);
      for (int b = 0; b < 16; ++b)
        ASSERT_EQ(got[b], bytes[shift + b]) << "shift " << shift << ", byte " << b << ", trial " << trial
                                            << ", seed " << testSeed();
    }
  }
}

}  // namespace
}  // namespace nccmatch::test
