// What each CUDA call on the path of one pinned frame costs the calling thread (issue 14: the
// element costs a producer ~16 µs a buffer in the driver): the host time of each call the
// engine's submit and collect make, one at a time, median of many after warm-up, beside the
// engine's own submit() and collect() on the same frame. The GPU is idle between samples (each
// sample ends with a synchronize outside the timed part), as behind a producer slower than the
// engine. Host clock (steady_clock): these are host costs, not GPU time.
// Usage: bench_driver_calls [--width W --height H --reps N]
#include <cuda.h>
#include <cuda_runtime_api.h>
#include <dlfcn.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

#include "bench_check.hpp"
#include "median.hpp"
#include "nccmatch/engine.hpp"
#include "nccmatch/host_memory.hpp"

namespace {

using nccmatch::bench::median;
using Clock = std::chrono::steady_clock;

struct Options {
  int width = 1920, height = 1080, reps = 2000;
};

Options parse(int argc, char** argv) {
  Options o;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string key = argv[i];
    const int value = std::atoi(argv[i + 1]);
    if (key == "--width") o.width = value;
    else if (key == "--height") o.height = value;
    else if (key == "--reps") o.reps = value;
    else {
      std::fprintf(stderr, "unknown option %s (--width, --height, --reps)\n", key.c_str());
      std::exit(2);
    }
  }
  if (o.width < 64 || o.height < 64 || o.reps < 10) {
    std::fprintf(stderr, "need --width and --height >= 64 and --reps >= 10\n");
    std::exit(2);
  }
  return o;
}

// Median host µs of `call`, each sample followed (untimed) by `after` (a synchronize), after
// 50 warm-up rounds.
double medianMicros(int reps, const std::function<void()>& call, const std::function<void()>& after) {
  std::vector<double> us;
  for (int i = 0; i < reps + 50; ++i) {
    const auto t0 = Clock::now();
    call();
    const auto t1 = Clock::now();
    after();
    if (i >= 50) us.push_back(std::chrono::duration<double, std::micro>(t1 - t0).count());
  }
  return median(us);
}

__global__ void emptyKernel() {}

// A kernel of the region search's parameter size (its inline descriptors: ~4 KB), doing nothing
// but what programmatic dependent launch asks of a kernel and of its dependent.
struct FourKilobytes {
  unsigned char bytes[4000];
};
__global__ void fourKilobyteKernel(const __grid_constant__ FourKilobytes p) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
  asm volatile("griddepcontrol.wait;" ::: "memory");
#endif
  if (p.bytes[threadIdx.x] == 255 && p.bytes[3999] == 254) __trap();  // never: the bench's bytes are below
}

// Writes `value` to a flag in mapped pinned memory: the host sees the kernel's end by polling it.
__global__ void flagKernel(volatile int* flag, int value) { *flag = value; }

cudaError_t launchFourKilobytes(const FourKilobytes& p, cudaStream_t stream, bool programmatic) {
  cudaLaunchAttribute attribute{};
  attribute.id = cudaLaunchAttributeProgrammaticStreamSerialization;
  attribute.val.programmaticStreamSerializationAllowed = 1;
  cudaLaunchConfig_t config{};
  config.gridDim = dim3(1);
  config.blockDim = dim3(64);
  config.stream = stream;
  config.attrs = &attribute;
  config.numAttrs = programmatic ? 1 : 0;
  return cudaLaunchKernelEx(&config, fourKilobyteKernel, p);
}

// The driver's context push and pop (the element's CudaContextScope around each engine call),
// through libcuda loaded at run time: the benchmark links only the runtime.
struct ContextCalls {
  using Push = CUresult (*)(CUcontext);
  using Pop = CUresult (*)(CUcontext*);
  using GetCurrent = CUresult (*)(CUcontext*);
  Push push = nullptr;
  Pop pop = nullptr;
  GetCurrent current = nullptr;
  bool load() {
    void* lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);
    if (lib == nullptr) lib = dlopen("libcuda.so.1", RTLD_NOW);
    if (lib == nullptr) return false;
    push = reinterpret_cast<Push>(dlsym(lib, "cuCtxPushCurrent_v2"));
    pop = reinterpret_cast<Pop>(dlsym(lib, "cuCtxPopCurrent_v2"));
    current = reinterpret_cast<GetCurrent>(dlsym(lib, "cuCtxGetCurrent"));
    return push && pop && current;
  }
};

}  // namespace

