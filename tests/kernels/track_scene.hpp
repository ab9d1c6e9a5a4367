// Synthetic tracking scenes: objects (copies of textured templates) moving over a textured
// background with fresh noise in every frame: straight, curved and accelerating paths, crossings,
// objects hidden for a while, leaving and entering the frame. Each frame's ground truth says where
// every object is and whether it can be seen whole.
#pragma once

#include <cstdint>
#include <functional>
#include <vector>

#include "nccmatch/types.hpp"
#include "test_support.hpp"

namespace nccmatch::test {

struct SceneObject {
  uint32_t templateIndex = 0;
  // Top-left corner at frame t (may be outside the frame: the object is drawn clipped).
  std::function<void(int t, double* x, double* y)> path;
  int hiddenFrom = -1, hiddenUntil = -1;  // not drawn in frames [from, until)
};

struct TruthBox {
  int x = 0, y = 0;
  bool drawn = false;      // some of it is in the frame and it is not hidden
  bool whole = false;      // drawn, wholly inside the frame
  bool occluded = false;   // a later-drawn object overlaps it
};

struct Scene {
  int width = 0, height = 0;
  std::vector<TemplateImage> templates;
  std::vector<SceneObject> objects;  // drawn in this order
  uint64_t seed = 0;
  int noise = 8;  // each pixel moves by up to +-noise in every frame

  // Frame t (objects at rounded positions) and where each object is.
  Image frame(int t, std::vector<TruthBox>* truth) const;
};

// The scene of the tracking tests, 320x240, two 20x20 templates, eight objects:
//  0 A  template 0, straight                1 B  template 0, on a circle
//  2 C  template 1, accelerating            3 D  template 1, crossing A (drawn over it)
//  4 E  template 0, hidden for lostFrames - 3 frames
//  5 F  template 1, hidden for lostFrames + 5 frames
//  6 G  template 0, leaving on the right    7 H  template 1, entering from the left
Scene trackingScene(int lostFrames, uint64_t seed);

}  // namespace nccmatch::test
