// The rules of peak finding that every backend shares, host and device: which way is better for
// a method, the order of candidates, the local-extremum rule, the sub-pixel parabola and the
// IoU of two boxes.
//
// The floating-point steps are written with explicitly rounded operations (mulRn, ...), so no
// fused multiply-add can change a bit between the CPU's and the GPU's peaks.
#pragma once

#include <cmath>
#include <cstdint>
#include <cstring>

#include "nccmatch/sat.hpp"  // NCC_HOST_DEVICE
#include "nccmatch/types.hpp"

namespace nccmatch {

// Goodness is the score times this sign: larger goodness is always better (-1 for the sqdiff
// methods, whose lower scores are better). Kernels receive it as an argument.
inline double goodnessSign(Method method) { return lowerIsBetter(method) ? -1.0 : 1.0; }

// One IEEE operation each, rounded to nearest, never fused with its neighbour.
NCC_HOST_DEVICE inline double addRn(double a, double b) {
#if defined(__CUDA_ARCH__)
  return __dadd_rn(a, b);
#else
  return a + b;
#endif
}

NCC_HOST_DEVICE inline double subRn(double a, double b) {
#if defined(__CUDA_ARCH__)
  return __dsub_rn(a, b);
#else
  return a - b;
#endif
}

NCC_HOST_DEVICE inline double mulRn(double a, double b) {
#if defined(__CUDA_ARCH__)
  return __dmul_rn(a, b);
#else
  return a * b;
#endif
}

NCC_HOST_DEVICE inline double divRn(double a, double b) {
#if defined(__CUDA_ARCH__)
  return __ddiv_rn(a, b);
#else
  return a / b;
#endif
}

NCC_HOST_DEVICE inline bool isFiniteValue(double v) {
#if defined(__CUDA_ARCH__)
  return isfinite(v);
#else
  return std::isfinite(v);
#endif
}

// The strict total order every backend ranks candidates by: better goodness first, then the
// earlier position in raster order. Raster is a linear map index, or rasterKey(x, y).
template <typename Raster>
NCC_HOST_DEVICE inline bool rankedBefore(double goodnessA, Raster rasterA, double goodnessB,
                                         Raster rasterB) {
  if (goodnessA != goodnessB) return goodnessA > goodnessB;
  return rasterA < rasterB;
}

// A double goodness (not NaN) as a key whose unsigned order is the goodness order (-0 as +0):
// a 64-bit atomicMax of keys keeps the highest goodness exactly, and goodnessFromKey gives it back.
NCC_HOST_DEVICE inline uint64_t goodnessKey(double goodness) {
  if (goodness == 0.0) goodness = 0.0;  // -0 ranks as +0
  uint64_t bits;
  memcpy(&bits, &goodness, sizeof bits);
  return (bits >> 63) != 0 ? ~bits : bits | (uint64_t(1) << 63);
}
NCC_HOST_DEVICE inline double goodnessFromKey(uint64_t key) {
  const uint64_t bits = (key >> 63) != 0 ? key & ~(uint64_t(1) << 63) : ~key;
  double goodness;
  memcpy(&goodness, &bits, sizeof goodness);
  return goodness;
}

// A key of a map position (x, y >= 0) ordered as raster order, for maps of any width.
NCC_HOST_DEVICE inline uint64_t rasterKey(int x, int y) {
  return (uint64_t(uint32_t(y)) << 32) | uint32_t(x);
}

// A float goodness (not NaN) and a map index >= 0 as one key whose unsigned order is the order
// above (rankedBefore): the higher goodness first, then the earlier index; so one 64-bit atomicMax
// keeps the better of two. Never 0 (the low word of an index >= 0 has its top bit set): 0 can mean
// "none".
NCC_HOST_DEVICE inline uint64_t rankedKey(float goodness, int index) {
  if (goodness == 0.0f) goodness = 0.0f;  // -0 ranks as +0
  uint32_t bits;
  memcpy(&bits, &goodness, sizeof bits);
  const uint32_t ordered = (bits & 0x80000000u) != 0 ? ~bits : bits | 0x80000000u;  // float order as unsigned
  return (uint64_t(ordered) << 32) | ~uint32_t(index);
}
NCC_HOST_DEVICE inline float rankedKeyGoodness(uint64_t key) {
  const uint32_t ordered = uint32_t(key >> 32);
  const uint32_t bits = (ordered & 0x80000000u) != 0 ? ordered & 0x7fffffffu : ~ordered;
  float goodness;
  memcpy(&goodness, &bits, sizeof goodness);
  return goodness;
}
NCC_HOST_DEVICE inline int rankedKeyIndex(uint64_t key) { return int(~uint32_t(key)); }

// A score map read as goodness: sign * map[y * width + x], the offset formed in Index (int on
// the device, std::size_t on the host).
template <typename Index>
struct GoodnessMap {
  const double* map;
  int width, height;
  double sign;
  NCC_HOST_DEVICE double operator()(int x, int y) const {
    return sign * map[Index(y) * width + x];
  }
};

// The local-extremum rule: no 8-neighbour of (x, y) has a goodness above g, the position's own.
template <typename Map>
NCC_HOST_DEVICE inline bool isLocalPeak(const Map& good, int x, int y, double g) {
  for (int dy = -1; dy <= 1; ++dy) {
    const int ny = y + dy;
    if (ny < 0 || ny >= good.height) continue;
    for (int dx = -1; dx <= 1; ++dx) {
      const int nx = x + dx;
      if ((dx == 0 && dy == 0) || nx < 0 || nx >= good.width) continue;
      if (good(nx, ny) > g) return false;
    }
  }
  return true;
}

// Parabola through (-1, left), (0, centre), (+1, right): the offset of its vertex, in
// [-0.5, 0.5]; 0 when the three points are collinear or a value is not finite.
NCC_HOST_DEVICE inline double parabolaOffset(double left, double centre, double right) {
  const double curvature = addRn(subRn(left, mulRn(2.0, centre)), right);
  if (curvature == 0.0 || !isFiniteValue(curvature)) return 0.0;
  const double offset = divRn(mulRn(0.5, subRn(left, right)), curvature);
  if (!isFiniteValue(offset)) return 0.0;
  return offset < -0.5 ? -0.5 : (offset > 0.5 ? 0.5 : offset);
}

// Parabola through (a, left), (0, centre), (b, right) with a < 0 < b (unequal steps allowed,
// e.g. neighbouring angles of a list): the offset of its vertex, within [a/2, b/2] (half way to
// either neighbour, as parabolaOffset stays within half a pixel); 0 when the parabola does not
// open downwards or a value is not finite.
NCC_HOST_DEVICE inline double parabolaVertex(double a, double left, double centre, double b, double right) {
  const double A = subRn(left, centre), B = subRn(right, centre);
  // f(x) = centre + p x + q x^2 through both neighbours.
  const double q = divRn(subRn(mulRn(A, b), mulRn(B, a)), mulRn(mulRn(a, b), subRn(a, b)));
  if (!(q < 0.0) || !isFiniteValue(q)) return 0.0;
  const double p = divRn(subRn(A, mulRn(q, mulRn(a, a))), a);
  const double vertex = divRn(-p, mulRn(2.0, q));
  if (!isFiniteValue(vertex)) return 0.0;
  const double lo = mulRn(0.5, a), hi = mulRn(0.5, b);
  return vertex < lo ? lo : (vertex > hi ? hi : vertex);
}

// The sub-pixel corner of a peak at (x, y): along each axis, the vertex of the parabola through
// the peak and its two neighbours, where both lie in the width x height map. good(x, y) is the
// goodness at a position (a GoodnessMap, or any callable of the same shape).
template <typename Goodness>
NCC_HOST_DEVICE inline double subPixelX(const Goodness& good, int width, int x, int y) {
  return x + (x > 0 && x + 1 < width ? parabolaOffset(good(x - 1, y), good(x, y), good(x + 1, y)) : 0.0);
}

template <typename Goodness>
NCC_HOST_DEVICE inline double subPixelY(const Goodness& good, int height, int x, int y) {
  return y + (y > 0 && y + 1 < height ? parabolaOffset(good(x, y - 1), good(x, y), good(x, y + 1)) : 0.0);
}

// Intersection over union of the boxes (ax, ay, aw x ah) and (bx, by, bw x bh).
NCC_HOST_DEVICE inline double boxIou(int ax, int ay, int aw, int ah, int bx, int by, int bw,
                                     int bh) {
  const int right = ax + aw < bx + bw ? ax + aw : bx + bw;
  const int bottom = ay + ah < by + bh ? ay + ah : by + bh;
  const int ix = right - (ax > bx ? ax : bx);
  const int iy = bottom - (ay > by ? ay : by);
  const double inter = mulRn(double(ix > 0 ? ix : 0), double(iy > 0 ? iy : 0));
  const double uni = subRn(addRn(mulRn(double(aw), double(ah)), mulRn(double(bw), double(bh))), inter);
  return uni > 0 ? divRn(inter, uni) : 0.0;
}

}  // namespace nccmatch