int main(int argc, char** argv) {
  const Options o = parse(argc, argv);
  int devices = 0;
  if (cudaGetDeviceCount(&devices) != cudaSuccess || devices == 0) {
    std::printf("no CUDA device: nothing to measure\n");
    return 0;
  }
  BENCH_CUDA_CHECK(cudaSetDevice(0));
  cudaDeviceProp prop{};
  BENCH_CUDA_CHECK(cudaGetDeviceProperties(&prop, 0));
  const std::size_t bytes = std::size_t(o.width) * o.height;
  void* pinned = nullptr;
  nccmatch::bench::exitOnError(nccmatch::allocatePinnedHost(bytes, &pinned));
  std::memset(pinned, 7, bytes);
  std::vector<uint8_t> pageable(bytes, 7);
  void* device = nullptr;
  std::size_t pitch = 0;
  BENCH_CUDA_CHECK(cudaMallocPitch(&device, &pitch, std::size_t(o.width), std::size_t(o.height)));
  cudaStream_t stream = nullptr, other = nullptr;
  BENCH_CUDA_CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  BENCH_CUDA_CHECK(cudaStreamCreateWithFlags(&other, cudaStreamNonBlocking));
  cudaEvent_t event = nullptr;
  BENCH_CUDA_CHECK(cudaEventCreateWithFlags(&event, cudaEventDisableTiming));
  cudaGraph_t graph = nullptr;
  cudaGraphExec_t exec = nullptr;
  BENCH_CUDA_CHECK(cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal));
  for (int k = 0; k < 8; ++k) emptyKernel<<<1, 32, 0, stream>>>();
  BENCH_CUDA_CHECK(cudaStreamEndCapture(stream, &graph));
  BENCH_CUDA_CHECK(cudaGraphInstantiate(&exec, graph, 0));
  const auto sync = [&] { BENCH_CUDA_CHECK(cudaDeviceSynchronize()); };
  const auto none = [] {};

  struct Row {
    std::string call;
    double us;
  };
  std::vector<Row> rows;
  const auto add = [&](const std::string& call, double us) { rows.push_back({call, us}); };
  cudaPointerAttributes attributes{};
  add("cudaPointerGetAttributes, pinned block", medianMicros(o.reps, [&] {
        BENCH_CUDA_CHECK(cudaPointerGetAttributes(&attributes, pinned));
      }, none));
  add("cudaPointerGetAttributes, pageable (fails; + cudaGetLastError)", medianMicros(o.reps, [&] {
        cudaPointerGetAttributes(&attributes, pageable.data());
        cudaGetLastError();
      }, none));
  add("nccmatch::hostMemoryPinned (first and last byte)", medianMicros(o.reps, [&] {
        if (!nccmatch::hostMemoryPinned(pinned, bytes)) std::exit(3);
      }, none));
  add("cudaMemcpy2DAsync of the frame, pinned -> device", medianMicros(o.reps, [&] {
        BENCH_CUDA_CHECK(cudaMemcpy2DAsync(device, pitch, pinned, std::size_t(o.width), std::size_t(o.width),
                                           std::size_t(o.height), cudaMemcpyHostToDevice, stream));
      }, sync));
  add("cudaMemcpyAsync of 4 KB, pinned -> device", medianMicros(o.reps, [&] {
        BENCH_CUDA_CHECK(cudaMemcpyAsync(device, pinned, 4096, cudaMemcpyHostToDevice, stream));
      }, sync));
  add("cudaEventRecord", medianMicros(o.reps, [&] { BENCH_CUDA_CHECK(cudaEventRecord(event, stream)); }, sync));
  add("cudaStreamWaitEvent (event of another stream)", medianMicros(o.reps, [&] {
        BENCH_CUDA_CHECK(cudaStreamWaitEvent(other, event, 0));
      }, sync));
  add("kernel launch (empty, 1 block)", medianMicros(o.reps, [&] {
        emptyKernel<<<1, 32, 0, stream>>>();
        BENCH_CUDA_CHECK(cudaGetLastError());
      }, sync));
  add("cudaGraphLaunch (8 empty kernels)", medianMicros(o.reps, [&] {
        BENCH_CUDA_CHECK(cudaGraphLaunch(exec, stream));
      }, sync));
  // The region search's two launches (issue 13: ~4 KB of inline descriptors each, the second
  // overlapping the first) against the same two kernels as one graph with a programmatic edge,
  // captured once, whose nodes get new parameters each call.
  FourKilobytes params4k{};
  for (std::size_t i = 0; i < sizeof(params4k.bytes); ++i) params4k.bytes[i] = uint8_t(i % 200);
  add("kernel launch, 4 KB of parameters (cudaLaunchKernelEx)", medianMicros(o.reps, [&] {
        BENCH_CUDA_CHECK(launchFourKilobytes(params4k, stream, false));
      }, sync));
  add("two launches of 4 KB, the second programmatic (the region search today)", medianMicros(o.reps, [&] {
        BENCH_CUDA_CHECK(launchFourKilobytes(params4k, stream, false));
        BENCH_CUDA_CHECK(launchFourKilobytes(params4k, stream, true));
      }, sync));
  // The same launch through the driver API, its function looked up once (a runtime launch finds
  // the kernel's function and checks its context every call).
  using LaunchKernel = CUresult (*)(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned,
                                    CUstream, void**, void**);
  void* libcuda = dlopen("libcuda.so.1", RTLD_NOW);
  const auto driverLaunch =
      libcuda != nullptr ? reinterpret_cast<LaunchKernel>(dlsym(libcuda, "cuLaunchKernel")) : nullptr;
  cudaFunction_t fourKilobyteFunction = nullptr;
  BENCH_CUDA_CHECK(cudaGetFuncBySymbol(&fourKilobyteFunction, reinterpret_cast<const void*>(fourKilobyteKernel)));
  if (driverLaunch != nullptr) {
    void* driverArgs[] = {&params4k};
    add("cuLaunchKernel, 4 KB of parameters (driver API, function looked up once)", medianMicros(o.reps, [&] {
          const CUresult r = driverLaunch(reinterpret_cast<CUfunction>(fourKilobyteFunction), 1, 1, 1, 64, 1, 1, 0,
                                          stream, driverArgs, nullptr);
          if (r != CUDA_SUCCESS) {
            std::fprintf(stderr, "bench_driver_calls: cuLaunchKernel failed (CUresult %d)\n", int(r));
            std::exit(3);
          }
        }, sync));
  }
  cudaGraph_t pair = nullptr;
  cudaGraphExec_t pairExec = nullptr;
  BENCH_CUDA_CHECK(cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal));
  BENCH_CUDA_CHECK(launchFourKilobytes(params4k, stream, false));
  BENCH_CUDA_CHECK(launchFourKilobytes(params4k, stream, true));
  BENCH_CUDA_CHECK(cudaStreamEndCapture(stream, &pair));
  BENCH_CUDA_CHECK(cudaGraphInstantiate(&pairExec, pair, 0));
  std::size_t pairNodes = 2;
  cudaGraphNode_t nodes[2] = {};
  BENCH_CUDA_CHECK(cudaGraphGetNodes(pair, nodes, &pairNodes));
  void* args4k[] = {&params4k};
  cudaKernelNodeParams node{};
  node.func = reinterpret_cast<void*>(fourKilobyteKernel);
  node.gridDim = dim3(1);
  node.blockDim = dim3(64);
  node.kernelParams = args4k;
  add("cudaGraphExecKernelNodeSetParams, 4 KB", medianMicros(o.reps, [&] {
        params4k.bytes[0] = uint8_t(params4k.bytes[0] + 1) % 200;
        BENCH_CUDA_CHECK(cudaGraphExecKernelNodeSetParams(pairExec, nodes[0], &node));
      }, none));
  add("cudaGraphLaunch, the two as a graph (parameters unchanged)", medianMicros(o.reps, [&] {
        BENCH_CUDA_CHECK(cudaGraphLaunch(pairExec, stream));
      }, sync));
  add("the two as a graph: both nodes' parameters set, then cudaGraphLaunch", medianMicros(o.reps, [&] {
        params4k.bytes[0] = uint8_t(params4k.bytes[0] + 1) % 200;
        BENCH_CUDA_CHECK(cudaGraphExecKernelNodeSetParams(pairExec, nodes[0], &node));
        BENCH_CUDA_CHECK(cudaGraphExecKernelNodeSetParams(pairExec, nodes[1], &node));
        BENCH_CUDA_CHECK(cudaGraphLaunch(pairExec, stream));
      }, sync));
  // The wait at the end of a call: the stream's end, or a flag the last kernel writes to mapped
  // memory, polled (from the launch's return to the host seeing the end; the GPU idle before).
  int* flag = nullptr;
  BENCH_CUDA_CHECK(cudaHostAlloc(reinterpret_cast<void**>(&flag), sizeof(int), cudaHostAllocMapped));
  int* flagOnDevice = nullptr;
  BENCH_CUDA_CHECK(cudaHostGetDevicePointer(reinterpret_cast<void**>(&flagOnDevice), flag, 0));
  std::vector<double> streamWait, flagWait;
  for (int i = 0; i < o.reps + 50; ++i) {
    flagKernel<<<1, 1, 0, stream>>>(flagOnDevice, 2 * i);
    BENCH_CUDA_CHECK(cudaGetLastError());
    const auto t0 = Clock::now();
    BENCH_CUDA_CHECK(cudaStreamSynchronize(stream));
    const auto t1 = Clock::now();
    flagKernel<<<1, 1, 0, stream>>>(flagOnDevice, 2 * i + 1);
    BENCH_CUDA_CHECK(cudaGetLastError());
    const auto t2 = Clock::now();
    while (*static_cast<volatile int*>(flag) != 2 * i + 1) {
    }
    const auto t3 = Clock::now();
    sync();
    if (i >= 50) {
      streamWait.push_back(std::chrono::duration<double, std::micro>(t1 - t0).count());
      flagWait.push_back(std::chrono::duration<double, std::micro>(t3 - t2).count());
    }
  }
  add("after a 1-thread kernel's launch: cudaStreamSynchronize until its end", median(streamWait));
  add("after a 1-thread kernel's launch: polling the flag it writes to mapped memory", median(flagWait));
  cudaFreeHost(flag);
  cudaGraphExecDestroy(pairExec);
  cudaGraphDestroy(pair);
  add("cudaEventQuery, event complete", medianMicros(o.reps, [&] { BENCH_CUDA_CHECK(cudaEventQuery(event)); }, none));
  add("cudaEventSynchronize, event complete", medianMicros(o.reps, [&] {
        BENCH_CUDA_CHECK(cudaEventSynchronize(event));
      }, none));
  add("cudaGetLastError", medianMicros(o.reps, [&] { cudaGetLastError(); }, none));
  ContextCalls context;
  if (context.load()) {
    CUcontext current = nullptr;
    context.current(&current);
    add("cuCtxPushCurrent + cuCtxPopCurrent (the current context)", medianMicros(o.reps, [&] {
          CUcontext popped = nullptr;
          if (context.push(current) != CUDA_SUCCESS || context.pop(&popped) != CUDA_SUCCESS) std::exit(3);
        }, none));
  }

  // The engine's own calls on the same pinned frame: 1 x 64², ccoeff-normed, 2 frames in flight
  // at most but the GPU idle at each submit (collect right after, untimed, then timed apart).
  std::unique_ptr<nccmatch::Engine> engine;
  nccmatch::EngineOptions engineOptions;
  engineOptions.backend = nccmatch::Backend::Cuda;
  nccmatch::bench::exitOnError(nccmatch::Engine::create(engineOptions, &engine));
  nccmatch::TemplateImage t;
  t.width = t.height = 64;
  t.pixels.resize(64 * 64);
  for (std::size_t i = 0; i < t.pixels.size(); ++i) t.pixels[i] = uint8_t((i * 37 + i / 64 * 11) & 255);
  nccmatch::bench::exitOnError(engine->setTemplates({t}));
  nccmatch::FrameView frame;
  frame.data = static_cast<const uint8_t*>(pinned);
  frame.width = o.width;
  frame.height = o.height;
  frame.stride = std::size_t(o.width);
  nccmatch::MatchParams params;
  params.threshold = 0.9;
  nccmatch::FrameResult result;
  std::vector<double> submitUs, collectUs;
  for (int i = 0; i < o.reps / 4 + 20; ++i) {
    const auto t0 = Clock::now();
    nccmatch::bench::exitOnError(engine->submit(frame, params));
    const auto t1 = Clock::now();
    sync();
    const auto t2 = Clock::now();
    nccmatch::bench::exitOnError(engine->collect(&result));
    const auto t3 = Clock::now();
    if (i >= 20) {
      submitUs.push_back(std::chrono::duration<double, std::micro>(t1 - t0).count());
      collectUs.push_back(std::chrono::duration<double, std::micro>(t3 - t2).count());
    }
  }
  add("Engine::submit, pinned frame, 1 x 64² (GPU idle)", median(submitUs));
  add("Engine::collect, frame done", median(collectUs));

  std::printf("# bench_driver_calls: %s, %dx%d frame, median of %d calls after 50 warm-up (host µs)\n\n", prop.name,
              o.width, o.height, o.reps);
  std::printf("| call | host µs |\n|---|---|\n");
  for (const Row& r : rows) std::printf("| %s | %.2f |\n", r.call.c_str(), r.us);
  engine.reset();
  cudaGraphExecDestroy(exec);
  cudaGraphDestroy(graph);
  cudaEventDestroy(event);
  cudaStreamDestroy(other);
  cudaStreamDestroy(stream);
  cudaFree(device);
  nccmatch::freePinnedHost(pinned);
  return 0;
}
