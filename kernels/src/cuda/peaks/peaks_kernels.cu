#include "cuda/peaks/peaks_kernels.hpp"

#include <cub/device/device_radix_sort.cuh>

#include <climits>
#include <cstddef>

#include "cuda/cuda_check.hpp"
#include "cuda/dependent_launch.cuh"
#include "cuda/device_info.hpp"
#include "cuda/peaks/peaks_device.cuh"
#include "rules/peak_rules.hpp"

namespace nccmatch::cuda {

namespace {

constexpr int kScanThreads = 256;
constexpr int kScanBlocksPerSm = 8;
constexpr int kSelectThreads = 1024;

__device__ DeviceMatch makeMatch(const double* map, int mapWidth, int mapHeight, double sign,
                                 int index) {
  DeviceMatch m;
  m.x = index % mapWidth;
  m.y = index / mapWidth;
  m.score = map[std::size_t(index)];
  const GoodnessMap<int> good{map, mapWidth, mapHeight, sign};
  m.subX = subPixelX(good, mapWidth, m.x, m.y);
  m.subY = subPixelY(good, mapHeight, m.x, m.y);
  return m;
}

// A match at a position without sub-pixel offsets (a sparse map's: refined later).
__device__ DeviceMatch pointMatch(int mapWidth, int index, double score) {
  DeviceMatch m;
  m.x = index % mapWidth;
  m.y = index / mapWidth;
  m.score = score;
  m.subX = m.x;
  m.subY = m.y;
  return m;
}

// A sparse map read for the local-extremum rule: a position without its bit did not reach the
// threshold, so it is below every candidate (which did): -inf serves as its goodness.
struct AboveGoodness {
  const double* map;
  const uint32_t* bits;
  int width, height;
  double sign;
  __device__ double operator()(int x, int y) const {
    const int i = y * width + x;
    return (bits[i >> 5] >> (i & 31)) & 1u ? sign * map[i] : -INFINITY;
  }
};

// The rules' local-extremum test at linear index i of a map.
__device__ inline bool isLocalPeakAt(const double* map, int mapWidth, int mapHeight, double sign,
                                     int i, double g) {
  return isLocalPeak(GoodnessMap<int>{map, mapWidth, mapHeight, sign}, i % mapWidth, i / mapWidth, g);
}

// Every position: the block's best, and the local extrema that pass the threshold.
__global__ void __launch_bounds__(kScanThreads)
    scanKernel(const double* __restrict__ map, int mapWidth, int mapHeight, double sign,
               double goodEnough, bool collect, int* __restrict__ candidates,
               int* __restrict__ count, Ranked* __restrict__ partial) {
  Ranked best{0.0, -1};
  const int n = mapWidth * mapHeight;
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) {
    const double g = sign * map[i];
    const Ranked here{g, i};
    if (better(here, best)) best = here;
    if (!collect || !(g >= goodEnough)) continue;
    if (isLocalPeakAt(map, mapWidth, mapHeight, sign, i, g)) candidates[atomicAdd(count, 1)] = i;
  }
  best = blockBest(best);
  if (threadIdx.x == 0) partial[blockIdx.x] = best;
}

// The handed-over positions above the threshold that are local extrema, compacted; the grid's
// x dimension walks the list.
// bits: a sparse map's (null: every position is in the map).
__device__ inline void compactLocalPeaks(const double* __restrict__ map, int mapWidth, int mapHeight,
                                         double sign, const int* __restrict__ above,
                                         const int* __restrict__ aboveCount,
                                         int* __restrict__ candidates, int* __restrict__ count,
                                         const uint32_t* __restrict__ bits = nullptr) {
  const int n = *aboveCount;
  for (int k = blockIdx.x * blockDim.x + threadIdx.x; k < n; k += gridDim.x * blockDim.x) {
    const int i = above[k];
    const bool peak =
        bits != nullptr
            ? isLocalPeak(AboveGoodness{map, bits, mapWidth, mapHeight, sign}, i % mapWidth, i / mapWidth, sign * map[i])
            : isLocalPeakAt(map, mapWidth, mapHeight, sign, i, sign * map[i]);
    if (peak) candidates[atomicAdd(count, 1)] = i;
  }
}

__global__ void __launch_bounds__(kScanThreads)
    localPeaksKernel(const double* __restrict__ map, int mapWidth, int mapHeight, double sign,
                     const int* __restrict__ above, const int* __restrict__ aboveCount,
                     int* __restrict__ candidates, int* __restrict__ count) {
  compactLocalPeaks(map, mapWidth, mapHeight, sign, above, aboveCount, candidates, count);
}

// A bank: blockIdx.y is the job.
__global__ void __launch_bounds__(kScanThreads)
    bankLocalPeaksKernel(const BankPeakJob* __restrict__ jobs, double sign) {
  const BankPeakJob& j = jobs[blockIdx.y];
  compactLocalPeaks(j.map, j.mapWidth, j.mapHeight, sign, j.above, j.aboveCount, j.candidates,
                    j.candidateCount, j.aboveBits);
}

// One block: the global best, then greedy NMS one kept match per round. Round k keeps the best
// live candidate; a candidate dies (its slot set to -1) when it is kept or when the box kept in
// the round before overlaps it by more than nmsIou. So the best live candidate is exactly what
// peaks.cpp's sorted scan keeps k-th, and each round costs one pass over the candidates instead
// of a comparison with every kept box (O(n*k) in all, not O(n*k^2)).
__device__ inline void selectMatches(const double* __restrict__ map, int mapWidth, int mapHeight, double sign,
                                     int templateWidth, int templateHeight, int maxMatches, double nmsIou,
                                     const Ranked* __restrict__ partial, int partials,
                                     int* __restrict__ candidates, const int* __restrict__ count,
                                     DeviceMatch* best, DeviceMatch* kept, int* keptCount, bool sparse = false) {
  Ranked r{0.0, -1};
  for (int i = threadIdx.x; i < partials; i += blockDim.x)
    if (better(partial[i], r)) r = partial[i];
  r = blockBest(r);
  // A sparse map's best may lie below the threshold, so not in the map: its score is its
  // goodness times the sign (+-1: exact).
  if (threadIdx.x == 0 && r.index >= 0)
    *best = sparse ? pointMatch(mapWidth, r.index, sign * r.goodness) : makeMatch(map, mapWidth, mapHeight, sign, r.index);

  const int n = *count;
  int lastIndex = -1;  // the box kept in the previous round
  int k = 0;
  for (; k < maxMatches; ++k) {
    const int lastX = lastIndex >= 0 ? lastIndex % mapWidth : 0;
    const int lastY = lastIndex >= 0 ? lastIndex / mapWidth : 0;
    Ranked pick{0.0, -1};
    for (int i = threadIdx.x; i < n; i += blockDim.x) {
      const int index = candidates[i];
      if (index < 0) continue;
      if (lastIndex >= 0 &&
          (index == lastIndex ||
           boxIou(index % mapWidth, index / mapWidth, templateWidth, templateHeight, lastX, lastY,
                  templateWidth, templateHeight) > nmsIou)) {
        candidates[i] = -1;
        continue;
      }
      const Ranked c{sign * map[index], index};
      if (better(c, pick)) pick = c;
    }
    pick = blockBest(pick);  // also a barrier: every slot of this round is settled
    if (pick.index < 0) break;
    if (threadIdx.x == 0)
      kept[k] = sparse ? pointMatch(mapWidth, pick.index, map[pick.index])
                       : makeMatch(map, mapWidth, mapHeight, sign, pick.index);
    lastIndex = pick.index;
  }
  if (threadIdx.x == 0) *keptCount = k;
}

__global__ void __launch_bounds__(kSelectThreads)
    selectKernel(const double* __restrict__ map, int mapWidth, int mapHeight, double sign,
                 int templateWidth, int templateHeight, int maxMatches, double nmsIou,
                 const Ranked* __restrict__ partial, int partials,
                 int* __restrict__ candidates, const int* __restrict__ count,
                 DeviceMatch* best, DeviceMatch* kept, int* keptCount) {
  selectMatches(map, mapWidth, mapHeight, sign, templateWidth, templateHeight, maxMatches, nmsIou,
                partial, partials, candidates, count, best, kept, keptCount);
}

// A bank: one block per job; job j's results go to slot j.templateIndex of best, keptCount and
// kept (maxMatches entries each).
__global__ void __launch_bounds__(kSelectThreads)
    bankSelectKernel(const BankPeakJob* __restrict__ jobs, double sign, int maxMatches,
                     double nmsIou, DeviceMatch* best, DeviceMatch* kept, int* keptCount) {
  const BankPeakJob& j = jobs[blockIdx.x];
  const std::size_t t = std::size_t(j.templateIndex);
  selectMatches(j.map, j.mapWidth, j.mapHeight, sign, j.templateWidth, j.templateHeight, maxMatches,
                nmsIou, j.blockBest, j.partials, j.candidates, j.candidateCount, best + t,
                kept + t * std::size_t(maxMatches), keptCount + t, j.aboveBits != nullptr);
}

// ---- sorted NMS, for many matches a template ----

// The candidates' order as an unsigned key: larger goodness, larger key; -0.0 ranks as +0.0 (as
// == does); 0 is below every double, for positions that are not candidates.
__device__ inline unsigned long long orderedKey(double g) {
  const unsigned long long u = (unsigned long long)__double_as_longlong(g + 0.0);
  return (u & 0x8000000000000000ull) ? ~u : (u | 0x8000000000000000ull);
}

// Every position: key 0, value its own index (raster order, which the stable sort keeps for ties).
__global__ void __launch_bounds__(kScanThreads)
    clearKeysKernel(int positions, unsigned long long* __restrict__ keys, int* __restrict__ values) {
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < positions; i += gridDim.x * blockDim.x) {
    keys[i] = 0;
    values[i] = i;
  }
}

