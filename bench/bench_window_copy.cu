// Windows of a pinned host frame onto the device (issue 13: the tracker's matchRegions call on a
// pinned frame pays ~12 µs more than on a device frame, the gather of its windows): what moving
// the same windows costs by each way the device offers, the calling thread's wall time from the
// call to the stream's end (what a synchronous region call waits) and the GPU's time between
// events, medians after warm-up, the GPU idle between samples:
// - gather: the library's copy kernel (copy/window_gather.hpp), reading over the bus;
// - batch: one cudaMemcpy3DBatchAsync of every window (the copy engines);
// - per window: a cudaMemcpy2DAsync each;
// - baselines: the same bytes as one contiguous pinned -> device copy (the bus's own rate), the
//   gather kernel on a device copy of the frame (the kernel without the bus), an empty kernel
//   (what a launch and the events cost);
// - probes of the gather's fixed cost: the gather twice back to back (the second on warm address
//   translations), and on the frame in registered 2 MB-aligned memory advised to huge pages;
// - a probe of the bus's requests (sm_90): the same gather with each row read by the SM's bulk-copy
//   engine (cp.async.bulk, TMA) into shared memory instead of by the threads' loads.
// Windows: `--windows` of `--side`² at random places in a 1080p frame (seed printed), their
// columns rounded down to a multiple of `--align` (1: any column; 128: whole 128-byte lines of the
// frame, whose rows are 1920 bytes), each checked against the frame after its copy.
// Usage: bench_window_copy [--windows N --side S --reps R --seed X --align A]
#include <cuda_runtime.h>
#include <sys/mman.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <random>
#include <string>
#include <vector>

#include "bench_check.hpp"
#include "cuda/copy/window_gather.hpp"
#include "cuda/numerator/chunk_shift.hpp"
#include "median.hpp"

namespace {

__global__ void emptyKernel() {}

// The gather with each row read by the bulk-copy engine (sm_90): block (x, y) takes rows
// kBulkRows * y .. of window x. Thread 0 arms the block's mbarrier with the rows' bytes and issues
// one cp.async.bulk a row (the 16-byte aligned span holding it, up to 15 bytes each side beyond the
// row: the frame is allocated with room for that), the threads wait for the barrier's phase, cut
// each chunk from two staged blocks and store it. Whether the bus moves a row in fewer or larger
// requests this way than by the threads' 16-byte loads (the library's gather is bound by the
// 32-byte sectors it reads).
constexpr int kBulkRows = 8, kBulkThreads = 64, kBulkSpan = 1120;  // a row of up to 1080 bytes + 2 x 16

__global__ void __launch_bounds__(kBulkThreads) bulkGatherKernel(const nccmatch::cuda::WindowCopy* copies) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  __shared__ alignas(16) uint8_t staged[kBulkRows][kBulkSpan];
  __shared__ alignas(8) unsigned long long barrier;
  const nccmatch::cuda::WindowCopy c = copies[blockIdx.x];
  const int firstRow = int(blockIdx.y) * kBulkRows;
  if (firstRow >= c.height) return;
  const int rows = min(kBulkRows, c.height - firstRow);
  const auto shiftOf = [&](int r) {
    return unsigned(reinterpret_cast<uintptr_t>(c.source + std::size_t(firstRow + r) * c.sourcePitch) & 15u);
  };
  const auto spanOf = [&](int r) { return int((shiftOf(r) + unsigned(c.width) + 15u) & ~15u); };
  const uint32_t bar = uint32_t(__cvta_generic_to_shared(&barrier));
  if (threadIdx.x == 0) {
    asm volatile("mbarrier.init.shared::cta.b64 [%0], 1;" ::"r"(bar) : "memory");
    asm volatile("fence.proxy.async.shared::cta;" ::: "memory");  // the init seen by the copy engine
  }
  __syncthreads();
  if (threadIdx.x == 0) {
    int bytes = 0;
    for (int r = 0; r < rows; ++r) bytes += spanOf(r);
    asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" ::"r"(bar), "r"(bytes) : "memory");
    for (int r = 0; r < rows; ++r) {
      const uint8_t* row = c.source + std::size_t(firstRow + r) * c.sourcePitch - shiftOf(r);
      asm volatile(
          "cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];" ::"r"(
              uint32_t(__cvta_generic_to_shared(staged[r]))),
          "l"(row), "r"(spanOf(r)), "r"(bar)
          : "memory");
    }
  }
  uint32_t done = 0;
  while (!done)
    asm volatile(
        "{ .reg .pred p; mbarrier.try_wait.parity.shared::cta.b64 p, [%1], 0; selp.u32 %0, 1, 0, p; }"
        : "=r"(done)
        : "r"(bar)
        : "memory");
  const int chunks = (c.width + 15) / 16;
  for (int i = int(threadIdx.x); i < rows * chunks; i += kBulkThreads) {
    const int r = i / chunks, q = i - r * chunks;
    uint32_t lo[4], hi[4], out[4];
    const uint32_t* block = reinterpret_cast<const uint32_t*>(staged[r] + 16 * q);
    for (int k = 0; k < 4; ++k) {
      lo[k] = block[k];
      hi[k] = 16 * q + 16 < kBulkSpan ? block[4 + k] : 0u;
    }
    nccmatch::cuda::image_tile::shiftChunk(lo, hi, shiftOf(r), out);
    *reinterpret_cast<uint4*>(c.target + std::size_t(firstRow + r) * c.targetPitch + 16 * q) =
        make_uint4(out[0], out[1], out[2], out[3]);
  }
#endif
}

