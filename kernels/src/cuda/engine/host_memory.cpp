#include "cuda/engine/host_memory.hpp"

#include <cuda_runtime_api.h>

namespace nccmatch::cuda {

namespace {

bool pinnedHost(const uint8_t* p, cudaPointerAttributes* attributes) {
  *attributes = cudaPointerAttributes{};
  const bool pinned = cudaPointerGetAttributes(attributes, p) == cudaSuccess &&
                      attributes->type == cudaMemoryTypeHost;
  cudaGetLastError();  // a failed query is not an error of ours
  return pinned;
}

}  // namespace

HostRange hostRange(const uint8_t* data, std::size_t bytes) {
  HostRange range;
  if (data == nullptr || bytes == 0) return range;
  cudaPointerAttributes first, last;
  if (!pinnedHost(data, &first) || !pinnedHost(data + bytes - 1, &last)) return range;
  range.pinned = true;
  const auto* firstOnDevice = static_cast<const uint8_t*>(first.devicePointer);
  const auto* lastOnDevice = static_cast<const uint8_t*>(last.devicePointer);
  if (firstOnDevice != nullptr && lastOnDevice != nullptr && lastOnDevice - firstOnDevice == std::ptrdiff_t(bytes - 1))
    range.device = firstOnDevice;
  return range;
}

}  // namespace nccmatch::cuda
