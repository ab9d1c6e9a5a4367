// mode=track in the element: stable track ids and states in the `nccmatch` message and the ROI
// meta, lost-tracks and ended-tracks, ids never reused (a hidden object within and past
// lost-frames), flush / segment / new caps / mode switch end every track, search-region in
// frame coordinates, the properties (ranges, defaults, flags), detect mode's messages unchanged.
// CPU and CUDA backends (CUDA skipped without a GPU).
#include <gst/check/gstharness.h>
#include <gst/video/video.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "element_fixture.hpp"
#include "plugin_test_support.hpp"

namespace nccmatch::test {
namespace {

constexpr int kWidth = 200, kHeight = 150;

// One reported match, read from the message and checked against its ROI meta.
struct Reported {
  guint templateIndex = 0, x = 0, y = 0;
  guint64 id = 0;
  std::string state;
};

struct FrameReport {
  std::vector<Reported> matches;
  std::vector<guint64> lost, ended;
  bool hasTrackFields = false;  // lost-tracks / ended-tracks present
};

std::vector<guint64> idArray(const GstStructure* s, const char* field) {
  std::vector<guint64> ids;
  const GValue* array = gst_structure_get_value(s, field);
  if (array == nullptr) return ids;
  EXPECT_TRUE(GST_VALUE_HOLDS_ARRAY(array)) << field;
  for (guint i = 0; i < gst_value_array_get_size(array); ++i) {
    const GValue* v = gst_value_array_get_value(array, i);
    EXPECT_TRUE(G_VALUE_HOLDS_UINT64(v)) << field;
    ids.push_back(g_value_get_uint64(v));
  }
  return ids;
}

class TrackElement : public Element {
 protected:
  // Plays an element in track mode with two templates on GRAY8 frames.
  void startTracking(const TemplateImage& a, const TemplateImage& b, guint lostFrames, guint acquireInterval) {
    makeElement();
    const std::string files = writeTemplate("a.pgm", a) + "," + writeTemplate("b.pgm", b);
    g_object_set(element_, "templates", files.c_str(), "mode", 1, "max-matches", 4u, "threshold", 0.9,
                 "lost-frames", lostFrames, "acquire-interval", acquireInterval, "display", FALSE, nullptr);
    layout_ = makeLayout(GST_VIDEO_FORMAT_GRAY8, kWidth, kHeight, 0);
    start(layout_);
  }

  // Pushes a frame, pulls it, reads its message and checks every ROI meta against the message.
  FrameReport pushFrame(const Image& frame) {
    FrameReport report;
    GstBuffer* out = pushPull(makeFrame(layout_, frame));
    EXPECT_NE(out, nullptr);
    if (out == nullptr) return report;
    std::vector<GstMessage*> messages = popMessages(bus_, GST_MESSAGE_ELEMENT);
    std::vector<const GstStructure*> reports = structuresNamed(messages, "nccmatch");
    EXPECT_EQ(reports.size(), 1u);
    std::map<std::pair<guint, guint>, guint64> metaIds;
    for (GstVideoRegionOfInterestMeta* roi : roiMetas(out)) {
      const GstStructure* p = gst_video_region_of_interest_meta_get_param(roi, "nccmatch");
      guint64 id = 0;
      if (gst_structure_get_uint64(p, "track-id", &id)) {
        EXPECT_EQ(guint64(roi->id), id) << "the meta's id is the track id";
        EXPECT_NE(gst_structure_get_string(p, "track-state"), nullptr);
      }
      metaIds[{roi->x, roi->y}] = id;
    }
    if (!reports.empty()) {
      report.hasTrackFields = gst_structure_has_field(reports[0], "lost-tracks") &&
                              gst_structure_has_field(reports[0], "ended-tracks");
      report.lost = idArray(reports[0], "lost-tracks");
      report.ended = idArray(reports[0], "ended-tracks");
      for (const GstStructure* m : matchList(reports[0])) {
        Reported r;
        r.templateIndex = uintField(m, "template");
        r.x = uintField(m, "x");
        r.y = uintField(m, "y");
        if (gst_structure_get_uint64(m, "track-id", &r.id)) r.state = gst_structure_get_string(m, "track-state");
        const std::pair<guint, guint> at{r.x, r.y};
        EXPECT_EQ(metaIds.count(at), 1u) << "each match has its meta";
        EXPECT_EQ(metaIds[at], r.id);
        report.matches.push_back(r);
      }
    }
    unrefMessages(&messages);
    gst_buffer_unref(out);
    return report;
  }

