#include <gtest/gtest.h>

#include <atomic>

#include "cpu/thread_pool.hpp"

namespace nccmatch {
namespace {

TEST(ThreadPool, CoversEveryIndexExactlyOnce) {
  for (int threads : {1, 2, 3, 8}) {
    ThreadPool pool(threads);
    for (int count : {0, 1, 2, 7, 100, 1001}) {
      std::vector<std::atomic<int>> hits(count);
      for (auto& h : hits) h = 0;
      pool.parallelFor(count, [&](int b, int e) { for (int i = b; i < e; ++i) hits[i]++; });
      for (int i = 0; i < count; ++i) ASSERT_EQ(hits[i].load(), 1) << "threads " << threads << " count " << count;
    }
  }
}

TEST(ThreadPool, ReusableManyTimes) {
  ThreadPool pool(4);
  std::atomic<long> total{0};
  for (int round = 0; round < 2000; ++round)
    pool.parallelFor(16, [&](int b, int e) { total += e - b; });
  EXPECT_EQ(total.load(), 2000L * 16);
}

}  // namespace
}  // namespace nccmatch
