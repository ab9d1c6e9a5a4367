// Argument checks shared by every backend, so each reports the same clear messages.
#pragma once

#include <vector>

#include "nccmatch/regions.hpp"
#include "nccmatch/status.hpp"
#include "nccmatch/types.hpp"

namespace nccmatch {

class RegionSetIds;  // common/region_template_sets.hpp

Status validateTemplates(const std::vector<TemplateImage>& bank);
Status validateFrame(const FrameView& frame);
Status validateParams(const MatchParams& params);
// Engine::scoreMap's arguments: an output, a template of the bank that fits the frame, a valid
// frame and method.
Status validateScoreMapRequest(const std::vector<TemplateImage>& bank, const FrameView& frame,
                               Method method, uint32_t templateIndex, const std::vector<double>* map);
// Engine::matchRegions' arguments: a valid frame, an output, every region inside the frame with a
// template of the bank, a valid own image, or a template of a set `sets` holds (not both an image
// and a set).
Status validateRegions(const std::vector<TemplateImage>& bank, const RegionSetIds& sets, const FrameView& frame,
                       const std::vector<RegionQuery>& regions, const std::vector<RegionResult>* results);
// A box of a frame: inside it, at least 1x1.
Status validatePatchBox(const FrameView& frame, int x, int y, int width, int height);

}  // namespace nccmatch
