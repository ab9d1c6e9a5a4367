// How many CUDA engines of this process are live on each device. While more than one is, the
// engine's long persistent launches (the GEMM bank's: one wave of blocks that keeps every SM
// until the whole band is scored) are cut into short slices, so that another engine's kernels
// wait for a slice rather than for a whole frame of the bank. Alone, an engine launches whole
// bands (each slice ends with a tail of idle SMs).
#pragma once

namespace nccmatch::cuda {

class DeviceShare {
 public:
  explicit DeviceShare(int device);  // counts this engine on `device`
  ~DeviceShare();
  DeviceShare(const DeviceShare&) = delete;
  DeviceShare& operator=(const DeviceShare&) = delete;

  // Another engine of the process is live on the device now.
  bool shared() const;

 private:
  int device_;
};

}  // namespace nccmatch::cuda