__global__ void __launch_bounds__(kScanThreads)
    candidateKeysKernel(const double* __restrict__ map, double sign, const int* __restrict__ candidates,
                        const int* __restrict__ count, unsigned long long* __restrict__ keys) {
  const int n = *count;
  for (int k = blockIdx.x * blockDim.x + threadIdx.x; k < n; k += gridDim.x * blockDim.x) {
    const int i = candidates[k];
    if (i >= 0) keys[i] = orderedKey(sign * map[i]);
  }
}

// One warp walks the candidates best first (sorted[0..count)) and keeps each one that no kept
// box overlaps by more than nmsIou (peaks.cpp's greedy NMS); a kept box marks, in a bitmap of the
// map, every position its box overlaps by more than nmsIou. Linear in the candidates, where the
// round-per-match select is quadratic when thousands are kept.
__global__ void __launch_bounds__(32)
    greedyWalkKernel(const double* __restrict__ map, int mapWidth, int mapHeight, double sign,
                     int templateWidth, int templateHeight, int maxMatches, double nmsIou,
                     const int* __restrict__ sorted, const int* __restrict__ count,
                     unsigned* __restrict__ suppressed, DeviceMatch* kept, int* keptCount, bool subPixelLater) {
  const int lane = threadIdx.x;
  const int n = *count;
  // Offsets that can pass IoU > nmsIou: |dx| < w (1 - t) / (1 + t) (dy = 0), one more for rounding.
  const double t = nmsIou < 0.0 ? 0.0 : nmsIou;
  const int rx = min(templateWidth - 1, int(templateWidth * (1.0 - t) / (1.0 + t)) + 1);
  const int ry = min(templateHeight - 1, int(templateHeight * (1.0 - t) / (1.0 + t)) + 1);
  const int zoneWidth = 2 * rx + 1, zone = zoneWidth * (2 * ry + 1);
  int k = 0;
  for (int base = 0; base < n && k < maxMatches;) {
    const int at = base + lane;
    const int index = at < n ? sorted[at] : -1;
    const bool live = index >= 0 && !((__ldcg(suppressed + (index >> 5)) >> (index & 31)) & 1u);
    const unsigned mask = __ballot_sync(0xffffffffu, live);
    if (mask == 0) {
      base += 32;
      continue;
    }
    if (nmsIou >= 1.0) {
      // Nothing is suppressed: every live lane is kept, in order.
      const int rank = __popc(mask & ((1u << lane) - 1u));
      if (live && k + rank < maxMatches)
        kept[k + rank] = subPixelLater ? pointMatch(mapWidth, index, map[index])
                                       : makeMatch(map, mapWidth, mapHeight, sign, index);
      k = min(maxMatches, k + __popc(mask));
      base += 32;
      continue;
    }
    const int first = __ffs(mask) - 1;
    const int keep = __shfl_sync(0xffffffffu, index, first);
    if (lane == 0)
      kept[k] = subPixelLater ? pointMatch(mapWidth, keep, map[keep]) : makeMatch(map, mapWidth, mapHeight, sign, keep);
    ++k;
    {
      const int kx = keep % mapWidth, ky = keep / mapWidth;
      for (int o = lane; o < zone; o += 32) {
        const int x = kx + o % zoneWidth - rx, y = ky + o / zoneWidth - ry;
        if (x < 0 || y < 0 || x >= mapWidth || y >= mapHeight) continue;
        if (boxIou(x, y, templateWidth, templateHeight, kx, ky, templateWidth, templateHeight) > nmsIou) {
          const int p = y * mapWidth + x;
          atomicOr(suppressed + (p >> 5), 1u << (p & 31));
        }
      }
      __threadfence_block();
      __syncwarp();
    }
    base += first + 1;
  }
  if (lane == 0) *keptCount = k;
}

