#include "pinned_allocator.hpp"

#include <cstring>
#include <mutex>

#include "nccmatch/host_memory.hpp"
#include "pinned_block_cache.hpp"

namespace {

// A block of pinned memory, or a share of one (block null: the parent owns it).
struct PinnedMemory {
  GstMemory mem;
  uint8_t* data;
  void* block;
  gsize blockBytes;
};

// Freed frames' blocks wait for the next pool's buffers: up to 16 blocks and 256 MiB (a few
// frames in flight of 4K NV12 at several pools), released oldest first beyond that.
nccmatch::plugin::PinnedBlockCache& blockCache() {
  static nccmatch::plugin::PinnedBlockCache cache(
      [](std::size_t bytes) -> void* {
        void* block = nullptr;
        return nccmatch::allocatePinnedHost(bytes, &block).ok() ? block : nullptr;
      },
      [](void* block) { nccmatch::freePinnedHost(block); }, 16, std::size_t(256) << 20);
  return cache;
}

struct NccPinnedAllocator {
  GstAllocator parent;
};
struct NccPinnedAllocatorClass {
  GstAllocatorClass parent_class;
};

GType ncc_pinned_allocator_get_type();
G_DEFINE_TYPE(NccPinnedAllocator, ncc_pinned_allocator, GST_TYPE_ALLOCATOR)

GstMemory* pinnedAlloc(GstAllocator* allocator, gsize size, GstAllocationParams* params) {
  // Pinned blocks are page aligned, which covers any alignment a video pool asks for (< 4096).
  const gsize maxsize = size + params->prefix + params->padding;
  const gsize blockBytes = maxsize == 0 ? 1 : maxsize;
  void* block = blockCache().take(blockBytes);
  if (block == nullptr) {
    GST_WARNING_OBJECT(allocator, "pinned allocation of %" G_GSIZE_FORMAT " bytes failed", blockBytes);
    return nullptr;
  }
  auto* memory = g_new0(PinnedMemory, 1);
  memory->data = static_cast<uint8_t*>(block);
  memory->block = block;
  memory->blockBytes = blockBytes;
  gst_memory_init(GST_MEMORY_CAST(memory), params->flags, allocator, nullptr, maxsize, params->align,
                  params->prefix, size);
  if (params->prefix != 0 && (params->flags & GST_MEMORY_FLAG_ZERO_PREFIXED))
    std::memset(memory->data, 0, params->prefix);
  if (params->padding != 0 && (params->flags & GST_MEMORY_FLAG_ZERO_PADDED))
    std::memset(memory->data + params->prefix + size, 0, params->padding);
  return GST_MEMORY_CAST(memory);
}

void pinnedFree(GstAllocator*, GstMemory* mem) {
  auto* memory = reinterpret_cast<PinnedMemory*>(mem);
  blockCache().give(memory->block, memory->blockBytes);
  g_free(memory);
}

gpointer pinnedMap(GstMemory* mem, gsize, GstMapFlags) { return reinterpret_cast<PinnedMemory*>(mem)->data; }

void pinnedUnmap(GstMemory*) {}

GstMemory* pinnedShare(GstMemory* mem, gssize offset, gssize size) {
  auto* source = reinterpret_cast<PinnedMemory*>(mem);
  GstMemory* parent = mem->parent != nullptr ? mem->parent : mem;
  if (size == -1) size = gssize(mem->size) - offset;
  auto* share = g_new0(PinnedMemory, 1);
  share->data = source->data;
  share->block = nullptr;
  gst_memory_init(GST_MEMORY_CAST(share),
                  GstMemoryFlags(GST_MINI_OBJECT_FLAGS(parent) | GST_MINI_OBJECT_FLAG_LOCK_READONLY),
                  mem->allocator, parent, mem->maxsize, mem->align, mem->offset + offset, gsize(size));
  return GST_MEMORY_CAST(share);
}

void ncc_pinned_allocator_class_init(NccPinnedAllocatorClass* klass) {
  GstAllocatorClass* allocator_class = GST_ALLOCATOR_CLASS(klass);
  allocator_class->alloc = pinnedAlloc;
  allocator_class->free = pinnedFree;
}

void ncc_pinned_allocator_init(NccPinnedAllocator* self) {
  GstAllocator* allocator = GST_ALLOCATOR_CAST(self);
  allocator->mem_type = nccmatch::plugin::kPinnedMemoryType;
  allocator->mem_map = pinnedMap;
  allocator->mem_unmap = pinnedUnmap;
  allocator->mem_share = pinnedShare;
}

}  // namespace

namespace nccmatch::plugin {

GstAllocator* pinnedAllocator(std::string* why) {
  // One allocator per process, kept for its lifetime once pinned memory proved obtainable.
  static std::once_flag once;
  static GstAllocator* allocator = nullptr;
  static std::string failure;
  std::call_once(once, [] {
    void* probe = nullptr;
    nccmatch::Status status = nccmatch::allocatePinnedHost(4096, &probe);
    if (!status.ok()) {
      failure = status.message();
      return;
    }
    nccmatch::freePinnedHost(probe);
    allocator = GST_ALLOCATOR_CAST(g_object_new(ncc_pinned_allocator_get_type(), nullptr));
    gst_object_ref_sink(allocator);
  });
  if (allocator == nullptr) {
    if (why != nullptr) *why = failure;
    return nullptr;
  }
  return GST_ALLOCATOR_CAST(gst_object_ref(allocator));
}

bool isPinnedMemory(GstMemory* memory) {
  return memory != nullptr && gst_memory_is_type(memory, kPinnedMemoryType);
}

}  // namespace nccmatch::plugin