constexpr std::size_t kHugePage = 2u << 20;

// `bytes` (rounded up to 2 MB) of 2 MB-aligned host memory, advised to transparent huge pages,
// touched and registered mapped with CUDA; null with the reason where a step fails.
uint8_t* allocateHugeFrame(std::size_t bytes, std::string* why) {
  const std::size_t rounded = (bytes + kHugePage - 1) / kHugePage * kHugePage;
  void* memory = nullptr;
  if (posix_memalign(&memory, kHugePage, rounded) != 0) return *why = "posix_memalign failed", nullptr;
  if (madvise(memory, rounded, MADV_HUGEPAGE) != 0) {
    std::free(memory);
    return *why = std::string("madvise(MADV_HUGEPAGE): ") + std::strerror(errno), nullptr;
  }
  std::memset(memory, 0, rounded);
  const cudaError_t registered = cudaHostRegister(memory, rounded, cudaHostRegisterMapped);
  if (registered != cudaSuccess) {
    cudaGetLastError();  // the failed registration is not left for a later check to find
    std::free(memory);
    return *why = std::string("cudaHostRegister: ") + cudaGetErrorString(registered), nullptr;
  }
  return static_cast<uint8_t*>(memory);
}

using nccmatch::bench::median;
using nccmatch::cuda::WindowCopy;
using Clock = std::chrono::steady_clock;

constexpr int kFrameWidth = 1920, kFrameHeight = 1080;

struct Options {
  int windows = 16, side = 128, reps = 1000, align = 1;
  unsigned seed = 0;
};

Options parse(int argc, char** argv) {
  Options o;
  o.seed = unsigned(std::random_device{}());
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string key = argv[i];
    const long value = std::atol(argv[i + 1]);
    if (key == "--windows") o.windows = int(value);
    else if (key == "--side") o.side = int(value);
    else if (key == "--reps") o.reps = int(value);
    else if (key == "--seed") o.seed = unsigned(value);
    else if (key == "--align") o.align = int(value);
    else {
      std::fprintf(stderr, "unknown option %s (--windows, --side, --reps, --seed, --align)\n", key.c_str());
      std::exit(2);
    }
  }
  if (o.windows < 1 || o.windows > nccmatch::cuda::kInlineWindowCopies || o.side < 1 || o.side > kFrameHeight ||
      o.reps < 10 || o.align < 1 || o.align > kFrameWidth) {
    std::fprintf(stderr, "need 1 <= --windows <= %d, 1 <= --side <= %d, --reps >= 10, 1 <= --align <= %d\n",
                 nccmatch::cuda::kInlineWindowCopies, kFrameHeight, kFrameWidth);
    std::exit(2);
  }
  return o;
}

