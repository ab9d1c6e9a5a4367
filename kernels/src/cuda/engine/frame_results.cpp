#include "cuda/engine/frame_results.hpp"

#include <algorithm>
#include <cstdint>

#include "cuda/cuda_check.hpp"
#include "common/integer_math.hpp"
#include "common/peaks.hpp"

namespace nccmatch::cuda {

namespace {

Match toMatch(const DeviceMatch& d, uint32_t templateIndex, const TemplateImage& t) {
  Match m;
  m.templateIndex = templateIndex;
  m.x = d.x;
  m.y = d.y;
  m.width = t.width;
  m.height = t.height;
  m.score = d.score;
  m.subX = d.subX;
  m.subY = d.subY;
  return m;
}

}  // namespace

ResultsLayout::ResultsLayout(std::size_t templates, std::size_t maxMatches, bool withExactSums) {
  countsBytes = roundUp(templates * sizeof(int), 16);
  bestOffset = countsBytes;
  keptOffset = bestOffset + templates * sizeof(DeviceMatch);
  bytes = keptOffset + templates * maxMatches * sizeof(DeviceMatch);
  exactSumsOffset = roundUp(bytes, sizeof(ExactMatchSums));
  deviceBytes = withExactSums ? exactSumsOffset + (maxMatches + 1) * sizeof(ExactMatchSums) : bytes;
}

ResultsLayout FrameResults::layout(std::size_t templates) const {
  const bool exact = std::find(exactAfterRounding.begin(), exactAfterRounding.end(), true) != exactAfterRounding.end();
  return ResultsLayout(templates, maxMatches, exact);
}

Status FrameResults::reserve(std::size_t templates, cudaStream_t stream) {
  const ResultsLayout wanted = layout(templates);
  const std::size_t bytes = std::max<std::size_t>(wanted.deviceBytes, 16);
  // The exact sums must start zeroed where they lie now (they may lie on old kept matches).
  if (bytes > device.capacity() || wanted.bytes != zeroedBytes_ || wanted.deviceBytes != zeroedDeviceBytes_) {
    if (bytes > device.capacity()) NCC_RETURN_IF_ERROR(device.reserve(bytes));
    const auto zero = [&]() -> Status {
      NCC_CUDA_CHECK(cudaMemsetAsync(device.as<void>(), 0, device.capacity(), stream));
      return Status();
    };
    const Status zeroed = zero();
    if (!zeroed.ok()) device.release();  // never used unzeroed: the next reserve zeroes it
    NCC_RETURN_IF_ERROR(zeroed);
    zeroedBytes_ = wanted.bytes;
    zeroedDeviceBytes_ = wanted.deviceBytes;
  }
  return host.reserve(std::max<std::size_t>(wanted.bytes, 16));
}

ResultsOnDevice FrameResults::onDevice(const ResultsLayout& layout) const {
  uint8_t* dev = device.as<uint8_t>();
  ResultsOnDevice out;
  out.counts = reinterpret_cast<int*>(dev);
  out.best = reinterpret_cast<DeviceMatch*>(dev + layout.bestOffset);
  out.kept = reinterpret_cast<DeviceMatch*>(dev + layout.keptOffset);
  if (layout.deviceBytes > layout.bytes) out.exactSums = reinterpret_cast<ExactMatchSums*>(dev + layout.exactSumsOffset);
  return out;
}

Status FrameResults::copyToHost(const ResultsLayout& layout, cudaStream_t stream) const {
  NCC_CUDA_CHECK(cudaMemcpyAsync(host.as<uint8_t>(), device.as<uint8_t>(), layout.bytes,
                                 cudaMemcpyDeviceToHost, stream));
  return Status();
}

void FrameResults::decode(const std::vector<TemplateImage>& bank, FrameResult* result) const {
  const std::size_t T = bank.size(), M = maxMatches;
  const ResultsLayout layout(T, M);
  const uint8_t* bytes = host.as<uint8_t>();
  const int* counts = reinterpret_cast<const int*>(bytes);
  const DeviceMatch* best = reinterpret_cast<const DeviceMatch*>(bytes + layout.bestOffset);
  const DeviceMatch* kept = reinterpret_cast<const DeviceMatch*>(bytes + layout.keptOffset);
  result->matches.clear();
  result->best.assign(T, std::nullopt);
  for (uint32_t i = 0; i < T; ++i) {
    const TemplateImage& t = bank[i];
    if (t.width > frameWidth || t.height > frameHeight) continue;
    result->best[i] = toMatch(best[i], i, t);
    const std::size_t first = result->matches.size();
    for (int k = 0; k < counts[i]; ++k) result->matches.push_back(toMatch(kept[i * M + k], i, t));
    if (i < exactAfterRounding.size() && exactAfterRounding[i])
      orderExactMatches(params, &result->matches, first, &result->best[i]);
  }
}

}  // namespace nccmatch::cuda