// ---- sub-pixel offsets from exact scores (sparse and rounded maps) ----

constexpr int kRefineWarps = 4;

// The sum of v over the warp, in every lane.
template <typename T>
__device__ __forceinline__ T warpSum(T v) {
  for (int offset = 16; offset > 0; offset >>= 1) v += __shfl_xor_sync(0xffffffffu, v, offset);
  return v;
}

// The exact score of the window at (x, y) against a template (w x h, tightly packed), by one
// warp: each lane sums every 32nd pixel, the totals are exchanged, every lane returns the score.
__device__ double warpRescore(const DeviceFrame& frame, const uint8_t* __restrict__ tpl, int w, int h,
                              const TemplateStats& stats, Method method, int x, int y) {
  const int lane = threadIdx.x & 31;
  long long s1 = 0, s2 = 0, c = 0;
  for (int p = lane; p < w * h; p += 32) {
    const int ty = p / w, tx = p - ty * w;
    const uint32_t v = frame.image[std::size_t(y + ty) * frame.pitch + x + tx];
    s1 += v;
    s2 += v * v;
    c += v * uint32_t(tpl[p]);
  }
  return scoreFromSums(method, stats, warpSum(s1), warpSum(s2), warpSum(c));
}

// The goodness around one match, as the rules' sub-pixel parabola reads it.
struct NeighbourGoodness {
  int x0, y0;
  double values[3][3];
  __device__ double operator()(int x, int y) const { return values[y - y0 + 1][x - x0 + 1]; }
};

