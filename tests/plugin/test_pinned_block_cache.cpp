// The pinned block cache with counting stand-ins for the pinned allocation: blocks come back for a
// request of their size, other sizes allocate, the bounds release the oldest blocks, and whatever
// is held is released with the cache.
#include "pinned_block_cache.hpp"

#include <gtest/gtest.h>

#include <cstdlib>
#include <set>

namespace nccmatch::plugin {
namespace {

struct Counts {
  int allocated = 0, released = 0;
  std::set<void*> live;
};

PinnedBlockCache makeCache(Counts* c, std::size_t maxBlocks, std::size_t maxBytes) {
  return PinnedBlockCache(
      [c](std::size_t bytes) {
        ++c->allocated;
        void* b = std::malloc(bytes);
        c->live.insert(b);
        return b;
      },
      [c](void* b) {
        ++c->released;
        c->live.erase(b);
        std::free(b);
      },
      maxBlocks, maxBytes);
}

TEST(PinnedBlockCache, AFreedBlockServesTheNextRequestOfItsSize) {
  Counts c;
  {
    PinnedBlockCache cache = makeCache(&c, 4, 1 << 20);
    // A producer that makes a new pool per frame: one block a frame, freed before the next.
    void* first = cache.take(1000);
    cache.give(first, 1000);
    for (int frame = 0; frame < 100; ++frame) {
      void* b = cache.take(1000);
      EXPECT_EQ(b, first) << "frame " << frame;
      cache.give(b, 1000);
    }
    EXPECT_EQ(c.allocated, 1);
    EXPECT_EQ(c.released, 0);
    EXPECT_EQ(cache.heldBlocks(), 1u);
    EXPECT_EQ(cache.heldBytes(), 1000u);
  }
  EXPECT_EQ(c.released, 1);  // the cache releases what it holds
  EXPECT_TRUE(c.live.empty());
}

TEST(PinnedBlockCache, OtherSizesAllocateAndTheBoundsReleaseTheOldest) {
  struct Case {
    std::size_t maxBlocks, maxBytes;
    int given;             // blocks of 100 bytes given back, 1..given
    std::size_t expected;  // held afterwards
  } cases[] = {
      {4, 1 << 20, 3, 3},  // within both bounds
      {4, 1 << 20, 9, 4},  // block bound
      {100, 250, 9, 2},    // byte bound
      {0, 1 << 20, 5, 0},  // holds nothing: every block released at once
  };
  for (const Case& k : cases) {
    SCOPED_TRACE(::testing::Message() << "maxBlocks " << k.maxBlocks << ", maxBytes " << k.maxBytes);
    Counts c;
    PinnedBlockCache cache = makeCache(&c, k.maxBlocks, k.maxBytes);
    std::vector<void*> blocks;
    for (int i = 0; i < k.given; ++i) blocks.push_back(cache.take(100));
    for (void* b : blocks) cache.give(b, 100);
    EXPECT_EQ(cache.heldBlocks(), k.expected);
    EXPECT_EQ(c.released, int(k.given - k.expected));
    // The newest blocks stay: a take of the same size returns the last one given.
    if (k.expected > 0) {
      EXPECT_EQ(cache.take(100), blocks.back());
    }
    const int before = c.allocated;
    void* other = cache.take(101);  // no held block of this size
    EXPECT_EQ(c.allocated, before + 1);
    cache.give(other, 101);
  }
}

TEST(PinnedBlockCache, AFailedAllocationIsNull) {
  PinnedBlockCache cache([](std::size_t) -> void* { return nullptr; }, [](void*) {}, 4, 1 << 20);
  EXPECT_EQ(cache.take(10), nullptr);
  cache.give(nullptr, 10);  // ignored
  EXPECT_EQ(cache.heldBlocks(), 0u);
}

}  // namespace
}  // namespace nccmatch::plugin
