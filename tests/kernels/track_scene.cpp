#include "track_scene.hpp"

#include <cmath>
#include <random>

namespace nccmatch::test {

Image Scene::frame(int t, std::vector<TruthBox>* truth) const {
  // The background texture is the same in every frame (a smooth field from the scene's seed).
  std::mt19937_64 g(seed);
  Image img;
  img.width = width;
  img.height = height;
  img.stride = std::size_t(width);
  img.bytes.assign(img.stride * height, 0);
  std::vector<double> coarse(std::size_t((width / 8 + 2) * (height / 8 + 2)));
  for (double& c : coarse) c = 40.0 + double(g() % 170);
  const int cw = width / 8 + 2;
  for (int y = 0; y < height; ++y)
    for (int x = 0; x < width; ++x) {
      const double fx = x / 8.0, fy = y / 8.0;
      const int ix = int(fx), iy = int(fy);
      const double ax = fx - ix, ay = fy - iy;
      const double v = (1 - ax) * (1 - ay) * coarse[iy * cw + ix] + ax * (1 - ay) * coarse[iy * cw + ix + 1] +
                       (1 - ax) * ay * coarse[(iy + 1) * cw + ix] + ax * ay * coarse[(iy + 1) * cw + ix + 1];
      img.at(x, y) = uint8_t(v);
    }
  truth->assign(objects.size(), TruthBox());
  for (std::size_t k = 0; k < objects.size(); ++k) {
    const SceneObject& o = objects[k];
    const TemplateImage& tpl = templates[o.templateIndex];
    double fx, fy;
    o.path(t, &fx, &fy);
    TruthBox& b = (*truth)[k];
    b.x = int(std::lround(fx));
    b.y = int(std::lround(fy));
    const bool hidden = t >= o.hiddenFrom && t < o.hiddenUntil;
    b.whole = !hidden && b.x >= 0 && b.y >= 0 && b.x + tpl.width <= width && b.y + tpl.height <= height;
    bool any = false;
    for (int y = 0; y < tpl.height && !hidden; ++y)
      for (int x = 0; x < tpl.width; ++x) {
        const int px = b.x + x, py = b.y + y;
        if (px < 0 || py < 0 || px >= width || py >= height) continue;
        img.at(px, py) = tpl.pixels[std::size_t(y) * tpl.width + x];
        any = true;
      }
    b.drawn = any;
  }
  for (std::size_t k = 0; k < objects.size(); ++k)
    for (std::size_t later = k + 1; later < objects.size(); ++later) {
      const TruthBox& a = (*truth)[k];
      const TruthBox& b = (*truth)[later];
      const TemplateImage& ta = templates[objects[k].templateIndex];
      const TemplateImage& tb = templates[objects[later].templateIndex];
      if (b.drawn && a.x < b.x + tb.width && b.x < a.x + ta.width && a.y < b.y + tb.height && b.y < a.y + ta.height)
        (*truth)[k].occluded = true;
    }
  // Fresh noise in every frame, over the objects too.
  std::mt19937_64 n(seed * 1000003u + uint64_t(t) + 1);
  for (uint8_t& p : img.bytes) {
    const int v = int(p) + int(n() % uint64_t(2 * noise + 1)) - noise;
    p = uint8_t(v < 0 ? 0 : (v > 255 ? 255 : v));
  }
  return img;
}

Scene trackingScene(int lostFrames, uint64_t seed) {
  Scene s;
  s.width = 320;
  s.height = 240;
  s.seed = seed;
  std::mt19937_64 g(seed ^ 0x5eed);
  for (int k = 0; k < 2; ++k) {
    TemplateImage t;
    t.name = k == 0 ? "square" : "disc";
    t.width = t.height = 20;
    for (int i = 0; i < 400; ++i) t.pixels.push_back(uint8_t(g() % 256));
    s.templates.push_back(t);
  }
  auto straight = [](double x0, double y0, double vx, double vy) {
    return [=](int t, double* x, double* y) { *x = x0 + vx * t, *y = y0 + vy * t; };
  };
  s.objects.push_back({0, straight(20, 30, 3, 0.5)});                                         // A
  s.objects.push_back({0, [](int t, double* x, double* y) {                                   // B
                         *x = 160 + 50 * std::cos(0.08 * t), *y = 150 + 50 * std::sin(0.08 * t);
                       }});
  s.objects.push_back({1, [](int t, double* x, double* y) { *x = 10 + 0.05 * t * t, *y = 205; }});  // C
  s.objects.push_back({1, straight(170, 0, -2, 1.5)});                                        // D
  s.objects.push_back({0, straight(20, 100, 2, 0), 20, 20 + lostFrames - 3});                  // E
  s.objects.push_back({1, straight(250, 60, -1, 1), 15, 15 + lostFrames + 5});                 // F
  s.objects.push_back({0, straight(260, 170, 3, 0)});                                         // G
  s.objects.push_back({1, straight(-80, 125, 2, 0)});                                         // H
  return s;
}

}  // namespace nccmatch::test
