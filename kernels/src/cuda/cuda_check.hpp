// The one error-check macro for CUDA calls: a failed call returns a Status naming the call, the
// CUDA error, and the file and line. Use after every launch: NCC_CUDA_CHECK(cudaGetLastError()).
// Every result passes the fault-injection hook, which can report a lost context (fault_injection.hpp).
#pragma once

#include <cuda_runtime_api.h>

#include <string>

#include "cuda/fault_injection.hpp"
#include "nccmatch/status.hpp"

namespace nccmatch {

inline Status cudaStatus(cudaError_t err, const char* call, const char* file, int line) {
  err = cuda::faults::checkedResult(err);
  if (err == cudaSuccess) return Status();
  return Status::error(std::string(call) + " failed: " + cudaGetErrorName(err) + " (" +
                       cudaGetErrorString(err) + ") at " + file + ":" + std::to_string(line));
}

}  // namespace nccmatch

#define NCC_CUDA_CHECK(call) \
  NCC_RETURN_IF_ERROR(::nccmatch::cudaStatus((call), #call, __FILE__, __LINE__))
