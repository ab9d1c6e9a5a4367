// gatherWindows against the bytes themselves: windows of 1..1000 bytes a row starting at every
// offset within a 16-byte block, 1..130 rows (8-row blocks and their boundaries), odd source
// pitches, many windows in one launch, from a mapped pinned host frame, from a registered one
// starting at an odd address and of an odd size (under compute-sanitizer memcheck: no byte
// outside the allocation is read), and from device memory. Each target row holds the window's
// row; nothing past its 16-byte boundary or its last row is touched.
#include "cuda/copy/window_gather.hpp"

#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "gpu_test_support.hpp"
#include "test_support.hpp"

namespace nccmatch::cuda {
namespace {

constexpr uint8_t kUntouched = 0xcd;

enum class Source { MallocHost, RegisteredOddAddress, Device };
const char* sourceName(Source s) {
  return s == Source::MallocHost ? ", cudaMallocHost frame"
         : s == Source::Device   ? ", device frame"
                                 : ", cudaHostRegister'ed frame at an odd address";
}

struct WindowCase {
  int x, y, width, height;
};

std::size_t alignUp16(std::size_t n) { return (n + 15) / 16 * 16; }

// Gathers `windows` of a random frame (`frameWidth` x `frameHeight`, pitch `pitch`: the last row
// ends the allocation) and checks every byte.
void checkGather(int frameWidth, int frameHeight, std::size_t pitch, const std::vector<WindowCase>& windows,
                 Source from) {
  SCOPED_TRACE(std::to_string(frameWidth) + "x" + std::to_string(frameHeight) + ", pitch " + std::to_string(pitch) +
               sourceName(from));
  const std::size_t frameBytes = pitch * std::size_t(frameHeight - 1) + std::size_t(frameWidth);
  std::vector<uint8_t> frame(frameBytes);
  for (uint8_t& b : frame) b = uint8_t(test::rng()() & 0xff);
  uint8_t* pinned = nullptr;
  uint8_t* deviceFrame = nullptr;
  std::vector<uint8_t> registered;
  uint8_t* registeredFrame = nullptr;
  const uint8_t* source = nullptr;
  void* mapped = nullptr;
  switch (from) {
    case Source::Device:
      ASSERT_EQ(cudaMalloc(reinterpret_cast<void**>(&deviceFrame), frameBytes), cudaSuccess);
      ASSERT_EQ(cudaMemcpy(deviceFrame, frame.data(), frameBytes, cudaMemcpyHostToDevice), cudaSuccess);
      source = deviceFrame;
      break;
    case Source::MallocHost:
      ASSERT_EQ(cudaMallocHost(reinterpret_cast<void**>(&pinned), frameBytes), cudaSuccess);
      std::copy(frame.begin(), frame.end(), pinned);
      ASSERT_EQ(cudaHostGetDevicePointer(&mapped, pinned, 0), cudaSuccess);
      source = static_cast<const uint8_t*>(mapped);
      break;
    case Source::RegisteredOddAddress:
      registered.resize(frameBytes + 5);
      registeredFrame = registered.data() + 5;
      std::copy(frame.begin(), frame.end(), registeredFrame);
      ASSERT_EQ(cudaHostRegister(registeredFrame, frameBytes, cudaHostRegisterMapped), cudaSuccess);
      ASSERT_EQ(cudaHostGetDevicePointer(&mapped, registeredFrame, 0), cudaSuccess);
      source = static_cast<const uint8_t*>(mapped);
      break;
  }
  // Targets one after another, each at a 16-byte aligned offset with a 16-byte aligned pitch, and
  // one spare row under each.
  std::vector<std::size_t> offsets;
  std::size_t targetBytes = 0;
  int maxHeight = 0;
  for (const WindowCase& w : windows) {
    offsets.push_back(targetBytes);
    targetBytes += alignUp16(std::size_t(w.width)) * std::size_t(w.height + 1);
    maxHeight = std::max(maxHeight, w.height);
  }
  uint8_t* target = nullptr;
  WindowCopy* copies = nullptr;
  ASSERT_EQ(cudaMalloc(reinterpret_cast<void**>(&target), targetBytes), cudaSuccess);
  std::vector<WindowCopy> hostCopies;
  for (std::size_t k = 0; k < windows.size(); ++k) {
    const WindowCase& w = windows[k];
    hostCopies.push_back(WindowCopy{source + std::size_t(w.y) * pitch + std::size_t(w.x), pitch, target + offsets[k],
                                    alignUp16(std::size_t(w.width)), w.width, w.height});
  }
  ASSERT_EQ(cudaMalloc(reinterpret_cast<void**>(&copies), hostCopies.size() * sizeof(WindowCopy)), cudaSuccess);
  ASSERT_EQ(cudaMemcpy(copies, hostCopies.data(), hostCopies.size() * sizeof(WindowCopy), cudaMemcpyHostToDevice),
            cudaSuccess);
  // The copies read by the kernel in device memory, then (up to kInlineWindowCopies) passed in its
  // parameters.
  for (bool inParameters : {false, true}) {
    SCOPED_TRACE(inParameters ? "copies in the kernel's parameters" : "copies read in device memory");
    ASSERT_EQ(cudaMemset(target, kUntouched, targetBytes), cudaSuccess);
    const Status st = gatherWindows(copies, inParameters ? hostCopies.data() : nullptr, int(windows.size()), maxHeight,
                                    nullptr);
    ASSERT_TRUE(st.ok()) << st.message();
    std::vector<uint8_t> got(targetBytes);
    ASSERT_EQ(cudaMemcpy(got.data(), target, targetBytes, cudaMemcpyDeviceToHost), cudaSuccess);
    for (std::size_t k = 0; k < windows.size(); ++k) {
      const WindowCase& w = windows[k];
      const std::size_t targetPitch = alignUp16(std::size_t(w.width));
      int wrong = 0, touched = 0;
      for (int y = 0; y <= w.height; ++y) {
        for (std::size_t x = 0; x < targetPitch; ++x) {
          const uint8_t b = got[offsets[k] + std::size_t(y) * targetPitch + x];
          if (y == w.height) touched += b != kUntouched;  // the spare row
          else if (x < std::size_t(w.width)) wrong += b != frame[std::size_t(w.y + y) * pitch + std::size_t(w.x) + x];
        }
      }
      EXPECT_EQ(wrong, 0) << "window " << k << ": " << w.width << "x" << w.height << " at " << w.x << "," << w.y;
      EXPECT_EQ(touched, 0) << "window " << k << ": the row under it was written";
    }
  }
  cudaFree(copies);
  cudaFree(target);
  if (pinned != nullptr) cudaFreeHost(pinned);
  if (registeredFrame != nullptr) cudaHostUnregister(registeredFrame);
  if (deviceFrame != nullptr) cudaFree(deviceFrame);
}

TEST(WindowGather, EveryOffsetWidthAndHeight) {
  SKIP_WITHOUT_GPU();
  const int frameWidth = 1100, frameHeight = 160;
  std::vector<WindowCase> windows;
  for (int width : {1, 2, 15, 16, 17, 31, 33, 128, 130, 1000})
    for (int offset = 0; offset < 16; ++offset)
      windows.push_back(WindowCase{std::min(offset + 16 * (width % 5), frameWidth - width), (width * 7 + offset) % 20,
                                   width, 1 + (width + offset) % 9});
  for (int height : {1, 7, 8, 9, 16, 17, 128, 130})
    windows.push_back(WindowCase{3 * height % 50 + 1, frameHeight - height, 128, height});
  windows.push_back(WindowCase{frameWidth - 17, frameHeight - 9, 17, 9});  // the frame's last byte
  windows.push_back(WindowCase{0, 0, frameWidth, frameHeight});            // the whole frame
  for (Source from : {Source::MallocHost, Source::RegisteredOddAddress, Source::Device}) {
    checkGather(frameWidth, frameHeight, std::size_t(frameWidth), windows, from);
    checkGather(frameWidth, frameHeight, std::size_t(frameWidth) + 37, windows, from);  // odd pitch
  }
  // The same windows in launches of at most kInlineWindowCopies: their copies in the parameters.
  for (std::size_t first = 0; first < windows.size(); first += kInlineWindowCopies) {
    const std::size_t end = std::min(windows.size(), first + kInlineWindowCopies);
    const std::vector<WindowCase> some(windows.begin() + std::ptrdiff_t(first), windows.begin() + std::ptrdiff_t(end));
    for (Source from : {Source::MallocHost, Source::Device})
      checkGather(frameWidth, frameHeight, std::size_t(frameWidth) + 37, some, from);
  }
}

// Small frames of odd sizes whose allocation ends with the frame's last byte: windows in every
// corner, of every width up to the frame's, one row and all rows.
TEST(WindowGather, WindowsAtTheCornersOfSmallOddFrames) {
  SKIP_WITHOUT_GPU();
  for (int side : {1, 3, 14, 17, 45}) {
    const int frameWidth = side, frameHeight = side / 2 + 1;
    std::vector<WindowCase> windows;
    for (int width = 1; width <= frameWidth; width += 1 + width / 3)
      for (int height : {1, frameHeight}) {
        windows.push_back(WindowCase{0, 0, width, height});
        windows.push_back(WindowCase{frameWidth - width, frameHeight - height, width, height});
        windows.push_back(WindowCase{frameWidth - width, 0, width, height});
        windows.push_back(WindowCase{0, frameHeight - height, width, height});
      }
    for (Source from : {Source::MallocHost, Source::RegisteredOddAddress, Source::Device})
      for (std::size_t padding : {0, 3}) checkGather(frameWidth, frameHeight, std::size_t(frameWidth) + padding, windows, from);
  }
}

TEST(WindowGather, SixteenTrackerWindowsOfA1080pFrame) {
  SKIP_WITHOUT_GPU();
  std::vector<WindowCase> windows;
  for (int k = 0; k < 16; ++k) windows.push_back(WindowCase{102 + (k % 4) * 420 + k, 52 + (k / 4) * 230, 128, 128});
  checkGather(1920, 1080, 1920, windows, Source::MallocHost);
}

TEST(WindowGather, NothingToCopy) {
  SKIP_WITHOUT_GPU();
  EXPECT_TRUE(gatherWindows(nullptr, nullptr, 0, 0, nullptr).ok());
}

}  // namespace
}  // namespace nccmatch::cuda