// Sets m's sub-pixel offsets (lane 0 writes them) from its centre's goodness and its four
// neighbours', goodnessAt(x, y) (called by the whole warp, the same value in every lane): the
// parabolas makeMatch reads on a whole map that holds those values.
template <typename GoodnessAt>
__device__ void setSubPixelFrom(DeviceMatch* m, int mapWidth, int mapHeight, double centre, GoodnessAt goodnessAt) {
  const int x = m->x, y = m->y;
  NeighbourGoodness good{x, y, {}};
  good.values[1][1] = centre;
  if (x > 0 && x + 1 < mapWidth) {
    good.values[1][0] = goodnessAt(x - 1, y);
    good.values[1][2] = goodnessAt(x + 1, y);
  }
  if (y > 0 && y + 1 < mapHeight) {
    good.values[0][1] = goodnessAt(x, y - 1);
    good.values[2][1] = goodnessAt(x, y + 1);
  }
  if ((threadIdx.x & 31) == 0) {
    m->subX = subPixelX(good, mapWidth, x, y);
    m->subY = subPixelY(good, mapHeight, x, y);
  }
}

// The reported match of a template's slot (0 the best, k the k-th kept one), or null past its
// kept count.
__device__ DeviceMatch* reportedMatch(const MatchSlots& out, int maxMatches, int slot) {
  if (slot > maxMatches || (slot > 0 && slot > *out.keptCount)) return nullptr;
  return slot == 0 ? out.best : out.kept + (slot - 1);
}

// Sparse maps: one warp per reported match sets its sub-pixel offsets from its four neighbours'
// goodness: the map's where the neighbour's bit says it reached the threshold, else rescored from
// the frame. The values are the exact scores a whole map would hold, so the offsets are those of
// makeMatch on it.
__global__ void __launch_bounds__(32 * kRefineWarps)
    bankRefineKernel(const BankPeakJob* __restrict__ jobs, DeviceFrame frame, Method method, double sign,
                     int maxMatches, DeviceMatch* best, DeviceMatch* kept, const int* __restrict__ keptCount) {
  const BankPeakJob& j = jobs[blockIdx.y];
  const std::size_t t = std::size_t(j.templateIndex);
  const MatchSlots out{best + t, kept + t * std::size_t(maxMatches), const_cast<int*>(keptCount) + t};
  DeviceMatch* m = reportedMatch(out, maxMatches, int(blockIdx.x) * kRefineWarps + int(threadIdx.x >> 5));
  if (j.aboveBits == nullptr || m == nullptr) return;
  setSubPixelFrom(m, j.mapWidth, j.mapHeight, sign * m->score, [&](int nx, int ny) {
    const int i = ny * j.mapWidth + nx;
    const bool above = (j.aboveBits[i >> 5] >> (i & 31)) & 1u;
    return sign * (above ? j.map[i]
                         : warpRescore(frame, j.templatePixels, j.templateWidth, j.templateHeight, j.stats,
                                       method, nx, ny));
  });
}

// ---- exact sub-pixel offsets on rounded maps (the fft numerator's) ----

constexpr int kExactThreads = 256;
constexpr int kExactPixelsPerThread = 8;
constexpr int kExactPixelsPerBlock = kExactThreads * kExactPixelsPerThread;
// Matches summed at once (a group of blocks each); more take turns.
constexpr int kExactMatchGroups = 256;
// The windows a match's offsets read: its own, then left of it, right, above, below.
__device__ constexpr int aroundX(int k) { return k == 1 ? -1 : k == 2 ? 1 : 0; }
__device__ constexpr int aroundY(int k) { return k == 3 ? -1 : k == 4 ? 1 : 0; }

// One thread's or block's sums of one window: sum I, sum I^2, sum I*T. 32 bits hold a block's
// (kExactPixelsPerBlock * 255^2 < 2^32).
struct BlockWindowSums {
  uint32_t s1 = 0, s2 = 0, c = 0;
};
static_assert(uint64_t(kExactPixelsPerBlock) * 255u * 255u < (uint64_t(1) << 32), "a block's sums fit 32 bits");

__device__ __forceinline__ void addPixel(BlockWindowSums& w, uint32_t image, uint32_t tpl) {
  w.s1 += image;
  w.s2 += image * image;
  w.c += image * tpl;
}

// This thread's template pixels of the block's slice (raster indices from `first`,
// kExactPixelsPerThread per thread, consecutive threads on consecutive pixels; 0 past the end):
// the same for every match, so loaded once, before the previous kernel's matches are waited for.
__device__ void sliceTemplate(const ExactTemplate& tpl, int first, uint8_t (&t)[kExactPixelsPerThread]) {
  const int pixels = tpl.width * tpl.height;
#pragma unroll
  for (int k = 0; k < kExactPixelsPerThread; ++k) {
    const int p = first + k * kExactThreads + int(threadIdx.x);
    t[k] = p < pixels ? tpl.pixels[p] : uint8_t(0);
  }
}

