#include "match_reporting.hpp"

#include <gst/video/video.h>

#include <algorithm>

namespace nccmatch::plugin {

namespace {

const char* nameOf(const std::vector<std::string>& names, uint32_t index) {
  return index < names.size() ? names[index].c_str() : "";
}

guint toUint(int value) { return guint(std::max(value, 0)); }

}  // namespace

double templateMatchResult(double bestScore, nccmatch::Method method) {
  return method == nccmatch::Method::SqDiffNormed ? 1.0 - bestScore : bestScore;
}

GstStructure* makeTemplateMatchStructure(const nccmatch::Match& best, nccmatch::Method method) {
  return gst_structure_new("template_match",
                           "x", G_TYPE_UINT, toUint(best.x),
                           "y", G_TYPE_UINT, toUint(best.y),
                           "width", G_TYPE_UINT, toUint(best.width),
                           "height", G_TYPE_UINT, toUint(best.height),
                           "result", G_TYPE_DOUBLE, templateMatchResult(best.score, method),
                           nullptr);
}

GstStructure* makeMatchStructure(const nccmatch::Match& match, const std::vector<std::string>& names) {
  return gst_structure_new("match",
                           "template", G_TYPE_UINT, guint(match.templateIndex),
                           "name", G_TYPE_STRING, nameOf(names, match.templateIndex),
                           "x", G_TYPE_UINT, toUint(match.x),
                           "y", G_TYPE_UINT, toUint(match.y),
                           "width", G_TYPE_UINT, toUint(match.width),
                           "height", G_TYPE_UINT, toUint(match.height),
                           "score", G_TYPE_DOUBLE, match.score,
                           "sub-x", G_TYPE_DOUBLE, match.subX,
                           "sub-y", G_TYPE_DOUBLE, match.subY,
                           "scale", G_TYPE_DOUBLE, match.scale,
                           "angle", G_TYPE_DOUBLE, match.angle,
                           nullptr);
}

GstStructure* makeNccMatchStructure(const std::vector<nccmatch::Match>& matches,
                                    const std::vector<std::string>& names, const FrameTiming& timing,
                                    uint64_t settingsGeneration) {
  GValue list = G_VALUE_INIT;
  g_value_init(&list, GST_TYPE_LIST);
  for (const nccmatch::Match& match : matches) {
    GValue item = G_VALUE_INIT;
    g_value_init(&item, GST_TYPE_STRUCTURE);
    g_value_take_boxed(&item, makeMatchStructure(match, names));
    gst_value_list_append_and_take_value(&list, &item);
  }
  GstStructure* s = gst_structure_new("nccmatch",
                                      "timestamp", G_TYPE_UINT64, guint64(timing.timestamp),
                                      "stream-time", G_TYPE_UINT64, guint64(timing.streamTime),
                                      "running-time", G_TYPE_UINT64, guint64(timing.runningTime),
                                      "duration", G_TYPE_UINT64, guint64(timing.duration),
                                      "settings-generation", G_TYPE_UINT64, guint64(settingsGeneration),
                                      nullptr);
  gst_structure_take_value(s, "matches", &list);
  return s;
}

void attachRoiMetas(GstBuffer* buffer, const std::vector<nccmatch::Match>& matches,
                    const std::vector<std::string>& names) {
  for (const nccmatch::Match& match : matches) {
    GstVideoRegionOfInterestMeta* meta = gst_buffer_add_video_region_of_interest_meta(
        buffer, nameOf(names, match.templateIndex), toUint(match.x), toUint(match.y), toUint(match.width),
        toUint(match.height));
    if (meta == nullptr) continue;
    gst_video_region_of_interest_meta_add_param(
        meta, gst_structure_new("nccmatch",
                                "score", G_TYPE_DOUBLE, match.score,
                                "template", G_TYPE_UINT, guint(match.templateIndex),
                                "sub-x", G_TYPE_DOUBLE, match.subX,
                                "sub-y", G_TYPE_DOUBLE, match.subY,
                                "scale", G_TYPE_DOUBLE, match.scale,
                                "angle", G_TYPE_DOUBLE, match.angle,
                                nullptr));
  }
}

}  // namespace nccmatch::plugin
