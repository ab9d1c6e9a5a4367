// Matching at several sizes: each template enters the engine's bank once per scale factor
// (resampled on the host, once per bank), and the engine's matches of one template's scaled
// copies are merged back into matches of that template, each carrying the scale it matched at.
// Works with every backend: the engine sees an ordinary bank of templates of mixed sizes.
//
//   nccmatch::ScaledBank scaled;
//   st = nccmatch::scaleTemplates(originals, {0.8, 1.0, 1.25}, &scaled);
//   st = engine->setTemplates(scaled.templates);
//   st = engine->match(frame, params, &raw);
//   nccmatch::FrameResult result = nccmatch::mergeScaledResult(scaled, raw, params);
//   // result.matches[k].templateIndex indexes `originals`; .scale is the factor it matched at.
#pragma once

#include <cstdint>
#include <vector>

#include "nccmatch/status.hpp"
#include "nccmatch/types.hpp"

namespace nccmatch {

// Scale factors allowed, and the largest side a scaled template may have (the largest frame).
inline constexpr double kMinTemplateScale = 0.01;
inline constexpr double kMaxTemplateScale = 16.0;
inline constexpr int kMaxScaledTemplateSide = 16384;

// The bank the engine matches: original i at each of its distinct sizes, originals in order,
// each one's scales in the order given. Parallel vectors, one entry per engine template.
struct ScaledBank {
  std::vector<TemplateImage> templates;  // for Engine::setTemplates (names are the originals')
  std::vector<uint32_t> original;        // index of the template it was made from
  std::vector<double> scale;             // the factor it was made with
  std::vector<double> angle;             // the rotation in degrees it was made with (rotations.hpp)
  std::size_t originals = 0;             // how many templates were scaled
};

// Resamples an 8-bit template to width x height (both >= 1): each axis shrunk by area averaging
// (every source pixel weighted by how much of it the output pixel covers) or grown by linear
// interpolation between pixel centres; rounded to nearest. The same size gives a copy.
TemplateImage resizeTemplate(const TemplateImage& source, int width, int height);

// Factors in [kMinTemplateScale, kMaxTemplateScale], finite, at least one.
Status validateTemplateScales(const std::vector<double>& scales);

// Every original at every factor: sizes round(width * s) x round(height * s), at least 1x1. A
// factor giving a size the template already has at an earlier factor is skipped for it (the
// earlier factor is reported), so the bank holds no two equal copies. Fails, naming the template
// and factor, when a side would exceed kMaxScaledTemplateSide, and, as Engine::setTemplates does,
// for a template smaller than 1x1, larger than 16384x16384 or without width*height pixels.
Status scaleTemplates(const std::vector<TemplateImage>& originals, const std::vector<double>& scales,
                      ScaledBank* out);

// The engine's result for `bank.templates` as the result for the originals: each original's
// matches at all its scales merged best first (score, or lowest score for the sqdiff methods;
// ties by scale entry, then row, then column) with the same greedy NMS (params.nmsIou, boxes of
// different sizes compared by IoU) and params.maxMatches; matches name the original
// (templateIndex), the factor (scale) and the angle (angle). Where the bank holds an original at
// several angles of one scale, a match's angle is refined between the neighbouring angles: the
// vertex of the parabola through the match's score and the best scores the two neighbouring
// angles reported at the same place (their matches or best whose box centre lies within 2 pixels
// of the match's), at most half way to either; unrefined when a neighbour reported nothing there
// or the match's score is not above both. A list covering the full circle evenly wraps (the
// neighbours of 0 in 0:360:5 are 355 and 5); refined angles then stay in [first, first + 360). best[i] is the best of original i's scaled bests. With
// the unnormalised methods (sqdiff, ccorr, ccoeff) scores grow with the template's area, so the
// comparison across scales favours larger copies: use a normalised method to choose a scale.
FrameResult mergeScaledResult(const ScaledBank& bank, const FrameResult& scaled, const MatchParams& params);

}  // namespace nccmatch
