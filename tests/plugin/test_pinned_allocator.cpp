// The pinned GstAllocator: where CUDA is usable, memory of every size through 1 byte, with prefix
// and padding, mapped, written, shared and copied; elsewhere no allocator and the reason.
#include "pinned_allocator.hpp"

#include <gtest/gtest.h>

#include <cstring>

#include "nccmatch/engine.hpp"
#include "plugin_test_support.hpp"

namespace nccmatch::plugin {
namespace {

class PinnedAllocator : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { nccmatch::test::initGstreamer(); }
};

TEST_F(PinnedAllocator, WithoutAGpuThereIsNoneAndTheReasonIsGiven) {
  std::string why;
  if (nccmatch::cudaAvailable(&why)) GTEST_SKIP() << "a CUDA device is usable here";
  std::string reason;
  EXPECT_EQ(pinnedAllocator(&reason), nullptr);
  EXPECT_FALSE(reason.empty());
}

TEST_F(PinnedAllocator, MemoryOfEverySizeMapsWritesSharesAndCopies) {
  std::string why;
  if (!nccmatch::cudaAvailable(&why)) GTEST_SKIP() << why;
  GstAllocator* allocator = pinnedAllocator(&why);
  ASSERT_NE(allocator, nullptr) << why;
  struct Case {
    gsize size, prefix, padding;
  } cases[] = {{1, 0, 0}, {4095, 0, 0}, {4096, 0, 0}, {1920 * 1080 * 3 / 2, 0, 0}, {100, 16, 32}};
  for (const Case& c : cases) {
    SCOPED_TRACE(::testing::Message() << c.size << " bytes, prefix " << c.prefix << ", padding " << c.padding);
    GstAllocationParams params;
    gst_allocation_params_init(&params);
    params.prefix = c.prefix;
    params.padding = c.padding;
    params.flags = GstMemoryFlags(GST_MEMORY_FLAG_ZERO_PREFIXED | GST_MEMORY_FLAG_ZERO_PADDED);
    GstMemory* memory = gst_allocator_alloc(allocator, c.size, &params);
    ASSERT_NE(memory, nullptr);
    EXPECT_TRUE(isPinnedMemory(memory));
    EXPECT_EQ(gst_memory_get_sizes(memory, nullptr, nullptr), c.size);
    std::vector<uint8_t> bytes(c.size);
    for (uint8_t& b : bytes) b = uint8_t(nccmatch::test::rng()());
    GstMapInfo map;
    ASSERT_TRUE(gst_memory_map(memory, &map, GST_MAP_WRITE));
    EXPECT_EQ(map.size, c.size);
    std::memcpy(map.data, bytes.data(), c.size);
    gst_memory_unmap(memory, &map);

    GstMemory* copy = gst_memory_copy(memory, 0, -1);
    ASSERT_TRUE(gst_memory_map(copy, &map, GST_MAP_READ));
    EXPECT_EQ(std::memcmp(map.data, bytes.data(), c.size), 0);
    gst_memory_unmap(copy, &map);
    gst_memory_unref(copy);

    if (c.size > 2) {
      GstMemory* share = gst_memory_share(memory, 1, gssize(c.size - 2));
      EXPECT_TRUE(isPinnedMemory(share));
      ASSERT_TRUE(gst_memory_map(share, &map, GST_MAP_READ));
      EXPECT_EQ(map.size, c.size - 2);
      EXPECT_EQ(std::memcmp(map.data, bytes.data() + 1, c.size - 2), 0);
      gst_memory_unmap(share, &map);
      gst_memory_unref(share);
    }
    gst_memory_unref(memory);
  }
  gst_object_unref(allocator);
}

TEST_F(PinnedAllocator, AFreedFrameIsReusedByTheNextPool) {
  std::string why;
  if (!nccmatch::cudaAvailable(&why)) GTEST_SKIP() << why;
  GstAllocator* allocator = pinnedAllocator(&why);
  ASSERT_NE(allocator, nullptr) << why;
  // What a producer that renegotiates per frame does: a new pool, one frame, the pool freed.
  const gsize frame = 1920 * 1080;
  GstMemory* first = gst_allocator_alloc(allocator, frame, nullptr);
  ASSERT_NE(first, nullptr);
  GstMapInfo map;
  ASSERT_TRUE(gst_memory_map(first, &map, GST_MAP_READ));
  const guint8* block = map.data;
  gst_memory_unmap(first, &map);
  gst_memory_unref(first);
  for (int i = 0; i < 10; ++i) {
    GstMemory* again = gst_allocator_alloc(allocator, frame, nullptr);
    ASSERT_NE(again, nullptr);
    ASSERT_TRUE(gst_memory_map(again, &map, GST_MAP_READ));
    EXPECT_EQ(map.data, block) << "frame " << i << " got a new pinned block";
    gst_memory_unmap(again, &map);
    gst_memory_unref(again);
  }
  gst_object_unref(allocator);
}

}  // namespace
}  // namespace nccmatch::plugin
