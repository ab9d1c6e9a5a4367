// Match reporting: templatematch's message conventions, the nccmatch message, and ROI meta; in
// track mode the tracks' ids and states, lost-tracks and ended-tracks.
#include <gst/video/video.h>
#include <gtest/gtest.h>

#include <cmath>

#include "match_reporting.hpp"
#include "plugin_test_support.hpp"

namespace nccmatch::plugin {
namespace {

Match randomMatch(uint32_t templateIndex) {
  auto& g = nccmatch::test::rng();
  Match m;
  m.templateIndex = templateIndex;
  m.x = int(g() % 1000);
  m.y = int(g() % 1000);
  m.width = 1 + int(g() % 64);
  m.height = 1 + int(g() % 64);
  m.score = std::uniform_real_distribution<double>(-1e6, 1e6)(g);
  m.subX = m.x + std::uniform_real_distribution<double>(-0.5, 0.5)(g);
  m.subY = m.y + std::uniform_real_distribution<double>(-0.5, 0.5)(g);
  m.scale = std::uniform_real_distribution<double>(0.01, 16.0)(g);
  return m;
}

guint getUint(const GstStructure* s, const char* field) {
  guint v = 0;
  EXPECT_TRUE(gst_structure_get_uint(s, field, &v)) << field;
  return v;
}
double getDouble(const GstStructure* s, const char* field) {
  double v = NAN;
  EXPECT_TRUE(gst_structure_get_double(s, field, &v)) << field;
  return v;
}
guint64 getUint64(const GstStructure* s, const char* field) {
  guint64 v = 0;
  EXPECT_TRUE(gst_structure_get_uint64(s, field, &v)) << field;
  return v;
}

class MatchReporting : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { nccmatch::test::initGstreamer(); }
};

TEST_F(MatchReporting, TemplateMatchResultFollowsTemplatematch) {
  struct Case {
    Method method;
    double best, result;
  };
  const Case cases[] = {
      {Method::SqDiff, 1234.0, 1234.0},       // the minimum itself
      {Method::SqDiffNormed, 0.25, 0.75},     // 1 - minimum
      {Method::SqDiffNormed, 0.0, 1.0},
      {Method::CCorr, 5e7, 5e7},              // the maximum
      {Method::CCorrNormed, 0.9, 0.9},
      {Method::CCoeff, -3.5, -3.5},
      {Method::CCoeffNormed, -1.0, -1.0},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(methodName(c.method));
    EXPECT_DOUBLE_EQ(templateMatchResult(c.best, c.method), c.result);
    Match m = randomMatch(0);
    m.score = c.best;
    GstStructure* s = makeTemplateMatchStructure(m, c.method);
    EXPECT_TRUE(gst_structure_has_name(s, "template_match"));
    EXPECT_EQ(gst_structure_n_fields(s), 5);
    EXPECT_EQ(getUint(s, "x"), guint(m.x));
    EXPECT_EQ(getUint(s, "y"), guint(m.y));
    EXPECT_EQ(getUint(s, "width"), guint(m.width));
    EXPECT_EQ(getUint(s, "height"), guint(m.height));
    EXPECT_DOUBLE_EQ(getDouble(s, "result"), c.result);
    gst_structure_free(s);
  }
}

TEST_F(MatchReporting, NccMatchMessageListsEveryMatch) {
  const std::vector<std::string> names = {"star", "ring", "cross"};
  for (std::size_t count : {0u, 1u, 5u}) {
    SCOPED_TRACE(count);
    std::vector<Match> matches;
    for (std::size_t i = 0; i < count; ++i) matches.push_back(randomMatch(uint32_t(i % names.size())));
    FrameTiming timing{3 * GST_SECOND, 2 * GST_SECOND, GST_SECOND, GST_SECOND / 30};
    GstStructure* s = makeNccMatchStructure(matches, names, timing, 7);
    EXPECT_TRUE(gst_structure_has_name(s, "nccmatch"));
    EXPECT_EQ(getUint64(s, "timestamp"), timing.timestamp);
    EXPECT_EQ(getUint64(s, "stream-time"), timing.streamTime);
    EXPECT_EQ(getUint64(s, "running-time"), timing.runningTime);
    EXPECT_EQ(getUint64(s, "duration"), timing.duration);
    EXPECT_EQ(getUint64(s, "settings-generation"), 7u);
    const GValue* list = gst_structure_get_value(s, "matches");
    ASSERT_NE(list, nullptr);
    ASSERT_TRUE(GST_VALUE_HOLDS_LIST(list));
    ASSERT_EQ(gst_value_list_get_size(list), count);
    for (std::size_t i = 0; i < count; ++i) {
      const GValue* item = gst_value_list_get_value(list, guint(i));
      ASSERT_TRUE(GST_VALUE_HOLDS_STRUCTURE(item));
      const GstStructure* m = gst_value_get_structure(item);
      const Match& want = matches[i];
      EXPECT_TRUE(gst_structure_has_name(m, "match"));
      EXPECT_EQ(getUint(m, "template"), want.templateIndex);
      EXPECT_STREQ(gst_structure_get_string(m, "name"), names[want.templateIndex].c_str());
      EXPECT_EQ(getUint(m, "x"), guint(want.x));
      EXPECT_EQ(getUint(m, "y"), guint(want.y));
      EXPECT_EQ(getUint(m, "width"), guint(want.width));
      EXPECT_EQ(getUint(m, "height"), guint(want.height));
      EXPECT_DOUBLE_EQ(getDouble(m, "score"), want.score);
      EXPECT_DOUBLE_EQ(getDouble(m, "sub-x"), want.subX);
      EXPECT_DOUBLE_EQ(getDouble(m, "sub-y"), want.subY);
      EXPECT_DOUBLE_EQ(getDouble(m, "scale"), want.scale);
    }
    gst_structure_free(s);
  }
}

TEST_F(MatchReporting, UnknownTimesStayNone) {
  GstStructure* s = makeNccMatchStructure({}, {}, FrameTiming{}, 0);
  EXPECT_EQ(getUint64(s, "timestamp"), GST_CLOCK_TIME_NONE);
  EXPECT_EQ(getUint64(s, "running-time"), GST_CLOCK_TIME_NONE);
  gst_structure_free(s);
}

TEST_F(MatchReporting, OneRoiMetaPerMatchWithParams) {
  const std::vector<std::string> names = {"a", "b"};
  std::vector<Match> matches = {randomMatch(0), randomMatch(1), randomMatch(1)};
  GstBuffer* buffer = gst_buffer_new_allocate(nullptr, 16, nullptr);
  attachRoiMetas(buffer, matches, names);
  std::vector<GstVideoRegionOfInterestMeta*> rois;
  gpointer state = nullptr;
  while (GstMeta* meta = gst_buffer_iterate_meta_filtered(buffer, &state, GST_VIDEO_REGION_OF_INTEREST_META_API_TYPE))
    rois.push_back(reinterpret_cast<GstVideoRegionOfInterestMeta*>(meta));
  ASSERT_EQ(rois.size(), matches.size());
  // GstBuffer keeps metas in its own order: pair each match with the meta of the same box.
  for (const Match& want : matches) {
    GstVideoRegionOfInterestMeta* roi = nullptr;
    for (GstVideoRegionOfInterestMeta* r : rois)
      if (r->x == guint(want.x) && r->y == guint(want.y) && r->w == guint(want.width) && r->h == guint(want.height))
        roi = r;
    ASSERT_NE(roi, nullptr) << "no meta for the box at " << want.x << "," << want.y;
    EXPECT_STREQ(g_quark_to_string(roi->roi_type), names[want.templateIndex].c_str());
    GstStructure* p = gst_video_region_of_interest_meta_get_param(roi, "nccmatch");
    ASSERT_NE(p, nullptr);
    EXPECT_DOUBLE_EQ(getDouble(p, "score"), want.score);
    EXPECT_EQ(getUint(p, "template"), want.templateIndex);
    EXPECT_DOUBLE_EQ(getDouble(p, "sub-x"), want.subX);
    EXPECT_DOUBLE_EQ(getDouble(p, "sub-y"), want.subY);
    EXPECT_DOUBLE_EQ(getDouble(p, "scale"), want.scale);
  }
  gst_buffer_unref(buffer);
}

TEST_F(MatchReporting, TracksInTheMessageAndTheMeta) {
  const std::vector<std::string> names = {"a", "b"};
  // Distinct boxes, so each meta pairs with one match.
  std::vector<Match> matches = {randomMatch(0), randomMatch(1), randomMatch(1)};
  for (std::size_t k = 0; k < matches.size(); ++k) matches[k].x = int(100 * k);
  TrackReport tracks;
  tracks.tags = {{1, "new"}, {42, "tracked"}, {guint64(G_MAXINT) + 5, "reacquired"}};
  tracks.lost = {7, 9};
  tracks.ended = {};
  GstStructure* s = makeNccMatchStructure(matches, names, FrameTiming(), 3, &tracks);
  const GValue* list = gst_structure_get_value(s, "matches");
  ASSERT_EQ(gst_value_list_get_size(list), 3u);
  for (guint k = 0; k < 3; ++k) {
    const GstStructure* m = gst_value_get_structure(gst_value_list_get_value(list, k));
    EXPECT_EQ(getUint64(m, "track-id"), tracks.tags[k].id);
    EXPECT_STREQ(gst_structure_get_string(m, "track-state"), tracks.tags[k].state);
  }
  for (const auto& [field, want] : {std::make_pair("lost-tracks", tracks.lost), std::make_pair("ended-tracks", tracks.ended)}) {
    const GValue* array = gst_structure_get_value(s, field);
    ASSERT_NE(array, nullptr) << field;
    ASSERT_TRUE(GST_VALUE_HOLDS_ARRAY(array)) << field;
    ASSERT_EQ(gst_value_array_get_size(array), want.size()) << field;
    for (guint i = 0; i < want.size(); ++i) EXPECT_EQ(g_value_get_uint64(gst_value_array_get_value(array, i)), want[i]);
  }
  gst_structure_free(s);
  // Without tracks (detect mode) none of the fields.
  s = makeNccMatchStructure(matches, names, FrameTiming(), 3);
  EXPECT_FALSE(gst_structure_has_field(s, "lost-tracks"));
  EXPECT_FALSE(gst_structure_has_field(s, "ended-tracks"));
  EXPECT_FALSE(gst_structure_has_field(gst_value_get_structure(gst_value_list_get_value(gst_structure_get_value(s, "matches"), 0)),
                                       "track-id"));
  gst_structure_free(s);

  GstBuffer* buffer = gst_buffer_new_allocate(nullptr, 16, nullptr);
  attachRoiMetas(buffer, matches, names, &tracks);
  gpointer state = nullptr;
  int seen = 0;
  while (GstMeta* meta = gst_buffer_iterate_meta_filtered(buffer, &state, GST_VIDEO_REGION_OF_INTEREST_META_API_TYPE)) {
    auto* roi = reinterpret_cast<GstVideoRegionOfInterestMeta*>(meta);
    const std::size_t k = roi->x / 100;
    ASSERT_LT(k, matches.size());
    const GstStructure* p = gst_video_region_of_interest_meta_get_param(roi, "nccmatch");
    EXPECT_EQ(getUint64(p, "track-id"), tracks.tags[k].id);
    EXPECT_STREQ(gst_structure_get_string(p, "track-state"), tracks.tags[k].state);
    EXPECT_EQ(roi->id, k == 2 ? -1 : gint(tracks.tags[k].id)) << "an id past G_MAXINT is -1 in the meta";
    ++seen;
  }
  EXPECT_EQ(seen, 3);
  gst_buffer_unref(buffer);
}

TEST_F(MatchReporting, NoMatchesNoMeta) {
  GstBuffer* buffer = gst_buffer_new_allocate(nullptr, 16, nullptr);
  attachRoiMetas(buffer, {}, {"a"});
  EXPECT_EQ(gst_buffer_get_n_meta(buffer, GST_VIDEO_REGION_OF_INTEREST_META_API_TYPE), 0u);
  gst_buffer_unref(buffer);
}

}  // namespace
}  // namespace nccmatch::plugin
