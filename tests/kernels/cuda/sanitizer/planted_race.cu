// A kernel with a shared-memory race planted on purpose, for compute-sanitizer's racecheck to
// find: scripts/racecheck-self-check.sh runs it under racecheck with the options a real run used
// (a kernel filter, --launch-count, --launch-skip) and says whether the hazard was reported. A run
// of the suite with those options that reports 0 hazards then means clean launches, not launches
// the tool never checked. Not a test (it always succeeds on its own): a probe of the tool.
//   sanitizer_planted_race [LAUNCHES]   (default 3; each launch is one block of two warps)
#include <cuda_runtime.h>

#include <cstdio>
#include <cstdlib>

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
  const int launches = argc > 1 ? std::atoi(argv[1]) : 3;
  if (launches < 1 || launches > 1000000) {
    std::fprintf(stderr, "usage: sanitizer_planted_race [LAUNCHES]   (1 to 1000000, default 3)\n");
    return 2;
  }
  int* out = nullptr;
  cudaError_t e = cudaMalloc(&out, sizeof(int));
  if (e != cudaSuccess) return fail("cudaMalloc", e);
  for (int i = 0; i < launches; ++i) {
    plantedRaceKernel<<<1, 64>>>(out);
    if ((e = cudaGetLastError()) != cudaSuccess) return fail("launch", e);
  }
  int value = 0;
  if ((e = cudaMemcpy(&value, out, sizeof(int), cudaMemcpyDeviceToHost)) != cudaSuccess) return fail("cudaMemcpy", e);
  cudaFree(out);
  std::printf("plantedRaceKernel launched %d time(s), read %d\n", launches, value);
  return value == 1 ? 0 : 1;
}
