// Fault injection for the CUDA backend, so that tests (and users, through the environment) can
// prove what happens when the GPU runs out of memory or its context is lost. Off unless armed;
// armed, it makes the next calls fail as the real faults would:
//   - device allocations (DeviceBuffer, the SAT look-back flags, cuFFT plans) fail with
//     cudaErrorMemoryAllocation after a countdown, or past a limit on the bytes held;
//   - pinned host allocations (PinnedBuffer, allocatePinnedHost) fail after a countdown of their own;
//   - NCC_CUDA_CHECK-ed calls report cudaErrorLaunchFailure after a countdown (a lost context:
//     once it fires, every later checked call fails too, until lifted).
// Process-wide and thread-safe. Environment (read by each CudaEngine::create and cudaAvailable();
// variables unset there lift what the environment had armed, and leave what a test armed alone):
//   NCCMATCH_CUDA_FAIL_ALLOC_AFTER=N    the N next device allocations succeed, later ones fail
//   NCCMATCH_CUDA_ALLOC_LIMIT_BYTES=B   device allocations fail past B bytes held by nccmatch
//   NCCMATCH_CUDA_FAIL_PINNED_AFTER=N   the N next pinned allocations succeed, later ones fail
//   NCCMATCH_CUDA_FAIL_CHECK_AFTER=N    the N next checked calls succeed, later ones fail
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>

#include "nccmatch/status.hpp"

namespace nccmatch::cuda::faults {

inline constexpr long long kOff = -1;

// What is armed; kOff (or limit 0) for off.
struct FaultPlan {
  long long deviceAllocationsLeft = kOff;
  std::size_t deviceByteLimit = 0;
  long long pinnedAllocationsLeft = kOff;
  long long checkedCallsLeft = kOff;
};

// Arms `plan` (replacing what was armed, by a test or the environment).
void arm(const FaultPlan& plan);
// Lifts every fault.
void lift();
// Arms from the NCCMATCH_CUDA_* variables above; called by CudaEngine::create. An error names a
// variable whose value is not a non-negative integer.
Status applyEnvironment();

// Device bytes held through allocateDevice, and device allocations asked for so far, refused ones
// and cuFFT plans included (the tests use them to aim a countdown or a limit at a chosen step).
std::size_t deviceBytesHeld();
std::uint64_t deviceAllocationCount();
// NCC_CUDA_CHECK-ed calls made so far by this copy of the library, armed or not. In-process only:
// the GStreamer plugin module links its own copy, so the element's fault sweeps
// (test_element_faults) find a run's count from outside instead.
std::uint64_t checkedCallCount();

// The allocation paths: cudaMalloc / cudaHostAlloc, or the injected failure, and the frees that
// keep the byte count. Every device and pinned allocation of the backend goes through these.
cudaError_t allocateDevice(void** data, std::size_t bytes);
void freeDevice(void* data);
cudaError_t allocatePinned(void** data, std::size_t bytes, unsigned int flags);
void freePinned(void* data);
// For allocations made by a library (cuFFT plans): cudaErrorMemoryAllocation when the device
// countdown says this one fails, else cudaSuccess (the bytes are cuFFT's, not counted).
cudaError_t deviceAllocationAllowed();

// The result NCC_CUDA_CHECK sees for a call that returned `err`: `err`, or once the checked-call
// countdown has run out, cudaErrorLaunchFailure.
cudaError_t checkedResult(cudaError_t err);

// Lifts every fault when it goes out of scope (tests).
class LiftOnExit {
 public:
  LiftOnExit() = default;
  LiftOnExit(const LiftOnExit&) = delete;
  LiftOnExit& operator=(const LiftOnExit&) = delete;
  ~LiftOnExit() { lift(); }
};

}  // namespace nccmatch::cuda::faults
