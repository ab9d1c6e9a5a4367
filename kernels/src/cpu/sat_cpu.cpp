#include "nccmatch/sat.hpp"

#include <string>

namespace nccmatch {

Status buildSatCpu(const uint8_t* image, std::size_t stride, int width, int height, int64_t* S,
                   int64_t* Q) {
  if (image == nullptr || S == nullptr || Q == nullptr)
    return Status::error("buildSatCpu: null image or table pointer");
  if (width < 1 || height < 1)
    return Status::error("buildSatCpu: image size " + std::to_string(width) + "x" +
                         std::to_string(height) + " must be at least 1x1");
  if (stride < std::size_t(width))
    return Status::error("buildSatCpu: stride " + std::to_string(stride) + " is less than width " +
                         std::to_string(width));
  const std::size_t w = std::size_t(width);
  for (int y = 0; y < height; ++y) {
    const uint8_t* row = image + std::size_t(y) * stride;
    int64_t* s = S + y * w;
    int64_t* q = Q + y * w;
    const int64_t* sAbove = y > 0 ? S + (y - 1) * w : nullptr;
    const int64_t* qAbove = y > 0 ? Q + (y - 1) * w : nullptr;
    int64_t rowSum = 0, rowSumSq = 0;
    for (std::size_t x = 0; x < w; ++x) {
      int64_t v = row[x];
      rowSum += v;
      rowSumSq += v * v;
      s[x] = rowSum + (sAbove ? sAbove[x] : 0);
      q[x] = rowSumSq + (qAbove ? qAbove[x] : 0);
    }
  }
  return Status();
}

}  // namespace nccmatch
