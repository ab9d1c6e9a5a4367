// hostRange (cuda/engine/host_memory.hpp), which decides whether matchRegions reads a host frame
// in place: cudaMallocHost'd and cudaHostRegister'ed ranges are pinned and mapped (their device
// address is where the kernels read them), pageable memory is neither, and a range that runs past
// its pinned allocation into pageable memory is not mapped. Skips without a GPU.
#include <gtest/gtest.h>
#include <cuda_runtime.h>

#include <vector>

#include "cuda/engine/host_memory.hpp"
#include "gpu_test_support.hpp"

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

}  // namespace
}  // namespace nccmatch::test
