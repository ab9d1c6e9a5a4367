// SAT_CUB: cub::DeviceScan scans the rows, a transpose turns columns into rows, a
// second scan runs down them, and a transpose brings the table back. CUB scans only contiguous
// data, hence the transposes, which for int64 tables move more memory than the scans do.
#include <cub/device/device_scan.cuh>
#include <cuda_runtime.h>
#include <thrust/iterator/counting_iterator.h>
#include <thrust/iterator/transform_iterator.h>

#include "cuda/sat/sat_builders.hpp"
#include "cuda/sat/sat_lookback.cuh"
#include "cuda/cuda_check.hpp"

namespace nccmatch::cuda {
namespace {

constexpr int kTransposeTile = 32;
constexpr int kTransposeRows = 8;

struct RowOfIndex {
  int width;
  __host__ __device__ int operator()(int i) const { return i / width; }
};

template <int kPower>
struct PixelPower {
  const uint8_t* image;
  std::size_t pitch;
  int width;
  __host__ __device__ int64_t operator()(int i) const {
    const int y = i / width, x = i - y * width;
    const int64_t v = image[std::size_t(y) * pitch + x];
    return kPower == 1 ? v : v * v;
  }
};

using KeyIterator = thrust::transform_iterator<RowOfIndex, thrust::counting_iterator<int>>;
template <int kPower>
using PixelIterator = thrust::transform_iterator<PixelPower<kPower>, thrust::counting_iterator<int>>;

KeyIterator rowKeys(int width) {
  return thrust::make_transform_iterator(thrust::counting_iterator<int>(0), RowOfIndex{width});
}
template <int kPower>
PixelIterator<kPower> pixels(const uint8_t* image, std::size_t pitch, int width) {
  return thrust::make_transform_iterator(thrust::counting_iterator<int>(0),
                                         PixelPower<kPower>{image, pitch, width});
}

// out (width x height) = transpose of in (height rows x width columns), through a padded tile.
__global__ void transposeKernel(const int64_t* __restrict__ in, int64_t* __restrict__ out, int width,
                                int height) {
  __shared__ int64_t tile[kTransposeTile][kTransposeTile + 1];
  const int x = blockIdx.x * kTransposeTile + threadIdx.x;
  const int y = blockIdx.y * kTransposeTile + threadIdx.y;
  for (int j = 0; j < kTransposeTile; j += kTransposeRows)
    if (x < width && y + j < height) tile[threadIdx.y + j][threadIdx.x] = in[std::size_t(y + j) * width + x];
  __syncthreads();
  const int ox = blockIdx.y * kTransposeTile + threadIdx.x;  // column of out = row of in
  const int oy = blockIdx.x * kTransposeTile + threadIdx.y;
  for (int j = 0; j < kTransposeTile; j += kTransposeRows)
    if (ox < height && oy + j < width) out[std::size_t(oy + j) * height + ox] = tile[threadIdx.x][threadIdx.y + j];
}

class CubSatBuilder final : public SatBuilder {
 public:
  CubSatBuilder(int maxWidth, int maxHeight) : maxWidth_(maxWidth), maxHeight_(maxHeight) {}
  SatBuild kind() const override { return SatBuild::Cub; }

  Status allocate() {
    const int items = maxWidth_ * maxHeight_;
    // Scans of int64 values with int keys: the temp size depends only on types and item count.
    std::size_t bytes = 0;
    NCC_CUDA_CHECK(cub::DeviceScan::InclusiveScanByKey(nullptr, bytes, rowKeys(maxWidth_),
                                                       pixels<2>(nullptr, 1, maxWidth_),
                                                       static_cast<int64_t*>(nullptr),
                                                       ::cuda::std::plus<int64_t>(), items));
    tempBytes_ = bytes;
    NCC_CUDA_CHECK(cub::DeviceScan::InclusiveScanByKey(nullptr, bytes, rowKeys(maxWidth_),
                                                       pixels<1>(nullptr, 1, maxWidth_),
                                                       static_cast<int64_t*>(nullptr),
                                                       ::cuda::std::plus<int64_t>(), items));
    tempBytes_ = std::max(tempBytes_, bytes);
    NCC_CUDA_CHECK(cub::DeviceScan::InclusiveScanByKey(nullptr, bytes, rowKeys(maxHeight_),
                                                       static_cast<const int64_t*>(nullptr),
                                                       static_cast<int64_t*>(nullptr),
                                                       ::cuda::std::plus<int64_t>(), items));
    tempBytes_ = std::max(tempBytes_, bytes);
    NCC_RETURN_IF_ERROR(allocateDevice(tempBytes_, &temp_));
    NCC_RETURN_IF_ERROR(allocateDevice(std::size_t(items) * sizeof(int64_t), &transposed_));
    return Status();
  }

