// Table stores of the fused SAT kernels: one, two or four adjacent entries of a row, optionally
// streaming (st.global.cs, evict-first: the tables are not read again by the build), and each
// kernel's last phase, S(x, y) = VC(x) + HC(y) + L(x, y) for the warp's rows.
#pragma once

#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>

#include "cuda/sat/sat_lookback.cuh"
#include "cuda/sat/sat_tile_scans.cuh"

namespace nccmatch::cuda {

template <bool kStreaming>
__device__ __forceinline__ void storeOne(int64_t* p, int64_t v) {
  if constexpr (kStreaming) __stcs(reinterpret_cast<long long*>(p), static_cast<long long>(v));
  else *p = v;
}
template <bool kStreaming>
__device__ __forceinline__ void storeOne(uint32_t* p, uint32_t v) {
  if constexpr (kStreaming) __stcs(reinterpret_cast<unsigned int*>(p), v);
  else *p = v;
}
template <bool kStreaming>
__device__ __forceinline__ void storeTwo(int64_t* p, int64_t a, int64_t b) {
  const longlong2 v = make_longlong2(a, b);
  if constexpr (kStreaming) __stcs(reinterpret_cast<longlong2*>(p), v);
  else *reinterpret_cast<longlong2*>(p) = v;
}
template <bool kStreaming>
__device__ __forceinline__ void storeTwo(uint32_t* p, uint32_t a, uint32_t b) {
  const uint2 v = make_uint2(a, b);
  if constexpr (kStreaming) __stcs(reinterpret_cast<uint2*>(p), v);
  else *reinterpret_cast<uint2*>(p) = v;
}

template <bool kStreaming>
__device__ __forceinline__ void storeFour(int64_t* p, int64_t a, int64_t b, int64_t c, int64_t d) {
  storeTwo<kStreaming>(p, a, b);
  storeTwo<kStreaming>(p + 2, c, d);
}
template <bool kStreaming>
__device__ __forceinline__ void storeFour(uint32_t* p, uint32_t a, uint32_t b, uint32_t c, uint32_t d) {
  const uint4 v = make_uint4(a, b, c, d);
  if constexpr (kStreaming) __stcs(reinterpret_cast<uint4*>(p), v);
  else *reinterpret_cast<uint4*>(p) = v;
}

// Entries x and x+1 of a row, each only where it lies inside the image.
template <bool kStreaming, typename Out>
__device__ __forceinline__ void storeRowPair(Out* row, int x, int width, bool vector, Out a, Out b) {
  if (vector && x + 1 < width) {
    storeTwo<kStreaming>(row + x, a, b);
  } else {
    if (x < width) storeOne<kStreaming>(row + x, a);
    if (x + 1 < width) storeOne<kStreaming>(row + x + 1, b);
  }
}

// Entries x .. x+3 of a row (x a multiple of 4): one 16-byte-aligned group when `quad` (the row's
// entry x is aligned to the group's access size), else pairs or single entries.
template <bool kStreaming, typename Out>
__device__ __forceinline__ void storeRowQuad(Out* row, int x, int width, bool vector, bool quad, Out a, Out b, Out c,
                                             Out d) {
  if (quad && x + 3 < width) {
    storeFour<kStreaming>(row + x, a, b, c, d);
  } else {
    storeRowPair<kStreaming>(row, x, width, vector, a, b);
    storeRowPair<kStreaming>(row, x + 2, width, vector, c, d);
  }
}

namespace narrow {

// The warp's rows of both tables at the lane's columns x and x+1: VC(x) from sColCarry, HC(y)
// from sRowCarry (the warp's rows start at rowCarry), L(x, y) the column offset of the warps
// above plus the warp's own prefix.
template <bool kStreaming, int kRows, typename Out, typename Params>
__device__ __forceinline__ void storeTables(const Params& p, int lane, int x, int yWarp, const WarpPrefix<kRows>& L,
                                            const ColumnOffsets& off, const MomentPair<Out>* rowCarry,
                                            const MomentPair<Out>* sColCarry) {
  const MomentPair<Out> vc0 = sColCarry[2 * lane], vc1 = sColCarry[2 * lane + 1];
#pragma unroll
  for (int i = 0; i < kRows; ++i) {
    const int y = yWarp + i;
    if (y < p.height) {
      const MomentPair<Out> hc = rowCarry[i];
      const std::size_t rowStart = std::size_t(y) * std::size_t(p.width);
      const bool vector = p.vectorStores && (rowStart & 1) == 0;
      storeRowPair<kStreaming>(p.S + rowStart, x, p.width, vector, Out(vc0.s + hc.s + Out(off.s0 + L.s0[i])),
                               Out(vc1.s + hc.s + Out(off.s1 + L.s1[i])));
      storeRowPair<kStreaming>(p.Q + rowStart, x, p.width, vector, Out(vc0.q + hc.q + Out(off.q0 + L.q0[i])),
                               Out(vc1.q + hc.q + Out(off.q1 + L.q1[i])));
    }
  }
}

}  // namespace narrow

namespace wide {

// The warp's rows of both tables at the lane's kPx columns of each chunk: VC(x) plus the column
// totals of the warps above (folded once per column; the uint32 offset and L stay exact, tile
// sums < 2^32), plus HC(y) from sRowCarry (the warp's rows start at rowCarry), plus the warp's
// own prefix.
template <bool kStreaming, int kPx, int kChunks, int kWarps, int kRows, int kTileWidth, typename Out, typename Params>
__device__ __forceinline__ void storeTables(const Params& p, int warp, int lane, int xTile, int yWarp,
                                            const WarpPrefix<kRows, kChunks, kPx>& L,
                                            const uint2 (&sColTotal)[kWarps][kTileWidth],
                                            const MomentPair<Out>* rowCarry, const MomentPair<Out>* sColCarry) {
  constexpr int kChunkWidth = 32 * kPx;
#pragma unroll
  for (int c = 0; c < kChunks; ++c) {
    const int xt = c * kChunkWidth + kPx * lane;
    const int x = xTile + xt;
    Out baseS[kPx], baseQ[kPx];
#pragma unroll
    for (int j = 0; j < kPx; ++j) {
      uint32_t oS = 0, oQ = 0;
#pragma unroll
      for (int w = 0; w < kWarps; ++w) {
        if (w < warp) {
          const uint2 t = sColTotal[w][xt + j];
          oS += t.x;
          oQ += t.y;
        }
      }
      const MomentPair<Out> vc = sColCarry[xt + j];
      baseS[j] = vc.s + Out(oS);
      baseQ[j] = vc.q + Out(oQ);
    }
#pragma unroll
    for (int i = 0; i < kRows; ++i) {
      const int y = yWarp + i;
      if (y < p.height) {
        const MomentPair<Out> hc = rowCarry[i];
        const std::size_t rowStart = std::size_t(y) * std::size_t(p.width);
        const bool vector = p.vectorStores && (rowStart & 1) == 0;
        const bool quad = sizeof(Out) == 8 ? vector : (p.quadStores && (rowStart & 3) == 0);
        Out s[kPx], q[kPx];
#pragma unroll
        for (int j = 0; j < kPx; ++j) {
          s[j] = Out(baseS[j] + hc.s + Out(L.s[i][c][j]));
          q[j] = Out(baseQ[j] + hc.q + Out(L.q[i][c][j]));
        }
        if constexpr (kPx == 4) {
          storeRowQuad<kStreaming>(p.S + rowStart, x, p.width, vector, quad, s[0], s[1], s[2], s[3]);
          storeRowQuad<kStreaming>(p.Q + rowStart, x, p.width, vector, quad, q[0], q[1], q[2], q[3]);
        } else {
          storeRowPair<kStreaming>(p.S + rowStart, x, p.width, vector, s[0], s[1]);
          storeRowPair<kStreaming>(p.Q + rowStart, x, p.width, vector, q[0], q[1]);
        }
      }
    }
  }
}

}  // namespace wide

}  // namespace nccmatch::cuda
