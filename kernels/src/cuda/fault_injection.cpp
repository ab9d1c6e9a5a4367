// The fault-injection hook (fault_injection.hpp): countdowns and a byte limit under one mutex
// (allocations are rare: buffers grow on demand), and one atomic flag on the checked-call path.
#include "cuda/fault_injection.hpp"

#include <atomic>
#include <cerrno>
#include <cstdlib>
#include <mutex>
#include <string>
#include <unordered_map>

namespace nccmatch::cuda::faults {

namespace {

struct State {
  std::mutex mutex;
  FaultPlan plan;
  bool fromEnvironment = false;  // the plan armed came from the NCCMATCH_CUDA_* variables
  std::unordered_map<void*, std::size_t> deviceSizes;
  std::size_t deviceBytes = 0;
  std::uint64_t deviceAllocations = 0;
};

// Made on first use and never destroyed: an engine freed during static destruction (a static
// engine in an application) still finds it.
State& state() {
  static State* s = new State;
  return *s;
}

// Read on every NCC_CUDA_CHECK: true only while a checked-call countdown is armed.
std::atomic<bool> checkedCallsArmed{false};
// Counted on every NCC_CUDA_CHECK (relaxed: a count, ordering nothing).
std::atomic<std::uint64_t> checkedCalls{0};

// A countdown's step: true when this one may go ahead (kOff, or some left, then one fewer).
bool takeStep(long long* left) {
  if (*left == kOff) return true;
  if (*left == 0) return false;
  --*left;
  return true;
}

void armLocked(State& s, const FaultPlan& plan, bool fromEnvironment) {
  s.plan = plan;
  s.fromEnvironment = fromEnvironment;
  checkedCallsArmed.store(plan.checkedCallsLeft != kOff, std::memory_order_release);
}

// A variable's value: kOff when unset or empty, else a non-negative integer (false if not one).
bool readVariable(const char* name, long long* value, std::string* error) {
  *value = kOff;
  const char* text = std::getenv(name);
  if (text == nullptr || *text == '\0') return true;
  char* end = nullptr;
  errno = 0;
  const long long parsed = std::strtoll(text, &end, 10);
  if (errno != 0 || end == text || *end != '\0' || parsed < 0) {
    *error = std::string(name) + "='" + text + "' is not a non-negative integer";
    return false;
  }
  *value = parsed;
  return true;
}

}  // namespace

void arm(const FaultPlan& plan) {
  State& s = state();
  std::lock_guard<std::mutex> lock(s.mutex);
  armLocked(s, plan, false);
}

void lift() { arm(FaultPlan()); }

Status applyEnvironment() {
  long long allocAfter, limit, pinnedAfter, checkAfter;
  std::string error;
  if (!readVariable("NCCMATCH_CUDA_FAIL_ALLOC_AFTER", &allocAfter, &error) ||
      !readVariable("NCCMATCH_CUDA_ALLOC_LIMIT_BYTES", &limit, &error) ||
      !readVariable("NCCMATCH_CUDA_FAIL_PINNED_AFTER", &pinnedAfter, &error) ||
      !readVariable("NCCMATCH_CUDA_FAIL_CHECK_AFTER", &checkAfter, &error))
    return Status::error("fault injection: " + error);
  const bool any = allocAfter != kOff || limit != kOff || pinnedAfter != kOff || checkAfter != kOff;
  State& s = state();
  std::lock_guard<std::mutex> lock(s.mutex);
  if (!any) {
    if (s.fromEnvironment) armLocked(s, FaultPlan(), false);  // the variables were unset: lifted
    return Status();
  }
  FaultPlan plan;
  plan.deviceAllocationsLeft = allocAfter;
  plan.deviceByteLimit = limit == kOff ? 0 : std::size_t(limit);
  plan.pinnedAllocationsLeft = pinnedAfter;
  plan.checkedCallsLeft = checkAfter;
  armLocked(s, plan, true);
  return Status();
}

std::size_t deviceBytesHeld() {
  State& s = state();
  std::lock_guard<std::mutex> lock(s.mutex);
  return s.deviceBytes;
}

std::uint64_t deviceAllocationCount() {
  State& s = state();
  std::lock_guard<std::mutex> lock(s.mutex);
  return s.deviceAllocations;
}

cudaError_t allocateDevice(void** data, std::size_t bytes) {
  State& s = state();
  std::lock_guard<std::mutex> lock(s.mutex);
  *data = nullptr;
  ++s.deviceAllocations;
  const bool overLimit = s.plan.deviceByteLimit != 0 && s.deviceBytes + bytes > s.plan.deviceByteLimit;
  if (!takeStep(&s.plan.deviceAllocationsLeft) || overLimit) return cudaErrorMemoryAllocation;
  const cudaError_t err = cudaMalloc(data, bytes);
  if (err != cudaSuccess) return err;
  s.deviceSizes[*data] = bytes;
  s.deviceBytes += bytes;
  return cudaSuccess;
}

void freeDevice(void* data) {
  if (data == nullptr) return;
  {
    State& s = state();
    std::lock_guard<std::mutex> lock(s.mutex);
    auto it = s.deviceSizes.find(data);
    if (it != s.deviceSizes.end()) {
      s.deviceBytes -= it->second;
      s.deviceSizes.erase(it);
    }
  }
  cudaFree(data);
}

cudaError_t allocatePinned(void** data, std::size_t bytes, unsigned int flags) {
  State& s = state();
  {
    std::lock_guard<std::mutex> lock(s.mutex);
    *data = nullptr;
    if (!takeStep(&s.plan.pinnedAllocationsLeft)) return cudaErrorMemoryAllocation;
  }
  return cudaHostAlloc(data, bytes, flags);
}

void freePinned(void* data) {
  if (data != nullptr) cudaFreeHost(data);
}

cudaError_t deviceAllocationAllowed() {
  State& s = state();
  std::lock_guard<std::mutex> lock(s.mutex);
  ++s.deviceAllocations;
  return takeStep(&s.plan.deviceAllocationsLeft) ? cudaSuccess : cudaErrorMemoryAllocation;
}

std::uint64_t checkedCallCount() { return checkedCalls.load(std::memory_order_relaxed); }

cudaError_t checkedResult(cudaError_t err) {
  checkedCalls.fetch_add(1, std::memory_order_relaxed);
  if (!checkedCallsArmed.load(std::memory_order_acquire) || err != cudaSuccess) return err;
  State& s = state();
  std::lock_guard<std::mutex> lock(s.mutex);
  return takeStep(&s.plan.checkedCallsLeft) ? err : cudaErrorLaunchFailure;
}

}  // namespace nccmatch::cuda::faults
