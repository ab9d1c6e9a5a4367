#include "cpu/cpu_direct_scores.hpp"

#include <vector>

#include "cpu/cpu_score_rows.hpp"
#include "cpu/cpu_window_sums.hpp"

namespace nccmatch {

void scoreRowsDirect(const FrameView& frame, Method method, const TemplateImage& t, const TemplateStats& stats,
                     const DirectTemplate& packed, int yBegin, int yEnd, double* out,
                     const RowWindowSums& rowSums) {
  const int mapW = frame.width - t.width + 1;
  const bool vnni = directVnniUsable(packed);
  thread_local std::vector<int64_t> cross, s1, s2;
  thread_local std::vector<int32_t> scratch;
  thread_local WindowSumRows windows;
  if (int(cross.size()) < mapW) cross.resize(mapW), s1.resize(mapW), s2.resize(mapW), scratch.resize(mapW);
  if (!rowSums) windows.start(frame.data, frame.stride, t.width, t.height, 0, mapW, yBegin);
  for (int y = yBegin; y < yEnd; ++y) {
    const int64_t *rowS1 = s1.data(), *rowS2 = s2.data();
    if (rowSums) {
      rowSums(y, s1.data(), s2.data(), &rowS1, &rowS2);
    } else {
      if (y > yBegin) windows.advance();
      windows.sums(s1.data(), s2.data());
    }
    // The VNNI kernel adds 128 * s1: its taps are (T - 128) M, so s1 is the masked sum.
    if (vnni)
      directCrossRowVnni(frame.data, frame.stride, frame.width, mapW, y, t, packed, rowS1, scratch.data(),
                         cross.data());
    else
      directCrossRow(frame.data, frame.stride, mapW, y, t, scratch.data(), cross.data());
    scoreRowExact(method, stats, rowS1, rowS2, cross.data(), mapW, out + std::size_t(y) * mapW);
  }
}

}  // namespace nccmatch
