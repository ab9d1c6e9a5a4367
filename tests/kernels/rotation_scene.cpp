// Rotated-object scenes for the rotation and coarse-to-fine tests.
#include "rotation_scene.hpp"

#include <algorithm>
#include <cmath>
#include <random>

namespace nccmatch::test {

double objectValue(double x, double y) {
  return 128 + 55 * std::sin(0.33 * x + 0.21 * y) * std::cos(0.25 * y - 0.12 * x) +
         45 * std::exp(-((x - 6) * (x - 6) + (y + 5) * (y + 5)) / 18.0) -
         50 * std::exp(-((x + 7) * (x + 7) + (y - 6) * (y - 6)) / 14.0);
}

TemplateImage objectTemplate(bool mirrored) {
  TemplateImage t;
  t.name = mirrored ? "mirrored" : "object";
  t.width = t.height = kObjectSide;
  for (int y = 0; y < kObjectSide; ++y)
    for (int x = 0; x < kObjectSide; ++x)
      t.pixels.push_back(uint8_t(std::lround(objectValue((mirrored ? -1 : 1) * (x - 15.5), y - 15.5))));
  return t;
}

void drawObjects(Image* img, const std::vector<Placed>& objects) {
  for (const Placed& o : objects) {
    const double r = o.angle * M_PI / 180.0, c = std::cos(r), s = std::sin(r);
    const int reach = int(kObjectSide * o.scale) + 2;
    for (int v = int(o.cy) - reach; v <= int(o.cy) + reach; ++v) {
      for (int u = int(o.cx) - reach; u <= int(o.cx) + reach; ++u) {
        if (u < 0 || v < 0 || u >= img->width || v >= img->height) continue;
        double sum = 0;
        int inside = 0;
        for (int j = 0; j < 4; ++j) {
          for (int i = 0; i < 4; ++i) {
            const double dx = u + (i + 0.5) / 4 - 0.5 - o.cx, dy = v + (j + 0.5) / 4 - 0.5 - o.cy;
            const double x = (c * dx - s * dy) / o.scale, y = (s * dx + c * dy) / o.scale;
            if (std::fabs(x) > 16 || std::fabs(y) > 16) continue;
            sum += objectValue(o.mirrored ? -x : x, y);
            ++inside;
          }
        }
        if (inside == 0) continue;
        const double mixed = (sum + (16 - inside) * img->at(u, v)) / 16.0;
        img->at(u, v) = uint8_t(std::clamp(std::lround(mixed), 0L, 255L));
      }
    }
  }
}

double angleError(double a, double b) {
  double d = std::fmod(std::fabs(a - b), 360.0);
  return std::min(d, 360.0 - d);
}


Image rotatedScene(int width, int height, const std::vector<Placed>& objects) {
  // Textured background with noise: smooth waves plus uniform noise.
  Image img = makeImage(width, height, Fill::Smooth);
  std::uniform_int_distribution<int> noise(-12, 12);
  for (int y = 0; y < img.height; ++y)
    for (int x = 0; x < img.width; ++x) img.at(x, y) = uint8_t(std::clamp(img.at(x, y) / 2 + 64 + noise(rng()), 0, 255));
  drawObjects(&img, objects);
  for (int y = 0; y < img.height; ++y)  // noise over the objects too
    for (int x = 0; x < img.width; ++x) img.at(x, y) = uint8_t(std::clamp(img.at(x, y) + noise(rng()) / 3, 0, 255));
  return img;
}

}  // namespace nccmatch::test
