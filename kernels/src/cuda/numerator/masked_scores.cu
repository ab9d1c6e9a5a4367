#include "cuda/numerator/masked_scores.hpp"

#include <algorithm>
#include <string>

#include "common/integer_math.hpp"
#include "cuda/copy/block_descriptor.cuh"
#include "cuda/cuda_check.hpp"
#include "cuda/numerator/masked_tiles.cuh"
#include "rules/masked_score_rules.hpp"

namespace nccmatch::cuda {

namespace {

using masked_tiles::kThreads;
using masked_tiles::kTileHeight;
using masked_tiles::kTileWidth;

// Shared memory a launch aims at: large templates take several chunks of rows rather than one
// block an SM (two blocks of 96 KB fit an H200 SM). A template too wide for one row in this much
// takes what the device allows.
constexpr std::size_t kSharedTarget = 96 * 1024;

// Block (x, y) of region z of a list.
__global__ void __launch_bounds__(kThreads)
    maskedRegionKernel(const MaskedScoreDesc* __restrict__ descs, int chunkRows, int maxWords, Method method) {
  extern __shared__ uint32_t shared[];
  const MaskedScoreDesc r = blockDescriptor(descs + blockIdx.z);
  const int outX0 = blockIdx.x * kTileWidth, outY0 = blockIdx.y * kTileHeight;
  if (outX0 > r.width - r.t.width || outY0 > r.height - r.t.height) return;  // the whole block
  masked_tiles::scoreTile<MaskedPass::Scores>(r, outX0, outY0, chunkRows, maxWords, method, shared);
}

// Block (x, y) of one frame.
template <MaskedPass P>
__global__ void __launch_bounds__(kThreads)
    maskedFrameKernel(MaskedScoreDesc r, int chunkRows, int maxWords, Method method) {
  extern __shared__ uint32_t shared[];
  const int outX0 = blockIdx.x * kTileWidth, outY0 = blockIdx.y * kTileHeight;
  masked_tiles::scoreTile<P>(r, outX0, outY0, chunkRows, maxWords, method, shared);
}

// The chunk of template rows and the shared bytes of a launch whose templates are at most
// maxWidth x maxHeight; an error when one row does not fit the device's shared memory.
Status chunkFor(int maxWidth, int maxHeight, int* chunkRows, int* maxWords, std::size_t* bytes) {
  *maxWords = maskedRowBytes(maxWidth) / 4;
  int rows = std::max(1, std::min(maxHeight, masked_tiles::kChunkPixels / (4 * *maxWords)));
  while (rows > 1 && masked_tiles::sharedBytes(*maxWords, rows) > kSharedTarget) --rows;
  int device = 0, optin = 0;
  NCC_CUDA_CHECK(cudaGetDevice(&device));
  NCC_CUDA_CHECK(cudaDeviceGetAttribute(&optin, cudaDevAttrMaxSharedMemoryPerBlockOptin, device));
  *chunkRows = rows;
  *bytes = masked_tiles::sharedBytes(*maxWords, rows);
  if (*bytes > std::size_t(optin))
    return Status::error("masked scores: a template " + std::to_string(maxWidth) +
                         " pixels wide needs " + std::to_string(*bytes) + " bytes of shared memory, more than the " +
                         std::to_string(optin) + " this GPU gives a block");
  return Status();
}

template <typename Kernel>
Status allowShared(Kernel kernel, std::size_t bytes) {
  if (bytes > 48 * 1024)
    NCC_CUDA_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, int(bytes)));
  return Status();
}

// One frame (one descriptor, passed by value), pass P.
template <MaskedPass P>
Status launchFrame(const MaskedScoreDesc& r, Method method, cudaStream_t stream) {
  int chunkRows = 0, maxWords = 0;
  std::size_t bytes = 0;
  NCC_RETURN_IF_ERROR(chunkFor(r.t.width, r.t.height, &chunkRows, &maxWords, &bytes));
  NCC_RETURN_IF_ERROR(allowShared(maskedFrameKernel<P>, bytes));
  const int mapW = r.width - r.t.width + 1, mapH = r.height - r.t.height + 1;
  const dim3 grid(ceilDiv(mapW, kTileWidth), ceilDiv(mapH, kTileHeight));
  maskedFrameKernel<P><<<grid, kThreads, bytes, stream>>>(r, chunkRows, maxWords, method);
  NCC_CUDA_CHECK(cudaGetLastError());
  return Status();
}

}  // namespace

Status maskedScoreMap(const uint8_t* image, std::size_t pitch, int width, int height,
                      const MaskedTemplateDevice& t, Method method, double* map, cudaStream_t stream,
                      MaskedPass pass, int64_t* windowSums) {
  if (t.width > width || t.height > height)
    return Status::error("maskedScoreMap: template " + std::to_string(t.width) + "x" + std::to_string(t.height) +
                         " is larger than the frame " + std::to_string(width) + "x" + std::to_string(height));
  if (pass != MaskedPass::Scores && windowSums == nullptr)
    return Status::error("maskedScoreMap: the shared window sums' buffer is missing");
  MaskedScoreDesc r;
  r.image = image;
  r.pitch = pitch;
  r.width = width;
  r.height = height;
  r.t = t;
  r.map = map;
  r.windowSums = windowSums;
  switch (pass) {
    case MaskedPass::WindowSums: return launchFrame<MaskedPass::WindowSums>(r, method, stream);
    case MaskedPass::ScoresFromWindowSums: return launchFrame<MaskedPass::ScoresFromWindowSums>(r, method, stream);
    case MaskedPass::Scores: break;
  }
  return launchFrame<MaskedPass::Scores>(r, method, stream);
}

Status maskedRegionScores(const MaskedScoreDesc* descs, int count, int maxTemplateWidth, int maxTemplateHeight,
                          int maxMapWidth, int maxMapHeight, Method method, cudaStream_t stream) {
  if (count <= 0) return Status();
  if (descs == nullptr) return Status::error("maskedRegionScores: descriptors missing");
  if (maxTemplateWidth < 1 || maxTemplateHeight < 1 || maxMapWidth < 1 || maxMapHeight < 1)
    return Status::error("maskedRegionScores: bad template or map size");
  int chunkRows = 0, maxWords = 0;
  std::size_t bytes = 0;
  NCC_RETURN_IF_ERROR(chunkFor(maxTemplateWidth, maxTemplateHeight, &chunkRows, &maxWords, &bytes));
  NCC_RETURN_IF_ERROR(allowShared(maskedRegionKernel, bytes));
  constexpr int kMaxGridZ = 65535;  // more regions: one launch per this many
  for (int first = 0; first < count; first += kMaxGridZ) {
    const dim3 grid(ceilDiv(maxMapWidth, kTileWidth), ceilDiv(maxMapHeight, kTileHeight),
                    std::min(kMaxGridZ, count - first));
    maskedRegionKernel<<<grid, kThreads, bytes, stream>>>(descs + first, chunkRows, maxWords, method);
    NCC_CUDA_CHECK(cudaGetLastError());
  }
  return Status();
}

}  // namespace nccmatch::cuda
