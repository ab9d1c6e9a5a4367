// Page-locked blocks kept for reuse. Pinning memory costs far more than filling it (every page is
// locked and mapped for the GPU, and freeing waits for the device), and some producers make a new
// buffer pool for every frame: pnmdec behind multifilesrc renegotiates per image, so each frame's
// buffer was a fresh pinned allocation and a pinned free. Freed blocks wait here, within bounds,
// for the next request of the same size.
#pragma once

#include <cstddef>
#include <deque>
#include <functional>
#include <mutex>

namespace nccmatch::plugin {

class PinnedBlockCache {
 public:
  using Allocate = std::function<void*(std::size_t bytes)>;  // null when it fails
  using Release = std::function<void(void* block)>;

  // Holds at most `maxBlocks` blocks and `maxBytes` bytes; beyond that the oldest go first.
  PinnedBlockCache(Allocate allocate, Release release, std::size_t maxBlocks, std::size_t maxBytes);
  ~PinnedBlockCache();
  PinnedBlockCache(const PinnedBlockCache&) = delete;
  PinnedBlockCache& operator=(const PinnedBlockCache&) = delete;

  // A held block of exactly `bytes`, else a new one (null when allocation fails).
  void* take(std::size_t bytes);
  // Keeps `block` (of `bytes`) for a later take, releasing the oldest blocks over the bounds.
  void give(void* block, std::size_t bytes);

  std::size_t heldBlocks() const;
  std::size_t heldBytes() const;

 private:
  struct Block {
    void* data;
    std::size_t bytes;
  };
  Allocate allocate_;
  Release release_;
  std::size_t maxBlocks_, maxBytes_;
  mutable std::mutex mutex_;
  std::deque<Block> held_;  // oldest first
  std::size_t heldBytes_ = 0;
};

}  // namespace nccmatch::plugin
