// Probes for bench_sat: the default wide fused kernel (256x32 tiles, window 2) instantiated with a
// look-back left out, and a streaming kernel that moves the same bytes with no scan at all.
#include "sat_probes.hpp"

#include <cuda_runtime.h>

#include "bench_check.hpp"
#include "cuda/sat/sat_fused_wide.cuh"

namespace nccmatch::bench {
namespace {

// The library's default wide configuration (sat_fused.cu, NCC_WIDE_VARIANT(2, 4, 8, 4, 2, 2, 128)).
constexpr int kPx = 2, kChunks = 4, kWarps = 8, kRows = 4, kWindow = 2, kMinBlocks = 2, kBackoffNs = 128;
constexpr int kTileWidth = 32 * kPx * kChunks, kTileHeight = kWarps * kRows;

template <typename Out, int kSkip>
void launchWideProbe(const cuda::WideFusedParams<Out>& p, unsigned grid, cudaStream_t stream) {
  cuda::wideFusedSatKernel<Out, kPx, kChunks, kWarps, kRows, kWindow, kMinBlocks, kBackoffNs, true, kSkip>
      <<<grid, kWarps * 32, 0, stream>>>(p);
}

// The traffic floor of a build: each pixel read once, both table entries written once with
// streaming 16-byte stores, no scan and no carries. Out = int64: two pixels a thread; uint32: four.
template <typename Out>
__global__ void __launch_bounds__(256) streamTablesKernel(const uint8_t* __restrict__ image, std::size_t pixels,
                                                          Out* __restrict__ S, Out* __restrict__ Q) {
  constexpr int kPerThread = 16 / sizeof(Out);
  const std::size_t groups = pixels / kPerThread;
  for (std::size_t g = blockIdx.x * std::size_t(blockDim.x) + threadIdx.x; g < groups;
       g += std::size_t(gridDim.x) * blockDim.x) {
    if constexpr (kPerThread == 2) {
      const uint32_t v = __ldg(reinterpret_cast<const unsigned short*>(image) + g);
      const long long a = v & 0xff, b = v >> 8;
      __stcs(reinterpret_cast<longlong2*>(S) + g, make_longlong2(a, a + b));
      __stcs(reinterpret_cast<longlong2*>(Q) + g, make_longlong2(a * a, a * a + b * b));
    } else {
      const uint32_t v = __ldg(reinterpret_cast<const unsigned int*>(image) + g);
      uint32_t s[4], q[4], accS = 0, accQ = 0;
#pragma unroll
      for (int j = 0; j < 4; ++j) {
        const uint32_t a = (v >> (8 * j)) & 0xff;
        accS += a;
        accQ += a * a;
        s[j] = accS;
        q[j] = accQ;
      }
      __stcs(reinterpret_cast<uint4*>(S) + g, make_uint4(s[0], s[1], s[2], s[3]));
      __stcs(reinterpret_cast<uint4*>(Q) + g, make_uint4(q[0], q[1], q[2], q[3]));
    }
  }
}

void* deviceZeros(std::size_t bytes) {
  void* p = nullptr;
  BENCH_CUDA_CHECK(cudaMalloc(&p, bytes));
  BENCH_CUDA_CHECK(cudaMemset(p, 0, bytes));
  return p;
}

}  // namespace

// Carry words and ticket of the probes' wide launches, laid out as FusedSatBuilder lays them out.
struct SatProbes::Scratch {
  uint32_t* ticket = nullptr;
  uint64_t* carries = nullptr;
  std::size_t carryBytes = 0;
  uint32_t stamp = 0;
  ~Scratch() {
    cudaFree(ticket);
    cudaFree(carries);
  }
};

SatProbes::SatProbes(const uint8_t* image, int width, int height, void* sum, void* sumSq, cudaStream_t stream)
    : scratch_(std::make_unique<Scratch>()) {
  const int tilesX = (width + kTileWidth - 1) / kTileWidth, tilesY = (height + kTileHeight - 1) / kTileHeight;
  const std::size_t tiles = std::size_t(tilesX) * tilesY;
  const std::size_t rowWords = tiles * kTileHeight, colWords = tiles * kTileWidth * 2;
  scratch_->carryBytes = (rowWords + 2 * colWords) * sizeof(uint64_t);
  scratch_->carries = static_cast<uint64_t*>(deviceZeros(scratch_->carryBytes));
  scratch_->ticket = static_cast<uint32_t*>(deviceZeros(sizeof(uint32_t)));
  Scratch* sc = scratch_.get();
  const bool aligned = (width % kPx) == 0;  // pitch == width; cudaMalloc'd bases are aligned

  // A fresh stamp per launch (cleared once per cycle), as the library's builder does.
  auto wide = [=](auto out, auto launchFn) {
    using Out = decltype(out);
    return [=] {
      if (++sc->stamp >= cuda::kStampLimit) {
        sc->stamp = 1;
        BENCH_CUDA_CHECK(cudaMemsetAsync(sc->carries, 0, sc->carryBytes, stream));
      }
      cuda::WideFusedParams<Out> p{};
      p.image = image;
      p.pitch = std::size_t(width);
      p.width = width;
      p.height = height;
      p.tilesX = tilesX;
      p.tilesY = tilesY;
      p.S = static_cast<Out*>(sum);
      p.Q = static_cast<Out*>(sumSq);
      p.ticket = sc->ticket;
      p.aggH = sc->carries;
      p.aggV = sc->carries + rowWords;
      p.preV = sc->carries + rowWords + colWords;
      p.stamp = sc->stamp;
      p.alignedLoads = aligned;
      p.vectorStores = true;
      p.quadStores = true;
      launchFn(p, unsigned(tiles), stream);
      BENCH_CUDA_CHECK(cudaGetLastError());
    };
  };
  using cuda::kNoSkip;
  using cuda::kSkipHorizontal;
  using cuda::kSkipVertical;
  probes_.push_back({"fused probe: no horizontal look-back", 17,
                     wide(int64_t{}, &launchWideProbe<int64_t, kSkipHorizontal>)});
  probes_.push_back({"fused probe: no vertical look-back", 17, wide(int64_t{}, &launchWideProbe<int64_t, kSkipVertical>)});
  probes_.push_back({"fused probe: no look-backs", 17,
                     wide(int64_t{}, &launchWideProbe<int64_t, kSkipHorizontal | kSkipVertical>)});
  probes_.push_back({"fused32 probe: no look-backs", 9,
                     wide(uint32_t{}, &launchWideProbe<uint32_t, kSkipHorizontal | kSkipVertical>)});
  probes_.push_back({"fused probe: all stages (the default, same launcher)", 17,
                     wide(int64_t{}, &launchWideProbe<int64_t, kNoSkip>)});

  const std::size_t pixels = std::size_t(width) * height;
  int sms = 1, device = 0;
  BENCH_CUDA_CHECK(cudaGetDevice(&device));
  BENCH_CUDA_CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device));
  const unsigned blocks = unsigned(sms) * 8;
  probes_.push_back({"streaming floor: read 1 B, write 16 B a pixel, no scan", 17, [=] {
                       streamTablesKernel<int64_t><<<blocks, 256, 0, stream>>>(
                           image, pixels, static_cast<int64_t*>(sum), static_cast<int64_t*>(sumSq));
                       BENCH_CUDA_CHECK(cudaGetLastError());
                     }});
  probes_.push_back({"streaming floor: read 1 B, write 8 B a pixel (uint32)", 9, [=] {
                       streamTablesKernel<uint32_t><<<blocks, 256, 0, stream>>>(
                           image, pixels, static_cast<uint32_t*>(sum), static_cast<uint32_t*>(sumSq));
                       BENCH_CUDA_CHECK(cudaGetLastError());
                     }});
}

SatProbes::~SatProbes() = default;

}  // namespace nccmatch::bench
