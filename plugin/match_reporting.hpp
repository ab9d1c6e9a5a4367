// Turns the engine's matches into what the element hands on: GstVideoRegionOfInterestMeta on the
// buffer and the `template_match` / `nccmatch` element message structures.
#pragma once

#include <gst/gst.h>

#include <cstdint>
#include <string>
#include <vector>

#include "nccmatch/types.hpp"

namespace nccmatch::plugin {

// templatematch's `result`: the minimum for sqdiff, 1 - minimum for sqdiff-normed, else the maximum.
double templateMatchResult(double bestScore, nccmatch::Method method);

// templatematch's message: "template_match" with uint x, y, width, height and double result.
GstStructure* makeTemplateMatchStructure(const nccmatch::Match& best, nccmatch::Method method);

struct FrameTiming {
  GstClockTime timestamp = GST_CLOCK_TIME_NONE;
  GstClockTime streamTime = GST_CLOCK_TIME_NONE;
  GstClockTime runningTime = GST_CLOCK_TIME_NONE;
  GstClockTime duration = GST_CLOCK_TIME_NONE;
};

// mode=track: the track of each match (by position) and the frame's lost and ended tracks.
struct TrackTag {
  uint64_t id = 0;
  const char* state = "";  // "new", "tracked", "reacquired"
};
struct TrackReport {
  std::vector<TrackTag> tags;  // one per match
  std::vector<uint64_t> lost, ended;
};

// One `match` structure: template (uint), name (string), x, y, width, height (uint), score, sub-x,
// sub-y, scale (double); with a track, also track-id (guint64) and track-state (string). `names`
// holds the bank's template names by index.
GstStructure* makeMatchStructure(const nccmatch::Match& match, const std::vector<std::string>& names,
                                 const TrackTag* track = nullptr);

// "nccmatch": timestamp, stream-time, running-time, duration (guint64, GST_CLOCK_TIME_NONE when
// unknown), settings-generation (guint64: the element's settings the frame was matched with, see
// Settings::generation) and matches (a GstValueList of `match` structures, possibly empty). With
// `tracks` (mode=track) each match carries its track, and the structure lost-tracks and
// ended-tracks (GstValueArray of guint64, possibly empty).
GstStructure* makeNccMatchStructure(const std::vector<nccmatch::Match>& matches,
                                    const std::vector<std::string>& names, const FrameTiming& timing,
                                    uint64_t settingsGeneration, const TrackReport* tracks = nullptr);

// Adds one GstVideoRegionOfInterestMeta per match (roi_type = template name) with a parameter
// structure "nccmatch": score (double), template (uint), sub-x, sub-y, scale (double). With
// `tracks` the meta's id is the track id (-1 if it ever exceeds G_MAXINT) and the parameters carry
// track-id (guint64) and track-state (string). `buffer` must be writable.
void attachRoiMetas(GstBuffer* buffer, const std::vector<nccmatch::Match>& matches,
                    const std::vector<std::string>& names, const TrackReport* tracks = nullptr);

}  // namespace nccmatch::plugin
