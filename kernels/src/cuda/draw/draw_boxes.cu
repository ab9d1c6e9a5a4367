// Match boxes on a device plane. One block walks the boxes in order (a barrier between boxes) so
// that overlapping boxes end exactly as the CPU's sequential drawing leaves them; per box, its
// threads cover the 3-pixel band along the edge (white ring of 2, black ring of 1 inside).
#include <cuda_runtime.h>

#include <algorithm>

#include "cuda/cuda_check.hpp"
#include "nccmatch/draw.hpp"

namespace nccmatch {

namespace {

constexpr int kBoxesPerLaunch = 128;  // 2 KiB of kernel arguments
constexpr int kBand = kMatchRingThickness + 1;

struct BoxBatch {
  int count;
  DrawBox boxes[kBoxesPerLaunch];
};

__device__ void drawOne(uint8_t* plane, int W, int H, std::size_t stride, const DrawBox& b) {
  if (b.width <= 0 || b.height <= 0) return;
  const long long x0 = b.x, y0 = b.y, x1 = x0 + b.width, y1 = y0 + b.height;
  const long long w = b.width, h = b.height;
  // The black ring exists when there is room inside the white one and the box starts inside
  // the plane (the CPU drawing's rule).
  const bool inner = b.width > 2 * kMatchRingThickness && b.height > 2 * kMatchRingThickness &&
                     b.x <= W && b.y <= H;
  const long long rows = min(h, (long long)kBand), cols = min(w, (long long)kBand);
  const long long horizontal = rows * w;  // one of the top/bottom bands
  const long long vertical = h * cols;    // one of the left/right bands
  const long long total = 2 * horizontal + 2 * vertical;
  for (long long i = threadIdx.x; i < total; i += blockDim.x) {
    long long x, y;
    if (i < horizontal) {
      y = y0 + i / w, x = x0 + i % w;
    } else if (i < 2 * horizontal) {
      const long long j = i - horizontal;
      y = y1 - rows + j / w, x = x0 + j % w;
    } else if (i < 2 * horizontal + vertical) {
      const long long j = i - 2 * horizontal;
      y = y0 + j / cols, x = x0 + j % cols;
    } else {
      const long long j = i - 2 * horizontal - vertical;
      y = y0 + j / cols, x = x1 - cols + j % cols;
    }
    if (x < 0 || y < 0 || x >= W || y >= H) continue;
    const long long d = min(min(x - x0, x1 - 1 - x), min(y - y0, y1 - 1 - y));
    if (d < kMatchRingThickness)
      plane[y * stride + x] = 255;
    else if (d == kMatchRingThickness && inner)
      plane[y * stride + x] = 0;
  }
}

__global__ void drawBoxesKernel(uint8_t* plane, int W, int H, std::size_t stride, BoxBatch batch) {
  for (int k = 0; k < batch.count; ++k) {
    drawOne(plane, W, H, stride, batch.boxes[k]);
    __syncthreads();  // the next box overwrites this one where they overlap, as on the CPU
  }
}

}  // namespace

Status drawMatchBoxesOnDevice(uint8_t* plane, int width, int height, std::size_t stride,
                              const std::vector<DrawBox>& boxes, void* stream) {
  if (boxes.empty()) return Status();
  if (plane == nullptr) return Status::error("drawMatchBoxesOnDevice: plane is null");
  if (width < 1 || height < 1 || stride < std::size_t(width))
    return Status::error("drawMatchBoxesOnDevice: bad plane geometry");
  cudaStream_t s = static_cast<cudaStream_t>(stream);
  for (std::size_t first = 0; first < boxes.size(); first += kBoxesPerLaunch) {
    BoxBatch batch{};
    batch.count = int(std::min<std::size_t>(kBoxesPerLaunch, boxes.size() - first));
    std::copy_n(boxes.begin() + first, batch.count, batch.boxes);
    drawBoxesKernel<<<1, 256, 0, s>>>(plane, width, height, stride, batch);
    NCC_CUDA_CHECK(cudaGetLastError());
  }
  NCC_CUDA_CHECK(cudaStreamSynchronize(s));
  return Status();
}

}  // namespace nccmatch
