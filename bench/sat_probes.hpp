// Probes for where the fused SAT build's time goes: the default wide build with a
// look-back left out (wrong tables, timing only), and the bare streaming floor of its traffic
// (read each pixel once, write both tables without any scan). bench_sat times them beside the
// real builds.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace nccmatch::bench {

struct SatProbe {
  std::string name;
  double bytesPerPixel;          // bytes the probe moves per pixel (17 int64, 9 uint32)
  std::function<void()> launch;  // one launch on the probes' stream; errors stop bench_sat
};

class SatProbes {
 public:
  // Probes for a width x height frame at `image` (device, row pitch == width), writing into
  // `sum` and `sumSq` (device, room for int64 tables), launched on `stream`.
  SatProbes(const uint8_t* image, int width, int height, void* sum, void* sumSq, cudaStream_t stream);
  ~SatProbes();
  SatProbes(const SatProbes&) = delete;
  SatProbes& operator=(const SatProbes&) = delete;
  const std::vector<SatProbe>& probes() const { return probes_; }

 private:
  struct Scratch;
  std::unique_ptr<Scratch> scratch_;
  std::vector<SatProbe> probes_;
};

}  // namespace nccmatch::bench
