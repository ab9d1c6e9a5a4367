// allocatePinnedHost / freePinnedHost (and registerPinnedHost's arguments): bad arguments, a clear
// error where CUDA is missing, and, with a GPU, memory of sizes through 1 byte that frames can live in (the CUDA engine matches a
// frame held there exactly as the CPU reference does).
#include "nccmatch/host_memory.hpp"

#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <vector>

#include "nccmatch/engine.hpp"
#include "test_support.hpp"

namespace nccmatch::test {
namespace {

TEST(PinnedMemory, BadArgumentsAreErrors) {
  EXPECT_FALSE(allocatePinnedHost(16, nullptr).ok());
  void* memory = reinterpret_cast<void*>(1);
  Status s = allocatePinnedHost(0, &memory);
  EXPECT_FALSE(s.ok());
  EXPECT_NE(s.message().find("zero"), std::string::npos) << s.message();
  EXPECT_EQ(memory, nullptr);
  freePinnedHost(nullptr);  // ignored
  uint8_t byte = 0;
  s = registerPinnedHost(nullptr, 16);
  EXPECT_NE(s.message().find("null"), std::string::npos) << s.message();
  s = registerPinnedHost(&byte, 0);
  EXPECT_NE(s.message().find("zero"), std::string::npos) << s.message();
  s = unregisterPinnedHost(nullptr);
  EXPECT_NE(s.message().find("null"), std::string::npos) << s.message();
}

// hostMemoryPinned: false for nothing, pageable memory and (without a GPU) anything; with a GPU,
// true over allocatePinnedHost's memory and a registered range (every size through 1 byte), false
// again once unregistered or freed, and false for a range that runs past a pinned block.
TEST(PinnedMemory, HostMemoryPinnedTellsPinnedFromPageable) {
  std::vector<uint8_t> pageable(3 * 4096);
  EXPECT_FALSE(hostMemoryPinned(nullptr, 16));
  EXPECT_FALSE(hostMemoryPinned(pageable.data(), 0));
  EXPECT_FALSE(hostMemoryPinned(pageable.data(), pageable.size()));
  std::string why;
  if (!cudaAvailable(&why)) GTEST_SKIP() << why;
  const std::size_t sizes[] = {1, 7, 4095, 4096, 4097, 1920 * 1080};
  for (std::size_t size : sizes) {
    void* memory = nullptr;
    ASSERT_TRUE(allocatePinnedHost(size, &memory).ok()) << size;
    const auto* bytes = static_cast<const uint8_t*>(memory);
    EXPECT_TRUE(hostMemoryPinned(memory, size)) << size;
    EXPECT_TRUE(hostMemoryPinned(bytes + size - 1, 1)) << size << ": the last byte";
    freePinnedHost(memory);
    std::vector<uint8_t> owned(size);
    EXPECT_FALSE(hostMemoryPinned(owned.data(), size)) << size << ": pageable";
    ASSERT_TRUE(registerPinnedHost(owned.data(), size).ok()) << size;
    EXPECT_TRUE(hostMemoryPinned(owned.data(), size)) << size << ": registered";
    ASSERT_TRUE(unregisterPinnedHost(owned.data()).ok()) << size;
    EXPECT_FALSE(hostMemoryPinned(owned.data(), size)) << size << ": unregistered";
  }
  // A registered middle page of a pageable block: a range beyond it on either side is not pinned.
  uint8_t* middle = pageable.data() + 4096 - reinterpret_cast<uintptr_t>(pageable.data()) % 4096;
  ASSERT_TRUE(registerPinnedHost(middle, 4096).ok());
  EXPECT_TRUE(hostMemoryPinned(middle, 4096));
  EXPECT_FALSE(hostMemoryPinned(middle - 1, 4097)) << "starts before the registered page";
  EXPECT_FALSE(hostMemoryPinned(middle, 4097)) << "ends after the registered page";
  ASSERT_TRUE(unregisterPinnedHost(middle).ok());
}

TEST(PinnedMemory, WithoutAGpuTheErrorSaysWhy) {
  std::string why;
  if (cudaAvailable(&why)) GTEST_SKIP() << "a CUDA device is usable here";
  void* memory = reinterpret_cast<void*>(1);
  Status s = allocatePinnedHost(4096, &memory);
  EXPECT_FALSE(s.ok());
  EXPECT_FALSE(s.message().empty());
  EXPECT_EQ(memory, nullptr);
  std::vector<uint8_t> frame(4096);
  s = registerPinnedHost(frame.data(), frame.size());
  EXPECT_FALSE(s.ok());
  EXPECT_FALSE(s.message().empty());
}

TEST(PinnedMemory, EverySizeIsWritableAndFreed) {
  std::string why;
  if (!cudaAvailable(&why)) GTEST_SKIP() << why;
  const std::size_t sizes[] = {1, 7, 4095, 4096, 4097, 3840 * 2160 * 3 / 2};
  for (std::size_t size : sizes) {
    void* memory = nullptr;
    Status s = allocatePinnedHost(size, &memory);
    ASSERT_TRUE(s.ok()) << size << ": " << s.message();
    ASSERT_NE(memory, nullptr);
    EXPECT_EQ(reinterpret_cast<uintptr_t>(memory) % 4096, 0u) << "page aligned";
    std::vector<uint8_t> bytes(size);
    for (uint8_t& b : bytes) b = uint8_t(rng()());
    std::memcpy(memory, bytes.data(), size);
    EXPECT_EQ(std::memcmp(memory, bytes.data(), size), 0);
    freePinnedHost(memory);
  }
}

TEST(PinnedMemory, TheCudaEngineMatchesAFrameHeldThere) {
  std::string why;
  if (!cudaAvailable(&why)) GTEST_SKIP() << why;
  const int width = 301, height = 203;
  const std::size_t stride = 320;
  Image scene = makeImage(width, height, Fill::Random, stride - width);
  TemplateImage t = makeTemplate(21, 17, Fill::Random);
  paste(&scene, t, 250, 99);
  void* memory = nullptr;
  ASSERT_TRUE(allocatePinnedHost(stride * height, &memory).ok());
  std::memcpy(memory, scene.bytes.data(), stride * height);
  FrameView frame{static_cast<const uint8_t*>(memory), width, height, stride, MemoryKind::Host};

  // The CPU reference; the CUDA engine on the pinned frame and on a pageable copy of it.
  FrameView pageable{scene.bytes.data(), width, height, stride, MemoryKind::Host};
  FrameResult results[3];
  const Backend backends[] = {Backend::Cpu, Backend::Cuda, Backend::Cuda};
  const FrameView* frames[] = {&frame, &frame, &pageable};
  for (int i = 0; i < 3; ++i) {
    EngineOptions options;
    options.backend = backends[i];
    options.cpuPath = CpuPath::Reference;
    std::unique_ptr<Engine> engine;
    ASSERT_TRUE(Engine::create(options, &engine).ok());
    ASSERT_TRUE(engine->setTemplates({t}).ok());
    Status s = engine->match(*frames[i], MatchParams{}, &results[i]);
    ASSERT_TRUE(s.ok()) << s.message();
  }
  freePinnedHost(memory);
  ASSERT_EQ(results[0].matches.size(), 1u);
  ASSERT_EQ(results[2].matches.size(), 1u) << "pageable frame";
  ASSERT_EQ(results[1].matches.size(), 1u) << "pinned frame";
  EXPECT_EQ(results[1].matches[0].x, 250);
  EXPECT_EQ(results[1].matches[0].y, 99);
  EXPECT_NEAR(results[1].matches[0].score, results[0].matches[0].score, 1e-4);
}

}  // namespace
}  // namespace nccmatch::test
