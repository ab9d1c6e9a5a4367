// Summed-area tables on the GPU: four builds (naive, CUB scans, DLB, fused tiles) plus fused32.
// Tables are unbordered and inclusive, as buildSatCpu (nccmatch/sat.hpp) defines them.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "nccmatch/status.hpp"

namespace nccmatch::cuda {

enum class SatBuild {
  Naive,    // thread per row, then thread per column
  Cub,      // cub::DeviceScan on rows, transpose, scan, transpose back
  Dlb,      // CUB row scan into uint32, then a decoupled-look-back column scan in place
  Fused,    // one pass over 2D tiles, horizontal and vertical look-back, both moments (default)
  Fused32,  // Fused with uint32 tables in wrap-around arithmetic: box sums exact below 2^32
};

const char* satBuildName(SatBuild build);           // "naive", "cub", "dlb", "fused", "fused32"
bool parseSatBuild(const std::string& text, SatBuild* build);
// Bytes per table entry: 8, or 4 for Fused32.
std::size_t satEntryBytes(SatBuild build);

// Builds both tables (sum of I, sum of I^2) of 8-bit device images up to a maximum size.
// Scratch is allocated once in create(); build() allocates nothing and only enqueues work on the
// given stream. One builder may be used from one stream at a time.
class SatBuilder {
 public:
  static Status create(SatBuild build, int maxWidth, int maxHeight, std::unique_ptr<SatBuilder>* out);
  virtual ~SatBuilder() = default;
  virtual SatBuild kind() const = 0;

  // image: device pointer, row pitch in bytes >= width. sum, sumSq: device tables of width*height
  // entries (dense, row pitch = width) of int64_t, or uint32_t for Fused32.
  virtual Status build(const uint8_t* image, std::size_t pitch, int width, int height, void* sum,
                       void* sumSq, cudaStream_t stream) = 0;
};

}  // namespace nccmatch::cuda
