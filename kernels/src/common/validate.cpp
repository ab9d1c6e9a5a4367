#include "common/validate.hpp"

#include <cmath>
#include <string>

#include "common/region_template_sets.hpp"

namespace nccmatch {

namespace {
std::string sizeText(int w, int h) { return std::to_string(w) + "x" + std::to_string(h); }
}  // namespace

namespace {
// One template: its size, pixels and mask; the message starts with `label`.
Status validateTemplate(const TemplateImage& t, const std::string& label) {
  if (t.width < 1 || t.height < 1)
    return Status::error(label + " has size " + sizeText(t.width, t.height) + "; it must be at least 1x1");
  if (t.width > 16384 || t.height > 16384)
    return Status::error(label + " has size " + sizeText(t.width, t.height) + "; the limit is 16384x16384");
  if (t.pixels.size() != std::size_t(t.width) * std::size_t(t.height))
    return Status::error(label + " has " + std::to_string(t.pixels.size()) + " pixels; " +
                         sizeText(t.width, t.height) + " needs " + std::to_string(std::size_t(t.width) * t.height));
  if (!t.mask.empty() && t.mask.size() != t.pixels.size())
    return Status::error(label + " has a mask of " + std::to_string(t.mask.size()) + " values; its size " +
                         sizeText(t.width, t.height) + " needs " + std::to_string(t.pixels.size()) +
                         " (or none, for no mask)");
  return Status();
}

std::string templateLabel(const TemplateImage& t, std::size_t i) {
  return "template " + std::to_string(i) + (t.name.empty() ? "" : " ('" + t.name + "')");
}
}  // namespace

Status validateTemplates(const std::vector<TemplateImage>& bank) {
  for (std::size_t i = 0; i < bank.size(); ++i) {
    // The label is made only for a template that fails (a bank may hold thousands).
    const Status st = validateTemplate(bank[i], std::string());
    if (!st.ok()) return validateTemplate(bank[i], templateLabel(bank[i], i));
  }
  return Status();
}

Status validateFrame(const FrameView& frame) {
  if (frame.data == nullptr) return Status::error("frame has no pixel data (null pointer)");
  if (frame.width < 1 || frame.height < 1)
    return Status::error("frame size " + sizeText(frame.width, frame.height) + " must be at least 1x1");
  if (frame.width > 16384 || frame.height > 16384)
    return Status::error("frame size " + sizeText(frame.width, frame.height) + " exceeds 16384x16384");
  if (frame.stride < std::size_t(frame.width))
    return Status::error("frame stride " + std::to_string(frame.stride) + " is less than its width " +
                         std::to_string(frame.width));
  return Status();
}

Status validateParams(const MatchParams& params) {
  int m = static_cast<int>(params.method);
  if (m < 0 || m > 5) return Status::error("method " + std::to_string(m) + " is not one of 0..5");
  if (std::isnan(params.threshold)) return Status::error("threshold is NaN");
  if (params.maxMatches < 0)
    return Status::error("max-matches " + std::to_string(params.maxMatches) + " is negative");
  if (!(params.nmsIou >= 0.0 && params.nmsIou <= 1.0))
    return Status::error("nms-iou " + std::to_string(params.nmsIou) + " is outside [0, 1]");
  return Status();
}

Status validateScoreMapRequest(const std::vector<TemplateImage>& bank, const FrameView& frame,
                               Method method, uint32_t templateIndex, const std::vector<double>* map) {
  if (map == nullptr) return Status::error("scoreMap: map pointer is null");
  if (templateIndex >= bank.size())
    return Status::error("scoreMap: template index " + std::to_string(templateIndex) +
                         " is outside the bank of " + std::to_string(bank.size()));
  MatchParams params;
  params.method = method;
  NCC_RETURN_IF_ERROR(validateParams(params));
  NCC_RETURN_IF_ERROR(validateFrame(frame));
  const TemplateImage& t = bank[templateIndex];
  if (t.width > frame.width || t.height > frame.height)
    return Status::error("scoreMap: template '" + t.name + "' is larger than the frame");
  return Status();
}

namespace {
std::string boxText(int x, int y, int w, int h) {
  return std::to_string(x) + "," + std::to_string(y) + " " + sizeText(w, h);
}
// The box lies inside a width x height frame (no overflow for any int).
bool boxInside(int x, int y, int w, int h, int width, int height) {
  return x >= 0 && y >= 0 && w >= 1 && h >= 1 && w <= width && h <= height && x <= width - w && y <= height - h;
}
}  // namespace

Status validateRegions(const std::vector<TemplateImage>& bank, const RegionSetIds& sets, const FrameView& frame,
                       const std::vector<RegionQuery>& regions, const std::vector<RegionResult>* results) {
  if (results == nullptr) return Status::error("matchRegions: results pointer is null");
  NCC_RETURN_IF_ERROR(validateFrame(frame));
  for (std::size_t k = 0; k < regions.size(); ++k) {
    const RegionQuery& r = regions[k];
    // Made only for a region that fails (a coarse-to-fine level has thousands).
    const auto label = [&] {
      return "matchRegions: region " + std::to_string(k) + " (" + boxText(r.x, r.y, r.width, r.height) + ")";
    };
    if (!boxInside(r.x, r.y, r.width, r.height, frame.width, frame.height))
      return Status::error(label() + " is not inside the " + sizeText(frame.width, frame.height) +
                           " frame with a size of at least 1x1");
    if (r.image != nullptr && !r.set.empty())
      return Status::error(label() + " names both its own image and a prepared template set; give one");
    if (!r.set.empty()) {
      Status st = sets.check(r.set, r.setIndex);
      if (!st.ok()) return Status::error(label() + ": " + st.message());
    } else if (r.image != nullptr) {
      if (!validateTemplate(*r.image, std::string()).ok())
        return Status::error(label() + ": its own image: " + validateTemplate(*r.image, templateLabel(*r.image, 0)).message());
    } else if (r.templateIndex >= bank.size()) {
      return Status::error(label() + ": template index " + std::to_string(r.templateIndex) +
                           " is outside the bank of " + std::to_string(bank.size()));
    }
  }
  return Status();
}

Status validatePatchBox(const FrameView& frame, int x, int y, int width, int height) {
  NCC_RETURN_IF_ERROR(validateFrame(frame));
  if (!boxInside(x, y, width, height, frame.width, frame.height))
    return Status::error("copyPatch: box " + boxText(x, y, width, height) + " is not inside the " +
                         sizeText(frame.width, frame.height) + " frame with a size of at least 1x1");
  return Status();
}

}  // namespace nccmatch