struct Timing {
  double wallUs = 0, gpuUs = 0;
};

// Median wall µs (call to stream end) and GPU µs (event to event) of `enqueue`, after 50 warm-up
// rounds.
Timing measure(int reps, cudaStream_t stream, const std::function<void()>& enqueue) {
  cudaEvent_t start, stop;
  BENCH_CUDA_CHECK(cudaEventCreate(&start));
  BENCH_CUDA_CHECK(cudaEventCreate(&stop));
  std::vector<double> wall, gpu;
  for (int i = 0; i < reps + 50; ++i) {
    const auto t0 = Clock::now();
    BENCH_CUDA_CHECK(cudaEventRecord(start, stream));
    enqueue();
    BENCH_CUDA_CHECK(cudaEventRecord(stop, stream));
    BENCH_CUDA_CHECK(cudaStreamSynchronize(stream));
    const auto t1 = Clock::now();
    float ms = 0;
    BENCH_CUDA_CHECK(cudaEventElapsedTime(&ms, start, stop));
    if (i >= 50) {
      wall.push_back(std::chrono::duration<double, std::micro>(t1 - t0).count());
      gpu.push_back(1000.0 * ms);
    }
  }
  BENCH_CUDA_CHECK(cudaEventDestroy(start));
  BENCH_CUDA_CHECK(cudaEventDestroy(stop));
  return Timing{median(wall), median(gpu)};
}

