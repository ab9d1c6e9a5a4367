// hostRange (cuda/engine/host_memory.hpp), which decides whether matchRegions reads a host frame
// in place: cudaMallocHost'd and cudaHostRegister'ed ranges are pinned and mapped (their device
// address is where the kernels read them), pageable memory is neither, and a range that runs past
// its pinned allocation into pageable memory is not mapped; registerPinnedHost's buffers are
// pinned, mapped and matched like pageable ones. Skips without a GPU.
#include <gtest/gtest.h>
#include <cuda_runtime.h>

#include <memory>
#include <string>
#include <vector>

#include "cuda/engine/host_memory.hpp"
#include "gpu_test_support.hpp"
#include "nccmatch/engine.hpp"
#include "nccmatch/host_memory.hpp"

namespace nccmatch::test {
namespace {

using cuda::hostRange;
using cuda::HostRange;

TEST(HostMemory, PinnedAndRegisteredRangesAreMappedPageableOnesAreNot) {
  SKIP_WITHOUT_GPU();
  constexpr std::size_t kBytes = 1 << 20;
  uint8_t* pinned = nullptr;
  ASSERT_EQ(cudaMallocHost(reinterpret_cast<void**>(&pinned), kBytes), cudaSuccess);
  std::vector<uint8_t> registered(kBytes), halfRegistered(kBytes), pageable(kBytes);
  for (std::size_t i = 0; i < kBytes; ++i) pinned[i] = registered[i] = uint8_t(i * 7 + 3);
  ASSERT_EQ(cudaHostRegister(registered.data(), kBytes, cudaHostRegisterDefault), cudaSuccess);
  ASSERT_EQ(cudaHostRegister(halfRegistered.data(), kBytes / 2, cudaHostRegisterDefault), cudaSuccess);
  struct Case {
    const char* what;
    const uint8_t* data;
    std::size_t bytes;
    bool pinned, mapped;
  };
  const std::vector<Case> cases = {
      {"cudaMallocHost, whole", pinned, kBytes, true, true},
      {"cudaMallocHost, 1 byte", pinned + 7, 1, true, true},
      {"cudaMallocHost, unaligned middle", pinned + 13, kBytes / 2 + 3, true, true},
      {"registered vector, whole", registered.data(), kBytes, true, true},
      {"registered vector, last byte", registered.data() + kBytes - 1, 1, true, true},
      {"pageable vector", pageable.data(), kBytes, false, false},
      {"registered first half, the whole vector", halfRegistered.data(), kBytes, false, false},
      {"registered first half, its first half", halfRegistered.data(), kBytes / 2, true, true},
      {"empty range", pinned, 0, false, false},
      {"null", nullptr, 16, false, false},
  };
  for (const Case& c : cases) {
    const HostRange r = hostRange(c.data, c.bytes);
    EXPECT_EQ(r.pinned, c.pinned) << c.what;
    EXPECT_EQ(r.device != nullptr, c.mapped) << c.what;
    if (r.device != nullptr) {  // the same bytes there (the region tests read them from kernels)
      uint8_t first = 0, last = 0;
      ASSERT_EQ(cudaMemcpy(&first, r.device, 1, cudaMemcpyDefault), cudaSuccess) << c.what;
      ASSERT_EQ(cudaMemcpy(&last, r.device + c.bytes - 1, 1, cudaMemcpyDefault), cudaSuccess) << c.what;
      EXPECT_EQ(first, c.data[0]) << c.what;
      EXPECT_EQ(last, c.data[c.bytes - 1]) << c.what;
    }
  }
  EXPECT_EQ(cudaGetLastError(), cudaSuccess) << "a failed query must not leave an error behind";
  cudaHostUnregister(registered.data());
  cudaHostUnregister(halfRegistered.data());
  cudaFreeHost(pinned);
}

// registerPinnedHost (the public API) on a caller's own frame buffer of an odd size: pinned and
// mapped while registered, matchRegions on it gives the pageable copy's results exactly (the
// windows gathered on the GPU), and unregistered it is pageable again.
TEST(HostMemory, RegisteredCallerBuffersArePinnedAndMatchLikePageableOnes) {
  SKIP_WITHOUT_GPU();
  const int width = 613, height = 397;
  const std::size_t stride = 617;
  std::vector<uint8_t> owned(stride * height - (stride - width));  // the last row unpadded
  uint32_t state = 12345;
  for (uint8_t& b : owned) b = uint8_t((state = state * 1664525u + 1013904223u) >> 24);
  const std::vector<uint8_t> pageable = owned;
  ASSERT_TRUE(registerPinnedHost(owned.data(), owned.size()).ok());
  const HostRange r = hostRange(owned.data(), owned.size());
  EXPECT_TRUE(r.pinned);
  EXPECT_NE(r.device, nullptr);

  std::unique_ptr<Engine> engine;
  EngineOptions options;
  options.backend = Backend::Cuda;
  ASSERT_TRUE(Engine::create(options, &engine).ok());
  std::vector<TemplateImage> bank(2);
  for (int k = 0; k < 2; ++k) {
    bank[k].width = 21 + 6 * k;
    bank[k].height = 17 + 4 * k;
    for (int y = 0; y < bank[k].height; ++y)
      for (int x = 0; x < bank[k].width; ++x)
        bank[k].pixels.push_back(pageable[std::size_t(40 + 100 * k + y) * stride + std::size_t(33 + 200 * k + x)]);
  }
  ASSERT_TRUE(engine->setTemplates(bank).ok());
  const std::vector<RegionQuery> windows = {{1, 3, 120, 101, 0}, {190, 90, 97, 88, 1}, {0, 0, width, height, 1},
                                            {width - 64, height - 50, 64, 50, 0}};
  MatchParams params;
  params.threshold = 0.5;
  params.maxMatches = 3;
  std::vector<RegionResult> onRegistered, onPageable;
  const Status a = engine->matchRegions(FrameView{owned.data(), width, height, stride, MemoryKind::Host}, windows,
                                        params, &onRegistered);
  ASSERT_TRUE(a.ok()) << a.message();
  const Status b = engine->matchRegions(FrameView{pageable.data(), width, height, stride, MemoryKind::Host}, windows,
                                        params, &onPageable);
  ASSERT_TRUE(b.ok()) << b.message();
  ASSERT_EQ(onRegistered.size(), onPageable.size());
  for (std::size_t k = 0; k < windows.size(); ++k) {
    ASSERT_EQ(onRegistered[k].matches.size(), onPageable[k].matches.size()) << "window " << k;
    for (std::size_t i = 0; i < onPageable[k].matches.size(); ++i) {
      EXPECT_EQ(onRegistered[k].matches[i].x, onPageable[k].matches[i].x) << "window " << k;
      EXPECT_EQ(onRegistered[k].matches[i].y, onPageable[k].matches[i].y) << "window " << k;
      EXPECT_EQ(onRegistered[k].matches[i].score, onPageable[k].matches[i].score) << "window " << k;
    }
  }
  ASSERT_FALSE(onPageable[0].matches.empty()) << "template 0 lies in window 0";

  ASSERT_TRUE(unregisterPinnedHost(owned.data()).ok());
  EXPECT_FALSE(hostRange(owned.data(), owned.size()).pinned);
}

// A second registration of a buffer, or an unregistration of one not registered, is refused with
// a Status naming the CUDA call and leaves no error behind for the engine's next call. (The CUDA
// errors are the point here: compute-sanitizer memcheck, which reports every failed CUDA call,
// skips this test: scripts/gpu-sanitize.sh.)
TEST(HostMemory, RegisteringTwiceOrUnregisteringTwiceIsRefusedNamingTheCall) {
  SKIP_WITHOUT_GPU();
  std::vector<uint8_t> owned(100003, 7);
  ASSERT_TRUE(registerPinnedHost(owned.data(), owned.size()).ok());
  const Status again = registerPinnedHost(owned.data(), owned.size());
  EXPECT_FALSE(again.ok());
  EXPECT_NE(again.message().find("cudaHostRegister"), std::string::npos) << again.message();
  EXPECT_EQ(cudaGetLastError(), cudaSuccess) << "a refused registration must not leave an error behind";
  EXPECT_TRUE(hostRange(owned.data(), owned.size()).pinned) << "the first registration stands";
  ASSERT_TRUE(unregisterPinnedHost(owned.data()).ok());
  const Status twice = unregisterPinnedHost(owned.data());
  EXPECT_FALSE(twice.ok());
  EXPECT_NE(twice.message().find("cudaHostUnregister"), std::string::npos) << twice.message();
  EXPECT_EQ(cudaGetLastError(), cudaSuccess) << "a refused unregistration must not leave an error behind";
}

}  // namespace
}  // namespace nccmatch::test
