// A kernel with a shared-memory race planted on purpose, for compute-sanitizer's racecheck to
// find: scripts/racecheck-self-check.sh runs it under racecheck with the options a real run used
// (a kernel filter, --launch-count, --launch-skip) and says whether the hazard was reported. A run
// of the suite with those options that reports 0 hazards then means clean launches, not launches
// the tool never checked. Not a test (it always succeeds on its own): a probe of the tool.
//   sanitizer_planted_race [LAUNCHES] [--graph]   (default 3; each launch is one block of two warps)
// --graph: the kernel is captured once into a CUDA graph and each launch is a launch of that graph
// (the engine replays captured graphs for its frames: does the tool see kernels inside graphs?).
#include <cuda_runtime.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace {

// Every thread of both warps writes the same shared word with no barrier between the writes: a
// write-after-write hazard between the warps on every launch. The barrier after it makes the
// value thread 0 reads well defined (one of the writes), so the probe's output never varies.
__global__ void plantedRaceKernel(int* out) {
  __shared__ int word;
  word = int(threadIdx.x);
  __syncthreads();
  if (threadIdx.x == 0) *out = word >= 0 ? 1 : 0;
}

int fail(const char* what, cudaError_t e) {
  std::fprintf(stderr, "sanitizer_planted_race: %s: %s\n", what, cudaGetErrorString(e));
  return 1;
}

}  // namespace

int main(int argc, char** argv) {
  int launches = 3;
  bool graph = false;
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--graph") == 0) graph = true;
    else launches = std::atoi(argv[i]);
  }
  if (launches < 1 || launches > 1000000) {
    std::fprintf(stderr, "usage: sanitizer_planted_race [LAUNCHES] [--graph]   (1 to 1000000, default 3)\n");
    return 2;
  }
  int* out = nullptr;
  cudaError_t e = cudaMalloc(&out, sizeof(int));
  if (e != cudaSuccess) return fail("cudaMalloc", e);
  cudaStream_t stream = nullptr;
  if ((e = cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking)) != cudaSuccess)
    return fail("cudaStreamCreate", e);
  cudaGraphExec_t exec = nullptr;
  if (graph) {
    cudaGraph_t captured = nullptr;
    if ((e = cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal)) != cudaSuccess)
      return fail("cudaStreamBeginCapture", e);
    plantedRaceKernel<<<1, 64, 0, stream>>>(out);
    if ((e = cudaStreamEndCapture(stream, &captured)) != cudaSuccess) return fail("cudaStreamEndCapture", e);
    if ((e = cudaGraphInstantiate(&exec, captured, 0)) != cudaSuccess) return fail("cudaGraphInstantiate", e);
    cudaGraphDestroy(captured);
  }
  for (int i = 0; i < launches; ++i) {
    if (graph) e = cudaGraphLaunch(exec, stream);
    else {
      plantedRaceKernel<<<1, 64, 0, stream>>>(out);
      e = cudaGetLastError();
    }
    if (e != cudaSuccess) return fail(graph ? "cudaGraphLaunch" : "launch", e);
  }
  if ((e = cudaStreamSynchronize(stream)) != cudaSuccess) return fail("cudaStreamSynchronize", e);
  int value = 0;
  if ((e = cudaMemcpy(&value, out, sizeof(int), cudaMemcpyDeviceToHost)) != cudaSuccess) return fail("cudaMemcpy", e);
  if (exec != nullptr) cudaGraphExecDestroy(exec);
  cudaStreamDestroy(stream);
  cudaFree(out);
  std::printf("plantedRaceKernel launched %d time(s)%s, read %d\n", launches, graph ? " as a graph" : "", value);
  return value == 1 ? 0 : 1;
}