// The sums of each window around the match at (x, y) over the template pixels t of this block's
// slice (sliceTemplate's): every image load of a thread issued before any sum. Windows across the map's
// edge (alongX, alongY false) are not read.
__device__ void sliceSums(const DeviceFrame& frame, const ExactTemplate& tpl, int x, int y, bool alongX, bool alongY,
                          int first, const uint8_t (&t)[kExactPixelsPerThread], BlockWindowSums (&sums)[kExactAround]) {
  const int pixels = tpl.width * tpl.height;
  uint8_t v[kExactPixelsPerThread][kExactAround];
#pragma unroll
  for (int k = 0; k < kExactPixelsPerThread; ++k) {
    const int p = first + k * kExactThreads + int(threadIdx.x);
    for (int a = 0; a < kExactAround; ++a) v[k][a] = 0;
    if (p >= pixels) continue;
    const int ty = p / tpl.width, tx = p - ty * tpl.width;
    const uint8_t* at = frame.image + std::size_t(y + ty) * frame.pitch + std::size_t(x + tx);
    v[k][0] = at[0];
    if (alongX) {
      v[k][1] = at[-1];
      v[k][2] = at[1];
    }
    if (alongY) {
      v[k][3] = *(at - frame.pitch);
      v[k][4] = at[frame.pitch];
    }
  }
#pragma unroll
  for (int k = 0; k < kExactPixelsPerThread; ++k)
#pragma unroll
    for (int a = 0; a < kExactAround; ++a) addPixel(sums[a], v[k][a], t[k]);
}

// Adds the block's sums (every thread's `sums`) to the match's, and returns in every thread
// whether this block was the match's last (its sums are then complete). Barriers: three.
__device__ bool addToMatchSums(const BlockWindowSums (&sums)[kExactAround], ExactMatchSums* total, int blocksPerMatch) {
  constexpr int kValues = kExactAround * 3;
  __shared__ uint32_t perWarp[kExactThreads / 32][kValues];
  __shared__ bool last;
  const int lane = int(threadIdx.x & 31), warp = int(threadIdx.x >> 5);
#pragma unroll
  for (int a = 0; a < kExactAround; ++a) {
    const uint32_t s1 = warpSum(sums[a].s1), s2 = warpSum(sums[a].s2), c = warpSum(sums[a].c);
    if (lane == 0) {
      perWarp[warp][3 * a] = s1;
      perWarp[warp][3 * a + 1] = s2;
      perWarp[warp][3 * a + 2] = c;
    }
  }
  __syncthreads();
  if (threadIdx.x < kValues) {
    uint32_t block = 0;
    for (int w = 0; w < kExactThreads / 32; ++w) block += perWarp[w][threadIdx.x];
    if (block != 0) atomicAdd(&total->sums[threadIdx.x / 3][threadIdx.x % 3], (unsigned long long)block);
    __threadfence();  // the additions reach every block before the count says so
  }
  __syncthreads();
  if (threadIdx.x == 0) last = atomicAdd(&total->blocksDone, 1u) == unsigned(blocksPerMatch - 1);
  __syncthreads();
  return last;
}

// The last block of a match (every thread; two barriers): the match's exact score and sub-pixel
// offsets from its complete sums, which it zeroes for the next call. Each sum read and zeroed by
// its own thread, each window scored by its own (one thread's chain of reads and square roots
// would be ~15 L2 round trips long).
__device__ void scoreMatch(ExactMatchSums* total, const TemplateStats& stats, Method method, double sign, int mapWidth,
                           int mapHeight, DeviceMatch* m) {
  constexpr int kValues = kExactAround * 3;
  __shared__ int64_t value[kValues];
  __shared__ double score[kExactAround];
  const int i = int(threadIdx.x);
  if (i < kValues) {
    // From L2, where the other blocks' atomic additions are (their fences came before the count).
    value[i] = int64_t(__ldcg(&total->sums[i / 3][i % 3]));
    total->sums[i / 3][i % 3] = 0;
  }
  __syncthreads();
  if (i < kExactAround) score[i] = scoreFromSums(method, stats, value[3 * i], value[3 * i + 1], value[3 * i + 2]);
  __syncthreads();
  if (i != 0) return;
  NeighbourGoodness good{m->x, m->y, {}};
#pragma unroll
  for (int a = 0; a < kExactAround; ++a) good.values[1 + aroundY(a)][1 + aroundX(a)] = sign * score[a];
  total->blocksDone = 0;
  m->score = score[0];
  m->subX = subPixelX(good, mapWidth, m->x, m->y);
  m->subY = subPixelY(good, mapHeight, m->x, m->y);
}

