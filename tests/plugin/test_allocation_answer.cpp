// Downstream's allocation answer kept per caps: replayed whole (pools, allocators with their
// parameters, metas with theirs, the result) into a query of equal caps and need-pool; nothing
// for other caps, another need-pool or after reset; moves hand it on.
#include "allocation_answer.hpp"

#include <gst/video/video.h>
#include <gtest/gtest.h>

#include <utility>

#include "plugin_test_support.hpp"

namespace nccmatch::plugin {
namespace {

class AllocationAnswerTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { nccmatch::test::initGstreamer(); }
  static GstCaps* caps(int width) {
    return gst_caps_new_simple("video/x-raw", "format", G_TYPE_STRING, "GRAY8", "width", G_TYPE_INT, width, "height",
                               G_TYPE_INT, 48, nullptr);
  }
};

TEST_F(AllocationAnswerTest, EqualCapsGetTheWholeAnswerBack) {
  GstCaps* a = caps(64);
  GstQuery* answered = gst_query_new_allocation(a, TRUE);
  GstBufferPool* pool = gst_buffer_pool_new();
  GstAllocator* system = gst_allocator_find(nullptr);
  GstAllocationParams params;
  gst_allocation_params_init(&params);
  params.align = 31;
  params.padding = 5;
  GstStructure* metaParams = gst_structure_new("meta-params", "x", G_TYPE_INT, 7, nullptr);
  gst_query_add_allocation_pool(answered, pool, 3072, 2, 8);
  gst_query_add_allocation_param(answered, system, &params);
  gst_query_add_allocation_meta(answered, GST_VIDEO_META_API_TYPE, metaParams);
  AllocationAnswer kept;
  kept.keep(answered, true);
  gst_query_unref(answered);  // the answer holds its own references
  EXPECT_EQ(kept.kept(), 1);

  AllocationAnswer moved = std::move(kept);
  GstCaps* sameAsA = caps(64);
  GstQuery* query = gst_query_new_allocation(sameAsA, TRUE);
  bool result = false;
  ASSERT_TRUE(moved.replay(query, &result));
  EXPECT_TRUE(result);
  ASSERT_EQ(gst_query_get_n_allocation_pools(query), 1u);
  GstBufferPool* gotPool = nullptr;
  guint size = 0, minBuffers = 0, maxBuffers = 0;
  gst_query_parse_nth_allocation_pool(query, 0, &gotPool, &size, &minBuffers, &maxBuffers);
  EXPECT_EQ(gotPool, pool);
  EXPECT_EQ(size, 3072u);
  EXPECT_EQ(minBuffers, 2u);
  EXPECT_EQ(maxBuffers, 8u);
  ASSERT_EQ(gst_query_get_n_allocation_params(query), 1u);
  GstAllocator* gotAllocator = nullptr;
  GstAllocationParams gotParams;
  gst_query_parse_nth_allocation_param(query, 0, &gotAllocator, &gotParams);
  EXPECT_EQ(gotAllocator, system);
  EXPECT_EQ(gotParams.align, 31u);
  EXPECT_EQ(gotParams.padding, 5u);
  ASSERT_EQ(gst_query_get_n_allocation_metas(query), 1u);
  const GstStructure* gotMeta = nullptr;
  EXPECT_EQ(gst_query_parse_nth_allocation_meta(query, 0, &gotMeta), GST_VIDEO_META_API_TYPE);
  ASSERT_NE(gotMeta, nullptr);
  EXPECT_TRUE(gst_structure_is_equal(gotMeta, metaParams));
  gst_query_unref(query);
  if (gotPool != nullptr) gst_object_unref(gotPool);
  if (gotAllocator != nullptr) gst_object_unref(gotAllocator);

  // Nothing for other caps, another need-pool, or once reset; nor from the moved-from answer.
  GstCaps* b = caps(32);
  GstQuery* other = gst_query_new_allocation(b, TRUE);
  GstQuery* noPool = gst_query_new_allocation(a, FALSE);
  GstQuery* fromOld = gst_query_new_allocation(a, TRUE);
  EXPECT_FALSE(moved.replay(other, &result));
  EXPECT_FALSE(moved.replay(noPool, &result));
  EXPECT_FALSE(kept.replay(fromOld, &result));
  EXPECT_EQ(gst_query_get_n_allocation_pools(other), 0u);
  moved.reset();
  EXPECT_FALSE(moved.replay(fromOld, &result));
  for (GstQuery* q : {other, noPool, fromOld}) gst_query_unref(q);
  for (GstCaps* c : {a, sameAsA, b}) gst_caps_unref(c);
  gst_structure_free(metaParams);
  gst_object_unref(system);
  gst_object_unref(pool);
}

TEST_F(AllocationAnswerTest, AFailedQueryIsKeptAsFailed) {
  GstCaps* a = caps(64);
  GstQuery* answered = gst_query_new_allocation(a, TRUE);
  AllocationAnswer kept;
  kept.keep(answered, false);
  GstQuery* again = gst_query_new_allocation(a, TRUE);
  bool result = true;
  ASSERT_TRUE(kept.replay(again, &result));
  EXPECT_FALSE(result) << "downstream answered nothing: the element says so again";
  EXPECT_EQ(gst_query_get_n_allocation_pools(again), 0u);
  gst_query_unref(answered);
  gst_query_unref(again);
  gst_caps_unref(a);
}

}  // namespace
}  // namespace nccmatch::plugin
