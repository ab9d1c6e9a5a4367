// Matching at several angles (and sizes): each template enters the engine's bank once per
// (scale, angle), resampled on the host once per bank, and the engine's matches of one template's
// variants are merged back by mergeScaledResult (scales.hpp): one greedy NMS across all variants
// of a template, each match carrying the scale and the angle it matched at, the angle refined
// between neighbouring angles as positions are between pixels.
//
//   nccmatch::ScaledBank variants;
//   st = nccmatch::rotateAndScaleTemplates(originals, {0.9, 1.0, 1.1}, nccmatch::angleRange(0, 360, 5),
//                                          &variants);
//   st = engine->setTemplates(variants.templates);
//   st = engine->match(frame, params, &raw);
//   nccmatch::FrameResult result = nccmatch::mergeScaledResult(variants, raw, params);
//   // result.matches[k]: templateIndex indexes `originals`; .scale, .angle say how it matched.
//
// A rotated variant is the bounding box of the rotated template; its mask is the rotated support
// (pixels whose source lies outside the template, or on its ignored pixels, are ignored), so the
// corners brought in by the rotation are never compared. Its box (Match::x, y, width, height) is
// that bounding box: the object's centre is the box's centre.
#pragma once

#include <vector>

#include "nccmatch/scales.hpp"
#include "nccmatch/status.hpp"
#include "nccmatch/types.hpp"

namespace nccmatch {

// Angles allowed: finite, |angle| <= kMaxTemplateAngle degrees, at most kMaxTemplateAngles of them.
inline constexpr double kMaxTemplateAngle = 3600.0;
inline constexpr int kMaxTemplateAngles = 3600;

// The template rotated by `degrees` counter-clockwise (as seen on screen, y down) about its centre
// by bilinear interpolation, into the bounding box of the rotated rectangle (at least 1x1). An
// output pixel is compared when its centre, mapped back, lies within the template's area
// ([-0.5, w - 0.5] x [-0.5, h - 0.5]) and every source pixel the interpolation weighs is compared;
// ignored pixels are 0. Multiples of 90 degrees are exact pixel permutations (0: a copy); the
// result has no mask when it ignores nothing.
TemplateImage rotateTemplate(const TemplateImage& source, double degrees);

// The disc inscribed in the template, turned by `degrees` as rotateTemplate does, on a square of
// min(width, height) pixels a side centred on the template's centre: pixels whose centre lies
// within min(width, height) / 2 of the centre are compared (and where the source ignores a pixel
// the interpolation weighs, that pixel is ignored). Every angle of an unmasked template gets the
// same size and the same mask, so an engine computes the masked window sums (sum I M, sum I^2 M)
// once for all of them (the CPU backend does: equal masks share them per frame); the corners
// outside the disc are never compared, at any angle.
TemplateImage rotateTemplateOnDisc(const TemplateImage& source, double degrees);

// What the rotated variants of a template compare: the whole rotated template (its rotated
// support, rotateTemplate) or the disc inscribed in it (rotateTemplateOnDisc: one mask and one
// size for all angles of a scale: less work per frame, the corners not compared).
enum class RotationSupport { Rectangle, Disc };

// Angles within +-kMaxTemplateAngle, finite, at least one, at most kMaxTemplateAngles.
Status validateTemplateAngles(const std::vector<double>& angles);

// The angles in order without those equal modulo 360 (within 1e-9 degrees) to an earlier one;
// values that are not finite are kept (validateTemplateAngles names them).
std::vector<double> distinctAngles(const std::vector<double>& angles);

// start, start + step, ... up to stop inclusive (step > 0, stop >= start), dropping an angle equal
// modulo 360 to an earlier one: angleRange(0, 360, 5) is 0, 5, ..., 355 (72 angles). Empty when
// the arguments are not finite, step <= 0, stop < start or more than kMaxTemplateAngles result.
std::vector<double> angleRange(double start, double stop, double step);

// Every original at every scale (as scaleTemplates: sizes repeated by an earlier factor skipped),
// each scaled copy at every angle (rotateTemplate); entries original-major, then scale, then angle
// in the order given (an angle equal modulo 360 to an earlier one is skipped), each variant made
// with `support`. Fails, naming the template, scale and angle, for the inputs scaleTemplates
// refuses and for a variant larger than kMaxScaledTemplateSide a side.
Status rotateAndScaleTemplates(const std::vector<TemplateImage>& originals, const std::vector<double>& scales,
                               const std::vector<double>& angles, ScaledBank* out,
                               RotationSupport support = RotationSupport::Rectangle);

}  // namespace nccmatch
