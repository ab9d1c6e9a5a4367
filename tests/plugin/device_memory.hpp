// Device memory in use on a CUDA device, for the GPU soak: cudaMemGetInfo's total minus free (the
// whole device's, every context and process; the soak runs alone on its GPU). No nvidia-smi.
#pragma once

namespace nccmatch::test {

// MiB in use on the current CUDA device; false (and *mib untouched) in a build without CUDA or
// when the runtime cannot answer.
bool deviceMemoryUsedMiB(double* mib);

}  // namespace nccmatch::test
