// allocatePinnedHost / freePinnedHost (and registerPinnedHost's arguments): bad arguments, a clear
// error where CUDA is missing, and, with a GPU, memory of sizes through 1 byte that frames can live in (the CUDA engine matches a
// frame held there exactly as the CPU reference does).
#include "nccmatch/host_memory.hpp"

#include <gtest/gtest.h>

#include <cstring>

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