  Status build(const uint8_t* image, std::size_t pitch, int width, int height, void* sum,
               void* sumSq, cudaStream_t stream) override {
    NCC_RETURN_IF_ERROR(validateSatBuildArgs("SatBuilder(cub)::build", image, pitch, width, height,
                                             sum, sumSq, maxWidth_, maxHeight_));
    auto* S = static_cast<int64_t*>(sum);
    auto* Q = static_cast<int64_t*>(sumSq);
    const int items = width * height;
    std::size_t bytes = tempBytes_;
    NCC_CUDA_CHECK(cub::DeviceScan::InclusiveScanByKey(temp_.get(), bytes, rowKeys(width),
                                                       pixels<1>(image, pitch, width), S,
                                                       ::cuda::std::plus<int64_t>(), items,
                                                       ::cuda::std::equal_to<int>(), stream));
    bytes = tempBytes_;
    NCC_CUDA_CHECK(cub::DeviceScan::InclusiveScanByKey(temp_.get(), bytes, rowKeys(width),
                                                       pixels<2>(image, pitch, width), Q,
                                                       ::cuda::std::plus<int64_t>(), items,
                                                       ::cuda::std::equal_to<int>(), stream));
    NCC_RETURN_IF_ERROR(scanColumns(S, width, height, stream));
    NCC_RETURN_IF_ERROR(scanColumns(Q, width, height, stream));
    return Status();
  }

 private:
  // table (height x width, rows already scanned) -> transpose -> scan rows -> transpose back.
  Status scanColumns(int64_t* table, int width, int height, cudaStream_t stream) {
    auto* t = static_cast<int64_t*>(transposed_.get());
    const dim3 block(kTransposeTile, kTransposeRows);
    const dim3 gridIn((width + kTransposeTile - 1) / kTransposeTile,
                      (height + kTransposeTile - 1) / kTransposeTile);
    transposeKernel<<<gridIn, block, 0, stream>>>(table, t, width, height);
    NCC_CUDA_CHECK(cudaGetLastError());
    std::size_t bytes = tempBytes_;
    // In place: each scan tile loads its values before storing them.
    NCC_CUDA_CHECK(cub::DeviceScan::InclusiveScanByKey(temp_.get(), bytes, rowKeys(height), t, t,
                                                       ::cuda::std::plus<int64_t>(), width * height,
                                                       ::cuda::std::equal_to<int>(), stream));
    const dim3 gridOut((height + kTransposeTile - 1) / kTransposeTile,
                       (width + kTransposeTile - 1) / kTransposeTile);
    transposeKernel<<<gridOut, block, 0, stream>>>(t, table, height, width);
    NCC_CUDA_CHECK(cudaGetLastError());
    return Status();
  }

  int maxWidth_, maxHeight_;
  std::size_t tempBytes_ = 0;
  DeviceMemory temp_;
  DeviceMemory transposed_;
};

}  // namespace

Status createCubSatBuilder(int maxWidth, int maxHeight, std::unique_ptr<SatBuilder>* out) {
  auto builder = std::make_unique<CubSatBuilder>(maxWidth, maxHeight);
  NCC_RETURN_IF_ERROR(builder->allocate());
  *out = std::move(builder);
  return Status();
}

}  // namespace nccmatch::cuda
