// The spatial numerator: sum(I*T) for every valid position by the direct sum, exact in integers.
// Packed 8-bit arithmetic (__dp4a), image tile in shared memory, template chunk in shared memory,
// eight outputs per thread. uint32 accumulation while w*h*255^2 < 2^31, 64-bit above.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>
#include <vector>

#include "nccmatch/status.hpp"

namespace nccmatch::cuda {

// How one template is cut into chunks of at most 64 bytes x 16 rows. The template is stored
// zero-padded to paddedWidth x paddedHeight (whole chunks) so the kernel needs no edge tests.
struct SpatialLayout {
  int width = 0, height = 0;
  int chunkWidth = 0;   // bytes per chunk row, a multiple of 4, <= 64
  int chunkHeight = 0;  // rows per chunk, <= 16
  int paddedWidth = 0, paddedHeight = 0;
  bool wide = false;    // the sum can reach 2^31: accumulate in 64 bits
};

SpatialLayout spatialLayout(int width, int height);
// The template's pixels in the padded layout (row pitch paddedWidth), ready to upload.
std::vector<uint8_t> spatialPack(const uint8_t* pixels, const SpatialLayout& layout);

// Output tile of one thread block: kSpatialTileWidth x kSpatialTileHeight positions.
constexpr int kSpatialTileWidth = 128;
constexpr int kSpatialTileHeight = 16;

// image: device, row pitch in bytes. packedTemplate: device copy of spatialPack's bytes.
// out: device, (width-w+1) x (height-h+1) entries, dense. Enqueues on stream, never syncs.
Status spatialNumerator(const uint8_t* image, std::size_t pitch, int width, int height,
                        const uint8_t* packedTemplate, const SpatialLayout& layout, int64_t* out,
                        cudaStream_t stream);

}  // namespace nccmatch::cuda
