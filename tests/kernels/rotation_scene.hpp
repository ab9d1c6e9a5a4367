// Scenes with objects at known angles and scales for the rotation tests: a smooth, asymmetric
// object rendered by area sampling (not the matcher's bilinear rotation) on a noisy textured
// background, its template, and the angle error modulo 360.
#pragma once

#include <vector>

#include "nccmatch/types.hpp"
#include "test_support.hpp"

namespace nccmatch::test {

// The object's value at (x, y) pixels from its centre, for |x|, |y| <= 16.
double objectValue(double x, double y);
constexpr int kObjectSide = 32;

// The object's template (kObjectSide a side): its value at each pixel centre; `mirrored`: the
// object's mirror image (left and right swapped), another object at every angle.
TemplateImage objectTemplate(bool mirrored = false);

struct Placed {
  double cx, cy, angle, scale;  // centre in pixel-centre coordinates, degrees, factor
  bool mirrored = false;        // the mirror image of the object
};

// Draws the object at each placement by area sampling (4x4 samples a pixel) of objectValue mapped
// back through the rotation and scale; a pixel whose samples fall partly outside the object mixes
// with the background.
void drawObjects(Image* img, const std::vector<Placed>& objects);

// A width x height textured background with uniform noise, the objects drawn on it, and a little
// noise over everything (the objects too); noise from rng().
Image rotatedScene(int width, int height, const std::vector<Placed>& objects);

// |a - b| modulo 360, in [0, 180].
double angleError(double a, double b);

}  // namespace nccmatch::test
