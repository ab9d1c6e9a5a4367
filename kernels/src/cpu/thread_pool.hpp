// A pool of worker threads that lives as long as its owner (no thread creation per frame).
#pragma once

#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace nccmatch {

class ThreadPool {
 public:
  // threads == 0: one per hardware thread.
  explicit ThreadPool(int threads = 0);
  ~ThreadPool();
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  int size() const { return int(workers_.size()) + 1; }

  // Calls body(begin, end) over [0, count) split into contiguous chunks, on the workers and the
  // calling thread; returns when all chunks are done. Not reentrant.
  void parallelFor(int count, const std::function<void(int, int)>& body);

 private:
  void workerLoop();
  void runChunks();

  std::vector<std::thread> workers_;
  std::mutex mutex_;
  std::condition_variable wake_;
  std::condition_variable done_;
  const std::function<void(int, int)>* body_ = nullptr;
  int count_ = 0;
  int chunk_ = 1;
  int nextChunkStart_ = 0;
  int busy_ = 0;
  uint64_t generation_ = 0;
  bool stop_ = false;
};

}  // namespace nccmatch
