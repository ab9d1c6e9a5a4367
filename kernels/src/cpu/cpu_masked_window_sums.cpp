#include "cpu/cpu_masked_window_sums.hpp"

#include "nccmatch/sat.hpp"
#include "rules/masked_score_rules.hpp"

namespace nccmatch {

std::vector<MaskRectangle> maskRectangles(const TemplateImage& t) {
  std::vector<MaskRectangle> done;
  std::vector<MaskRectangle> open;  // rectangles that may still grow down into the next row
  for (int y = 0; y < t.height; ++y) {
    // This row's runs of compared pixels.
    std::vector<MaskRectangle> runs;
    for (int x = 0; x < t.width;) {
      if (!comparedPixel(t, std::size_t(y) * t.width + x)) {
        ++x;
        continue;
      }
      const int begin = x;
      while (x < t.width && comparedPixel(t, std::size_t(y) * t.width + x)) ++x;
      runs.push_back({begin, y, x, y + 1});
    }
    // A run equal to an open rectangle's columns extends it; the others close or open.
    std::vector<MaskRectangle> next;
    for (const MaskRectangle& run : runs) {
      bool extended = false;
      for (MaskRectangle& r : open) {
        if (r.x0 == run.x0 && r.x1 == run.x1 && r.y1 == y) {
          r.y1 = y + 1;
          next.push_back(r);
          r.y1 = -1;  // taken
          extended = true;
          break;
        }
      }
      if (!extended) next.push_back(run);
    }
    for (const MaskRectangle& r : open)
      if (r.y1 != -1) done.push_back(r);
    open = std::move(next);
  }
  done.insert(done.end(), open.begin(), open.end());
  return done;
}

void maskedWindowSumsRow(const int64_t* sat, const int64_t* satSq, int frameWidth,
                         const std::vector<MaskRectangle>& rectangles, int y, int x0, int count, int64_t* s1,
                         int64_t* s2) {
  for (int i = 0; i < count; ++i) s1[i] = 0, s2[i] = 0;
  for (const MaskRectangle& r : rectangles) {
    for (int i = 0; i < count; ++i) {
      const int x = x0 + i;
      s1[i] += satBox(sat, frameWidth, x + r.x0, y + r.y0, x + r.x1, y + r.y1);
      s2[i] += satBox(satSq, frameWidth, x + r.x0, y + r.y0, x + r.x1, y + r.y1);
    }
  }
}

void maskedWindowSumsAt(const uint8_t* frame, std::size_t stride, int x, int y, const TemplateImage& t,
                        int64_t* s1, int64_t* s2) {
  int64_t a = 0, b = 0;
  for (int ty = 0; ty < t.height; ++ty) {
    const uint8_t* p = frame + std::size_t(y + ty) * stride + x;
    for (int tx = 0; tx < t.width; ++tx) {
      if (!comparedPixel(t, std::size_t(ty) * t.width + tx)) continue;
      a += p[tx];
      b += int32_t(p[tx]) * p[tx];
    }
  }
  *s1 = a, *s2 = b;
}

}  // namespace nccmatch