// Whether every window's target rows hold the frame's pixels.
bool windowsMatch(const std::vector<WindowCopy>& copies, const uint8_t* frame, const uint8_t* frameDevice,
                  const uint8_t* targetsDevice, const std::vector<uint8_t>& targetsHost) {
  for (const WindowCopy& c : copies)
    for (int y = 0; y < c.height; ++y) {
      const uint8_t* source = frame + (c.source - frameDevice) + std::size_t(y) * c.sourcePitch;
      const uint8_t* target = targetsHost.data() + (c.target - targetsDevice) + std::size_t(y) * c.targetPitch;
      if (std::memcmp(source, target, std::size_t(c.width)) != 0) return false;
    }
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  const Options o = parse(argc, argv);
  std::printf("# bench_window_copy: %d windows of %dx%d from a pinned %dx%d frame, columns a multiple of %d, seed %u, "
              "%d reps\n",
              o.windows, o.side, o.side, kFrameWidth, kFrameHeight, o.align, o.seed, o.reps);
  cudaDeviceProp prop{};
  BENCH_CUDA_CHECK(cudaGetDeviceProperties(&prop, 0));
  std::printf("# %s\n", prop.name);
  cudaStream_t stream;
  BENCH_CUDA_CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  uint8_t* frame = nullptr;
  const std::size_t frameBytes = std::size_t(kFrameWidth) * kFrameHeight;
  // 16 bytes of room past the last row: the bulk gather reads each row's 16-byte aligned span.
  BENCH_CUDA_CHECK(cudaHostAlloc(reinterpret_cast<void**>(&frame), frameBytes + 16, cudaHostAllocMapped));
  std::mt19937 rng(o.seed);
  for (std::size_t i = 0; i < frameBytes; ++i) frame[i] = uint8_t(rng());
  uint8_t* frameDevice = nullptr;  // where the device reads the pinned frame (UVA)
  BENCH_CUDA_CHECK(cudaHostGetDevicePointer(reinterpret_cast<void**>(&frameDevice), frame, 0));
  const std::size_t pitch = (std::size_t(o.side) + 15) / 16 * 16;
  const std::size_t windowBytes = pitch * std::size_t(o.side);
  uint8_t* targets = nullptr;
  BENCH_CUDA_CHECK(cudaMalloc(reinterpret_cast<void**>(&targets), windowBytes * o.windows));
  std::vector<WindowCopy> copies;
  std::uniform_int_distribution<int> atX(0, kFrameWidth - o.side), atY(0, kFrameHeight - o.side);
  for (int k = 0; k < o.windows; ++k) {
    const int x = atX(rng) / o.align * o.align, y = atY(rng);
    copies.push_back(WindowCopy{frameDevice + std::size_t(y) * kFrameWidth + std::size_t(x), std::size_t(kFrameWidth),
                                targets + windowBytes * k, pitch, o.side, o.side});
  }
  // The same windows of a device copy of the frame: the gather without the bus.
  uint8_t* frameOnDevice = nullptr;
  BENCH_CUDA_CHECK(cudaMalloc(reinterpret_cast<void**>(&frameOnDevice), frameBytes));
  BENCH_CUDA_CHECK(cudaMemcpy(frameOnDevice, frame, frameBytes, cudaMemcpyHostToDevice));
  // The windows' copies with their sources at the same places of another copy of the frame.
  const auto rebased = [&](const uint8_t* base) {
    std::vector<WindowCopy> list = copies;
    for (WindowCopy& c : list) c.source = base + (c.source - frameDevice);
    return list;
  };
  const std::vector<WindowCopy> deviceCopies = rebased(frameOnDevice);
  // The same frame in 2 MB-aligned memory the kernel asked to back with huge pages (madvise), then
  // registered: whether the gather's fixed cost is the GPU's translations of the host's 4 KB pages.
  std::string hugeWhy;
  uint8_t* hugeFrame = allocateHugeFrame(frameBytes, &hugeWhy);
  std::vector<WindowCopy> hugeCopies;
  if (hugeFrame != nullptr) {
    std::memcpy(hugeFrame, frame, frameBytes);
    uint8_t* hugeDevice = nullptr;
    BENCH_CUDA_CHECK(cudaHostGetDevicePointer(reinterpret_cast<void**>(&hugeDevice), hugeFrame, 0));
    hugeCopies = rebased(hugeDevice);
  }
  // The library's gather of `list` on the stream.
  const auto gather = [&](const std::vector<WindowCopy>& list) {
    nccmatch::bench::exitOnError(nccmatch::cuda::gatherWindows(nullptr, list.data(), o.windows, o.side, stream));
  };
  std::vector<cudaMemcpy3DBatchOp> batch(copies.size());
  for (std::size_t k = 0; k < copies.size(); ++k) {
    cudaMemcpy3DBatchOp& op = batch[k];
    std::memset(&op, 0, sizeof op);
    op.src.type = cudaMemcpyOperandTypePointer;
    op.src.op.ptr.ptr = frame + (copies[k].source - frameDevice);
    op.src.op.ptr.rowLength = kFrameWidth;
    op.dst.type = cudaMemcpyOperandTypePointer;
    op.dst.op.ptr.ptr = copies[k].target;
    op.dst.op.ptr.rowLength = pitch;
    op.extent = make_cudaExtent(std::size_t(o.side), std::size_t(o.side), 1);
    op.srcAccessOrder = cudaMemcpySrcAccessOrderStream;
  }
  uint8_t* packed = nullptr;  // the windows' bytes, contiguous in pinned memory (the baseline)
  BENCH_CUDA_CHECK(cudaHostAlloc(reinterpret_cast<void**>(&packed), windowBytes * o.windows, cudaHostAllocDefault));
  std::memset(packed, 0, windowBytes * o.windows);
  std::vector<uint8_t> check(windowBytes * o.windows);

  struct Way {
    const char* name;
    std::function<void()> enqueue;
    bool checked;             // the windows read back and compared with the frame's
    bool movesWindows = true;  // the window's bytes (or as many) cross: GB/s is printed
  };
  // The copies in device memory for the bulk gather (sm_90 only).
  WindowCopy* copiesOnDevice = nullptr;
  BENCH_CUDA_CHECK(cudaMalloc(reinterpret_cast<void**>(&copiesOnDevice), copies.size() * sizeof(WindowCopy)));
  BENCH_CUDA_CHECK(
      cudaMemcpy(copiesOnDevice, copies.data(), copies.size() * sizeof(WindowCopy), cudaMemcpyHostToDevice));
  const dim3 bulkGrid(unsigned(o.windows), unsigned((o.side + kBulkRows - 1) / kBulkRows));
  std::vector<Way> ways = {
      {"gather kernel (library)", [&] { gather(copies); }, true},
      {"cudaMemcpy3DBatchAsync, one call",
       [&] { BENCH_CUDA_CHECK(cudaMemcpy3DBatchAsync(batch.size(), batch.data(), 0, stream)); }, true},
      {"cudaMemcpy2DAsync, one a window",
       [&] {
         for (std::size_t k = 0; k < copies.size(); ++k)
           BENCH_CUDA_CHECK(cudaMemcpy2DAsync(copies[k].target, pitch, frame + (copies[k].source - frameDevice),
                                              kFrameWidth, std::size_t(o.side), std::size_t(o.side),
                                              cudaMemcpyHostToDevice, stream));
       },
       true},
      {"baseline: the same bytes contiguous, one cudaMemcpyAsync",
       [&] {
         BENCH_CUDA_CHECK(cudaMemcpyAsync(targets, packed, windowBytes * o.windows, cudaMemcpyHostToDevice, stream));
       },
       false},
      {"baseline: the gather kernel, frame in device memory (no bus)", [&] { gather(deviceCopies); }, true},
      {"gather kernel twice, back to back (the second finds the translations warm)",
       [&] {
         gather(copies);
         gather(copies);
       },
       true, false},
      {"baseline: an empty kernel (launch and events)",
       [&] {
         emptyKernel<<<1, 32, 0, stream>>>();
         BENCH_CUDA_CHECK(cudaGetLastError());
       },
       false, false},
  };
  if (prop.major >= 9)
    ways.push_back({"bulk gather (each row by cp.async.bulk, TMA)",
                    [&] {
                      bulkGatherKernel<<<bulkGrid, kBulkThreads, 0, stream>>>(copiesOnDevice);
                      BENCH_CUDA_CHECK(cudaGetLastError());
                    },
                    true});
  if (hugeFrame != nullptr)
    ways.push_back({"gather kernel, frame in registered 2 MB-aligned memory advised to huge pages",
                    [&] { gather(hugeCopies); }, true});
  std::printf("| way | wall µs (call to stream end) | GPU µs (events) | GB/s (GPU) |\n|---|---|---|---|\n");
  if (hugeFrame == nullptr) std::printf("| gather kernel, frame in huge pages | not run: %s | | |\n", hugeWhy.c_str());
  for (const Way& way : ways) {
    BENCH_CUDA_CHECK(cudaMemset(targets, 0, windowBytes * o.windows));
    const Timing t = measure(o.reps, stream, way.enqueue);
    if (way.checked) {
      BENCH_CUDA_CHECK(cudaMemcpy(check.data(), targets, check.size(), cudaMemcpyDeviceToHost));
      if (!windowsMatch(copies, frame, frameDevice, targets, check)) {
        std::fprintf(stderr, "%s: the windows on the device differ from the frame's\n", way.name);
        return 1;
      }
    }
    const double bytes = double(o.side) * o.side * o.windows;
    if (way.movesWindows)
      std::printf("| %s | %.2f | %.2f | %.1f |\n", way.name, t.wallUs, t.gpuUs, bytes / (t.gpuUs * 1e3));
    else
      std::printf("| %s | %.2f | %.2f | - |\n", way.name, t.wallUs, t.gpuUs);
  }
  BENCH_CUDA_CHECK(cudaFree(copiesOnDevice));
  BENCH_CUDA_CHECK(cudaFreeHost(packed));
  BENCH_CUDA_CHECK(cudaFree(frameOnDevice));
  if (hugeFrame != nullptr) {
    BENCH_CUDA_CHECK(cudaHostUnregister(hugeFrame));
    std::free(hugeFrame);
  }
  BENCH_CUDA_CHECK(cudaFree(targets));
  BENCH_CUDA_CHECK(cudaFreeHost(frame));
  BENCH_CUDA_CHECK(cudaStreamDestroy(stream));
  return 0;
}