// Rounded maps: the reported matches (a group of blocksPerMatch blocks each, the group taking one
// match after another) get the exact scores of their own window and, for their sub-pixel offsets,
// of their four neighbours, summed from the frame, so the transform's last bits reach neither:
// both are makeMatch's on the exact map (the CPU reference's). The last block of a match scores it
// and zeroes its sums for the next call.
__global__ void __launch_bounds__(kExactThreads)
    exactSubPixelKernel(MatchSlots out, ExactTemplate tpl, DeviceFrame frame, Method method, double sign,
                        int maxMatches, int mapWidth, int mapHeight, ExactMatchSums* matchSums, int blocksPerMatch) {
  const int slice = int(blockIdx.x) % blocksPerMatch, group = int(blockIdx.x) / blocksPerMatch;
  const int groups = int(gridDim.x) / blocksPerMatch;
  uint8_t t[kExactPixelsPerThread];
  sliceTemplate(tpl, slice * kExactPixelsPerBlock, t);
  waitForPreviousGrid();  // the peak search's matches (a dependent launch on sm_90)
  for (int slot = group; slot <= maxMatches; slot += groups) {
    DeviceMatch* m = reportedMatch(out, maxMatches, slot);
    if (m == nullptr) return;  // the whole block: no later slot holds a match either
    const int x = m->x, y = m->y;
    const bool alongX = x > 0 && x + 1 < mapWidth, alongY = y > 0 && y + 1 < mapHeight;
    BlockWindowSums sums[kExactAround];
    sliceSums(frame, tpl, x, y, alongX, alongY, slice * kExactPixelsPerBlock, t, sums);
    ExactMatchSums* total = matchSums + slot;
    if (addToMatchSums(sums, total, blocksPerMatch))
      scoreMatch(total, tpl.stats, method, sign, mapWidth, mapHeight, m);
  }
}

}  // namespace

Status SortedNms::run(const double* map, int mapWidth, int mapHeight, int templateWidth,
                      int templateHeight, const MatchParams& params, const int* candidates,
                      const int* count, DeviceMatch* kept, int* keptCount, cudaStream_t stream,
                      bool subPixelLater) {
  const int positions = mapWidth * mapHeight;
  if (positions > positions_) {
    positions_ = 0;  // as PeakFinder::reserve: a failed reserve below leaves a buffer freed
    NCC_RETURN_IF_ERROR(keys_.reserve(2 * std::size_t(positions) * sizeof(unsigned long long)));
    NCC_RETURN_IF_ERROR(values_.reserve(2 * std::size_t(positions) * sizeof(int)));
    NCC_RETURN_IF_ERROR(bitmap_.reserve((std::size_t(positions) + 31) / 32 * sizeof(unsigned)));
    std::size_t bytes = 0;
    NCC_CUDA_CHECK(cub::DeviceRadixSort::SortPairsDescending(
        nullptr, bytes, keys_.as<unsigned long long>(), keys_.as<unsigned long long>() + positions,
        values_.as<int>(), values_.as<int>() + positions, positions));
    NCC_RETURN_IF_ERROR(temp_.reserve(std::max<std::size_t>(bytes, 16)));
    tempBytes_ = std::max<std::size_t>(bytes, 16);
    positions_ = positions;
  }
  const double sign = goodnessSign(params.method);
  unsigned long long* keysIn = keys_.as<unsigned long long>();
  unsigned long long* keysOut = keysIn + positions_;
  int* valuesIn = values_.as<int>();
  int* valuesOut = valuesIn + positions_;
  const int blocks = std::max(1, std::min((positions + kScanThreads - 1) / kScanThreads, 1024));
  clearKeysKernel<<<blocks, kScanThreads, 0, stream>>>(positions, keysIn, valuesIn);
  NCC_CUDA_CHECK(cudaGetLastError());
  candidateKeysKernel<<<blocks, kScanThreads, 0, stream>>>(map, sign, candidates, count, keysIn);
  NCC_CUDA_CHECK(cudaGetLastError());
  std::size_t bytes = tempBytes_;
  NCC_CUDA_CHECK(cub::DeviceRadixSort::SortPairsDescending(temp_.as<void>(), bytes, keysIn, keysOut,
                                                           valuesIn, valuesOut, positions, 0, 64, stream));
  NCC_CUDA_CHECK(cudaMemsetAsync(bitmap_.as<unsigned>(), 0, (std::size_t(positions) + 31) / 32 * sizeof(unsigned),
                                 stream));
  greedyWalkKernel<<<1, 32, 0, stream>>>(map, mapWidth, mapHeight, sign, templateWidth, templateHeight,
                                          params.maxMatches, params.nmsIou, valuesOut, count,
                                          bitmap_.as<unsigned>(), kept, keptCount, subPixelLater);
  NCC_CUDA_CHECK(cudaGetLastError());
  return Status();
}

Status PeakFinder::reserve(std::size_t positions) {
  if (maxBlocks_ == 0) {
    int sms = 0;
    NCC_RETURN_IF_ERROR(currentDeviceMultiprocessors(&sms));
    NCC_RETURN_IF_ERROR(counter_.reserve(sizeof(int)));
    NCC_RETURN_IF_ERROR(blockBest_.reserve(sizeof(Ranked) * std::size_t(sms) * kScanBlocksPerSm));
    maxBlocks_ = sms * kScanBlocksPerSm;  // only once both exist: a failed reserve is tried again
  }
  if (positions > positions_) {
    // A reserve frees the smaller buffer before allocating: if it fails, nothing is held, and a
    // later smaller map must not take the old size for granted (it wrote through null once).
    positions_ = 0;
    NCC_RETURN_IF_ERROR(candidates_.reserve(positions * sizeof(int)));
    positions_ = positions;
  }
  return Status();
}

