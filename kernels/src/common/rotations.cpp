// Rotated template banks: bilinear rotation about the centre with the rotated support as the mask.
#include "nccmatch/rotations.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <set>
#include <string>

#include "common/validate.hpp"

namespace nccmatch {

namespace {

std::string formatNumber(double v) {
  char text[32];
  std::snprintf(text, sizeof text, "%g", v);
  return text;
}

// cos and sin of an angle in degrees, exact (0, +-1) at multiples of 90 degrees.
void cosSinDegrees(double degrees, double* c, double* s) {
  const double turns = std::fmod(degrees, 360.0);
  const double quarter = turns / 90.0;
  if (quarter == std::floor(quarter)) {
    const int q = ((int(quarter) % 4) + 4) % 4;
    *c = q == 0 ? 1 : (q == 2 ? -1 : 0);
    *s = q == 1 ? 1 : (q == 3 ? -1 : 0);
    return;
  }
  const double r = turns * M_PI / 180.0;
  *c = std::cos(r);
  *s = std::sin(r);
}

// Angles seen so far, modulo 360 in [0, 360): insert() is false for one within 1e-9 of a seen one.
class SeenAngles {
 public:
  bool insert(double a) {
    double mod = std::fmod(a, 360.0);
    if (mod < 0) mod += 360.0;
    if (mod > 360.0 - kSame) mod = 0.0;
    const auto near = seen_.lower_bound(mod - kSame);
    if (near != seen_.end() && *near <= mod + kSame) return false;
    if (mod < kSame && !seen_.empty() && *seen_.rbegin() > 360.0 - 2 * kSame) return false;
    seen_.insert(mod);
    return true;
  }
  std::size_t size() const { return seen_.size(); }

