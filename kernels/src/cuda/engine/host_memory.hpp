// What the device can do with a range of host memory: copy from it asynchronously (pinned or
// registered memory) and, where that memory is also mapped into the device's address space (UVA:
// cudaHostAlloc/cudaMallocHost, cudaHostRegister), read it in place from a kernel.
#pragma once

#include <cstddef>
#include <cstdint>

namespace nccmatch::cuda {

struct HostRange {
  bool pinned = false;             // page-locked: an async copy reads it directly
  const uint8_t* device = nullptr;  // where kernels read the range's first byte; null: not mapped
};

// Asks the runtime about the range's first and last byte: both must be pinned host memory, and
// mapped at device addresses the same distance apart, for the range to count as pinned or mapped.
// A failed query (pageable memory on some drivers) means neither, and is not left as an error.
HostRange hostRange(const uint8_t* data, std::size_t bytes);

}  // namespace nccmatch::cuda
