// A frame slot's matching as a CUDA graph: captured once, replayed while everything the captured
// launches baked in (the key) stays the same; one launch instead of a dozen calls.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>
#include <functional>
#include <vector>

#include "cuda/engine/cuda_handles.hpp"
#include "nccmatch/status.hpp"
#include "nccmatch/types.hpp"

namespace nccmatch::cuda {

// Everything a captured matching depends on: the scratch layout, the frame and results
// pointers, the frame size and the rule.
struct GraphKeyInputs {
  uint64_t scratchGeneration = 0;
  const void* image = nullptr;
  std::size_t pitch = 0;
  const void* results = nullptr;
  const void* hostResults = nullptr;
  int frameWidth = 0, frameHeight = 0;
  Method method = Method::CCoeffNormed;
  double threshold = 0.0, nmsIou = 0.0;
  int maxMatches = 0;  // bounded by the positions
  bool slicedLaunches = false;  // long launches cut into slices (DeviceShare::shared)
  int fftPeakHandoff = 0;       // CudaEngine::setFftPeakHandoff: 0 the plan's, 1 off, 2 on
  bool tablesInGraph = false;   // the SAT build and forward transform captured too
};

class MatchingGraph {
 public:
  // Whether capture failed for this scratch layout: plain launches until it changes.
  bool failedFor(uint64_t scratchGeneration) const {
    return failedAt_ == int64_t(scratchGeneration);
  }
  // Launches the graph of `inputs` on stream, capturing `enqueue` first when the inputs changed.
  // When the calls cannot be captured, runs `enqueue` directly and remembers the failure.
  // beforeReplay (optional) runs before each launch of a graph captured earlier (not the one just
  // captured): what changes per launch written into its nodes.
  Status launch(const GraphKeyInputs& inputs, cudaStream_t stream, const std::function<Status()>& enqueue,
                const std::function<Status(cudaGraphExec_t)>& beforeReplay = nullptr);

 private:
  // Ends the capture on stream of what was enqueued and instantiates it into exec_; false when
  // the enqueueing, the capture or the instantiation failed.
  bool finishCapture(cudaStream_t stream, const Status& enqueued);

  Graph graph_;  // kept while exec_ lives: beforeReplay addresses its nodes
  GraphExec exec_;
  std::vector<uint64_t> key_;
  int64_t failedAt_ = -1;  // the scratch generation capture failed at (-1: never)
};

}  // namespace nccmatch::cuda