Status PeakFinder::prepareMap(int mapWidth, int mapHeight, std::size_t* positions) {
  if (mapWidth <= 0 || mapHeight <= 0) return Status::error("peaks: empty map");
  *positions = std::size_t(mapWidth) * mapHeight;
  if (*positions > std::size_t(INT_MAX)) return Status::error("peaks: map too large");
  return reserve(*positions);
}

Status PeakFinder::find(const DeviceScoreMap& scores, const MatchParams& params, const MatchSlots& out,
                        cudaStream_t stream) {
  const double* map = scores.scores;
  const int mapWidth = scores.width, mapHeight = scores.height;
  const int templateWidth = scores.templateWidth, templateHeight = scores.templateHeight;
  DeviceMatch *best = out.best, *kept = out.kept;
  int* keptCount = out.keptCount;
  std::size_t n = 0;
  NCC_RETURN_IF_ERROR(prepareMap(mapWidth, mapHeight, &n));
  const double sign = goodnessSign(params.method);
  const bool collect = params.maxMatches > 0;
  NCC_CUDA_CHECK(cudaMemsetAsync(counter_.as<int>(), 0, sizeof(int), stream));
  const int blocks = int(std::min<std::size_t>((n + kScanThreads - 1) / kScanThreads, maxBlocks_));
  scanKernel<<<blocks, kScanThreads, 0, stream>>>(map, mapWidth, mapHeight, sign,
                                                  sign * params.threshold, collect,
                                                  candidates_.as<int>(), counter_.as<int>(),
                                                  blockBest_.as<Ranked>());
  NCC_CUDA_CHECK(cudaGetLastError());
  const bool sorted = params.maxMatches > kSelectRoundsLimit;
  selectKernel<<<1, kSelectThreads, 0, stream>>>(
      map, mapWidth, mapHeight, sign, templateWidth, templateHeight, sorted ? 0 : params.maxMatches,
      params.nmsIou, blockBest_.as<Ranked>(), blocks, candidates_.as<int>(), counter_.as<int>(),
      best, kept, keptCount);
  NCC_CUDA_CHECK(cudaGetLastError());
  if (sorted)
    NCC_RETURN_IF_ERROR(sortedNms_.run(map, mapWidth, mapHeight, templateWidth, templateHeight, params,
                                       candidates_.as<int>(), counter_.as<int>(), kept, keptCount, stream));
  return Status();
}

Status PeakFinder::findFromHandoff(const DeviceScoreMap& scores, const MatchParams& params,
                                   const PeakHandoff& handoff, int partials, const MatchSlots& out,
                                   cudaStream_t stream) {
  const double* map = scores.scores;
  const int mapWidth = scores.width, mapHeight = scores.height;
  const int templateWidth = scores.templateWidth, templateHeight = scores.templateHeight;
  DeviceMatch *best = out.best, *kept = out.kept;
  int* keptCount = out.keptCount;
  std::size_t n = 0;
  NCC_RETURN_IF_ERROR(prepareMap(mapWidth, mapHeight, &n));
  const double sign = goodnessSign(params.method);
  NCC_CUDA_CHECK(cudaMemsetAsync(counter_.as<int>(), 0, sizeof(int), stream));
  if (params.maxMatches > 0) {
    // Few positions pass a useful threshold; a grid of one wave covers a low one too.
    localPeaksKernel<<<maxBlocks_ / kScanBlocksPerSm * 2, kScanThreads, 0, stream>>>(
        map, mapWidth, mapHeight, sign, handoff.above, handoff.aboveCount, candidates_.as<int>(),
        counter_.as<int>());
    NCC_CUDA_CHECK(cudaGetLastError());
  }
  const bool sorted = params.maxMatches > kSelectRoundsLimit;
  selectKernel<<<1, kSelectThreads, 0, stream>>>(
      map, mapWidth, mapHeight, sign, templateWidth, templateHeight, sorted ? 0 : params.maxMatches,
      params.nmsIou, handoff.blockBest, partials, candidates_.as<int>(), counter_.as<int>(),
      best, kept, keptCount);
  NCC_CUDA_CHECK(cudaGetLastError());
  if (sorted)
    NCC_RETURN_IF_ERROR(sortedNms_.run(map, mapWidth, mapHeight, templateWidth, templateHeight, params,
                                       candidates_.as<int>(), counter_.as<int>(), kept, keptCount, stream));
  return Status();
}

Status BankPeakFinder::set(const std::vector<BankPeakJob>& jobs) {
  jobs_.clear();
  count_ = 0;
  if (jobs.empty()) return Status();
  std::size_t positions = 0;
  for (const BankPeakJob& j : jobs) positions += std::size_t(j.mapWidth) * j.mapHeight;
  NCC_RETURN_IF_ERROR(candidates_.reserve(positions * sizeof(int)));
  NCC_RETURN_IF_ERROR(counters_.reserve(jobs.size() * sizeof(int)));
  std::vector<BankPeakJob> placed = jobs;
  std::size_t offset = 0;
  for (std::size_t k = 0; k < placed.size(); ++k) {
    placed[k].candidates = candidates_.as<int>() + offset;
    placed[k].candidateCount = counters_.as<int>() + k;
    offset += std::size_t(placed[k].mapWidth) * placed[k].mapHeight;
  }
  NCC_RETURN_IF_ERROR(descriptors_.reserve(placed.size() * sizeof(BankPeakJob)));
  NCC_CUDA_CHECK(cudaMemcpy(descriptors_.as<void>(), placed.data(), placed.size() * sizeof(BankPeakJob),
                            cudaMemcpyHostToDevice));
  jobs_ = std::move(placed);
  count_ = int(jobs_.size());
  sparse_ = false;
  for (const BankPeakJob& j : jobs_) {
    if (j.aboveBits != nullptr && j.templatePixels == nullptr)
      return Status::error("bank peaks: a sparse map's job needs its template's pixels");
    sparse_ = sparse_ || j.aboveBits != nullptr;
  }
  return currentDeviceMultiprocessors(&sms_);
}