 private:
  static constexpr double kSame = 1e-9;
  std::set<double> seen_;
};

// The bounding box of a w x h rectangle rotated by the angle whose cos and sin are c, s (a hair
// below an integer stays that integer), at least 1x1.
void rotatedSize(int w, int h, double c, double s, long* width, long* height) {
  *width = std::max(1L, long(std::ceil(std::fabs(w * c) + std::fabs(h * s) - 1e-9)));
  *height = std::max(1L, long(std::ceil(std::fabs(w * s) + std::fabs(h * c) - 1e-9)));
}

}  // namespace

namespace {

// The source rotated by the angle whose cos and sin are c, s into a width x height output centred
// on the source's centre, by bilinear interpolation. An output pixel is compared when keep(dx, dy)
// (its offset from the output's centre) holds, its centre maps back into the template's area, and
// every source pixel the interpolation weighs is compared; ignored pixels are 0. The mask is
// dropped when nothing is ignored.
template <typename Keep>
TemplateImage resampleRotated(const TemplateImage& source, double c, double s, int width, int height, Keep keep) {
  const int w = source.width, h = source.height;
  TemplateImage out;
  out.name = source.name;
  out.width = width;
  out.height = height;
  out.pixels.assign(std::size_t(width) * height, 0);
  out.mask.assign(out.pixels.size(), 0);
  const double scx = (w - 1) / 2.0, scy = (h - 1) / 2.0;
  const double dcx = (width - 1) / 2.0, dcy = (height - 1) / 2.0;
  constexpr double kEdge = 1e-9;  // rounding of the mapped centre at the template's edge
  auto compared = [&](int x, int y) { return source.mask.empty() || source.mask[std::size_t(y) * w + x] != 0; };
  bool ignoresAny = false;
  for (int v = 0; v < height; ++v) {
    for (int u = 0; u < width; ++u) {
      // The inverse rotation maps the output pixel's centre into the template.
      const double dx = u - dcx, dy = v - dcy;
      const double sx = c * dx - s * dy + scx, sy = s * dx + c * dy + scy;
      const std::size_t k = std::size_t(v) * width + u;
      if (!keep(dx, dy) || sx < -0.5 - kEdge || sx > w - 0.5 + kEdge || sy < -0.5 - kEdge || sy > h - 0.5 + kEdge) {
        ignoresAny = true;
        continue;
      }
      const double cx = std::clamp(sx, 0.0, double(w - 1)), cy = std::clamp(sy, 0.0, double(h - 1));
      // Snap to the pixel grid within rounding, so that exact mappings weigh one pixel only.
      const double rx = std::round(cx), ry = std::round(cy);
      const double px = std::fabs(cx - rx) < kEdge ? rx : cx, py = std::fabs(cy - ry) < kEdge ? ry : cy;
      const int x0 = std::min(int(std::floor(px)), w - 1), y0 = std::min(int(std::floor(py)), h - 1);
      const double fx = px - x0, fy = py - y0;
      const int x1 = fx > 0 ? x0 + 1 : x0, y1 = fy > 0 ? y0 + 1 : y0;
      if (!compared(x0, y0) || !compared(x1, y0) || !compared(x0, y1) || !compared(x1, y1)) {
        ignoresAny = true;
        continue;
      }
      auto at = [&](int x, int y) { return double(source.pixels[std::size_t(y) * w + x]); };
      const double top = at(x0, y0) + fx * (at(x1, y0) - at(x0, y0));
      const double bottom = at(x0, y1) + fx * (at(x1, y1) - at(x0, y1));
      out.pixels[k] = uint8_t(std::clamp(std::lround(top + fy * (bottom - top)), 0L, 255L));
      out.mask[k] = 255;
    }
  }
  if (!ignoresAny) out.mask.clear();
  return out;
}

}  // namespace

TemplateImage rotateTemplate(const TemplateImage& source, double degrees) {
  double c, s;
  cosSinDegrees(degrees, &c, &s);
  if (c == 1.0) return source;
  long width, height;
  rotatedSize(source.width, source.height, c, s, &width, &height);
  return resampleRotated(source, c, s, int(width), int(height), [](double, double) { return true; });
}

TemplateImage rotateTemplateOnDisc(const TemplateImage& source, double degrees) {
  double c, s;
  cosSinDegrees(degrees, &c, &s);
  const int side = std::min(source.width, source.height);
  const double radius = side / 2.0;
  TemplateImage out = resampleRotated(source, c, s, side, side, [radius](double dx, double dy) {
    return dx * dx + dy * dy <= radius * radius + 1e-9;
  });
  // The disc is every variant's mask, also where it ignores nothing (a template of 1 or 2 pixels
  // a side), so that all angles of a scale share one mask.
  if (out.mask.empty()) out.mask.assign(out.pixels.size(), 255);
  return out;
}

Status validateTemplateAngles(const std::vector<double>& angles) {
  if (angles.empty()) return Status::error("no angle given (0 matches the templates as they are)");
  if (angles.size() > std::size_t(kMaxTemplateAngles))
    return Status::error(std::to_string(angles.size()) + " angles; at most " + std::to_string(kMaxTemplateAngles) +
                         " are allowed");
  for (double a : angles)
    if (!std::isfinite(a) || std::fabs(a) > kMaxTemplateAngle)
      return Status::error("angle " + formatNumber(a) + " is outside -" + formatNumber(kMaxTemplateAngle) + ".." +
                           formatNumber(kMaxTemplateAngle) + " degrees");
  return Status();
}

std::vector<double> distinctAngles(const std::vector<double>& angles) {
  std::vector<double> out;
  SeenAngles seen;
  for (double a : angles)
    if (!std::isfinite(a) || seen.insert(a)) out.push_back(a);
  return out;
}

std::vector<double> angleRange(double start, double stop, double step) {
  std::vector<double> out;
  if (!std::isfinite(start) || !std::isfinite(stop) || !std::isfinite(step) || step <= 0 || stop < start) return out;
  // More steps than this only repeat angles or exceed kMaxTemplateAngles: refused, never looped.
  if ((stop - start) / step > kMaxTemplateAngles * 400.0) return out;
  SeenAngles seen;
  // Angles as start + k * step (no accumulated rounding); the stop is reached within rounding.
  for (long k = 0;; ++k) {
    const double a = start + double(k) * step;
    if (a > stop + 1e-9 * std::max(1.0, std::fabs(stop))) break;
    if (!seen.insert(a)) continue;
    if (int(out.size()) == kMaxTemplateAngles) return {};
    out.push_back(a);
  }
  return out;
}

Status rotateAndScaleTemplates(const std::vector<TemplateImage>& originals, const std::vector<double>& scales,
                               const std::vector<double>& angles, ScaledBank* out, RotationSupport support) {
  NCC_RETURN_IF_ERROR(validateTemplateAngles(angles));
  ScaledBank scaled;
  NCC_RETURN_IF_ERROR(scaleTemplates(originals, scales, &scaled));
  ScaledBank bank;
  bank.originals = scaled.originals;
  // An angle equal modulo 360 to an earlier one would only repeat a variant: the earlier is kept.
  const std::vector<double> distinct = distinctAngles(angles);
  for (std::size_t e = 0; e < scaled.templates.size(); ++e) {
    for (double a : distinct) {
      const TemplateImage& t = scaled.templates[e];
      double c, s;
      cosSinDegrees(a, &c, &s);
      long w = std::min(t.width, t.height), h = w;
      if (support == RotationSupport::Rectangle) rotatedSize(t.width, t.height, c, s, &w, &h);
      if (w > kMaxScaledTemplateSide || h > kMaxScaledTemplateSide) {
        const uint32_t i = scaled.original[e];
        return Status::error("template " + std::to_string(i) + " ('" + originals[i].name + "') at scale " +
                             formatNumber(scaled.scale[e]) + " and angle " + formatNumber(a) + " would be " +
                             std::to_string(w) + "x" + std::to_string(h) + ", larger than " +
                             std::to_string(kMaxScaledTemplateSide) + " pixels a side");
      }
      bank.templates.push_back(support == RotationSupport::Disc ? rotateTemplateOnDisc(t, a) : rotateTemplate(t, a));
      bank.original.push_back(scaled.original[e]);
      bank.scale.push_back(scaled.scale[e]);
      bank.angle.push_back(a);
    }
  }
  *out = std::move(bank);
  return Status();
}

}  // namespace nccmatch
