// Window sums of the CPU backend straight from the pixels: sum of I and of I^2 over every
// tw x th window of a block of map rows, with column sums over th rows kept up to date as the
// window moves down a row (two row reads per row) and a running sum along the row. Exact integers,
// the same values as boxes of the int64 SATs, without writing or reading 16 bytes per pixel of
// tables: the per-frame cost is a few passes over rows that stay in cache.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace nccmatch {

class WindowSumRows {
 public:
  // Windows (x0 + i, y) for i < count, starting at map row y = firstRow.
  void start(const uint8_t* frame, std::size_t stride, int tw, int th, int x0, int count, int firstRow);
  // s1[i], s2[i] for the windows of the current row.
  void sums(int64_t* s1, int64_t* s2) const;
  // Moves down one map row (frame row y + th must exist).
  void advance();

 private:
  const uint8_t* frame_ = nullptr;
  std::size_t stride_ = 0;
  int tw_ = 0, th_ = 0, x0_ = 0, count_ = 0, y_ = 0;
  std::vector<int64_t> columnSum_, columnSumSq_;  // over rows [y, y + th) of columns x0 + c
};

// The sums over the one window (x, y) of a tw x th template.
void windowSumsAt(const uint8_t* frame, std::size_t stride, int x, int y, int tw, int th, int64_t* s1,
                  int64_t* s2);

}  // namespace nccmatch
