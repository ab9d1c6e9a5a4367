#include "device_memory.hpp"

#include <cstddef>

#ifdef NCCMATCH_HAVE_CUDA
#include <cuda_runtime_api.h>
#endif

namespace nccmatch::test {

bool deviceMemoryUsedMiB(double* mib) {
#ifdef NCCMATCH_HAVE_CUDA
  std::size_t free = 0, total = 0;
  if (cudaMemGetInfo(&free, &total) != cudaSuccess) return false;
  *mib = double(total - free) / (1024.0 * 1024.0);
  return true;
#else
  (void)mib;
  return false;
#endif
}

}  // namespace nccmatch::test
