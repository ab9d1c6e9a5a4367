// Internal to the SAT builds: the argument check shared by every build, and one factory per build.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>

#include "nccmatch/sat_cuda.hpp"

namespace nccmatch::cuda {

// Largest image side any build accepts (row sums of I^2 then fit in uint32: 16384 * 255^2 < 2^32).
constexpr int kSatMaxSide = 16384;

// Checks the arguments of SatBuilder::build against the builder's maximum size.
Status validateSatBuildArgs(const char* who, const uint8_t* image, std::size_t pitch, int width,
                            int height, const void* sum, const void* sumSq, int maxWidth,
                            int maxHeight);

// A build a captured CUDA graph can replay (the fused builds): what changes from build to build
// (the carry words' stamp, the tile flags' epoch) is a kernel argument, so before each replay it
// is written into the graph's kernel node; no carry of an earlier build then reads as this one's.
class ReplayableSatBuild {
 public:
  virtual ~ReplayableSatBuild() = default;
  // The kernel node the last build() added to the stream capture it ran in (null when its stream
  // was not capturing).
  virtual cudaGraphNode_t capturedNode() const = 0;
  // The next build's stamp and epoch (their words cleared on stream when they wrap around)
  // written into `node` of exec, a graph instantiated from a capture of build() (capturedNode()),
  // before exec is launched on stream.
  virtual Status restamp(cudaGraphExec_t exec, cudaGraphNode_t node, cudaStream_t stream) = 0;
};

Status createNaiveSatBuilder(int maxWidth, int maxHeight, std::unique_ptr<SatBuilder>* out);
Status createCubSatBuilder(int maxWidth, int maxHeight, std::unique_ptr<SatBuilder>* out);
Status createDlbSatBuilder(int maxWidth, int maxHeight, std::unique_ptr<SatBuilder>* out);
// build is Fused or Fused32.
Status createFusedSatBuilder(SatBuild build, int maxWidth, int maxHeight,
                             std::unique_ptr<SatBuilder>* out);

}  // namespace nccmatch::cuda
