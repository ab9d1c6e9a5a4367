// template-update: a track's own copy of its template drifts towards the patches it matches.
#pragma once

#include <cstdint>
#include <vector>

#include "nccmatch/types.hpp"

namespace nccmatch::track {

// blend = (1 - amount) * blend + amount * patch, element by element (patch and blend the same
// size), and image's pixels the blend rounded to nearest (halves up) in 0..255.
void blendTemplate(const std::vector<uint8_t>& patch, double amount, std::vector<double>* blend, TemplateImage* image);

// Starts a copy: blend and image from `source`.
void startBlend(const TemplateImage& source, std::vector<double>* blend, TemplateImage* image);

}  // namespace nccmatch::track
