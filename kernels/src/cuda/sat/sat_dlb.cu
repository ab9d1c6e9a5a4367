// SAT_DLB: cub::DeviceScan scans the rows into uint32 row sums, then a
// decoupled-look-back scan runs down the columns, in place, with no transposes.
//
// The row sums of both moments travel packed in one uint64 (sum << 32 | sumSq; a row of up to
// 16384 pixels keeps each half below 2^32, so one scan adds both), written into the sum table's
// own memory: a column tile reads its packed entries before it overwrites them with S and Q.
#include <cub/device/device_scan.cuh>
#include <cuda_runtime.h>
#include <thrust/iterator/counting_iterator.h>
#include <thrust/iterator/transform_iterator.h>

#include "cuda/sat/sat_builders.hpp"
#include "cuda/sat/sat_lookback.cuh"
#include "cuda/cuda_check.hpp"

namespace nccmatch::cuda {
namespace {

constexpr int kColumnThreads = 256;  // columns per tile, one per thread
constexpr int kTileRows = 16;        // rows per tile

struct RowOfIndex {
  int width;
  __host__ __device__ int operator()(int i) const { return i / width; }
};

struct PackedPixel {
  const uint8_t* image;
  std::size_t pitch;
  int width;
  __host__ __device__ uint64_t operator()(int i) const {
    const int y = i / width, x = i - y * width;
    const uint64_t v = image[std::size_t(y) * pitch + x];
    return (v << 32) | (v * v);
  }
};

using KeyIterator = thrust::transform_iterator<RowOfIndex, thrust::counting_iterator<int>>;
using PixelIterator = thrust::transform_iterator<PackedPixel, thrust::counting_iterator<int>>;

KeyIterator rowKeys(int width) {
  return thrust::make_transform_iterator(thrust::counting_iterator<int>(0), RowOfIndex{width});
}
PixelIterator packedPixels(const uint8_t* image, std::size_t pitch, int width) {
  return thrust::make_transform_iterator(thrust::counting_iterator<int>(0),
                                         PackedPixel{image, pitch, width});
}

struct DlbParams {
  int width, height, tilesX, tilesY;
  int64_t* S;  // holds the packed row sums on entry
  int64_t* Q;
  uint32_t* ticket;
  uint32_t* flags;
  MomentPair<int64_t>* agg;  // per tile, per column: column sums of the tile's rows
  MomentPair<int64_t>* pre;  // per tile, per column: S and Q on the tile's last row
  uint32_t epoch;
};

__global__ void __launch_bounds__(kColumnThreads) dlbColumnKernel(const DlbParams p) {
  __shared__ uint32_t sTicket;
  if (threadIdx.x == 0) sTicket = drawTicket(p.ticket, uint32_t(p.tilesX) * uint32_t(p.tilesY));
  __syncthreads();
  const uint32_t tile = sTicket;
  const int ty = int(tile / uint32_t(p.tilesX)), tx = int(tile % uint32_t(p.tilesX));
  const int x = tx * kColumnThreads + threadIdx.x;
  const int y0 = ty * kTileRows;
  const bool inside = x < p.width;
  const auto* packed = reinterpret_cast<const uint64_t*>(p.S);

  uint64_t rows[kTileRows];
  int64_t aggS = 0, aggQ = 0;
#pragma unroll
  for (int i = 0; i < kTileRows; ++i) {
    const int y = y0 + i;
    rows[i] = (inside && y < p.height) ? packed[std::size_t(y) * p.width + x] : 0;
    aggS += int64_t(rows[i] >> 32);
    aggQ += int64_t(uint32_t(rows[i]));
  }
  const bool lastRow = ty == p.tilesY - 1;
  if (ty > 0 && !lastRow) {
    p.agg[std::size_t(tile) * kColumnThreads + threadIdx.x] = MomentPair<int64_t>{aggS, aggQ};
    __syncthreads();
    if (threadIdx.x == 0) publishFlag(&p.flags[tile], p.epoch, kFlagAggregate);
  }
  // Look back up this strip of columns; every thread acquires the flags itself.
  int64_t carryS = 0, carryQ = 0;
  for (int qy = ty - 1; qy >= 0; --qy) {
    const uint32_t t2 = tile - uint32_t(ty - qy) * uint32_t(p.tilesX);
    const uint32_t state = waitForFlag(&p.flags[t2], p.epoch);
    const MomentPair<int64_t> v =
        (state == kFlagPrefix ? p.pre : p.agg)[std::size_t(t2) * kColumnThreads + threadIdx.x];
    carryS += v.s;
    carryQ += v.q;
    if (state == kFlagPrefix) break;
  }
  if (!lastRow) {
    p.pre[std::size_t(tile) * kColumnThreads + threadIdx.x] =
        MomentPair<int64_t>{carryS + aggS, carryQ + aggQ};
    __syncthreads();
    if (threadIdx.x == 0) publishFlag(&p.flags[tile], p.epoch, kFlagPrefix);
  }
  if (!inside) return;
#pragma unroll
  for (int i = 0; i < kTileRows; ++i) {
    const int y = y0 + i;
    if (y < p.height) {
      carryS += int64_t(rows[i] >> 32);
      carryQ += int64_t(uint32_t(rows[i]));
      const std::size_t at = std::size_t(y) * p.width + x;
      p.S[at] = carryS;
      p.Q[at] = carryQ;
    }
  }
}

class DlbSatBuilder final : public SatBuilder {
 public:
  DlbSatBuilder(int maxWidth, int maxHeight) : maxWidth_(maxWidth), maxHeight_(maxHeight) {}
  SatBuild kind() const override { return SatBuild::Dlb; }

