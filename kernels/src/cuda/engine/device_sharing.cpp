#include "cuda/engine/device_sharing.hpp"

#include <array>
#include <atomic>

namespace nccmatch::cuda {

namespace {

constexpr int kCountedDevices = 64;  // devices beyond these are never counted as shared

std::array<std::atomic<int>, kCountedDevices>& engineCounts() {
  static std::array<std::atomic<int>, kCountedDevices> counts{};
  return counts;
}

bool counted(int device) { return device >= 0 && device < kCountedDevices; }

}  // namespace

DeviceShare::DeviceShare(int device) : device_(device) {
  if (counted(device_)) engineCounts()[device_].fetch_add(1, std::memory_order_relaxed);
}

DeviceShare::~DeviceShare() {
  if (counted(device_)) engineCounts()[device_].fetch_sub(1, std::memory_order_relaxed);
}

bool DeviceShare::shared() const {
  return counted(device_) && engineCounts()[device_].load(std::memory_order_relaxed) > 1;
}

}  // namespace nccmatch::cuda
