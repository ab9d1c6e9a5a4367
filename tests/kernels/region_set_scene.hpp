// A scene for prepared region template sets (Engine::prepareRegionTemplates): templates of 1x1,
// 17x13, 64x64 and 91x91 (past the fused kernel's 64), each unmasked and masked, in two sets
// (one template in both), and regions naming them: one at the template's pasted copy, one more
// naming the same template elsewhere, one exactly the template's size, one smaller (no position),
// at odd places and sizes. The same regions as own images (RegionQuery::image) and as set entries,
// so that a test compares the two, template index for template index.
#pragma once

#include <algorithm>
#include <random>
#include <string>
#include <vector>

#include "nccmatch/engine.hpp"
#include "test_support.hpp"

namespace nccmatch::test {

struct RegionSetScene {
  Image image;
  std::vector<TemplateImage> sets[2];
  // Each region: which set, which entry, and the rectangle.
  struct Place {
    int set;
    uint32_t index;
    int x, y, width, height;
  };
  std::vector<Place> places;

  // The regions with own images (the templates of `sets`), templateIndex = 100 * set + index.
  std::vector<RegionQuery> ownQueries() const {
    std::vector<RegionQuery> out;
    for (const Place& p : places)
      out.emplace_back(p.x, p.y, p.width, p.height, uint32_t(100 * p.set + int(p.index)),
                       &sets[p.set][p.index]);
    return out;
  }
  // The same regions naming the prepared sets (handles[0], handles[1]).
  std::vector<RegionQuery> setQueries(const RegionTemplateSet handles[2]) const {
    std::vector<RegionQuery> out;
    for (const Place& p : places)
      out.emplace_back(p.x, p.y, p.width, p.height, handles[p.set], p.index, uint32_t(100 * p.set + int(p.index)));
    return out;
  }
};

// Templates cut from a smooth 320x260 image (so every region has a clear peak), pasted back
// with random offsets; masks: none, one pixel, random, disc, ring, all-zero, all-kept.
inline RegionSetScene makeRegionSetScene() {
  RegionSetScene s;
  s.image = makeImage(320, 260, Fill::Smooth, 3);
  std::mt19937_64& g = rng();
  struct Shape {
    int w, h;
    MaskShape mask;  // Full: no mask
  };
  const std::vector<Shape> shapes[2] = {
      {{1, 1, MaskShape::Full}, {17, 13, MaskShape::Full}, {64, 64, MaskShape::Full}, {91, 91, MaskShape::Ring},
       {17, 13, MaskShape::Random}},
      {{1, 1, MaskShape::OnePixel}, {17, 13, MaskShape::Disc}, {64, 64, MaskShape::Disc}, {91, 91, MaskShape::Full},
       {64, 64, MaskShape::FullNonBinary}, {13, 17, MaskShape::Empty}}};
  for (int set = 0; set < 2; ++set) {
    for (const Shape& shape : shapes[set]) {
      const int x = int(g() % std::size_t(320 - shape.w)), y = int(g() % std::size_t(260 - shape.h));
      TemplateImage t = cutTemplate(s.image, x, y, shape.w, shape.h,
                                    "set" + std::to_string(set) + "_" + std::to_string(s.sets[set].size()));
      if (shape.mask != MaskShape::Full) t.mask = makeMask(shape.w, shape.h, shape.mask);
      s.sets[set].push_back(std::move(t));
    }
  }
  s.sets[1].push_back(s.sets[0][1]);  // one template in both sets
  for (int set = 0; set < 2; ++set) {
    for (uint32_t i = 0; i < s.sets[set].size(); ++i) {
      const TemplateImage& t = s.sets[set][i];
      // Around a pasted copy: the template plus 0..12 pixels a side.
      const int w = std::min(320, t.width + int(g() % 13)), h = std::min(260, t.height + int(g() % 13));
      const int x = int(g() % std::size_t(320 - w + 1)), y = int(g() % std::size_t(260 - h + 1));
      paste(&s.image, t, x + int(g() % std::size_t(w - t.width + 1)), y + int(g() % std::size_t(h - t.height + 1)));
      s.places.push_back({set, i, x, y, w, h});
      // The same template elsewhere, odd sizes; exactly its size; smaller than it (when it can be).
      const int w2 = std::min(320, t.width + 1 + 2 * int(g() % 9)), h2 = std::min(260, t.height + 2 * int(g() % 9));
      s.places.push_back({set, i, int(g() % std::size_t(320 - w2 + 1)), int(g() % std::size_t(260 - h2 + 1)), w2, h2});
      s.places.push_back({set, i, 320 - t.width, 260 - t.height, t.width, t.height});
      if (t.width > 1) s.places.push_back({set, i, 5, 7, t.width - 1, t.height});
    }
  }
  return s;
}

// Every local peak and the best of each region: threshold off, no suppression, no cap; and the
// usual settings (a threshold, NMS, a few matches).
inline MatchParams everyRegionPeak(Method method) {
  MatchParams p;
  p.method = method;
  p.maxMatches = 1 << 20;
  p.threshold = lowerIsBetter(method) ? 1e12 : -1e12;
  p.nmsIou = 1.0;
  return p;
}
inline MatchParams usualRegionParams(Method method) {
  MatchParams p;
  p.method = method;
  p.maxMatches = 3;
  // Normalised methods: a middling threshold; the others: one that every region's best passes.
  const bool normalised = method == Method::SqDiffNormed || method == Method::CCorrNormed ||
                          method == Method::CCoeffNormed;
  p.threshold = normalised ? (lowerIsBetter(method) ? 0.3 : 0.5) : (lowerIsBetter(method) ? 1e12 : -1e12);
  p.nmsIou = 0.3;
  return p;
}

}  // namespace nccmatch::test