  Status allocate() {
    const int items = maxWidth_ * maxHeight_;
    NCC_CUDA_CHECK(cub::DeviceScan::InclusiveScanByKey(
        nullptr, tempBytes_, rowKeys(maxWidth_), packedPixels(nullptr, 1, maxWidth_),
        static_cast<uint64_t*>(nullptr), ::cuda::std::plus<uint64_t>(), items));
    NCC_RETURN_IF_ERROR(allocateDevice(tempBytes_, &temp_));
    const std::size_t tiles = std::size_t(tilesAcross(maxWidth_)) * tilesDown(maxHeight_);
    NCC_RETURN_IF_ERROR(flags_.create(tiles, 1));
    NCC_RETURN_IF_ERROR(
        allocateDevice(2 * tiles * kColumnThreads * sizeof(MomentPair<int64_t>), &carries_));
    return Status();
  }

  Status build(const uint8_t* image, std::size_t pitch, int width, int height, void* sum,
               void* sumSq, cudaStream_t stream) override {
    NCC_RETURN_IF_ERROR(validateSatBuildArgs("SatBuilder(dlb)::build", image, pitch, width, height,
                                             sum, sumSq, maxWidth_, maxHeight_));
    std::size_t tempBytes = tempBytes_;
    NCC_CUDA_CHECK(cub::DeviceScan::InclusiveScanByKey(
        temp_.get(), tempBytes, rowKeys(width), packedPixels(image, pitch, width),
        static_cast<uint64_t*>(sum), ::cuda::std::plus<uint64_t>(), width * height,
        ::cuda::std::equal_to<int>(), stream));
    DlbParams p{};
    p.width = width;
    p.height = height;
    p.tilesX = tilesAcross(width);
    p.tilesY = tilesDown(height);
    p.S = static_cast<int64_t*>(sum);
    p.Q = static_cast<int64_t*>(sumSq);
    p.ticket = flags_.ticket();
    p.flags = flags_.flags(0);
    const std::size_t tiles = std::size_t(tilesAcross(maxWidth_)) * tilesDown(maxHeight_);
    p.agg = static_cast<MomentPair<int64_t>*>(carries_.get());
    p.pre = p.agg + tiles * kColumnThreads;
    NCC_RETURN_IF_ERROR(flags_.nextEpoch(stream, &p.epoch));
    dlbColumnKernel<<<unsigned(p.tilesX) * unsigned(p.tilesY), kColumnThreads, 0, stream>>>(p);
    NCC_CUDA_CHECK(cudaGetLastError());
    return Status();
  }

 private:
  static int tilesAcross(int width) { return (width + kColumnThreads - 1) / kColumnThreads; }
  static int tilesDown(int height) { return (height + kTileRows - 1) / kTileRows; }

  int maxWidth_, maxHeight_;
  std::size_t tempBytes_ = 0;
  DeviceMemory temp_;
  LookbackFlags flags_;
  DeviceMemory carries_;
};

}  // namespace

Status createDlbSatBuilder(int maxWidth, int maxHeight, std::unique_ptr<SatBuilder>* out) {
  auto builder = std::make_unique<DlbSatBuilder>(maxWidth, maxHeight);
  NCC_RETURN_IF_ERROR(builder->allocate());
  *out = std::move(builder);
  return Status();
}

}  // namespace nccmatch::cuda
