// Benchmarks are programs, not library code: a failed CUDA call ends the run, with the message
// the library's NCC_CUDA_CHECK gives (nccmatch::cudaStatus: the call, the error, file and line).
#pragma once

#include <cstdio>
#include <cstdlib>

#include "cuda/cuda_check.hpp"

namespace nccmatch::bench {

inline void exitOnError(const Status& status) {
  if (status.ok()) return;
  std::fprintf(stderr, "%s\n", status.message().c_str());
  std::exit(1);
}

}  // namespace nccmatch::bench

#define BENCH_CUDA_CHECK(call) \
  ::nccmatch::bench::exitOnError(::nccmatch::cudaStatus((call), #call, __FILE__, __LINE__))
