// Masked templates of a bank matched side by side. A masked template's map and peaks are a chain
// of short kernels (the masked scores, the peak scan, the selection, the NMS); one after another on
// the compute stream, a coarse-to-fine level's coarse match of 1728 masked variants of a
// quarter-size frame paid ~22 µs each, mostly waiting. Each lane has its own stream, score map,
// peak finder and mask-group window sums, so the chains of templates on different lanes overlap;
// the lanes fork from and join back to the compute stream (inside a captured graph as well).
#pragma once

#include <cuda_runtime_api.h>

#include <array>
#include <cstddef>

#include "cuda/engine/cuda_handles.hpp"
#include "cuda/engine/device_buffer.hpp"
#include "cuda/peaks/peaks_kernels.hpp"
#include "nccmatch/status.hpp"

namespace nccmatch::cuda {

struct MaskedLane {
  Stream stream;
  Event joined;         // recorded on the lane when its work is enqueued
  DeviceBuffer map;     // doubles
  PeakFinder peaks;
  DeviceBuffer windowSums;  // int64: sum I M, then sum I^2 M of the lane's current mask group
};

class MaskedLanes {
 public:
  static constexpr std::size_t kLanes = 4;

  // Streams and events on first use; maps and peak scratch for maps of up to `positions`, window
  // sums for mask groups of up to `groupPositions` (0: none).
  Status reserve(std::size_t positions, std::size_t groupPositions);
  // Every lane waits for what `main` has enqueued so far.
  Status fork(cudaStream_t main);
  // `main` waits for what every lane has enqueued.
  Status join(cudaStream_t main);
  MaskedLane& lane(std::size_t k) { return lanes_[k % kLanes]; }

 private:
  std::array<MaskedLane, kLanes> lanes_;
  Event forked_;
};

}  // namespace nccmatch::cuda