  FrameLayout layout_;
};

const Reported* matchOf(const FrameReport& f, guint templateIndex) {
  for (const Reported& r : f.matches)
    if (r.templateIndex == templateIndex) return &r;
  return nullptr;
}

// Object a moves right 3 px a frame and is hidden in frames 8-9 (within lost-frames 3) and 14-18
// (past it); object b stays. a keeps its id over the short gap (reacquired) and gets a new one
// after the long one, which ends its first track.
TEST_P(TrackElement, IdsLastWhileVisibleAndAreNeverReused) {
  const TemplateImage a = makeTemplate(16, 16, Fill::Random), b = makeTemplate(12, 10, Fill::Random);
  startTracking(a, b, 3, 4);
  std::vector<FrameReport> frames;
  for (int t = 0; t < 30; ++t) {
    const bool hidden = (t >= 8 && t < 10) || (t >= 14 && t < 19);
    std::vector<std::pair<const TemplateImage*, Placed>> objects = {{&b, {150, 100}}};
    if (!hidden) objects.push_back({&a, {10 + 3 * t, 20 + t}});
    frames.push_back(pushFrame(scene(kWidth, kHeight, objects)));
  }
  const guint64 idB = matchOf(frames[0], 1) ? matchOf(frames[0], 1)->id : 0;
  const guint64 idA = matchOf(frames[0], 0) ? matchOf(frames[0], 0)->id : 0;
  ASSERT_NE(idA, 0u);
  ASSERT_NE(idB, 0u);
  EXPECT_NE(idA, idB);
  EXPECT_EQ(matchOf(frames[0], 0)->state, "new");
  std::set<guint64> everyId;
  for (int t = 0; t < 30; ++t) {
    SCOPED_TRACE("frame " + std::to_string(t));
    const FrameReport& f = frames[t];
    EXPECT_TRUE(f.hasTrackFields);
    const Reported* mb = matchOf(f, 1);
    ASSERT_NE(mb, nullptr);
    EXPECT_EQ(mb->id, idB);
    EXPECT_EQ(mb->state, t == 0 ? "new" : "tracked");
    EXPECT_EQ(mb->x, 150u);
    const Reported* ma = matchOf(f, 0);
    for (const Reported& r : f.matches) everyId.insert(r.id);
    if (t < 8 || (t >= 10 && t < 14)) {
      ASSERT_NE(ma, nullptr);
      EXPECT_EQ(ma->id, idA);
      EXPECT_EQ(ma->x, guint(10 + 3 * t));
      EXPECT_EQ(ma->state, t == 0 ? "new" : (t == 10 ? "reacquired" : "tracked"));
    }
    if (t == 8 || t == 9 || (t >= 14 && t < 17)) {
      EXPECT_EQ(ma, nullptr);
      EXPECT_EQ(f.lost, std::vector<guint64>({idA}));
    } else {
      EXPECT_TRUE(f.lost.empty());
    }
    EXPECT_EQ(f.ended, t == 17 ? std::vector<guint64>({idA}) : std::vector<guint64>());
  }
  // After the long gap: found again by a full-frame search (every 4 frames) with a new id.
  int back = -1;
  for (int t = 19; t < 30 && back < 0; ++t)
    if (matchOf(frames[t], 0) != nullptr) back = t;
  ASSERT_GE(back, 19);
  EXPECT_LE(back, 19 + 4);
  const Reported* again = matchOf(frames[back], 0);
  EXPECT_GT(again->id, std::max(idA, idB));
  EXPECT_EQ(again->state, "new");
  EXPECT_EQ(again->x, guint(10 + 3 * back));
  for (int t = back; t < 30; ++t) {
    ASSERT_NE(matchOf(frames[t], 0), nullptr) << t;
    EXPECT_EQ(matchOf(frames[t], 0)->id, again->id) << t;
  }
  EXPECT_EQ(everyId.size(), 3u);
}

TEST_P(TrackElement, SeveralObjectsOfOneTemplateAreSeveralTracks) {
  const TemplateImage a = makeTemplate(14, 14, Fill::Random), b = makeTemplate(9, 9, Fill::Random);
  startTracking(a, b, 5, 10);
  std::map<guint64, int> firstX;  // id -> x in frame 0 (objects keep their order along x)
  for (int t = 0; t < 12; ++t) {
    const Image frame =
        scene(kWidth, kHeight, {{&a, {10 + 2 * t, 10}}, {&a, {60 + 2 * t, 50}}, {&a, {110, 90 - t}}, {&a, {160, 20 + t}}});
    const FrameReport f = pushFrame(frame);
    ASSERT_EQ(f.matches.size(), 4u) << "frame " << t;
    for (const Reported& r : f.matches) {
      if (t == 0) firstX[r.id] = int(r.x);
      ASSERT_EQ(firstX.count(r.id), 1u) << "frame " << t << ": an id that frame 0 did not have";
      const int x0 = firstX[r.id];
      const int want = x0 == 10 || x0 == 60 ? x0 + 2 * t : x0;
      EXPECT_EQ(int(r.x), want) << "frame " << t << " id " << r.id;
    }
  }
  EXPECT_EQ(firstX.size(), 4u);
}

TEST_P(TrackElement, FlushSegmentNewCapsAndModeSwitchEndEveryTrack) {
  const TemplateImage a = makeTemplate(16, 16, Fill::Random), b = makeTemplate(12, 10, Fill::Random);
  startTracking(a, b, 15, 10);
  const Image frame = scene(kWidth, kHeight, {{&a, {30, 40}}, {&b, {120, 70}}});
  std::set<guint64> seen;
  auto ids = [](const FrameReport& f) {
    std::vector<guint64> out;
    for (const Reported& r : f.matches) out.push_back(r.id);
    std::sort(out.begin(), out.end());
    return out;
  };
  auto checkFresh = [&](const FrameReport& f, const std::vector<guint64>& ended, const char* what) {
    SCOPED_TRACE(what);
    EXPECT_EQ(f.ended, ended);
    ASSERT_EQ(f.matches.size(), 2u);
    for (const Reported& r : f.matches) {
      EXPECT_EQ(r.state, "new");
      EXPECT_TRUE(seen.insert(r.id).second) << "id " << r.id << " reused";
    }
  };
  FrameReport first = pushFrame(frame);
  checkFresh(first, {}, "start");
  std::vector<guint64> live = ids(first);
  EXPECT_EQ(pushFrame(frame).matches.at(0).state, "tracked");

  EXPECT_TRUE(gst_harness_push_event(harness_, gst_event_new_flush_start()));
  EXPECT_TRUE(gst_harness_push_event(harness_, gst_event_new_flush_stop(TRUE)));
  GstSegment segment;
  gst_segment_init(&segment, GST_FORMAT_TIME);
  EXPECT_TRUE(gst_harness_push_event(harness_, gst_event_new_segment(&segment)));
  FrameReport afterFlush = pushFrame(frame);
  checkFresh(afterFlush, live, "flush");
  live = ids(afterFlush);

  EXPECT_TRUE(gst_harness_push_event(harness_, gst_event_new_segment(&segment)));  // a seek's new segment
  FrameReport afterSegment = pushFrame(frame);
  checkFresh(afterSegment, live, "segment");
  live = ids(afterSegment);

  // New caps (a larger frame): the tracks end.
  layout_ = makeLayout(GST_VIDEO_FORMAT_GRAY8, kWidth + 20, kHeight, 0);
  gst_harness_set_src_caps(harness_, capsFor(layout_));
  FrameReport afterCaps = pushFrame(scene(kWidth + 20, kHeight, {{&a, {30, 40}}, {&b, {120, 70}}}));
  checkFresh(afterCaps, live, "caps");
  live = ids(afterCaps);

  // detect and back: no track fields in detect mode, then new tracks whose ended list names the old.
  g_object_set(element_, "mode", 0, nullptr);
  FrameReport detect = pushFrame(scene(kWidth + 20, kHeight, {{&a, {30, 40}}, {&b, {120, 70}}}));
  EXPECT_FALSE(detect.hasTrackFields);
  ASSERT_EQ(detect.matches.size(), 2u);
  for (const Reported& r : detect.matches) EXPECT_TRUE(r.state.empty());
  g_object_set(element_, "mode", 1, nullptr);
  FrameReport back = pushFrame(scene(kWidth + 20, kHeight, {{&a, {30, 40}}, {&b, {120, 70}}}));
  checkFresh(back, live, "mode switch");
}

TEST_P(TrackElement, SearchRegionTracksInFrameCoordinatesAndAMovedRegionEndsTracks) {
  const TemplateImage a = makeTemplate(16, 16, Fill::Random), b = makeTemplate(12, 10, Fill::Random);
  makeElement();
  g_object_set(element_, "templates", (writeTemplate("a.pgm", a) + "," + writeTemplate("b.pgm", b)).c_str(), "mode",
               1, "max-matches", 2u, "search-region", "41,33,100,80", nullptr);
  layout_ = makeLayout(GST_VIDEO_FORMAT_NV12, kWidth, kHeight, 4);
  start(layout_);
  guint64 id = 0;
  for (int t = 0; t < 6; ++t) {
    // a inside the region and moving, b outside it: only a is reported.
    const FrameReport f = pushFrame(scene(kWidth, kHeight, {{&a, {50 + 4 * t, 40 + t}}, {&b, {5, 5}}}));
    ASSERT_EQ(f.matches.size(), 1u) << t;
    EXPECT_EQ(f.matches[0].x, guint(50 + 4 * t));
    EXPECT_EQ(f.matches[0].y, guint(40 + t));
    if (t == 0) id = f.matches[0].id;
    EXPECT_EQ(f.matches[0].id, id);
  }
  g_object_set(element_, "search-region", "40,33,100,80", nullptr);
  const FrameReport f = pushFrame(scene(kWidth, kHeight, {{&a, {74, 46}}, {&b, {5, 5}}}));
  EXPECT_EQ(f.ended, std::vector<guint64>({id}));
  ASSERT_EQ(f.matches.size(), 1u);
  EXPECT_GT(f.matches[0].id, id);
}

TEST_P(TrackElement, DetectModeMessagesAndMetaAreUnchanged) {
  const TemplateImage a = makeTemplate(16, 16, Fill::Random);
  makeElement();
  g_object_set(element_, "template", writeTemplate("a.pgm", a).c_str(), nullptr);
  layout_ = makeLayout(GST_VIDEO_FORMAT_GRAY8, kWidth, kHeight, 0);
  start(layout_);
  GstBuffer* out = pushPull(makeFrame(layout_, scene(kWidth, kHeight, {{&a, {30, 40}}})));
  ASSERT_NE(out, nullptr);
  auto rois = roiMetas(out);
  ASSERT_EQ(rois.size(), 1u);
  const GstStructure* p = gst_video_region_of_interest_meta_get_param(rois[0], "nccmatch");
  EXPECT_FALSE(gst_structure_has_field(p, "track-id"));
  EXPECT_FALSE(gst_structure_has_field(p, "track-state"));
  gst_buffer_unref(out);
  std::vector<GstMessage*> messages = popMessages(bus_, GST_MESSAGE_ELEMENT);
  std::vector<const GstStructure*> reports = structuresNamed(messages, "nccmatch");
  ASSERT_EQ(reports.size(), 1u);
  EXPECT_FALSE(gst_structure_has_field(reports[0], "lost-tracks"));
  EXPECT_FALSE(gst_structure_has_field(reports[0], "ended-tracks"));
  for (const GstStructure* m : matchList(reports[0])) EXPECT_FALSE(gst_structure_has_field(m, "track-id"));
  unrefMessages(&messages);
}

TEST_P(TrackElement, PropertiesHaveTheirRangesDefaultsAndFlags) {
  makeElement();
  GObjectClass* klass = G_OBJECT_GET_CLASS(element_);
  struct Expected {
    const char* name;
    GType type;
    double min, max, def;
  };
  const Expected expected[] = {
      {"search-margin", G_TYPE_UINT, 0, 16384, 32},
      {"lost-frames", G_TYPE_UINT, 0, 1000000, 15},
      {"acquire-interval", G_TYPE_UINT, 0, 1000000, 10},
      {"template-update", G_TYPE_DOUBLE, 0, 1, 0},
  };
  for (const Expected& e : expected) {
    SCOPED_TRACE(e.name);
    GParamSpec* spec = g_object_class_find_property(klass, e.name);
    ASSERT_NE(spec, nullptr);
    ASSERT_EQ(spec->value_type, e.type);
    EXPECT_TRUE(spec->flags & GST_PARAM_MUTABLE_PLAYING);
    EXPECT_GT(std::strlen(g_param_spec_get_blurb(spec)), 40u);
    if (e.type == G_TYPE_UINT) {
      EXPECT_EQ(G_PARAM_SPEC_UINT(spec)->minimum, guint(e.min));
      EXPECT_EQ(G_PARAM_SPEC_UINT(spec)->maximum, guint(e.max));
      EXPECT_EQ(G_PARAM_SPEC_UINT(spec)->default_value, guint(e.def));
    } else {
      EXPECT_EQ(G_PARAM_SPEC_DOUBLE(spec)->minimum, e.min);
      EXPECT_EQ(G_PARAM_SPEC_DOUBLE(spec)->maximum, e.max);
      EXPECT_EQ(G_PARAM_SPEC_DOUBLE(spec)->default_value, e.def);
    }
  }
  GParamSpec* mode = g_object_class_find_property(klass, "mode");
  ASSERT_NE(mode, nullptr);
  EXPECT_TRUE(mode->flags & GST_PARAM_MUTABLE_PLAYING);
  EXPECT_EQ(g_value_get_enum(g_param_spec_get_default_value(mode)), 0);
  GEnumClass* modes = G_ENUM_CLASS(g_type_class_ref(mode->value_type));
  EXPECT_EQ(modes->n_values, 2u);
  EXPECT_STREQ(g_enum_get_value(modes, 0)->value_nick, "detect");
  EXPECT_STREQ(g_enum_get_value(modes, 1)->value_nick, "track");
  g_type_class_unref(modes);

  // Values read back; a launch line's nick works; NaN template-update is refused (the value stays).
  g_object_set(element_, "search-margin", 7u, "lost-frames", 0u, "acquire-interval", 0u, "template-update", 0.25,
               nullptr);
  gst_util_set_object_arg(G_OBJECT(element_), "mode", "track");
  guint margin = 0, lost = 9, interval = 9;
  double update = 0;
  gint modeValue = 0;
  g_object_set(element_, "template-update", NAN, nullptr);
  // Past the range by less than float precision: GObject lets these through (GLib 2.74), the
  // element refuses them with a warning (fuzz_properties' finding).
  g_object_set(element_, "template-update", std::nextafter(1.0, 2.0), nullptr);
  g_object_set(element_, "template-update", -1e-300, nullptr);
  g_object_get(element_, "search-margin", &margin, "lost-frames", &lost, "acquire-interval", &interval,
               "template-update", &update, "mode", &modeValue, nullptr);
  EXPECT_EQ(margin, 7u);
  EXPECT_EQ(lost, 0u);
  EXPECT_EQ(interval, 0u);
  EXPECT_EQ(update, 0.25);
  EXPECT_EQ(modeValue, 1);
}

// template-update: an object whose appearance drifts (one more column of it replaced by new
// texture each frame) keeps its track with the update on (its copy follows it; also in the
// full-frame search every 3 frames, where its window is searched with its copy too) and is lost
// with it off (the loaded template no longer reaches the threshold).
TEST_P(TrackElement, TemplateUpdateFollowsADriftingAppearance) {
  const TemplateImage a = makeTemplate(16, 16, Fill::Random), b = makeTemplate(12, 10, Fill::Random);
  const TemplateImage noise = makeTemplate(16, 16, Fill::Random);
  makeElement();
  g_object_set(element_, "templates", (writeTemplate("a.pgm", a) + "," + writeTemplate("b.pgm", b)).c_str(), "mode",
               1, "threshold", 0.8, "template-update", 0.5, "acquire-interval", 3u, nullptr);
  layout_ = makeLayout(GST_VIDEO_FORMAT_GRAY8, kWidth, kHeight, 0);
  start(layout_);
  auto drifted = [&](int t) {
    TemplateImage d = a;
    for (int x = 0; x < t && x < 16; ++x)
      for (int y = 0; y < 16; ++y) d.pixels[y * 16 + x] = noise.pixels[y * 16 + x];
    return d;
  };
  guint64 id = 0;
  for (int t = 0; t < 12; ++t) {
    const TemplateImage d = drifted(t);
    const FrameReport f = pushFrame(scene(kWidth, kHeight, {{&d, {40 + t, 50}}}));
    ASSERT_EQ(f.matches.size(), 1u) << "frame " << t;
    if (t == 0) id = f.matches[0].id;
    EXPECT_EQ(f.matches[0].id, id) << "frame " << t;
    EXPECT_EQ(f.matches[0].x, guint(40 + t));
  }
  // The same drift with the update off: lost before the end.
  g_object_set(element_, "template-update", 0.0, nullptr);
  int matched = 0;
  for (int t = 0; t < 12; ++t) {
    const TemplateImage d = drifted(t);
    matched += int(pushFrame(scene(kWidth, kHeight, {{&d, {40 + t, 50}}})).matches.size());
  }
  EXPECT_LT(matched, 10);
}

}  // namespace

INSTANTIATE_TEST_SUITE_P(Backends, TrackElement, ::testing::Values(Backend::Cpu, Backend::Cuda),
                         [](const ::testing::TestParamInfo<Backend>& info) { return backendName(info.param); });

}  // namespace nccmatch::test
