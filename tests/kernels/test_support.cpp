#include "test_support.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cfloat>
#include <cmath>
#include <cstdio>
#include <cstdlib>

namespace nccmatch::test {

uint64_t testSeed() {
  static const uint64_t seed = [] {
    const char* env = std::getenv("NCCMATCH_TEST_SEED");
    uint64_t s = env ? std::strtoull(env, nullptr, 10) : std::random_device{}();
    std::printf("[ seed     ] NCCMATCH_TEST_SEED=%llu\n", static_cast<unsigned long long>(s));
    return s;
  }();
  return seed;
}

long long envSetting(const char* name, long long fallback, long long least, long long most) {
  const char* text = std::getenv(name);
  return std::clamp(text != nullptr ? std::atoll(text) : fallback, least, most);
}

std::mt19937_64& rng() {
  static std::mt19937_64 gen(testSeed());
  return gen;
}

namespace {
uint8_t pixelFor(Fill fill, int x, int y, int w, int h, uint8_t flatValue, double phase) {
  switch (fill) {
    case Fill::Random: return uint8_t(rng()() & 0xff);
    case Fill::Flat: return flatValue;
    case Fill::Binary: return (rng()() & 1) ? 255 : 0;
    case Fill::Smooth: {
      // Bright, slowly varying: large sums that nearly cancel in the centred numerator.
      double v = 200.0 + 20.0 * std::sin(phase + 6.0 * x / std::max(1, w)) * std::cos(4.0 * y / std::max(1, h));
      return uint8_t(std::lround(v));
    }
  }
  return 0;
}
}  // namespace

Image makeImage(int width, int height, Fill fill, std::size_t padding, uint8_t flatValue) {
  Image img;
  img.width = width;
  img.height = height;
  img.stride = std::size_t(width) + padding;
  img.bytes.assign(img.stride * height, 0xA5);  // poison in the padding
  double phase = std::uniform_real_distribution<double>(0, 6.28)(rng());
  for (int y = 0; y < height; ++y)
    for (int x = 0; x < width; ++x) img.at(x, y) = pixelFor(fill, x, y, width, height, flatValue, phase);
  return img;
}

TemplateImage cutTemplate(const Image& image, int x, int y, int width, int height, std::string name) {
  TemplateImage t;
  t.name = std::move(name);
  t.width = width;
  t.height = height;
  t.pixels.resize(std::size_t(width) * height);
  for (int ty = 0; ty < height; ++ty)
    for (int tx = 0; tx < width; ++tx) t.pixels[std::size_t(ty) * width + tx] = image.at(x + tx, y + ty);
  return t;
}

TemplateImage makeTemplate(int width, int height, Fill fill, std::string name, uint8_t flatValue) {
  Image img = makeImage(width, height, fill, 0, flatValue);
  return cutTemplate(img, 0, 0, width, height, std::move(name));
}

void paste(Image* image, const TemplateImage& t, int x, int y) {
  for (int ty = 0; ty < t.height; ++ty)
    for (int tx = 0; tx < t.width; ++tx) image->at(x + tx, y + ty) = t.pixels[std::size_t(ty) * t.width + tx];
}

double bruteForceScore(const Image& image, const TemplateImage& t, Method method, int x, int y) {
  // Under a mask (OpenCV's binary-mask semantics) every sum runs over the compared pixels only.
  auto compared = [&t](int tx, int ty) { return t.mask.empty() || t.mask[std::size_t(ty) * t.width + tx] != 0; };
  double n = 0;
  double sumI = 0, sumT = 0, sumI2 = 0, sumT2 = 0, sumIT = 0, sqdiff = 0;
  for (int ty = 0; ty < t.height; ++ty) {
    for (int tx = 0; tx < t.width; ++tx) {
      if (!compared(tx, ty)) continue;
      double i = image.at(x + tx, y + ty);
      double v = t.pixels[std::size_t(ty) * t.width + tx];
      n += 1;
      sumI += i; sumT += v; sumI2 += i * i; sumT2 += v * v; sumIT += i * v;
      sqdiff += (i - v) * (i - v);
    }
  }
  if (n == 0)  // nothing compared: scored as an all-zero template (README's table)
    return method == Method::SqDiffNormed || method == Method::CCoeffNormed ? 1.0 : 0.0;
  // Centred sums straight from the definition: sum (I - mean I)(T - mean T) etc.
  const double meanI = sumI / n, meanT = sumT / n;
  double centredIT = 0, centredI2 = 0, centredT2 = 0;
  for (int ty = 0; ty < t.height; ++ty) {
    for (int tx = 0; tx < t.width; ++tx) {
      if (!compared(tx, ty)) continue;
      double i = image.at(x + tx, y + ty) - meanI;
      double v = t.pixels[std::size_t(ty) * t.width + tx] - meanT;
      centredIT += i * v; centredI2 += i * i; centredT2 += v * v;
    }
  }
  auto normalise = [](double num, double denomSq, double windowSq, double windowSum2, bool sqdiffNormed) {
    // OpenCV: a window whose variance term is below min(0.5, 10*FLT_EPSILON*sum I^2) is flat.
    double limit = std::min(0.5, 10.0 * FLT_EPSILON * windowSum2);
    if (windowSq <= limit || denomSq <= 0) return sqdiffNormed ? 1.0 : 0.0;
    double r = num / std::sqrt(denomSq);
    if (std::fabs(r) < 1) return r;
    return r > 0 ? 1.0 : -1.0;
  };
  switch (method) {
    case Method::SqDiff: return sqdiff;
    case Method::CCorr: return sumIT;
    case Method::CCoeff: return centredIT;
    case Method::SqDiffNormed: return normalise(sqdiff, sumI2 * sumT2, sumI2, sumI2, true);
    case Method::CCorrNormed: return normalise(sumIT, sumI2 * sumT2, sumI2, sumI2, false);
    case Method::CCoeffNormed:
      if (centredT2 == 0) return 1.0;  // flat template: 1 everywhere (OpenCV CPU)
      return normalise(centredIT, centredI2 * centredT2, centredI2, sumI2, false);
  }
  return 0;
}

std::vector<uint8_t> makeMask(int width, int height, MaskShape shape) {
  std::vector<uint8_t> mask(std::size_t(width) * height, 0);
  const double cx = (width - 1) / 2.0, cy = (height - 1) / 2.0;
  const double outer = std::min(width, height) / 2.0, inner = outer * 0.5;
  std::uniform_int_distribution<int> coin(0, 2);
  for (int y = 0; y < height; ++y) {
    for (int x = 0; x < width; ++x) {
      const double r = std::hypot(x - cx, y - cy);
      uint8_t& m = mask[std::size_t(y) * width + x];
      switch (shape) {
        case MaskShape::Full: m = 255; break;
        case MaskShape::FullNonBinary: m = uint8_t(1 + (x * 7 + y * 13) % 255); break;
        case MaskShape::OnePixel: m = (x == width / 2 && y == height / 2) ? 255 : 0; break;
        case MaskShape::Disc: m = r <= outer ? 255 : 0; break;
        case MaskShape::Ring: m = (r <= outer && r >= inner) ? 1 : 0; break;
        case MaskShape::Random: m = coin(rng()) == 0 ? 0 : uint8_t(1 + coin(rng()) * 100); break;
        case MaskShape::Empty: m = 0; break;
      }
    }
  }
  return mask;
}

const char* maskShapeName(MaskShape shape) {
  switch (shape) {
    case MaskShape::Full: return "full";
    case MaskShape::FullNonBinary: return "full-nonbinary";
    case MaskShape::OnePixel: return "one-pixel";
    case MaskShape::Disc: return "disc";
    case MaskShape::Ring: return "ring";
    case MaskShape::Random: return "random";
    case MaskShape::Empty: return "empty";
  }
  return "?";
}

std::string describe(int w, int h, std::size_t padding) {
  return std::to_string(w) + "x" + std::to_string(h) + (padding ? " stride+" + std::to_string(padding) : "");
}

std::unique_ptr<Engine> makeCpuEngine(CpuPath path, int threads) {
  EngineOptions o;
  o.backend = Backend::Cpu;
  o.threads = threads;
  o.cpuPath = path;
  std::unique_ptr<Engine> e;
  Status s = Engine::create(o, &e);
  if (!s.ok()) ADD_FAILURE() << "CPU engine: " << s.message();
  return e;
}

std::ostream& operator<<(std::ostream& os, const ScoreMapCase& c) {
  return os << describe(c.frameW, c.frameH, c.padding) << " template " << c.tplW << "x" << c.tplH
            << " fills " << int(c.frameFill) << "/" << int(c.tplFill);
}

}  // namespace nccmatch::test
