#include "cpu/cpu_window_sums.hpp"
#include "cpu/simd_clones.hpp"

#include <algorithm>

namespace nccmatch {

namespace {

// Column sums gain the row entering the window and lose the row leaving it (or only gain).
NCCMATCH_SIMD_CLONES
void updateColumns(int64_t* __restrict sum, int64_t* __restrict sumSq, const uint8_t* __restrict in,
                   const uint8_t* __restrict out, int n) {
  if (out == nullptr) {
    for (int c = 0; c < n; ++c) {
      const int32_t v = in[c];
      sum[c] += v;
      sumSq[c] += v * v;
    }
    return;
  }
  for (int c = 0; c < n; ++c) {
    const int32_t v = in[c], u = out[c];
    sum[c] += v - u;
    sumSq[c] += v * v - u * u;
  }
}

}  // namespace

void WindowSumRows::start(const uint8_t* frame, std::size_t stride, int tw, int th, int x0, int count,
                          int firstRow) {
  frame_ = frame;
  stride_ = stride;
  tw_ = tw, th_ = th, x0_ = x0, count_ = count, y_ = firstRow;
  const int columns = count + tw - 1;
  columnSum_.assign(columns, 0);
  columnSumSq_.assign(columns, 0);
  for (int r = firstRow; r < firstRow + th; ++r)
    updateColumns(columnSum_.data(), columnSumSq_.data(), frame + std::size_t(r) * stride + x0, nullptr,
                  columns);
}

void WindowSumRows::sums(int64_t* s1, int64_t* s2) const {
  const int64_t* cs = columnSum_.data();
  const int64_t* cq = columnSumSq_.data();
  int64_t a = 0, b = 0;
  for (int c = 0; c < tw_; ++c) a += cs[c], b += cq[c];
  s1[0] = a, s2[0] = b;
  for (int i = 1; i < count_; ++i) {
    a += cs[i + tw_ - 1] - cs[i - 1];
    b += cq[i + tw_ - 1] - cq[i - 1];
    s1[i] = a, s2[i] = b;
  }
}

void WindowSumRows::advance() {
  const uint8_t* leaving = frame_ + std::size_t(y_) * stride_ + x0_;
  const uint8_t* entering = frame_ + std::size_t(y_ + th_) * stride_ + x0_;
  updateColumns(columnSum_.data(), columnSumSq_.data(), entering, leaving, count_ + tw_ - 1);
  ++y_;
}

void windowSumsAt(const uint8_t* frame, std::size_t stride, int x, int y, int tw, int th, int64_t* s1,
                  int64_t* s2) {
  int64_t a = 0, b = 0;
  for (int r = y; r < y + th; ++r) {
    const uint8_t* p = frame + std::size_t(r) * stride + x;
    for (int c = 0; c < tw; ++c) a += p[c], b += int32_t(p[c]) * p[c];
  }
  *s1 = a, *s2 = b;
}

}  // namespace nccmatch
