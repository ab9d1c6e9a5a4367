// The six methods under a binary mask (TemplateImage::mask: 0 = ignored, else compared), as
// OpenCV's matchTemplate with a CV_8U mask computes them: every sum, mean and norm runs over the
// compared pixels only. With M the mask as 0/1, n = sum M:
//
//   sqdiff         sum M (I - T)^2                      = sum I^2 M - 2 sum I T M + sum T^2 M
//   ccorr          sum I T M
//   ccoeff         sum M (I - mean_M I)(T - mean_M T)   = sum I T M - sum I M * sum T M / n
//   ...-normed     the same over sqrt(sum_M I'^2 * sum_M T'^2) with I', T' as in the numerator
//
// These are score_rules.hpp's formulas with the window sums s1 = sum I M, s2 = sum I^2 M (the
// correlations of I and I^2 with the mask, no longer box sums), the cross term c = sum I T M and
// the template's statistics over its compared pixels: one definition, the unmasked one, with the
// same flat-window and flat-template rules. What a mask adds is the empty mask (n = 0: nothing is
// compared), which scores as an all-zero template does, so it never yields NaN either.
#pragma once

#include <cstdint>

#include "rules/score_rules.hpp"

namespace nccmatch {

// True when the template has a mask that ignores at least one pixel. A mask of only nonzero
// values compares every pixel: the template is matched as an unmasked one (same scores).
inline bool ignoresPixels(const TemplateImage& t) {
  for (uint8_t m : t.mask)
    if (m == 0) return true;
  return false;
}

// Whether pixel k of a template is compared (no mask: every pixel).
inline bool comparedPixel(const TemplateImage& t, std::size_t k) { return t.mask.empty() || t.mask[k] != 0; }

// The template's statistics over its compared pixels: n = pixels compared, sum and sumSq of T
// there. Without a mask, templateStats(t).
inline TemplateStats maskedTemplateStats(const TemplateImage& t) {
  TemplateStats s;
  for (std::size_t k = 0; k < t.pixels.size(); ++k) {
    if (!comparedPixel(t, k)) continue;
    const int64_t v = t.pixels[k];
    ++s.n;
    s.sum += v;
    s.sumSq += v * v;
  }
  return s;
}

// The template as the numerators see it: ignored pixels set to 0, so that a plain correlation
// sum I * T' over the whole template is sum I T M. No mask: a copy.
inline TemplateImage numeratorTemplate(const TemplateImage& t) {
  TemplateImage out;
  out.name = t.name;
  out.width = t.width;
  out.height = t.height;
  out.pixels = t.pixels;
  if (!t.mask.empty())
    for (std::size_t k = 0; k < out.pixels.size(); ++k)
      if (t.mask[k] == 0) out.pixels[k] = 0;
  return out;
}

// An empty mask (nothing compared) scores everywhere as an all-zero template does: sqdiff,
// ccorr and ccoeff 0 (empty sums), sqdiff-normed 1 (its worst value, the flat-window rule),
// ccorr-normed 0 (an all-zero window), ccoeff-normed 1 (the flat-template rule).
NCC_HOST_DEVICE inline double emptyMaskScore(Method method) {
  return method == Method::SqDiffNormed || method == Method::CCoeffNormed ? 1.0 : 0.0;
}

// Score of one window under the mask: s1 = sum I M, s2 = sum I^2 M, c = sum I T M; t from
// maskedTemplateStats. Exact, as scoreFromSums.
NCC_HOST_DEVICE inline double maskedScoreFromSums(Method method, const TemplateStats& t, int64_t s1,
                                                  int64_t s2, int64_t c) {
  if (t.n == 0) return emptyMaskScore(method);
  return scoreFromSums(method, t, s1, s2, c);
}

// The same from a centred numerator held in floating point: sum I M (T - mean_M T), the
// correlation of I with the masked zero-mean template (the FFT paths).
NCC_HOST_DEVICE inline CentredScore maskedScoreFromCentred(Method method, const TemplateStats& t,
                                                           int64_t s1, int64_t s2, double centred) {
  if (t.n == 0) return {emptyMaskScore(method), 0.0};
  return scoreFromCentred(method, t, s1, s2, centred);
}

}  // namespace nccmatch
