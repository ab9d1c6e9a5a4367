// The tracker's pure parts: constant-velocity prediction, the search window and its growth, the
// gate, greedy assignment, the full-search schedule, template blending, the windows' results
// combined, and the options' ranges.
#include <gtest/gtest.h>

#include <algorithm>
#include <random>
#include <tuple>

#include "nccmatch/tracker.hpp"
#include "test_support.hpp"
#include "track/region_detections.hpp"
#include "track/template_blend.hpp"
#include "track/track_assignment.hpp"
#include "track/track_motion.hpp"
#include "track/track_schedule.hpp"

namespace nccmatch::track {
namespace {

TEST(TrackMotion, PredictsAtConstantVelocity) {
  const Point v = velocityBetween(Point{10, 20}, Point{16, 17}, 3);
  EXPECT_DOUBLE_EQ(v.x, 2.0);
  EXPECT_DOUBLE_EQ(v.y, -1.0);
  const Point p = predictCorner(Point{16, 17}, v.x, v.y, 4);
  EXPECT_DOUBLE_EQ(p.x, 24.0);
  EXPECT_DOUBLE_EQ(p.y, 13.0);
  const Point still = predictCorner(Point{5.5, 6.25}, 0, 0, 100);
  EXPECT_DOUBLE_EQ(still.x, 5.5);
  EXPECT_DOUBLE_EQ(still.y, 6.25);
}

TEST(TrackMotion, MarginGrowsWithEachLostFrameAndNeverOverflows) {
  EXPECT_EQ(marginAfterMissed(32, 0), 32);
  EXPECT_EQ(marginAfterMissed(32, 1), 64);
  EXPECT_EQ(marginAfterMissed(32, 5), 192);
  EXPECT_EQ(marginAfterMissed(0, 7), 0);
  EXPECT_EQ(marginAfterMissed(16384, 1000000), 1 << 20);
  EXPECT_EQ(marginAfterMissed(32, -3), 32);
}

TEST(TrackMotion, WindowIsTheGrownBoxClippedToTheFrame) {
  struct Case {
    Point corner;
    int w, h, margin, fw, fh;
    Window want;
  };
  const std::vector<Case> cases = {
      //  corner        w   h  margin  frame      window
      {{50, 40}, 10, 8, 5, 200, 100, {45, 35, 20, 18}},
      {{50.5, 40.2}, 10, 8, 5, 200, 100, {46, 35, 20, 18}},   // fractional: rounded
      {{50.49, 40.7}, 10, 8, 5, 200, 100, {45, 36, 20, 18}},
      {{2, 3}, 10, 8, 5, 200, 100, {0, 0, 17, 16}},           // clipped at the top-left
      {{195, 95}, 10, 8, 5, 200, 100, {190, 90, 10, 10}},     // clipped at the bottom-right
      {{-40, 10}, 10, 8, 5, 200, 100, {0, 0, 0, 0}},          // wholly outside: empty
      {{0, 0}, 1, 1, 0, 1, 1, {0, 0, 1, 1}},                  // 1x1 in a 1x1 frame
      {{-3, -3}, 200, 100, 1, 200, 100, {0, 0, 198, 98}},
  };
  for (const Case& c : cases) {
    const Window w = searchWindow(c.corner, c.w, c.h, c.margin, c.fw, c.fh);
    EXPECT_EQ(w.x, c.want.x) << c.corner.x << "," << c.corner.y;
    EXPECT_EQ(w.y, c.want.y);
    EXPECT_EQ(w.width, c.want.width) << c.corner.x << "," << c.corner.y;
    EXPECT_EQ(w.height, c.want.height);
  }
}

TEST(TrackMotion, GateIsTheMarginAlongEachAxis) {
  EXPECT_TRUE(withinGate(Point{10, 10}, 5, 16, 4));
  EXPECT_FALSE(withinGate(Point{10, 10}, 5, 16.5, 10));
  EXPECT_FALSE(withinGate(Point{10, 10}, 5, 10, 3.9));
  EXPECT_TRUE(withinGate(Point{10, 10}, 0, 11, 9));
}

TEST(TrackAssignment, ClosestPairsFirstSameTemplateWithinTheGate) {
  const std::vector<Prediction> p = {
      {0, {10, 10}, 20},  // 0
      {0, {30, 10}, 20},  // 1
      {1, {10, 10}, 20},  // 2: template 1
      {0, {200, 200}, 5}, // 3: nothing near
  };
  const std::vector<Candidate> c = {
      {0, {27, 10}},  // 0: closest to prediction 1 (3 px), also near 0 (17 px)
      {0, {12, 11}},  // 1: near prediction 0
      {1, {40, 10}},  // 2: template 1, 30 px from prediction 2: outside its gate
      {0, {205, 204}},// 3: within prediction 3's gate
  };
  const std::vector<int> a = assignGreedy(p, c);
  ASSERT_EQ(a.size(), 4u);
  EXPECT_EQ(a[0], 1);
  EXPECT_EQ(a[1], 0);
  EXPECT_EQ(a[2], -1);
  EXPECT_EQ(a[3], 3);
}

TEST(TrackAssignment, CrossingTracksKeepTheirPredictedSides) {
  // Two tracks moving towards each other, predicted past one another: each match goes to the
  // prediction it is closest to, not to the track that was nearest in the last frame.
  const std::vector<Prediction> p = {{0, {52, 10}, 32}, {0, {48, 10}, 32}};
  const std::vector<Candidate> c = {{0, {47, 10}}, {0, {53, 10}}};
  const std::vector<int> a = assignGreedy(p, c);
  EXPECT_EQ(a[0], 1);
  EXPECT_EQ(a[1], 0);
}

TEST(TrackAssignment, EmptyInputsAndTiesAreDeterministic) {
  EXPECT_TRUE(assignGreedy({}, {{0, {1, 1}}}).empty());
  EXPECT_EQ(assignGreedy({{0, {1, 1}, 3}}, {}), std::vector<int>({-1}));
  // Two predictions at the same distance from one candidate: the first prediction takes it.
  const std::vector<int> a = assignGreedy({{0, {0, 0}, 10}, {0, {4, 0}, 10}}, {{0, {2, 0}}});
  EXPECT_EQ(a, std::vector<int>({0, -1}));
}

// The assignment as its header states it, written plainly: every gated pair of one template,
// sorted by distance, then prediction, then candidate, taken greedily.
std::vector<int> assignByDefinition(const std::vector<Prediction>& p, const std::vector<Candidate>& c) {
  std::vector<std::tuple<double, int, int>> pairs;
  for (std::size_t i = 0; i < p.size(); ++i)
    for (std::size_t j = 0; j < c.size(); ++j) {
      const bool gated = withinGate(p[i].corner, p[i].margin, c[j].corner.x, c[j].corner.y);
      if (p[i].templateIndex != c[j].templateIndex || !gated) continue;
      const double dx = c[j].corner.x - p[i].corner.x, dy = c[j].corner.y - p[i].corner.y;
      pairs.emplace_back(dx * dx + dy * dy, int(i), int(j));
    }
  std::sort(pairs.begin(), pairs.end());
  std::vector<int> assigned(p.size(), -1);
  std::vector<bool> taken(c.size(), false);
  for (const auto& [distance, i, j] : pairs) {
    if (assigned[i] >= 0 || taken[j]) continue;
    assigned[i] = j;
    taken[j] = true;
  }
  return assigned;
}

// Random frames (seed printed by test_support): few templates, candidates grouped by template (as
// a frame's matches are) or shuffled, sparse (each prediction its own candidate) or crowded
// (contested candidates); both overloads, the scratch one reused from frame to frame, equal the
// definition.
TEST(TrackAssignment, RandomFramesEqualTheDefinition) {
  std::mt19937_64& g = test::rng();
  AssignScratch scratch;
  std::vector<int> reused;
  for (int frame = 0; frame < 2000; ++frame) {
    const bool crowded = frame % 2 == 1, grouped = frame % 4 < 2;
    const int templates = 1 + int(g() % 4), predictions = int(g() % 12), candidates = int(g() % 12);
    const double spread = crowded ? 40.0 : 2000.0;
    std::uniform_real_distribution<double> at(0.0, spread);
    std::vector<Prediction> p;
    for (int i = 0; i < predictions; ++i)
      p.push_back(Prediction{uint32_t(g() % templates), Point{at(g), at(g)}, 4 + int(g() % 30)});
    std::vector<Candidate> c;
    for (int j = 0; j < candidates; ++j) {
      // Some candidates near a prediction, some exactly between two (ties), the rest anywhere.
      const int kind = int(g() % 3);
      Point where{at(g), at(g)};
      if (kind == 0 && !p.empty()) where = p[g() % p.size()].corner;
      if (kind == 1 && p.size() >= 2)
        where = Point{(p[0].corner.x + p[1].corner.x) / 2, (p[0].corner.y + p[1].corner.y) / 2};
      c.push_back(Candidate{uint32_t(g() % templates), where});
    }
    if (grouped)
      std::stable_sort(c.begin(), c.end(),
                       [](const Candidate& a, const Candidate& b) { return a.templateIndex < b.templateIndex; });
    const std::vector<int> want = assignByDefinition(p, c);
    ASSERT_EQ(assignGreedy(p, c), want) << "frame " << frame;
    assignGreedy(p, c, &scratch, &reused);
    ASSERT_EQ(reused, want) << "frame " << frame << " (scratch reused)";
  }
}

TEST(TrackSchedule, WholeFrameWhileNothingIsMatchedElseEveryInterval) {
  EXPECT_TRUE(fullSearchDue(0, -1, 10, false));
  EXPECT_TRUE(fullSearchDue(5, 2, 10, false));   // nothing matched last frame
  EXPECT_FALSE(fullSearchDue(5, 0, 10, true));
  EXPECT_TRUE(fullSearchDue(10, 0, 10, true));
  EXPECT_FALSE(fullSearchDue(11, 10, 0, true));  // interval 0: only while nothing matched
  EXPECT_TRUE(fullSearchDue(11, 10, 0, false));
  EXPECT_TRUE(fullSearchDue(11, 10, 1, true));
}

TEST(TemplateBlend, MovesTheCopyTowardsThePatch) {
  TemplateImage source;
  source.width = 3;
  source.height = 1;
  source.pixels = {0, 100, 255};
  std::vector<double> blend;
  TemplateImage own;
  startBlend(source, &blend, &own);
  EXPECT_EQ(own.pixels, source.pixels);
  blendTemplate({255, 100, 0}, 0.25, &blend, &own);
  EXPECT_DOUBLE_EQ(blend[0], 63.75);
  EXPECT_DOUBLE_EQ(blend[2], 191.25);
  EXPECT_EQ(own.pixels, std::vector<uint8_t>({64, 100, 191}));
  blendTemplate({1, 1, 1}, 1.0, &blend, &own);
  EXPECT_EQ(own.pixels, std::vector<uint8_t>({1, 1, 1}));
  blendTemplate({200, 200, 200}, 0.0, &blend, &own);
  EXPECT_EQ(own.pixels, std::vector<uint8_t>({1, 1, 1}));
  // Small updates accumulate in the blend instead of being lost to rounding.
  startBlend(source, &blend, &own);
  for (int i = 0; i < 10; ++i) blendTemplate({10, 110, 255}, 0.05, &blend, &own);
  EXPECT_EQ(own.pixels[0], 4);  // 10 * (1 - 0.95^10) = 4.01
}

Match at(uint32_t t, int x, int y, double score) {
  Match m;
  m.templateIndex = t;
  m.x = x;
  m.y = y;
  m.subX = x;
  m.subY = y;
  m.width = 10;
  m.height = 10;
  m.score = score;
  return m;
}

TEST(RegionDetections, WindowsMergedPerTemplateWithNmsAndMaxMatches) {
  std::vector<RegionQuery> regions = {{0, 0, 50, 50, 0, nullptr}, {20, 0, 50, 50, 0, nullptr}, {0, 0, 50, 50, 1, nullptr}};
  std::vector<RegionResult> results(3);
  results[0].matches = {at(0, 30, 5, 0.95), at(0, 2, 2, 0.85)};
  results[0].best = results[0].matches[0];
  results[1].matches = {at(0, 30, 5, 0.95), at(0, 31, 5, 0.9), at(0, 60, 5, 0.88)};  // a repeat, an overlap
  results[1].best = results[1].matches[0];
  results[2].matches = {at(1, 7, 7, 0.99)};
  results[2].best = results[2].matches[0];
  MatchParams params;
  params.maxMatches = 2;
  params.nmsIou = 0.3;
  FrameResult r = combineRegionResults(regions, results, 3, params);
  ASSERT_EQ(r.matches.size(), 3u);
  EXPECT_EQ(r.matches[0].x, 30);  // template 0: best first, the repeat and the overlap dropped
  EXPECT_EQ(r.matches[1].x, 60);  // max-matches 2 keeps 0.95 and 0.88 (0.85 is third)
  EXPECT_EQ(r.matches[2].templateIndex, 1u);
  ASSERT_EQ(r.best.size(), 3u);
  EXPECT_EQ(r.best[0]->x, 30);
  EXPECT_EQ(r.best[1]->x, 7);
  EXPECT_FALSE(r.best[2].has_value());
  // sqdiff: lower is better.
  params.method = Method::SqDiff;
  params.maxMatches = 1;
  r = combineRegionResults(regions, results, 3, params);
  EXPECT_EQ(r.matches[0].x, 2);
}

TEST(RegionDetections, TemplatesInterleavedOverTheWindowsComeOutInTemplateOrder) {
  // Windows of templates 1, 0, 1: template 0's matches first, then template 1's best first
  // across both of its windows.
  const std::vector<RegionQuery> regions = {
      {0, 0, 50, 50, 1, nullptr}, {0, 0, 50, 50, 0, nullptr}, {60, 0, 50, 50, 1, nullptr}};
  std::vector<RegionResult> results(3);
  results[0].matches = {at(1, 5, 5, 0.9)};
  results[1].matches = {at(0, 3, 3, 0.8)};
  results[2].matches = {at(1, 70, 5, 0.95)};
  MatchParams params;
  params.maxMatches = 5;
  const FrameResult r = combineRegionResults(regions, results, 2, params);
  ASSERT_EQ(r.matches.size(), 3u);
  EXPECT_EQ(r.matches[0].templateIndex, 0u);
  EXPECT_EQ(r.matches[1].x, 70);
  EXPECT_EQ(r.matches[2].x, 5);
  params.maxMatches = 0;  // none reported
  EXPECT_TRUE(combineRegionResults(regions, results, 2, params).matches.empty());
}

TEST(TrackerOptions, EachFieldWithinItsRange) {
  struct Case {
    TrackerOptions options;
    const char* names;  // empty: valid
  };
  auto with = [](int margin, int lost, int interval, double update) {
    TrackerOptions o;
    o.searchMargin = margin;
    o.lostFrames = lost;
    o.acquireInterval = interval;
    o.templateUpdate = update;
    return o;
  };
  const std::vector<Case> cases = {
      {with(32, 15, 10, 0), ""},
      {with(0, 0, 0, 1.0), ""},
      {with(16384, 1000000, 1000000, 0.5), ""},
      {with(-1, 15, 10, 0), "search-margin"},
      {with(16385, 15, 10, 0), "search-margin"},
      {with(32, -1, 10, 0), "lost-frames"},
      {with(32, 15, -1, 0), "acquire-interval"},
      {with(32, 15, 10, -0.01), "template-update"},
      {with(32, 15, 10, 1.5), "template-update"},
      {with(32, 15, 10, std::nan("")), "template-update"},
  };
  for (const Case& c : cases) {
    const Status st = validateTrackerOptions(c.options);
    if (std::string(c.names).empty()) {
      EXPECT_TRUE(st.ok()) << st.message();
    } else {
      ASSERT_FALSE(st.ok()) << c.names;
      EXPECT_NE(st.message().find(c.names), std::string::npos) << st.message();
    }
  }
  Tracker tracker;
  EXPECT_FALSE(tracker.setOptions(with(-5, 1, 1, 0)).ok());
  EXPECT_EQ(tracker.options().searchMargin, 32);  // the old options stay
  EXPECT_STREQ(trackStateName(TrackState::New), "new");
  EXPECT_STREQ(trackStateName(TrackState::Tracked), "tracked");
  EXPECT_STREQ(trackStateName(TrackState::Reacquired), "reacquired");
}

}  // namespace
}  // namespace nccmatch::track
