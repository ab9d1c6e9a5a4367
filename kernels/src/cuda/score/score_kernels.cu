#include "cuda/score/score_kernels.hpp"

#include <algorithm>
#include <type_traits>

#include "cuda/peaks/peaks_device.cuh"
#include "cuda/cuda_check.hpp"
#include "nccmatch/sat.hpp"
#include "rules/score_rules.hpp"

namespace nccmatch::cuda {

namespace {

struct Geometry {
  int frameWidth, mapWidth, mapHeight, w, h;
};

template <typename Table>
__device__ inline void windowSums(const Table* sum, const Table* sumSq, const Geometry& g, int x,
                                  int y, int64_t* s1, int64_t* s2) {
  // uint32 tables: the wrapped difference is the exact box sum (< 2^32), zero-extended.
  *s1 = int64_t(satBox(sum, g.frameWidth, x, y, x + g.w, y + g.h));
  *s2 = int64_t(satBox(sumSq, g.frameWidth, x, y, x + g.w, y + g.h));
}

template <typename Table>
__global__ void exactScoreKernel(const Table* __restrict__ sum, const Table* __restrict__ sumSq,
                                 Geometry g, TemplateStats stats, Method method,
                                 const int64_t* __restrict__ numerator, double* __restrict__ map) {
  const int x = blockIdx.x * blockDim.x + threadIdx.x;
  const int y = blockIdx.y * blockDim.y + threadIdx.y;
  if (x >= g.mapWidth || y >= g.mapHeight) return;
  int64_t s1, s2;
  windowSums(sum, sumSq, g, x, y, &s1, &s2);
  const std::size_t i = std::size_t(y) * g.mapWidth + x;
  map[i] = scoreFromSums(method, stats, s1, s2, numerator[i]);
}

template <typename Table>
__global__ void centredScoreKernel(const Table* __restrict__ sum, const Table* __restrict__ sumSq,
                                   Geometry g, TemplateStats stats, Method method,
                                   const double* __restrict__ centred, std::size_t pitch,
                                   double* __restrict__ map) {
  const int x = blockIdx.x * blockDim.x + threadIdx.x;
  const int y = blockIdx.y * blockDim.y + threadIdx.y;
  if (x >= g.mapWidth || y >= g.mapHeight) return;
  int64_t s1, s2;
  windowSums(sum, sumSq, g, x, y, &s1, &s2);
  map[std::size_t(y) * g.mapWidth + x] =
      scoreFromCentred(method, stats, s1, s2, centred[std::size_t(y) * pitch + x]).score;
}

// Positions per thread of the float-centred score kernel, kFloatScoreBlockX apart: the rounding
// bound (a square root of a device value) and the setup are paid once for them. The kernel is
// bound by the SMs (70% SM, 20% DRAM throughput under Nsight Compute at 1080p), not by memory.
constexpr int kFloatScoresPerThread = 4;
constexpr int kFloatScoreBlockX = 64, kFloatScoreBlockY = 4;
constexpr int kRecomputeThreads = 256;

dim3 floatScoreGrid(int mapWidth, int mapHeight) {
  constexpr int kAcross = kFloatScoreBlockX * kFloatScoresPerThread;
  return dim3(unsigned(std::max(1, (mapWidth + kAcross - 1) / kAcross)),
              unsigned(std::max(1, (mapHeight + kFloatScoreBlockY - 1) / kFloatScoreBlockY)));
}

int recomputeBlocks(int smCount) { return std::max(1, smCount) * 8; }

// kHandoff: the kernel also hands its peaks over (PeakHandoff): each block's best and the
// positions reaching the threshold, of the positions it scores for good (not those it lists for
// recomputing: recomputeKernel<.., true> hands those over once their exact scores are known).
template <typename Table, bool kHandoff>
__global__ void __launch_bounds__(kFloatScoreBlockX * kFloatScoreBlockY)
    floatCentredScoreKernel(const Table* __restrict__ sum, const Table* __restrict__ sumSq,
                            Geometry g, TemplateStats stats, Method method,
                            const float* __restrict__ centred, std::size_t pitch,
                            double errorScale, const double* __restrict__ frameNormSq,
                            double templateNorm, double* __restrict__ map,
                            int* __restrict__ recompute, int* __restrict__ recomputeCount,
                            NormedConstants constants, PeakHandoff handoff) {
  // ||T'|| / sqrt(n) = sqrt(varT / n): the template's part of the ccoeff-normed denominator.
  const double templateScale = templateNorm;
  // The numerator's rounding bound, the same at every position; twice it, since sqdiff-normed
  // carries 2 * cross.
  const double error = 2.0 * errorScale * sqrt(*frameNormSq) * templateNorm;
  const int y = blockIdx.y * kFloatScoreBlockY + threadIdx.y;
  const int x0 = blockIdx.x * (kFloatScoreBlockX * kFloatScoresPerThread) + threadIdx.x;
  Ranked best{0.0, -1};  // kHandoff: the thread's best of the positions scored for good
#pragma unroll
  for (int k = 0; k < kFloatScoresPerThread; ++k) {
    const int x = x0 + k * kFloatScoreBlockX;
    const bool valid = x < g.mapWidth && y < g.mapHeight;
    bool redo = false, reaches = false;
    if (valid) {
      int64_t s1, s2;
      windowSums(sum, sumSq, g, x, y, &s1, &s2);
      const double c = double(centred[std::size_t(y) * pitch + x]);
      // ccoeff-normed from the caller's template root (scoreFromCentred's, given
      // centredTemplateRoot): its square root is not taken again at every position.
      const CentredScore r =
          method == Method::CCoeffNormed && stats.n <= kInt64SafePixels
              ? ccoeffNormed(c, windowVarianceSum(stats.n, s1, s2, constants), s2, templateScale)
              : scoreFromCentred(method, stats, s1, s2, c);
      map[std::size_t(y) * g.mapWidth + x] = r.score;
      redo = r.denominator > 0.0 && error > kMaxScoreError * r.denominator;
      if (kHandoff && !redo) {
        const Ranked here{handoff.sign * r.score, y * g.mapWidth + x};
        if (better(here, best)) best = here;
        reaches = handoff.collect && here.goodness >= handoff.goodEnough;
      }
    }
    // Every lane takes part (the warp's vote), valid or not.
    appendWarp(redo, y * g.mapWidth + x, recompute, recomputeCount);
    if (kHandoff) appendWarp(reaches, y * g.mapWidth + x, handoff.above, handoff.aboveCount);
  }
  if (kHandoff) {
    best = blockBestInThread0(best);
    if (linearThread() == 0) handoff.blockBest[blockIdx.y * gridDim.x + blockIdx.x] = best;
  }
}

// One warp per listed position. kHandoff: the listed positions' peaks handed over as the float
// score kernel hands over the others': each block's best into handoff.blockBest[firstSlot +
// blockIdx.x] (index -1 where it has none) and those reaching the threshold into the above list.
template <typename Table, bool kHandoff>
__global__ void recomputeKernel(const Table* __restrict__ sum, const Table* __restrict__ sumSq,
                                Geometry g, TemplateStats stats, Method method,
                                const uint8_t* __restrict__ image, std::size_t pitch,
                                const uint8_t* __restrict__ tpl, const int* __restrict__ list,
                                const int* __restrict__ count, double* __restrict__ map,
                                PeakHandoff handoff, int firstSlot) {
  const int lane = threadIdx.x & 31;
  const int warps = gridDim.x * (blockDim.x / 32);
  const int n = *count;
  const int pixels = g.w * g.h;
  Ranked best{0.0, -1};  // kHandoff: lane 0's best of its warp's positions
  for (int k = (blockIdx.x * blockDim.x + threadIdx.x) / 32; k < n; k += warps) {
    const int i = list[k];
    const int x = i % g.mapWidth, y = i / g.mapWidth;
    unsigned long long acc = 0;
    for (int p = lane; p < pixels; p += 32) {
      const int ty = p / g.w, tx = p - ty * g.w;
      acc += uint32_t(image[std::size_t(y + ty) * pitch + x + tx]) * uint32_t(tpl[p]);
    }
    for (int d = 16; d > 0; d >>= 1) acc += __shfl_down_sync(0xffffffffu, acc, d);
    if (lane == 0) {
      int64_t s1, s2;
      windowSums(sum, sumSq, g, x, y, &s1, &s2);
      const double score = scoreFromSums(method, stats, s1, s2, int64_t(acc));
      map[i] = score;
      if (kHandoff) {
        const Ranked here{handoff.sign * score, i};
        if (better(here, best)) best = here;
        if (handoff.collect && here.goodness >= handoff.goodEnough)
          handoff.above[atomicAdd(handoff.aboveCount, 1)] = i;
      }
    }
  }
  if (kHandoff) {
    best = blockBestInThread0(best);
    if (threadIdx.x == 0) handoff.blockBest[firstSlot + blockIdx.x] = best;
  }
}

Status check(const ScoreInputs& in, Geometry* g) {
  if (in.sum == nullptr || in.sumSq == nullptr) return Status::error("score: SAT pointers are null");
  if (in.templateWidth < 1 || in.templateHeight < 1 || in.templateWidth > in.frameWidth ||
      in.templateHeight > in.frameHeight)
    return Status::error("score: template does not fit the frame");
  *g = Geometry{in.frameWidth, in.frameWidth - in.templateWidth + 1,
                in.frameHeight - in.templateHeight + 1, in.templateWidth, in.templateHeight};
  return Status();
}

}  // namespace

Status scoreFromExactNumerator(const ScoreInputs& in, const int64_t* numerator, double* map,
                               cudaStream_t stream) {
  Geometry g;
  NCC_RETURN_IF_ERROR(check(in, &g));
  dim3 block(64, 4);
  dim3 grid((g.mapWidth + 63) / 64, (g.mapHeight + 3) / 4);
  if (in.sat32) {
    exactScoreKernel<<<grid, block, 0, stream>>>(static_cast<const uint32_t*>(in.sum),
                                                 static_cast<const uint32_t*>(in.sumSq), g,
                                                 in.stats, in.method, numerator, map);
  } else {
    exactScoreKernel<<<grid, block, 0, stream>>>(static_cast<const int64_t*>(in.sum),
                                                 static_cast<const int64_t*>(in.sumSq), g,
                                                 in.stats, in.method, numerator, map);
  }
  NCC_CUDA_CHECK(cudaGetLastError());
  return Status();
}

Status scoreFromCentredNumerator(const ScoreInputs& in, const double* centred, std::size_t pitch,
                                 double* map, cudaStream_t stream) {
  Geometry g;
  NCC_RETURN_IF_ERROR(check(in, &g));
  dim3 block(64, 4);
  dim3 grid((g.mapWidth + 63) / 64, (g.mapHeight + 3) / 4);
  if (in.sat32) {
    centredScoreKernel<<<grid, block, 0, stream>>>(static_cast<const uint32_t*>(in.sum),
                                                   static_cast<const uint32_t*>(in.sumSq), g,
                                                   in.stats, in.method, centred, pitch, map);
  } else {
    centredScoreKernel<<<grid, block, 0, stream>>>(static_cast<const int64_t*>(in.sum),
                                                   static_cast<const int64_t*>(in.sumSq), g,
                                                   in.stats, in.method, centred, pitch, map);
  }
  NCC_CUDA_CHECK(cudaGetLastError());
  return Status();
}

Status scoreFromFloatCentredNumerator(const ScoreInputs& in, const float* centred,
                                      std::size_t pitch, double errorScale,
                                      const double* frameNormSq, double templateNorm, double* map,
                                      int* recompute, int* recomputeCount, cudaStream_t stream,
                                      const PeakHandoff* handoff) {
  Geometry g;
  NCC_RETURN_IF_ERROR(check(in, &g));
  if (handoff != nullptr && (handoff->blockBest == nullptr || handoff->aboveCount == nullptr ||
                             (handoff->collect && handoff->above == nullptr)))
    return Status::error("scoreFromFloatCentredNumerator: incomplete peak handoff");
  const dim3 block(kFloatScoreBlockX, kFloatScoreBlockY);
  const dim3 grid = floatScoreGrid(g.mapWidth, g.mapHeight);
  const PeakHandoff h = handoff != nullptr ? *handoff : PeakHandoff();
  // 1/n where that is exact (n a power of two: 8², ..., 256²): the windows' variance sums are
  // multiplications, not divisions, with the same doubles. Only for the templates the kernel
  // takes them for (n <= kInt64SafePixels): beyond, normedConstantsFor's int64 products overflow.
  const NormedConstants constants =
      in.stats.n <= kInt64SafePixels ? normedConstantsFor(in.stats) : NormedConstants();
  // The kernels by table type and hand-off (four instances, one launch).
  const auto launch = [&](auto table, auto withHandoff) {
    using Table = std::remove_const_t<std::remove_pointer_t<decltype(table)>>;
    floatCentredScoreKernel<Table, decltype(withHandoff)::value><<<grid, block, 0, stream>>>(
        static_cast<const Table*>(in.sum), static_cast<const Table*>(in.sumSq), g, in.stats, in.method, centred,
        pitch, errorScale, frameNormSq, templateNorm, map, recompute, recomputeCount, constants, h);
  };
  if (in.sat32) {
    if (handoff != nullptr) launch(static_cast<const uint32_t*>(nullptr), std::true_type());
    else launch(static_cast<const uint32_t*>(nullptr), std::false_type());
  } else {
    if (handoff != nullptr) launch(static_cast<const int64_t*>(nullptr), std::true_type());
    else launch(static_cast<const int64_t*>(nullptr), std::false_type());
  }
  NCC_CUDA_CHECK(cudaGetLastError());
  return Status();
}

Status recomputeExactScores(const ScoreInputs& in, const uint8_t* image, std::size_t pitch,
                            const uint8_t* templatePixels, const int* recompute,
                            const int* recomputeCount, double* map, cudaStream_t stream,
                            const PeakHandoff* handoff) {
  Geometry g;
  NCC_RETURN_IF_ERROR(check(in, &g));
  if (in.smCount < 1) return Status::error("recomputeExactScores: ScoreInputs::smCount not set");
  if (handoff != nullptr && (handoff->blockBest == nullptr || handoff->aboveCount == nullptr ||
                             (handoff->collect && handoff->above == nullptr)))
    return Status::error("recomputeExactScores: incomplete peak handoff");
  // The count stays on the device: one wave of warps walks the list, however long.
  const int blocks = recomputeBlocks(in.smCount);
  const PeakHandoff h = handoff != nullptr ? *handoff : PeakHandoff();
  // After the float score kernel's block bests (floatScoreHandoffSlots).
  const dim3 grid = floatScoreGrid(g.mapWidth, g.mapHeight);
  const int firstSlot = int(grid.x * grid.y);
  const auto launch = [&](auto table, auto withHandoff) {
    using Table = std::remove_const_t<std::remove_pointer_t<decltype(table)>>;
    recomputeKernel<Table, decltype(withHandoff)::value><<<blocks, kRecomputeThreads, 0, stream>>>(
        static_cast<const Table*>(in.sum), static_cast<const Table*>(in.sumSq), g, in.stats, in.method, image,
        pitch, templatePixels, recompute, recomputeCount, map, h, firstSlot);
  };
  if (in.sat32) {
    if (handoff != nullptr) launch(static_cast<const uint32_t*>(nullptr), std::true_type());
    else launch(static_cast<const uint32_t*>(nullptr), std::false_type());
  } else {
    if (handoff != nullptr) launch(static_cast<const int64_t*>(nullptr), std::true_type());
    else launch(static_cast<const int64_t*>(nullptr), std::false_type());
  }
  NCC_CUDA_CHECK(cudaGetLastError());
  return Status();
}

int floatScoreHandoffSlots(int mapWidth, int mapHeight, int smCount) {
  const dim3 grid = floatScoreGrid(mapWidth, mapHeight);
  return int(grid.x * grid.y) + recomputeBlocks(smCount);
}

}  // namespace nccmatch::cuda
