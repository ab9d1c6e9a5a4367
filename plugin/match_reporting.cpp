#include "match_reporting.hpp"

#include <gst/video/video.h>

#include <algorithm>

namespace nccmatch::plugin {

namespace {

const char* nameOf(const std::vector<std::string>& names, uint32_t index) {
  return index < names.size() ? names[index].c_str() : "";
}

guint toUint(int value) { return guint(std::max(value, 0)); }

const TrackTag* tagOf(const TrackReport* tracks, std::size_t k) {
  return tracks != nullptr && k < tracks->tags.size() ? &tracks->tags[k] : nullptr;
}

void addTrack(GstStructure* s, const TrackTag* track) {
  if (track == nullptr) return;
  gst_structure_set(s, "track-id", G_TYPE_UINT64, guint64(track->id), "track-state", G_TYPE_STRING, track->state,
                    nullptr);
}

// A GstValueArray of guint64.
void setIdArray(GstStructure* s, const char* field, const std::vector<uint64_t>& ids) {
  GValue array = G_VALUE_INIT;
  g_value_init(&array, GST_TYPE_ARRAY);
  for (uint64_t id : ids) {
    GValue item = G_VALUE_INIT;
    g_value_init(&item, G_TYPE_UINT64);
    g_value_set_uint64(&item, id);
    gst_value_array_append_and_take_value(&array, &item);
  }
  gst_structure_take_value(s, field, &array);
}

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

GstStructure* makeMatchStructure(const nccmatch::Match& match, const std::vector<std::string>& names,
                                 const TrackTag* track) {
  GstStructure* s = gst_structure_new("match",
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
  addTrack(s, track);
  return s;
}

GstStructure* makeNccMatchStructure(const std::vector<nccmatch::Match>& matches,
                                    const std::vector<std::string>& names, const FrameTiming& timing,
                                    uint64_t settingsGeneration, const TrackReport* tracks) {
  GValue list = G_VALUE_INIT;
  g_value_init(&list, GST_TYPE_LIST);
  for (std::size_t k = 0; k < matches.size(); ++k) {
    GValue item = G_VALUE_INIT;
    g_value_init(&item, GST_TYPE_STRUCTURE);
    g_value_take_boxed(&item, makeMatchStructure(matches[k], names, tagOf(tracks, k)));
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
  if (tracks != nullptr) {
    setIdArray(s, "lost-tracks", tracks->lost);
    setIdArray(s, "ended-tracks", tracks->ended);
  }
  return s;
}

void attachRoiMetas(GstBuffer* buffer, const std::vector<nccmatch::Match>& matches,
                    const std::vector<std::string>& names, const TrackReport* tracks) {
  for (std::size_t k = 0; k < matches.size(); ++k) {
    const nccmatch::Match& match = matches[k];
    GstVideoRegionOfInterestMeta* meta = gst_buffer_add_video_region_of_interest_meta(
        buffer, nameOf(names, match.templateIndex), toUint(match.x), toUint(match.y), toUint(match.width),
        toUint(match.height));
    if (meta == nullptr) continue;
    const TrackTag* track = tagOf(tracks, k);
    if (track != nullptr) meta->id = track->id <= guint64(G_MAXINT) ? gint(track->id) : -1;
    GstStructure* params = gst_structure_new("nccmatch",
                                "score", G_TYPE_DOUBLE, match.score,
                                "template", G_TYPE_UINT, guint(match.templateIndex),
                                "sub-x", G_TYPE_DOUBLE, match.subX,
                                "sub-y", G_TYPE_DOUBLE, match.subY,
                                "scale", G_TYPE_DOUBLE, match.scale,
                                "angle", G_TYPE_DOUBLE, match.angle,
                                nullptr);
    addTrack(params, track);
    gst_video_region_of_interest_meta_add_param(meta, params);
  }
}

}  // namespace nccmatch::plugin
