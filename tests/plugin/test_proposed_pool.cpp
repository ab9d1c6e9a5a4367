// The pool the element proposes upstream, with GStreamer's system allocator standing in for the
// pinned one: equal caps get the same pool back (also once a producer activated it and sets the
// same configuration again, as GstVideoDecoder does on every renegotiation), other caps, sizes or
// allocators a new one, and reset drops it.
#include "proposed_pool.hpp"

#include <gst/video/video.h>
#include <gtest/gtest.h>

#include <utility>

#include "plugin_test_support.hpp"

namespace nccmatch::plugin {
namespace {

class ProposedPoolTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { nccmatch::test::initGstreamer(); }
  void SetUp() override { system_ = gst_allocator_find(nullptr); }
  void TearDown() override { gst_object_unref(system_); }

  static GstCaps* caps(int width, int height) {
    return gst_caps_new_simple("video/x-raw", "format", G_TYPE_STRING, "GRAY8", "width", G_TYPE_INT, width, "height",
                               G_TYPE_INT, height, "framerate", GST_TYPE_FRACTION, 30, 1, nullptr);
  }

  GstAllocator* system_ = nullptr;
};

// What a producer does with the proposed pool: configure it as it likes (here: its own minimum)
// and activate it; false when the pool refuses.
bool useAsAProducerDoes(GstBufferPool* pool, GstCaps* caps, guint size) {
  GstStructure* config = gst_buffer_pool_get_config(pool);
  gst_buffer_pool_config_set_params(config, caps, size, 2, 0);
  if (!gst_buffer_pool_set_config(pool, config)) return false;
  return gst_buffer_pool_set_active(pool, TRUE);
}

TEST_F(ProposedPoolTest, EqualCapsGetTheSamePoolEvenOnceAProducerActivatedIt) {
  ProposedPool proposed;
  GstCaps* a = caps(64, 48);
  GstCaps* sameAsA = caps(64, 48);  // equal, not the same object: as a producer re-sends them
  GstBufferPool* first = proposed.forCaps(a, 64 * 48, system_);
  ASSERT_NE(first, nullptr);
  ASSERT_TRUE(useAsAProducerDoes(first, a, 64 * 48));
  for (int frame = 0; frame < 100; ++frame) {
    GstBufferPool* again = proposed.forCaps(sameAsA, 64 * 48, system_);
    EXPECT_EQ(again, first);
    ASSERT_TRUE(useAsAProducerDoes(again, sameAsA, 64 * 48)) << "the same configuration set again is accepted";
    GstBuffer* buffer = nullptr;
    ASSERT_EQ(gst_buffer_pool_acquire_buffer(again, &buffer, nullptr), GST_FLOW_OK);
    gst_buffer_unref(buffer);
    gst_object_unref(again);
  }
  EXPECT_EQ(proposed.made(), 1);
  gst_buffer_pool_set_active(first, FALSE);
  gst_object_unref(first);
  gst_caps_unref(a);
  gst_caps_unref(sameAsA);
}

TEST_F(ProposedPoolTest, OtherCapsSizeOrAllocatorGetANewPool) {
  ProposedPool proposed;
  GstCaps* a = caps(64, 48);
  GstCaps* b = caps(32, 48);
  GstBufferPool* first = proposed.forCaps(a, 64 * 48, system_);
  GstBufferPool* otherCaps = proposed.forCaps(b, 32 * 48, system_);
  GstBufferPool* otherSize = proposed.forCaps(b, 32 * 48 + 64, system_);
  GstBufferPool* otherAllocator = proposed.forCaps(b, 32 * 48 + 64, nullptr);  // GStreamer's default
  ASSERT_TRUE(first && otherCaps && otherSize && otherAllocator);
  EXPECT_NE(first, otherCaps);
  EXPECT_NE(otherCaps, otherSize);
  EXPECT_NE(otherSize, otherAllocator);
  EXPECT_EQ(proposed.made(), 4);
  // The pool made last is the one kept.
  GstBufferPool* kept = proposed.forCaps(b, 32 * 48 + 64, nullptr);
  EXPECT_EQ(kept, otherAllocator);
  for (GstBufferPool* p : {first, otherCaps, otherSize, otherAllocator, kept}) gst_object_unref(p);
  gst_caps_unref(a);
  gst_caps_unref(b);
}

TEST_F(ProposedPoolTest, ResetAndMoveHandTheKeptPoolOn) {
  GstCaps* a = caps(64, 48);
  ProposedPool proposed;
  GstBufferPool* first = proposed.forCaps(a, 64 * 48, system_);
  ProposedPool moved = std::move(proposed);  // StreamState is reset by assignment at stop
  GstBufferPool* fromMoved = moved.forCaps(a, 64 * 48, system_);
  EXPECT_EQ(fromMoved, first);
  EXPECT_EQ(moved.made(), 1);
  moved.reset();
  GstBufferPool* afterReset = moved.forCaps(a, 64 * 48, system_);
  EXPECT_NE(afterReset, first);
  EXPECT_EQ(moved.made(), 2);
  // The pools' last references are the test's: the kept one is released with `moved`.
  for (GstBufferPool* p : {first, fromMoved, afterReset}) gst_object_unref(p);
  gst_caps_unref(a);
}

}  // namespace
}  // namespace nccmatch::plugin
