// Argument checks shared by every backend, so each reports the same clear messages.
#pragma once

#include <vector>

#include "nccmatch/status.hpp"
#include "nccmatch/types.hpp"

namespace nccmatch {

Status validateTemplates(const std::vector<TemplateImage>& bank);
Status validateFrame(const FrameView& frame);
Status validateParams(const MatchParams& params);

}  // namespace nccmatch
