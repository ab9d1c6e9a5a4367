#include "cuda/engine/matching_graph.hpp"

#include <cstring>

#include "cuda/cuda_check.hpp"

namespace nccmatch::cuda {

namespace {

uint64_t bits(double v) {
  uint64_t u = 0;
  std::memcpy(&u, &v, sizeof u);
  return u;
}

uint64_t address(const void* p) { return uint64_t(reinterpret_cast<std::uintptr_t>(p)); }

std::vector<uint64_t> keyOf(const GraphKeyInputs& in) {
  return {in.scratchGeneration,     address(in.image),       uint64_t(in.pitch),
          address(in.results),      address(in.hostResults), uint64_t(in.frameWidth),
          uint64_t(in.frameHeight), uint64_t(in.method),     bits(in.threshold),
          uint64_t(in.maxMatches),  bits(in.nmsIou),         uint64_t(in.slicedLaunches),
          uint64_t(in.fftPeakHandoff), uint64_t(in.tablesInGraph)};
}

}  // namespace

bool MatchingGraph::finishCapture(cudaStream_t stream, const Status& enqueued) {
  cudaGraph_t raw = nullptr;
  const cudaError_t ended = cudaStreamEndCapture(stream, &raw);
  Graph captured;
  captured.reset(raw);
  cudaGraphExec_t exec = nullptr;
  if (!enqueued.ok() || ended != cudaSuccess || !captured ||
      cudaGraphInstantiate(&exec, captured.get(), 0) != cudaSuccess)
    return false;
  exec_.reset(exec);
  graph_ = std::move(captured);
  return true;
}

Status MatchingGraph::launch(const GraphKeyInputs& inputs, cudaStream_t stream, const std::function<Status()>& enqueue,
                             const std::function<Status(cudaGraphExec_t)>& beforeReplay) {
  std::vector<uint64_t> key = keyOf(inputs);
  if (exec_ && key_ == key) {
    if (beforeReplay) NCC_RETURN_IF_ERROR(beforeReplay(exec_.get()));
  } else {
    exec_.reset();
    graph_.reset();
    NCC_CUDA_CHECK(cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal));
    const Status enqueued = enqueue();
    if (!finishCapture(stream, enqueued)) {
      // Not capturable here: this slot enqueues its calls one by one until the next relayout.
      cudaGetLastError();
      failedAt_ = int64_t(inputs.scratchGeneration);
      return enqueue();
    }
    key_ = std::move(key);
  }
  NCC_CUDA_CHECK(cudaGraphLaunch(exec_.get(), stream));
  return Status();
}

}  // namespace nccmatch::cuda
