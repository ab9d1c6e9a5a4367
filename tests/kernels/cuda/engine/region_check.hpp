// What the CUDA region tests share: every region's matches and best compared with the CPU
// engine's bit for bit, and a device copy of a test image as a frame in device memory.
#pragma once

#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <functional>
#include <string>
#include <vector>

#include "gpu_test_support.hpp"
#include "test_support.hpp"

namespace nccmatch::test {

inline void expectSameRegions(const std::vector<RegionResult>& gpu, const std::vector<RegionResult>& cpu,
                              const std::string& what) {
  ASSERT_EQ(gpu.size(), cpu.size()) << what;
  for (std::size_t k = 0; k < gpu.size(); ++k) {
    const std::string where = what + ", region " + std::to_string(k) + ", seed " + std::to_string(testSeed());
    ASSERT_EQ(gpu[k].matches.size(), cpu[k].matches.size()) << where;
    for (std::size_t i = 0; i < gpu[k].matches.size(); ++i) {
      const Match& g = gpu[k].matches[i];
      const Match& c = cpu[k].matches[i];
      EXPECT_EQ(g.templateIndex, c.templateIndex) << where;
      EXPECT_EQ(g.x, c.x) << where << " match " << i;
      EXPECT_EQ(g.y, c.y) << where << " match " << i;
      EXPECT_EQ(g.width, c.width) << where;
      EXPECT_EQ(g.height, c.height) << where;
      EXPECT_EQ(g.score, c.score) << where << " match " << i;  // exact: integer sums, one score rule
      EXPECT_EQ(g.subX, c.subX) << where << " match " << i;
      EXPECT_EQ(g.subY, c.subY) << where << " match " << i;
    }
    ASSERT_EQ(gpu[k].best.has_value(), cpu[k].best.has_value()) << where;
    if (gpu[k].best) {
      EXPECT_EQ(gpu[k].best->x, cpu[k].best->x) << where << " best";
      EXPECT_EQ(gpu[k].best->y, cpu[k].best->y) << where << " best";
      EXPECT_EQ(gpu[k].best->score, cpu[k].best->score) << where << " best";
    }
  }
}

// A device copy of an image (pitch = its stride).
struct DeviceImage {
  uint8_t* data = nullptr;
  ~DeviceImage() { cudaFree(data); }
};

inline FrameView upload(const Image& img, DeviceImage* d) {
  EXPECT_EQ(cudaMalloc(reinterpret_cast<void**>(&d->data), img.bytes.size()), cudaSuccess);
  EXPECT_EQ(cudaMemcpy(d->data, img.bytes.data(), img.bytes.size(), cudaMemcpyHostToDevice), cudaSuccess);
  // A pageable cudaMemcpy may return before its DMA ends, and the engine's stream does not wait for
  // the default stream: the frame is complete before it is matched, as a decoder's frame is.
  EXPECT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  FrameView v = img.view();
  v.data = d->data;
  v.memory = MemoryKind::Device;
  return v;
}


// The regions matched by the CPU engine and by the CUDA engine on img in host memory and on a
// device copy of it, for every method with paramsFor(method): alike bit for bit.
inline void expectRegionsLikeTheCpu(const Image& img, const std::vector<TemplateImage>& bank,
                                    const std::vector<RegionQuery>& regions,
                                    const std::function<MatchParams(Method)>& paramsFor, const std::string& what) {
  auto cpu = makeEngine(Backend::Cpu);
  auto gpu = makeEngine(Backend::Cuda);
  ASSERT_TRUE(cpu->setTemplates(bank).ok());
  ASSERT_TRUE(gpu->setTemplates(bank).ok());
  DeviceImage device;
  const FrameView onDevice = upload(img, &device);
  for (int m = 0; m <= 5; ++m) {
    const MatchParams params = paramsFor(Method(m));
    std::vector<RegionResult> want, host, dev;
    ASSERT_TRUE(cpu->matchRegions(img.view(), regions, params, &want).ok());
    Status st = gpu->matchRegions(img.view(), regions, params, &host);
    ASSERT_TRUE(st.ok()) << st.message();
    expectSameRegions(host, want, what + ", host frame, " + methodName(params.method));
    st = gpu->matchRegions(onDevice, regions, params, &dev);
    ASSERT_TRUE(st.ok()) << st.message();
    expectSameRegions(dev, want, what + ", device frame, " + methodName(params.method));
  }
}

}  // namespace nccmatch::test