Status BankPeakFinder::find(const MatchParams& params, const DeviceFrame& frame, DeviceMatch* best,
                            DeviceMatch* kept, int* keptCount, cudaStream_t stream) const {
  if (count_ == 0) return Status();
  if (params.maxMatches < 0) return Status::error("bank peaks: negative max-matches");
  if (sparse_ && frame.image == nullptr) return Status::error("bank peaks: sparse maps need the scored frame");
  const double sign = goodnessSign(params.method);
  NCC_CUDA_CHECK(cudaMemsetAsync(counters_.as<int>(), 0, std::size_t(count_) * sizeof(int), stream));
  if (params.maxMatches > 0) {
    // One wave in all, spread over the templates.
    const int perJob = std::max(1, 2 * std::max(sms_, 1) / count_);
    bankLocalPeaksKernel<<<dim3(unsigned(perJob), unsigned(count_)), kScanThreads, 0, stream>>>(
        descriptors_.as<BankPeakJob>(), sign);
    NCC_CUDA_CHECK(cudaGetLastError());
  }
  const bool sorted = params.maxMatches > kSelectRoundsLimit;
  // With many matches the select only finds each template's best; the sorted NMS keeps.
  bankSelectKernel<<<unsigned(count_), kSelectThreads, 0, stream>>>(
      descriptors_.as<BankPeakJob>(), sign, sorted ? 0 : params.maxMatches, params.nmsIou, best, kept, keptCount);
  NCC_CUDA_CHECK(cudaGetLastError());
  for (int k = 0; sorted && k < count_; ++k) {
    const BankPeakJob& j = jobs_[k];
    const std::size_t t = std::size_t(j.templateIndex);
    NCC_RETURN_IF_ERROR(sortedNms_.run(j.map, j.mapWidth, j.mapHeight, j.templateWidth, j.templateHeight, params,
                                       j.candidates, j.candidateCount, kept + t * std::size_t(params.maxMatches),
                                       keptCount + t, stream, j.aboveBits != nullptr));
  }
  if (sparse_) {
    const unsigned slots = unsigned(params.maxMatches) + 1;  // the best, then every kept match
    bankRefineKernel<<<dim3((slots + kRefineWarps - 1) / kRefineWarps, unsigned(count_)), 32 * kRefineWarps, 0,
                       stream>>>(descriptors_.as<BankPeakJob>(), frame, params.method, sign, params.maxMatches, best,
                                 kept, keptCount);
    NCC_CUDA_CHECK(cudaGetLastError());
  }
  return Status();
}

Status refineSubPixelExactly(const MatchSlots& out, const ExactTemplate& tpl, const DeviceFrame& frame,
                             const MatchParams& params, int mapWidth, int mapHeight, ExactMatchSums* matchSums,
                             cudaStream_t stream) {
  if (params.maxMatches < 0) return Status::error("exact sub-pixel: negative max-matches");
  if (frame.image == nullptr || tpl.pixels == nullptr || matchSums == nullptr)
    return Status::error("exact sub-pixel: frame, template or sums missing");
  if (mapWidth < 1 || mapHeight < 1 || tpl.width < 1 || tpl.height < 1)
    return Status::error("exact sub-pixel: empty map or template");
  // The best, then every kept match: a group of blocks each (a slice of the template's pixels a
  // block), up to kExactMatchGroups groups (more matches take turns).
  const std::size_t pixels = std::size_t(tpl.width) * std::size_t(tpl.height);
  const std::size_t blocksPerMatch = (pixels + kExactPixelsPerBlock - 1) / kExactPixelsPerBlock;
  const std::size_t groups = std::min<std::size_t>(std::size_t(params.maxMatches) + 1, kExactMatchGroups);
  if (pixels > std::size_t(INT_MAX) || blocksPerMatch * groups > std::size_t(INT_MAX))
    return Status::error("exact sub-pixel: template too large");
  // Overlapping the peak search where the device can (its template loads before the wait).
  bool overlap = false;
  NCC_RETURN_IF_ERROR(dependentLaunchSupported(&overlap));
  return launchKernel(exactSubPixelKernel, dim3(unsigned(blocksPerMatch * groups)), dim3(kExactThreads), 0, stream,
                      overlap, out, tpl, frame, params.method, goodnessSign(params.method), params.maxMatches,
                      mapWidth, mapHeight, matchSums, int(blocksPerMatch));
}

}  // namespace nccmatch::cuda
