#include "cpu/thread_pool.hpp"

#include <algorithm>

namespace nccmatch {

ThreadPool::ThreadPool(int threads) {
  int n = threads > 0 ? threads : int(std::max(1u, std::thread::hardware_concurrency()));
  for (int i = 1; i < n; ++i) workers_.emplace_back([this] { workerLoop(); });
}

ThreadPool::~ThreadPool() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stop_ = true;
  }
  wake_.notify_all();
  for (std::thread& t : workers_) t.join();
}

void ThreadPool::runChunks() {
  std::unique_lock<std::mutex> lock(mutex_);
  while (nextChunkStart_ < count_) {
    int begin = nextChunkStart_;
    int end = std::min(count_, begin + chunk_);
    nextChunkStart_ = end;
    ++busy_;
    const auto* body = body_;
    lock.unlock();
    (*body)(begin, end);
    lock.lock();
    if (--busy_ == 0 && nextChunkStart_ >= count_) done_.notify_all();
  }
}

void ThreadPool::workerLoop() {
  uint64_t seen = 0;
  for (;;) {
    {
      std::unique_lock<std::mutex> lock(mutex_);
      wake_.wait(lock, [&] { return stop_ || generation_ != seen; });
      if (stop_) return;
      seen = generation_;
    }
    runChunks();
  }
}

void ThreadPool::parallelFor(int count, const std::function<void(int, int)>& body) {
  if (count <= 0) return;
  if (workers_.empty() || count == 1) {
    body(0, count);
    return;
  }
  {
    std::lock_guard<std::mutex> lock(mutex_);
    body_ = &body;
    count_ = count;
    // Several chunks per thread balance uneven rows without much locking.
    chunk_ = std::max(1, count / (size() * 4));
    nextChunkStart_ = 0;
    busy_ = 0;
    ++generation_;
  }
  wake_.notify_all();
  runChunks();
  std::unique_lock<std::mutex> lock(mutex_);
  done_.wait(lock, [&] { return nextChunkStart_ >= count_ && busy_ == 0; });
  body_ = nullptr;
}

}  // namespace nccmatch
