// Upstream memory registration (register-upstream) with a recording registrar: nothing on the
// first sighting, one registration of the memory's mapped bytes on the second, none after; the
// unregistration of the same bytes when GStreamer frees the memory, before the bytes are
// released; a refusal is kept and never retried; sub-memories, empty and unmappable memory, and
// another allocator's memory left alone; many threads noting one memory register it once.
#include "upstream_registration.hpp"

#include <gtest/gtest.h>

#include <cstring>
#include <mutex>
#include <thread>
#include <utility>
#include <vector>

#include "plugin_test_support.hpp"

namespace nccmatch::plugin {
namespace {

// What the recording registrar saw, in order; `refuse` makes registrations fail.
struct Calls {
  std::mutex mutex;
  std::vector<std::pair<void*, std::size_t>> registered;
  std::vector<void*> unregistered;
  bool refuse = false;
  // Set by the wrapped memory's free function: the bytes were released.
  std::vector<void*> released;
  // Whether the bytes were still there when their unregistration came.
  std::vector<bool> unregisteredBeforeRelease;
};
Calls calls;

nccmatch::Status recordRegister(void* memory, std::size_t bytes) {
  std::lock_guard<std::mutex> lock(calls.mutex);
  if (calls.refuse) return nccmatch::Status::error("registerPinnedHost: cudaHostRegister failed: refused (test)");
  calls.registered.push_back({memory, bytes});
  return nccmatch::Status();
}

nccmatch::Status recordUnregister(void* memory) {
  std::lock_guard<std::mutex> lock(calls.mutex);
  calls.unregistered.push_back(memory);
  bool released = false;
  for (void* r : calls.released) released = released || r == memory;
  calls.unregisteredBeforeRelease.push_back(!released);
  return nccmatch::Status();
}

const HostRegistrar kRecorder{recordRegister, recordUnregister};

// System memory of `bytes` bytes whose release the registrar's record sees.
GstMemory* wrappedMemory(std::size_t bytes) {
  auto* data = static_cast<uint8_t*>(g_malloc0(bytes == 0 ? 1 : bytes));
  return gst_memory_new_wrapped(GstMemoryFlags(0), data, bytes, 0, bytes, data, [](gpointer p) {
    {
      std::lock_guard<std::mutex> lock(calls.mutex);
      calls.released.push_back(p);
    }
    g_free(p);
  });
}

// Memory of another allocator (not GStreamer's system memory, as dmabuf or a device's memory).
struct OtherAllocator {
  GstAllocator parent;
};
struct OtherAllocatorClass {
  GstAllocatorClass parent_class;
};
GType other_allocator_get_type();
G_DEFINE_TYPE(OtherAllocator, other_allocator, GST_TYPE_ALLOCATOR)

GstMemory* otherAlloc(GstAllocator* allocator, gsize size, GstAllocationParams*) {
  auto* memory = g_new0(GstMemory, 1);
  gst_memory_init(memory, GstMemoryFlags(0), allocator, nullptr, size, 0, 0, size);
  return memory;
}
void otherFree(GstAllocator*, GstMemory* memory) { g_free(memory); }
// Maps to a fixed static block: the bytes are never read here.
gpointer otherMap(GstMemory*, gsize, GstMapFlags) {
  static uint8_t bytes[65536];
  return bytes;
}
void otherUnmap(GstMemory*) {}
void other_allocator_class_init(OtherAllocatorClass* klass) {
  GST_ALLOCATOR_CLASS(klass)->alloc = otherAlloc;
  GST_ALLOCATOR_CLASS(klass)->free = otherFree;
}
void other_allocator_init(OtherAllocator* self) {
  GstAllocator* allocator = GST_ALLOCATOR_CAST(self);
  allocator->mem_type = "NccTestOtherMemory";
  allocator->mem_map = otherMap;
  allocator->mem_unmap = otherUnmap;
}

class UpstreamRegistration : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { nccmatch::test::initGstreamer(); }
  void SetUp() override {
    std::lock_guard<std::mutex> lock(calls.mutex);
    calls.registered.clear();
    calls.unregistered.clear();
    calls.released.clear();
    calls.unregisteredBeforeRelease.clear();
    calls.refuse = false;
  }
};

TEST_F(UpstreamRegistration, SecondSightingRegistersOnceAndFreeingUnregistersBeforeRelease) {
  for (std::size_t bytes : {std::size_t(1), std::size_t(4095), std::size_t(1920 * 1080), std::size_t(1920 * 1080 * 3 / 2)}) {
    SCOPED_TRACE(bytes);
    SetUp();
    GstMemory* memory = wrappedMemory(bytes);
    GstMapInfo map;
    ASSERT_TRUE(gst_memory_map(memory, &map, GST_MAP_READ));
    void* data = map.data;
    gst_memory_unmap(memory, &map);
    EXPECT_EQ(upstreamMemoryState(memory), UpstreamMemory::Skipped);
    EXPECT_EQ(noteUpstreamMemory(memory, kRecorder), UpstreamMemory::SeenOnce);
    EXPECT_TRUE(calls.registered.empty()) << "a memory seen once may never come back";
    EXPECT_EQ(noteUpstreamMemory(memory, kRecorder), UpstreamMemory::Registered);
    ASSERT_EQ(calls.registered.size(), 1u);
    EXPECT_EQ(calls.registered[0].first, data);
    EXPECT_EQ(calls.registered[0].second, bytes);
    for (int k = 0; k < 5; ++k) EXPECT_EQ(noteUpstreamMemory(memory, kRecorder), UpstreamMemory::Registered);
    EXPECT_EQ(calls.registered.size(), 1u);
    EXPECT_EQ(upstreamMemoryState(memory), UpstreamMemory::Registered);
    EXPECT_TRUE(calls.unregistered.empty());
    gst_memory_unref(memory);
    ASSERT_EQ(calls.unregistered.size(), 1u);
    EXPECT_EQ(calls.unregistered[0], data);
    EXPECT_TRUE(calls.unregisteredBeforeRelease[0]) << "unregistered after its bytes were freed";
    ASSERT_EQ(calls.released.size(), 1u);
  }
}

TEST_F(UpstreamRegistration, MemorySeenOnceIsFreedWithoutUnregistering) {
  GstMemory* memory = wrappedMemory(4096);
  EXPECT_EQ(noteUpstreamMemory(memory, kRecorder), UpstreamMemory::SeenOnce);
  gst_memory_unref(memory);
  EXPECT_TRUE(calls.registered.empty());
  EXPECT_TRUE(calls.unregistered.empty());
  EXPECT_EQ(calls.released.size(), 1u);
}

TEST_F(UpstreamRegistration, RefusalIsKeptWithItsReasonAndNeverRetried) {
  calls.refuse = true;
  GstMemory* memory = wrappedMemory(100000);
  EXPECT_EQ(noteUpstreamMemory(memory, kRecorder), UpstreamMemory::SeenOnce);
  std::string why;
  EXPECT_EQ(noteUpstreamMemory(memory, kRecorder, &why), UpstreamMemory::Refused);
  EXPECT_NE(why.find("cudaHostRegister"), std::string::npos) << why;
  calls.refuse = false;
  for (int k = 0; k < 3; ++k) EXPECT_EQ(noteUpstreamMemory(memory, kRecorder), UpstreamMemory::Refused);
  EXPECT_TRUE(calls.registered.empty());
  gst_memory_unref(memory);
  EXPECT_TRUE(calls.unregistered.empty()) << "nothing was registered";
}

TEST_F(UpstreamRegistration, SubMemoryRegistersItsOwnBytesAndParentOutlivesIt) {
  GstMemory* parent = wrappedMemory(8192);
  GstMemory* sub = gst_memory_share(parent, 1000, 3000);
  GstMapInfo map;
  ASSERT_TRUE(gst_memory_map(sub, &map, GST_MAP_READ));
  void* subData = map.data;
  gst_memory_unmap(sub, &map);
  noteUpstreamMemory(sub, kRecorder);
  EXPECT_EQ(noteUpstreamMemory(sub, kRecorder), UpstreamMemory::Registered);
  ASSERT_EQ(calls.registered.size(), 1u);
  EXPECT_EQ(calls.registered[0].first, subData);
  EXPECT_EQ(calls.registered[0].second, 3000u);
  EXPECT_EQ(upstreamMemoryState(parent), UpstreamMemory::Skipped) << "the parent carries no mark of its own";
  gst_memory_unref(parent);  // the share holds the parent
  EXPECT_TRUE(calls.released.empty());
  gst_memory_unref(sub);
  ASSERT_EQ(calls.unregistered.size(), 1u);
  EXPECT_EQ(calls.unregistered[0], subData);
  EXPECT_TRUE(calls.unregisteredBeforeRelease[0]);
  EXPECT_EQ(calls.released.size(), 1u);
}

TEST_F(UpstreamRegistration, EmptyUnmappableAndNullMemoryAreNotRegistered) {
  EXPECT_EQ(noteUpstreamMemory(nullptr, kRecorder), UpstreamMemory::Skipped);
  GstMemory* empty = wrappedMemory(0);
  noteUpstreamMemory(empty, kRecorder);
  std::string why;
  EXPECT_EQ(noteUpstreamMemory(empty, kRecorder, &why), UpstreamMemory::Refused);
  EXPECT_FALSE(why.empty());
  gst_memory_unref(empty);
  GstMemory* hidden = wrappedMemory(4096);
  GST_MINI_OBJECT_FLAG_SET(hidden, GST_MEMORY_FLAG_NOT_MAPPABLE);
  EXPECT_EQ(noteUpstreamMemory(hidden, kRecorder), UpstreamMemory::Skipped);
  EXPECT_EQ(noteUpstreamMemory(hidden, kRecorder), UpstreamMemory::Skipped);
  GST_MINI_OBJECT_FLAG_UNSET(hidden, GST_MEMORY_FLAG_NOT_MAPPABLE);
  gst_memory_unref(hidden);
  EXPECT_TRUE(calls.registered.empty());
  EXPECT_TRUE(calls.unregistered.empty());
}

TEST_F(UpstreamRegistration, OtherAllocatorsMemoryIsLeftAlone) {
  auto* allocator = static_cast<GstAllocator*>(g_object_new(other_allocator_get_type(), nullptr));
  GstMemory* memory = gst_allocator_alloc(allocator, 4096, nullptr);
  ASSERT_NE(memory, nullptr);
  for (int k = 0; k < 3; ++k) EXPECT_EQ(noteUpstreamMemory(memory, kRecorder), UpstreamMemory::Skipped);
  EXPECT_EQ(upstreamMemoryState(memory), UpstreamMemory::Skipped);
  gst_memory_unref(memory);
  gst_object_unref(allocator);
  EXPECT_TRUE(calls.registered.empty());
}

TEST_F(UpstreamRegistration, ManyThreadsNotingOneMemoryRegisterItOnce) {
  GstMemory* memory = wrappedMemory(65536);
  std::vector<std::thread> threads;
  for (int t = 0; t < 8; ++t)
    threads.emplace_back([memory] {
      for (int k = 0; k < 200; ++k) noteUpstreamMemory(memory, kRecorder);
    });
  for (std::thread& t : threads) t.join();
  EXPECT_EQ(upstreamMemoryState(memory), UpstreamMemory::Registered);
  EXPECT_EQ(calls.registered.size(), 1u);
  gst_memory_unref(memory);
  EXPECT_EQ(calls.unregistered.size(), 1u);
}

}  // namespace
}  // namespace nccmatch::plugin
