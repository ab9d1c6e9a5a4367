#include "cuda/engine/masked_lanes.hpp"

#include <cstdint>

#include "cuda/cuda_check.hpp"

namespace nccmatch::cuda {

Status MaskedLanes::reserve(std::size_t positions, std::size_t groupPositions) {
  if (!forked_) NCC_RETURN_IF_ERROR(createEvent(&forked_));
  for (MaskedLane& lane : lanes_) {
    if (!lane.stream) NCC_RETURN_IF_ERROR(createStream(&lane.stream));
    if (!lane.joined) NCC_RETURN_IF_ERROR(createEvent(&lane.joined));
    NCC_RETURN_IF_ERROR(lane.map.reserve(positions * sizeof(double)));
    NCC_RETURN_IF_ERROR(lane.peaks.reserve(positions));
    if (groupPositions > 0) NCC_RETURN_IF_ERROR(lane.windowSums.reserve(2 * groupPositions * sizeof(int64_t)));
  }
  return Status();
}

Status MaskedLanes::fork(cudaStream_t main) {
  NCC_CUDA_CHECK(cudaEventRecord(forked_.get(), main));
  for (MaskedLane& lane : lanes_) NCC_CUDA_CHECK(cudaStreamWaitEvent(lane.stream.get(), forked_.get(), 0));
  return Status();
}

Status MaskedLanes::join(cudaStream_t main) {
  for (MaskedLane& lane : lanes_) {
    NCC_CUDA_CHECK(cudaEventRecord(lane.joined.get(), lane.stream.get()));
    NCC_CUDA_CHECK(cudaStreamWaitEvent(main, lane.joined.get(), 0));
  }
  return Status();
}

}  // namespace nccmatch::cuda
