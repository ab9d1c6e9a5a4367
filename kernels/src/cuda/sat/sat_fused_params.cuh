// Kernel parameters of the fused SAT builds: the 64-column kernel (FusedParams, sat_fused.cu) and
// the wide-tile kernel (WideFusedParams, sat_fused_wide.cuh). Both hold the image, the two tables,
// the ticket counter and the carry words the tiles exchange; all pointers are device memory.
#pragma once

#include <cstddef>
#include <cstdint>

#include "cuda/sat/sat_lookback.cuh"

namespace nccmatch::cuda {

template <typename Out>
struct FusedParams {
  const uint8_t* image;
  std::size_t pitch;
  int width, height, tilesX, tilesY;
  Out* S;
  Out* Q;
  uint32_t* ticket;
  uint32_t* flagH;             // per tile: row aggregates / prefixes published
  uint32_t* flagV;             // per tile: column aggregates / prefixes published
  uint64_t* aggH;              // per tile, per row: packed row sums of the tile
  uint64_t* preH;              // per tile, per row: packed row sums from column 0 to the tile's end
  MomentPair<Out>* aggV;       // per tile, per column: sums over the tile's rows of the row prefixes
  MomentPair<Out>* preV;       // per tile, per column: S and Q on the tile's last row
  uint64_t* aggVw;             // the same two as stamped words: per tile, per column, {s, q}
  uint64_t* preVw;
  uint32_t epoch;
  uint32_t stamp;
  bool alignedLoads;           // image and pitch even: two pixels per 16-bit load
  bool vectorStores;           // tables aligned to a pair of entries
};

template <typename Out>
struct WideFusedParams {
  const uint8_t* image;
  std::size_t pitch;
  int width, height, tilesX, tilesY;
  Out* S;
  Out* Q;
  uint32_t* ticket;
  uint64_t* aggH;  // per tile, per row: packed row sums of the tile (sum << 30 | sumSq), stamped
  uint64_t* aggV;  // per tile, per column, {s, q}: HC(last) + L(x, last), stamped
  uint64_t* preV;  // per tile, per column, {s, q}: S and Q on the tile's last row, stamped
  uint32_t stamp;
  bool alignedLoads;  // image and pitch aligned to kPx bytes: a lane's pixels in one load
  bool vectorStores;  // tables aligned to a pair of entries
  bool quadStores;    // tables 16-byte aligned (uint32: four entries per store)
};

}  // namespace nccmatch::cuda
