// The GEMM bank kernel's third tier (gemm_bank.cu): the epilogues, from the accumulators
// (placeOf, gemm_mainloop.cuh) and the tile's window sums to the outputs. The row epilogue (every
// score written, or a tile whose candidates overflow the list): each warp screens and scores its
// own pairs. The tile epilogue (sparse maps): candidates pushed against the tile's running floor
// (screenCandidates), scored exactly by the whole block, one a thread, and each template's tile
// best found by shared atomics over them (scoreCandidates).
#pragma once

#include <cuda_runtime.h>

#include <cfloat>
#include <climits>
#include <cmath>
#include <cstdint>

#include "cuda/numerator/gemm_mainloop.cuh"
#include "cuda/numerator/gemm_tile_load.cuh"
#include "cuda/peaks/peaks_device.cuh"
#include "rules/score_rules.hpp"
#include "rules/score_screen.hpp"

namespace nccmatch::cuda::gemm_tiles {

// One (position, template) score by the rules. Not inlined: the epilogue calls it from 2 * 16
// unrolled places per n-tile, and one copy keeps the kernel's code (and binaries) small.
inline __device__ __noinline__ double scoreOf(Method method, const TemplateStats& stats,
                                              const NormedConstants& normed, int64_t s1, int64_t s2, int64_t c) {
  return method == Method::CCoeffNormed && stats.n <= kInt64SafePixels ? ccoeffNormedScore(stats, normed, s1, s2, c)
                                                                       : scoreFromSums(method, stats, s1, s2, c);
}

// One exact score of the epilogue: the pair's score by the rules; the map gets it where every
// score is written or it reaches the threshold; reaching the threshold also enters the above
// list (and, for a sparse map, the bit).
__device__ __forceinline__ Ranked exactPair(const MemberDesc& e, Method method, const FusedBankRule& rule,
                                            int64_t s1, int64_t s2, uint32_t c, int index) {
  const double score = scoreOf(method, e.stats, e.normed, s1, s2, int64_t(c));
  const Ranked here{rule.sign * score, index};
  const bool reaches = rule.collect && here.goodness >= rule.goodEnough;
  if (rule.everyScore || reaches) e.map[index] = score;
  if (reaches) {
    e.above[atomicAdd(e.aboveCount, 1)] = index;
    if (!rule.everyScore) atomicOr(e.aboveBits + (index >> 5), 1u << (index & 31));
  }
  return here;
}

// The tile's place in the map: its first output (x0, y0), the rows below rowLimit and columns
// below mapWidth that exist.
struct TileGeometry {
  int x0, y0, rowLimit, mapWidth;
  __device__ bool holds(const Place& p) const { return y0 + p.row < rowLimit && x0 + p.column < mapWidth; }
  __device__ int index(const Place& p) const { return (y0 + p.row) * mapWidth + x0 + p.column; }
};

// The window sums of a place (prefix rows of image_tile::windowSums).
__device__ __forceinline__ void windowSumsAt(const GemmShared& s, const Place& p, int w, int64_t* s1, int64_t* s2) {
  const uint32_t* p1 = s.p1 + p.row * kPrefixPitch;
  const uint32_t* p2 = s.p2 + p.row * kPrefixPitch;
  *s1 = int64_t(p1[p.column + w] - p1[p.column]);
  *s2 = int64_t(p2[p.column + w] - p2[p.column]);
}

// The screening part of the windows a lane holds.
__device__ __forceinline__ void screenWindows(const GemmShared& s, int w, int pixels, Method method,
                                              ScreenWindow (&windows)[kMTiles][2]) {
#pragma unroll
  for (int m = 0; m < kMTiles; ++m)
#pragma unroll
    for (int half = 0; half < 2; ++half) {
      int64_t s1, s2;
      windowSumsAt(s, placeOf(m, half), w, &s1, &s2);
      windows[m][half] = screenWindow(method, pixels, int32_t(s1), int32_t(s2));
    }
  __syncwarp();  // the flat-window tests branch
}

// A lane's 16 pairs of an n-tile as bits: template j of its two, position (m, half) (placeOf).
__device__ __forceinline__ constexpr int pairBit(int j, int m, int half) { return 8 * j + 2 * m + half; }

// The cross sum sum I*T from an accumulator: the accumulator itself, or for a zero-mean bank's
// sum I*(T - r) that plus r S1 (rules/zero_mean_screen.hpp; integers, exact).
template <bool kZeroMean>
__device__ __forceinline__ uint32_t crossSumOf(uint32_t acc, int offset, int32_t s1) {
  if constexpr (kZeroMean) return uint32_t(int32_t(acc) + offset * s1);
  else return acc;
}

// A member's zero-mean offset r (0 where the bank has none).
template <bool kZeroMean>
__device__ __forceinline__ int offsetOf(const GemmShared& s, int member) {
  if constexpr (kZeroMean) return s.zeroMean[member].offset;
  else return 0;
}

// The cross sum of the lane's pair `bit` of n-tile n and, where `ceiling` is given, its screened
// ceiling, the bit known only at run time: every index stays a constant, so the accumulators stay
// in registers.
template <int kNTiles>
__device__ __forceinline__ uint32_t crossOfPair(const uint32_t (&acc)[kMTiles][kNTiles][4], int n, int bit,
                                                const float (*ceiling)[kMTiles][2] = nullptr,
                                                float* ceilingOut = nullptr) {
  uint32_t c = 0;
#pragma unroll
  for (int j = 0; j < 2; ++j)
#pragma unroll
    for (int m = 0; m < kMTiles; ++m)
#pragma unroll
      for (int half = 0; half < 2; ++half)
        if (bit == pairBit(j, m, half)) {
          c = acc[m][n][2 * half + j];
          if (ceiling != nullptr) *ceilingOut = ceiling[j][m][half];
        }
  return c;
}

// A lane's screened pairs of n-tile n, template j of its two: per pair the ceiling of its exact
// goodness (-inf: no pair); returned, the highest floor under one of them (its screened goodness
// less its bound; -inf: none).
template <int kNTiles, bool kZeroMean>
__device__ __forceinline__ float screenTemplatePairs(const uint32_t (&acc)[kMTiles][kNTiles][4], int n, int j, int offset,
                                                     const ScreenMethod& screenRule, const ScreenTemplate& screen,
                                                     const ScreenWindow (&windows)[kMTiles][2], float sign,
                                                     bool memberValid, const TileGeometry& tile,
                                                     float (&ceiling)[kMTiles][2]) {
  float top = -INFINITY;
#pragma unroll
  for (int m = 0; m < kMTiles; ++m)
#pragma unroll
    for (int half = 0; half < 2; ++half) {
      const bool valid = memberValid && tile.holds(placeOf(m, half));
      const uint32_t c = crossSumOf<kZeroMean>(acc[m][n][2 * half + j], offset, int32_t(windows[m][half].u));
      const ScreenedPair p = screenPair(screenRule, screen, windows[m][half], c);
      const float good = sign * p.score;
      ceiling[m][half] = valid ? good + p.bound : -INFINITY;
      top = fmaxf(top, valid ? good - p.bound : -INFINITY);
    }
  return top;
}

// The row epilogue (every score written, or a tile whose candidates overflow the list): each
// warp's pairs, one n-tile at a time; each lane screens its 16 pairs (8 positions x 2 templates)
// in float (score_screen.hpp), the lanes holding a template agree on a floor under its exact best
// among them, and only pairs that can reach that floor or the threshold (every pair where the map
// takes every score) get their exact score. Lanes work through their own pairs together, so a
// warp pays for the most any lane has. The warp's exact best per template goes to bestRow.
template <int kNTiles, bool kZeroMean>
__device__ __forceinline__ void epilogue(const uint32_t (&acc)[kMTiles][kNTiles][4], const GemmShared& s,
                                         int count, int w, int pixels, const TileGeometry& tile, Method method,
                                         const FusedBankRule& rule, float goodEnoughFloor, Ranked* bestRow) {
  const int lane = threadIdx.x & 31, g = lane >> 2, t = lane & 3;
  const ScreenMethod screenRule = screenMethod(method, pixels);
  const float sign = float(rule.sign);
  ScreenWindow windows[kMTiles][2];
  screenWindows(s, w, pixels, method, windows);
#pragma unroll  // acc stays in registers only where every index is a constant
  for (int n = 0; n < kNTiles; ++n) {
    // Per pair the ceiling of its exact goodness (-inf: no pair); per template a floor under the
    // row's exact best.
    float ceiling[2][kMTiles][2], floorOfBest[2];
#pragma unroll
    for (int j = 0; j < 2; ++j) {
      const int member = 8 * n + 2 * t + j;
      float top = screenTemplatePairs<kNTiles, kZeroMean>(acc, n, j, offsetOf<kZeroMean>(s, min(member, count - 1)),
                                                          screenRule, s.desc[min(member, count - 1)].screen, windows, sign,
                                      member < count, tile, ceiling[j]);
      for (int offset = 4; offset < 32; offset <<= 1) top = fmaxf(top, __shfl_xor_sync(0xffffffffu, top, offset));
      floorOfBest[j] = top;
    }
    // Bit 8j + 2m + half: the pair needs its exact score.
    uint32_t wanted = 0;
#pragma unroll
    for (int j = 0; j < 2; ++j)
#pragma unroll
      for (int m = 0; m < kMTiles; ++m)
#pragma unroll
        for (int half = 0; half < 2; ++half) {
          const float ceil = ceiling[j][m][half];
          if (ceil != -INFINITY &&
              (rule.everyScore || ceil >= floorOfBest[j] || (rule.collect && ceil >= goodEnoughFloor)))
            wanted |= 1u << pairBit(j, m, half);
        }
    Ranked best[2] = {{0.0, -1}, {0.0, -1}};
    // The whole warp turns the loop together (a lane done early waits with its predicate off), so
    // it leaves converged: a divergent exit does not reconverge reliably around the call.
    while (__any_sync(0xffffffffu, wanted != 0)) {
      if (wanted != 0) {
        const int bit = __ffs(wanted) - 1;
        wanted &= wanted - 1;
        const int j = bit >> 3;
        const Place place = placeOf((bit >> 1) & 3, bit & 1);
        int64_t s1, s2;
        windowSumsAt(s, place, w, &s1, &s2);
        const uint32_t c = crossSumOf<kZeroMean>(crossOfPair(acc, n, bit), offsetOf<kZeroMean>(s, 8 * n + 2 * t + j),
                                                 int32_t(s1));
        const Ranked here = exactPair(s.desc[8 * n + 2 * t + j], method, rule, s1, s2, c, tile.index(place));
        if (j == 0 && better(here, best[0])) best[0] = here;
        if (j == 1 && better(here, best[1])) best[1] = here;
      }
      __syncwarp();
    }
#pragma unroll
    for (int j = 0; j < 2; ++j) {
      Ranked r = best[j];
      for (int offset = 4; offset < 32; offset <<= 1) {
        Ranked o;
        o.goodness = __shfl_xor_sync(0xffffffffu, r.goodness, offset);
        o.index = __shfl_xor_sync(0xffffffffu, r.index, offset);
        if (better(o, r)) r = o;
      }
      if (g == 0) bestRow[8 * n + 2 * t + j] = r;
    }
  }
}

// The tile's windows folded for the screen (score_screen.hpp), once per position: two a thread.
// Read after the next barrier.
__device__ __forceinline__ void foldTileWindows(const GemmShared& s, int w, int pixels, Method method, float sign,
                                                const TileGeometry& tile) {
  const ScreenMethod screenRule = screenMethod(method, pixels);
  for (int i = threadIdx.x; i < kGemmTileRows * kGemmTileWidth; i += kGemmThreads) {
    const Place place{i / kGemmTileWidth, i % kGemmTileWidth};
    int64_t s1, s2;
    windowSumsAt(s, place, w, &s1, &s2);
    s.folded[i] = screenFoldWindow(screenRule, screenWindow(method, pixels, int32_t(s1), int32_t(s2)), sign,
                                   tile.holds(place));
  }
}

// A float's bits as an int ordered as the floats are (NaN aside): atomicMax on them is a max.
__device__ __forceinline__ int orderedBits(float f) {
  const int i = __float_as_int(f);
  return i >= 0 ? i : i ^ 0x7fffffff;
}
__device__ __forceinline__ float orderedFloat(int i) { return __int_as_float(i >= 0 ? i : i ^ 0x7fffffff); }

// A template's frame floor (FusedBankTemplate::frameFloor) as a word: orderedBits with its sign bit
// flipped, so that unsigned order is the floats' and zeroed memory (0) lies below -inf. Blocks raise
// it by atomicMax from the floors under their tiles' exact bests; any value it holds is at most the
// exact goodness of a pair whose tile reports it, so a pair whose ceiling is below it is not the best.
__device__ __forceinline__ uint32_t frameFloorKey(int floorBits) { return uint32_t(floorBits) ^ 0x80000000u; }
__device__ __forceinline__ int frameFloorBits(const uint32_t* frameFloor) {
  const uint32_t key = *reinterpret_cast<const volatile uint32_t*>(frameFloor);  // other blocks raise it
  return int(max(key, frameFloorKey(orderedBits(-INFINITY))) ^ 0x80000000u);
}

// The tile epilogue (sparse maps), first tier: each warp screens its row's pairs, raises the
// tile's running floor under each template's exact best (the highest screened goodness less its
// bound, in floorBits) and pushes each pair whose ceiling reaches the floor it sees then, or the
// threshold, onto the tile's candidate list. A pair left out cannot be its template's tile best:
// the tile's final floor is at least the one it was compared with. Pushes beyond the capacity are
// only counted (the tile then takes the row epilogue). A pair whose screened goodness is its exact
// one (a normed method's flat window or flat template: the rules' constant, bound 0) and that
// does not reach the threshold is never pushed: its goodness is at most the floor it raised, and
// where it equals the floor only the earliest such pair can be the best, so one key per template
// keeps it (tieKeys: rankedKey, rules/peak_rules.hpp). On flat content (a black frame: every pair
// the same constant) every pair would otherwise tie with the floor and be pushed, overflowing the
// list into the row epilogue's exact scores for every pair.
template <int kNTiles, bool kCentred, bool kZeroMean = false>
__device__ __forceinline__ void screenCandidates(const uint32_t (&acc)[kMTiles][kNTiles][4], const GemmShared& s,
                                                 int count, int w, int pixels, const TileGeometry& tile,
                                                 Method method, const FusedBankRule& rule, float goodEnoughFloor) {
  constexpr int kCapacity = candidateCapacity(8 * kNTiles);
  const int lane = threadIdx.x & 31, g = lane >> 2, t = lane & 3;
  const ScreenMethod screenRule = screenMethod(method, pixels);
  const float sign = float(rule.sign);
  const float lowest = screenLowestGoodness(screenRule, sign);
#pragma unroll
  for (int n = 0; n < kNTiles; ++n) {
    float ceiling[2][kMTiles][2];
#pragma unroll
    for (int j = 0; j < 2; ++j) {
      const int member = 8 * n + 2 * t + j;
      const ScreenTemplate screen = s.desc[min(member, count - 1)].screen;
      const int offset = offsetOf<kZeroMean>(s, min(member, count - 1));
      const bool flatTemplate = screenFlatTemplate(screenRule, screen);
      const float flatGoodness = sign * screenRule.flatTemplateScore;
      float top = -INFINITY;
      if (flatTemplate || member >= count) {  // rare (a lane's own branch): constants, or no pairs
#pragma unroll
        for (int m = 0; m < kMTiles; ++m)
#pragma unroll
          for (int half = 0; half < 2; ++half) {
            const Place place = placeOf(m, half);
            const bool pair = member < count && s.folded[place.row * kGemmTileWidth + place.column].offset != -INFINITY;
            ceiling[j][m][half] = pair ? flatGoodness : -INFINITY;
            top = fmaxf(top, ceiling[j][m][half]);
          }
      } else {
#pragma unroll
        for (int m = 0; m < kMTiles; ++m)
#pragma unroll
          for (int half = 0; half < 2; ++half) {
            const Place place = placeOf(m, half);
            const ScreenFoldedWindow f = s.folded[place.row * kGemmTileWidth + place.column];  // few live registers
            const uint32_t c = crossSumOf<kZeroMean>(acc[m][n][2 * half + j], offset, int32_t(f.u));
            const ScreenedRange r = screenFoldedPair<kCentred>(screenRule, screen, f, lowest, c);
            ceiling[j][m][half] = r.ceiling;
            top = fmaxf(top, r.floor);
          }
      }
      if (top != -INFINITY) top = fmaxf(top, lowest);  // no exact goodness is below it
      for (int offset = 4; offset < 32; offset <<= 1) top = fmaxf(top, __shfl_xor_sync(0xffffffffu, top, offset));
      if (g == 0 && member < count && top != -INFINITY) atomicMax(s.floorBits + member, orderedBits(top));
    }
    __syncwarp();  // the row's own floors are in place
    // Bit 8j + 2m + half: the pair's ceiling reaches the floor seen now or the threshold (a pair
    // that is none, ceiling -inf, never does). Only those pairs are visited below.
    uint32_t reaching = 0;
    float floorNow[2];
    bool flatTemplate[2];
#pragma unroll
    for (int j = 0; j < 2; ++j) {
      const int member = 8 * n + 2 * t + j;
      floorNow[j] = member < count ? orderedFloat(*(volatile const int*)(s.floorBits + member)) : INFINITY;
      float reach = rule.collect ? fminf(floorNow[j], goodEnoughFloor) : floorNow[j];
      reach = fmaxf(reach, -FLT_MAX);
      flatTemplate[j] = screenFlatTemplate(screenRule, s.desc[min(member, count - 1)].screen);
#pragma unroll
      for (int m = 0; m < kMTiles; ++m)
#pragma unroll
        for (int half = 0; half < 2; ++half)
          if (ceiling[j][m][half] >= reach) reaching |= 1u << pairBit(j, m, half);
    }
    while (reaching != 0) {
      const int bit = __ffs(reaching) - 1;
      reaching &= reaching - 1;
      float ceil = 0.0f;
      const uint32_t cAcc = crossOfPair(acc, n, bit, ceiling, &ceil);
      const int j = bit >> 3, member = 8 * n + 2 * t + j;
      const Place place = placeOf((bit >> 1) & 3, bit & 1);
      const ScreenFoldedWindow& f = s.folded[place.row * kGemmTileWidth + place.column];
      const uint32_t c = crossSumOf<kZeroMean>(cAcc, offsetOf<kZeroMean>(s, member), int32_t(f.u));
      // Outside the map: no pair (its ceiling may be the method's lowest goodness, not -inf).
      if (f.offset == -INFINITY) continue;
      // Exact (flat template or flat window) and short of the threshold: at most the floor.
      const bool exact = (j == 0 ? flatTemplate[0] : flatTemplate[1]) || f.gw == 0.0f;
      if (exact && !(rule.collect && ceil >= goodEnoughFloor)) {
        if (ceil >= (j == 0 ? floorNow[0] : floorNow[1]))
          atomicMax(s.tieKeys + member, rankedKey(ceil, tile.index(place)));
        continue;
      }
      const int slot = atomicAdd(s.candidateCount, 1);
      if (slot < kCapacity) {
        s.where[slot] = uint32_t(member) << 16 | uint32_t(place.row) << 8 | uint32_t(place.column);
        s.cross[slot] = c;
        s.ceiling[slot] = ceil;
      }
    }
  }
}

// A zero-mean bank's ccoeff-normed tile (rules/zero_mean_screen.hpp), first step: each window's
// part of the screen, once per position, and the tile's largest window condition (kappa^2, as
// float bits: non-negative floats order as their bits) into *kappaSqBits, which the caller
// zeroed. Read after the next barrier.
__device__ __forceinline__ void foldZeroMeanWindows(const GemmShared& s, int w, int pixels, const TileGeometry& tile,
                                                    int* kappaSqBits) {
  int largest = 0;
  for (int i = threadIdx.x; i < kGemmTileRows * kGemmTileWidth; i += kGemmThreads) {
    const Place place{i / kGemmTileWidth, i % kGemmTileWidth};
    int64_t s1, s2;
    windowSumsAt(s, place, w, &s1, &s2);
    const ZeroMeanWindow z = zeroMeanWindow(pixels, int32_t(s1), int32_t(s2), tile.holds(place));
    s.zeroMeanFolded[i] = z;
    largest = max(largest, __float_as_int(z.kappaSq));
  }
  largest = __reduce_max_sync(0xffffffffu, largest);
  if ((threadIdx.x & 31) == 0) atomicMax(kappaSqBits, largest);
}

// The same tile's screen (its condition kappa known, zeroMeanTileKappa): per pair g = zeroMeanPair, one
// multiply-add, against one bound a template for the whole tile (zeroMeanBound); floors, ceilings
// and the threshold cross to goodness through the template's factor rounded outward. Otherwise as
// screenCandidates: the running floor under each template's tile best, the pushes of pairs that
// can reach it or the threshold with their exact cross sum c'' + r S1, and the pairs whose screened
// goodness is exact (a flat window: 0; a flat template: 1) kept as ties instead.
//
// Window by window: each of the lane's 8 windows is read once for its 2 kNTiles templates (a pair
// then costs the conversion, two multiply-adds and a max), and the lane's highest value per
// template decides whether the lane forms its pairs again for the pushes: only the lanes holding
// a row's best and its near ties do.
template <int kNTiles>
__device__ __forceinline__ void screenZeroMeanCandidates(const uint32_t (&acc)[kMTiles][kNTiles][4],
                                                         const GemmShared& s, int count, int w,
                                                         const TileGeometry& tile, const FusedBankRule& rule,
                                                         float goodEnoughFloor, float kappa) {
  constexpr int kCapacity = candidateCapacity(8 * kNTiles);
  const int lane = threadIdx.x & 31, g = lane >> 2, t = lane & 3;
  // The lane's templates: member 8n + 2t + j, its d (a flat template's or one past the chunk's end
  // is replaced below).
  float d[kNTiles][2];
#pragma unroll
  for (int n = 0; n < kNTiles; ++n)
#pragma unroll
    for (int j = 0; j < 2; ++j) d[n][j] = s.zeroMean[min(8 * n + 2 * t + j, count - 1)].d;
  // Per template the lane's highest g over Gt; anyPair 0 where one of the lane's windows is in the
  // map (-inf: none), a flat template's highest less 1.
  float top[kNTiles][2];
  float anyPair = -INFINITY;
#pragma unroll
  for (int n = 0; n < kNTiles; ++n) top[n][0] = top[n][1] = -INFINITY;
#pragma unroll
  for (int m = 0; m < kMTiles; ++m)
#pragma unroll
    for (int half = 0; half < 2; ++half) {
      const Place place = placeOf(m, half);
      const ZeroMeanWindow f = s.zeroMeanFolded[place.row * kGemmTileWidth + place.column];
      anyPair = fmaxf(anyPair, f.offset);
#pragma unroll
      for (int n = 0; n < kNTiles; ++n)
#pragma unroll
        for (int j = 0; j < 2; ++j)
          top[n][j] = fmaxf(top[n][j], zeroMeanPair(f, d[n][j], int32_t(acc[m][n][2 * half + j])));
    }
  // The row's floors: each template's highest over the row's lanes, less the bound, to goodness.
#pragma unroll
  for (int n = 0; n < kNTiles; ++n)
#pragma unroll
    for (int j = 0; j < 2; ++j) {
      const int member = 8 * n + 2 * t + j;
      const ZeroMeanTemplate z = s.zeroMean[min(member, count - 1)];
      const bool flatTemplate = z.gtLow == 0.0f;  // ccoeff-normed's flat template: 1 everywhere
      top[n][j] = member >= count ? -INFINITY : flatTemplate ? anyPair + 1.0f : top[n][j];
      float rowTop = top[n][j];
      for (int offset = 4; offset < 32; offset <<= 1) rowTop = fmaxf(rowTop, __shfl_xor_sync(0xffffffffu, rowTop, offset));
      if (g == 0 && member < count && rowTop != -INFINITY) {
        const float floor =
            flatTemplate ? 1.0f : zeroMeanFloorOf(zero_mean_detail::addDown(rowTop, -zeroMeanBound(kappa, z.boundK)), z);
        atomicMax(s.floorBits + member, orderedBits(floor));
      }
    }
  __syncwarp();  // the row's own floors are in place
#pragma unroll
  for (int n = 0; n < kNTiles; ++n) {
    // Bit 8j + 2m + half: the pair can reach the floor seen now or the threshold.
    uint32_t reaching = 0;
#pragma unroll
    for (int j = 0; j < 2; ++j) {
      const int member = 8 * n + 2 * t + j;
      const ZeroMeanTemplate z = s.zeroMean[min(member, count - 1)];
      const bool flatTemplate = z.gtLow == 0.0f;
      const float floorNow = member < count ? orderedFloat(*(volatile const int*)(s.floorBits + member)) : INFINITY;
      float reach = rule.collect ? fminf(floorNow, goodEnoughFloor) : floorNow;
      reach = fmaxf(reach, -FLT_MAX);
      // Over Gt, less the bound (a flat template's pairs are their goodness itself); never below
      // -FLT_MAX, so a pair that is none (-inf) never reaches.
      const float threshold =
          flatTemplate ? reach
                       : fmaxf(zero_mean_detail::addDown(zeroMeanScaledReach(reach, z), -zeroMeanBound(kappa, z.boundK)),
                               -FLT_MAX);
      if (top[n][j] < threshold) continue;  // none of the lane's pairs reaches (most lanes)
#pragma unroll
      for (int m = 0; m < kMTiles; ++m)
#pragma unroll
        for (int half = 0; half < 2; ++half) {
          const Place place = placeOf(m, half);
          const ZeroMeanWindow f = s.zeroMeanFolded[place.row * kGemmTileWidth + place.column];
          const float v = flatTemplate ? (f.offset == -INFINITY ? -INFINITY : 1.0f)
                                       : zeroMeanPair(f, z.d, int32_t(acc[m][n][2 * half + j]));
          if (v >= threshold) reaching |= 1u << pairBit(j, m, half);
        }
    }
    while (reaching != 0) {
      const int bit = __ffs(reaching) - 1;
      reaching &= reaching - 1;
      const uint32_t cPrime = crossOfPair(acc, n, bit);
      const int j = bit >> 3, member = 8 * n + 2 * t + j;
      const Place place = placeOf((bit >> 1) & 3, bit & 1);
      const ZeroMeanWindow f = s.zeroMeanFolded[place.row * kGemmTileWidth + place.column];
      if (f.offset == -INFINITY) continue;  // outside the map
      const ZeroMeanTemplate z = s.zeroMean[member];
      const bool flatTemplate = z.gtLow == 0.0f;
      const bool flatWindow = f.a == 0.0f;  // the rules' flat window: exactly 0
      if (flatTemplate || flatWindow) {
        // Exact: the rules' constant. Short of the threshold it is kept as a tie, not pushed.
        const float exact = flatTemplate ? 1.0f : 0.0f;
        if (!(rule.collect && exact >= goodEnoughFloor)) {
          if (exact >= orderedFloat(*(volatile const int*)(s.floorBits + member)))
            atomicMax(s.tieKeys + member, rankedKey(exact, tile.index(place)));
          continue;
        }
      }
      const float ceiling =
          flatTemplate ? 1.0f
                       : zeroMeanCeilingOf(zero_mean_detail::addUp(zeroMeanPair(f, z.d, int32_t(cPrime)),
                                                                   zeroMeanBound(kappa, z.boundK)),
                                           z);
      int64_t s1, s2;
      windowSumsAt(s, place, w, &s1, &s2);
      const int slot = atomicAdd(s.candidateCount, 1);
      if (slot < kCapacity) {
        s.where[slot] = uint32_t(member) << 16 | uint32_t(place.row) << 8 | uint32_t(place.column);
        s.cross[slot] = crossSumOf<true>(cPrime, z.offset, int32_t(s1));
        s.ceiling[slot] = ceiling;
      }
    }
  }
}

// The tile epilogue, second tier (after a barrier, every candidate on the list): the block
// scores exactly, one candidate a thread, those whose ceiling still reaches the template's final
// floor or the threshold (exactPair: map, above list and bits as the row epilogue writes them).
// Each template's tile best among them is found by shared atomics in two rounds: the highest
// goodness (atomicMax of goodnessKey), then the earliest index of that goodness (atomicMin); with
// its exact tie (screenCandidates: a goodness below the final floor is never the best) it goes to
// its blockBest[tile]. bestKeys/bestIndex were reset with the tile's floors.
__device__ __forceinline__ void scoreCandidates(const GemmShared& s, int candidates, int count, int w,
                                                const TileGeometry& tile, Method method, const FusedBankRule& rule,
                                                float goodEnoughFloor, int tileIndex) {
  Ranked* exact = s.best;
  for (int k = threadIdx.x; k < candidates; k += kGemmThreads) {
    const uint32_t where = s.where[k];
    const int member = int(where >> 16);
    const Place place{int(where >> 8) & 0xff, int(where & 0xff)};
    const float ceil = s.ceiling[k];
    Ranked r{0.0, -1};
    if (ceil >= orderedFloat(s.floorBits[member]) || (rule.collect && ceil >= goodEnoughFloor)) {
      int64_t s1, s2;
      windowSumsAt(s, place, w, &s1, &s2);
      r = exactPair(s.desc[member], method, rule, s1, s2, s.cross[k], tile.index(place));
      atomicMax(s.bestKeys + member, goodnessKey(r.goodness));
    }
    exact[k] = r;
  }
  __syncthreads();
  for (int k = threadIdx.x; k < candidates; k += kGemmThreads) {
    const Ranked r = exact[k];  // this thread's own write
    const int member = int(s.where[k] >> 16);
    if (r.index >= 0 && goodnessKey(r.goodness) == s.bestKeys[member]) atomicMin(s.bestIndex + member, r.index);
  }
  __syncthreads();
  for (int member = threadIdx.x; member < count; member += kGemmThreads) {
    Ranked best{0.0, -1};
    if (s.bestIndex[member] != INT_MAX) best = Ranked{goodnessFromKey(s.bestKeys[member]), s.bestIndex[member]};
    const unsigned long long key = s.tieKeys[member];
    if (key != 0) {
      const Ranked tie{double(rankedKeyGoodness(key)), rankedKeyIndex(key)};
      if (tie.goodness >= double(orderedFloat(s.floorBits[member])) && better(tie, best)) best = tie;
    }
    s.desc[member].blockBest[tileIndex] = best;
  }
}

}  // namespace nccmatch::cuda::gemm_tiles
