#include "pinned_block_cache.hpp"

#include <utility>
#include <vector>

namespace nccmatch::plugin {

PinnedBlockCache::PinnedBlockCache(Allocate allocate, Release release, std::size_t maxBlocks,
                                   std::size_t maxBytes)
    : allocate_(std::move(allocate)), release_(std::move(release)), maxBlocks_(maxBlocks), maxBytes_(maxBytes) {}

PinnedBlockCache::~PinnedBlockCache() {
  for (const Block& b : held_) release_(b.data);
}

void* PinnedBlockCache::take(std::size_t bytes) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    // Newest first: the block freed last is the likeliest to be in the CPU's caches.
    for (auto it = held_.rbegin(); it != held_.rend(); ++it) {
      if (it->bytes != bytes) continue;
      void* block = it->data;
      heldBytes_ -= it->bytes;
      held_.erase(std::next(it).base());
      return block;
    }
  }
  return allocate_(bytes);
}

void PinnedBlockCache::give(void* block, std::size_t bytes) {
  if (block == nullptr) return;
  std::vector<void*> evicted;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    held_.push_back(Block{block, bytes});
    heldBytes_ += bytes;
    while (!held_.empty() && (held_.size() > maxBlocks_ || heldBytes_ > maxBytes_)) {
      evicted.push_back(held_.front().data);
      heldBytes_ -= held_.front().bytes;
      held_.pop_front();
    }
  }
  for (void* b : evicted) release_(b);  // outside the lock: a pinned free waits for the device
}

std::size_t PinnedBlockCache::heldBlocks() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return held_.size();
}

std::size_t PinnedBlockCache::heldBytes() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return heldBytes_;
}

}  // namespace nccmatch::plugin
