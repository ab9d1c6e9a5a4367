#include "track/template_blend.hpp"

#include <algorithm>
#include <cmath>

namespace nccmatch::track {

void startBlend(const TemplateImage& source, std::vector<double>* blend, TemplateImage* image) {
  *image = source;
  blend->assign(source.pixels.begin(), source.pixels.end());
}

void blendTemplate(const std::vector<uint8_t>& patch, double amount, std::vector<double>* blend, TemplateImage* image) {
  const std::size_t n = std::min(patch.size(), blend->size());
  image->pixels.resize(blend->size());
  for (std::size_t i = 0; i < n; ++i) {
    double& b = (*blend)[i];
    b = (1.0 - amount) * b + amount * double(patch[i]);
    image->pixels[i] = uint8_t(std::clamp(std::floor(b + 0.5), 0.0, 255.0));
  }
}

}  // namespace nccmatch::track
