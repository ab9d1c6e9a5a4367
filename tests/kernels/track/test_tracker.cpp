// The Tracker on synthetic scenes (track_scene.hpp) with the CPU engine: every object keeps one
// id while it can be seen, a hidden one keeps its id when back within lost-frames and gets a new
// one after, no id is reused, states and lost/ended lists follow the tracks; regions are
// searched only between full-frame searches; template-update and scales; endAll.
#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <set>

#include "nccmatch/tracker.hpp"
#include "test_support.hpp"
#include "track_scene.hpp"

namespace nccmatch::test {
namespace {

constexpr int kFrames = 60;

struct SceneRun {
  std::vector<std::vector<TruthBox>> truth;
  std::vector<TrackerFrame> frames;
};

MatchParams trackParams() {
  MatchParams params;
  params.threshold = 0.7;
  params.maxMatches = 8;
  params.nmsIou = 0.3;
  return params;
}

SceneRun runScene(const Scene& scene, Engine& engine, const TrackerOptions& options, int frames = kFrames) {
  SceneRun run;
  Tracker tracker;
  EXPECT_TRUE(tracker.setOptions(options).ok());
  EXPECT_TRUE(engine.setTemplates(scene.templates).ok());
  for (int t = 0; t < frames; ++t) {
    std::vector<TruthBox> truth;
    const Image img = scene.frame(t, &truth);
    TrackerFrame out;
    const Status st = tracker.track(engine, img.view(), trackParams(), &out);
    EXPECT_TRUE(st.ok()) << st.message();
    run.truth.push_back(truth);
    run.frames.push_back(out);
  }
  return run;
}

// The object a match is of: same template, within a pixel of where it was drawn; -1 for none.
int objectOf(const Scene& scene, const std::vector<TruthBox>& truth, const Match& m) {
  for (std::size_t k = 0; k < truth.size(); ++k)
    if (truth[k].drawn && scene.objects[k].templateIndex == m.templateIndex && std::abs(truth[k].x - m.x) <= 1 &&
        std::abs(truth[k].y - m.y) <= 1)
      return int(k);
  return -1;
}

// Checks the rules every run must keep, and returns each object's ids in order of appearance.
std::vector<std::vector<uint64_t>> checkRun(const Scene& scene, const SceneRun& run, const TrackerOptions& options) {
  const std::size_t objects = scene.objects.size();
  std::vector<std::vector<uint64_t>> ids(objects);
  std::map<uint64_t, int> owner;            // id -> object
  std::map<uint64_t, int> lastSeen;         // id -> frame of its last match
  std::set<uint64_t> ended;
  uint64_t highest = 0;
  std::vector<int> firstMatch(objects, -1);
  for (int t = 0; t < int(run.frames.size()); ++t) {
    const TrackerFrame& f = run.frames[t];
    std::set<int> seenObjects;
    for (const TrackedMatch& m : f.matches) {
      const int o = objectOf(scene, run.truth[t], m.match);
      EXPECT_GE(o, 0) << "frame " << t << ": a match at " << m.match.x << "," << m.match.y << " of template "
                      << m.match.templateIndex << " is no object; seed " << scene.seed;
      if (o < 0) continue;
      EXPECT_TRUE(seenObjects.insert(o).second) << "frame " << t << ": object " << o << " matched twice";
      EXPECT_EQ(ended.count(m.trackId), 0u) << "frame " << t << ": ended id " << m.trackId << " reused";
      auto [it, fresh] = owner.emplace(m.trackId, o);
      EXPECT_EQ(it->second, o) << "frame " << t << ": id " << m.trackId << " moved from object " << it->second
                               << " to " << o;
      if (fresh) {
        EXPECT_GT(m.trackId, highest) << "frame " << t << ": a new id must be larger than every earlier one";
        highest = m.trackId;
        EXPECT_EQ(m.state, TrackState::New) << "frame " << t;
        ids[o].push_back(m.trackId);
      } else {
        const bool gap = lastSeen[m.trackId] < t - 1;
        EXPECT_EQ(m.state, gap ? TrackState::Reacquired : TrackState::Tracked) << "frame " << t << " id " << m.trackId;
        EXPECT_LE(t - lastSeen[m.trackId] - 1, options.lostFrames) << "id " << m.trackId;
      }
      lastSeen[m.trackId] = t;
      if (firstMatch[o] < 0) firstMatch[o] = t;
    }
    for (uint64_t id : f.lostTracks) {
      EXPECT_TRUE(owner.count(id)) << "frame " << t << ": lost id " << id << " never matched";
      EXPECT_LE(t - lastSeen[id], options.lostFrames) << "frame " << t << " id " << id;
    }
    for (uint64_t id : f.endedTracks) {
      EXPECT_TRUE(ended.insert(id).second) << "id " << id << " ended twice";
      EXPECT_EQ(t - lastSeen[id], options.lostFrames + 1) << "frame " << t << " id " << id;
    }
    // Every object seen whole and uncovered is matched once its track exists in this episode.
    for (std::size_t o = 0; o < objects; ++o) {
      const TruthBox& b = run.truth[t][o];
      if (!b.whole || b.occluded || ids[o].empty() || seenObjects.count(int(o))) continue;
      const uint64_t id = ids[o].back();
      const bool live = !ended.count(id);
      EXPECT_FALSE(live && lastSeen[id] == t - 1)
          << "frame " << t << ": object " << o << " (id " << id << ") seen whole but not matched; seed " << scene.seed;
    }
  }
  return ids;
}

TEST(Tracker, ObjectsKeepTheirIdsThroughTheScene) {
  TrackerOptions options;  // margin 32, lost 15, interval 10
  const Scene scene = trackingScene(options.lostFrames, testSeed());
  auto engine = makeCpuEngine(CpuPath::Auto);
  const SceneRun run = runScene(scene, *engine, options);
  const std::vector<std::vector<uint64_t>> ids = checkRun(scene, run, options);
  const char* names = "ABCDEFGH";
  for (std::size_t o = 0; o < ids.size(); ++o) {
    const std::size_t want = o == 5 ? 2 : 1;  // F is hidden longer than lost-frames: a new id after
    EXPECT_EQ(ids[o].size(), want) << "object " << names[o] << "; seed " << scene.seed;
  }
  // F's first id ended while it was hidden; E (hidden shorter) came back Reacquired.
  std::set<uint64_t> endedIds;
  bool eReacquired = false;
  for (const TrackerFrame& f : run.frames) {
    endedIds.insert(f.endedTracks.begin(), f.endedTracks.end());
    for (const TrackedMatch& m : f.matches)
      eReacquired = eReacquired || (!ids[4].empty() && m.trackId == ids[4][0] && m.state == TrackState::Reacquired);
  }
  ASSERT_FALSE(ids[5].empty());
  EXPECT_TRUE(endedIds.count(ids[5][0]));
  EXPECT_TRUE(eReacquired);
  ASSERT_FALSE(ids[6].empty());
  EXPECT_TRUE(endedIds.count(ids[6][0])) << "G left the frame: its track ends";
}

TEST(Tracker, WindowsBetweenFullFrameSearches) {
  TrackerOptions options;
  options.acquireInterval = 10;
  const Scene scene = trackingScene(options.lostFrames, testSeed());
  auto engine = makeCpuEngine(CpuPath::Auto);
  const SceneRun run = runScene(scene, *engine, options, 25);
  EXPECT_TRUE(run.frames[0].fullFrameSearch);
  EXPECT_FALSE(run.frames[1].fullFrameSearch);
  EXPECT_EQ(run.frames[1].regionsSearched, run.frames[0].matches.size());  // one window per track
  EXPECT_TRUE(run.frames[10].fullFrameSearch);
  EXPECT_TRUE(run.frames[20].fullFrameSearch);
  for (int t : {1, 5, 9, 11, 19}) EXPECT_FALSE(run.frames[t].fullFrameSearch) << t;
}

TEST(Tracker, AcquireIntervalZeroSearchesWholeFramesOnlyWhileNothingIsMatched) {
  TrackerOptions options;
  options.acquireInterval = 0;
  const Scene scene = trackingScene(options.lostFrames, testSeed());
  auto engine = makeCpuEngine(CpuPath::Auto);
  const SceneRun run = runScene(scene, *engine, options);
  int full = 0;
  for (const TrackerFrame& f : run.frames) full += f.fullFrameSearch ? 1 : 0;
  EXPECT_EQ(full, 1);  // the first frame; something is matched in every frame after it
  checkRun(scene, run, options);
  // H enters after the only full search: it is never acquired, F never again after it ended.
}

TEST(Tracker, TemplateUpdateKeepsTheIds) {
  TrackerOptions options;
  options.templateUpdate = 0.3;
  const Scene scene = trackingScene(options.lostFrames, testSeed());
  auto engine = makeCpuEngine(CpuPath::Auto);
  const SceneRun run = runScene(scene, *engine, options);
  const std::vector<std::vector<uint64_t>> ids = checkRun(scene, run, options);
  for (std::size_t o = 0; o < ids.size(); ++o) EXPECT_EQ(ids[o].size(), o == 5 ? 2u : 1u) << "object " << o;
}

TEST(Tracker, LostFramesZeroEndsATrackAtItsFirstMiss) {
  TrackerOptions options;
  options.lostFrames = 0;
  const Scene scene = trackingScene(4, testSeed());  // E hidden 1 frame, F 9
  auto engine = makeCpuEngine(CpuPath::Auto);
  const SceneRun run = runScene(scene, *engine, options);
  const std::vector<std::vector<uint64_t>> ids = checkRun(scene, run, options);
  EXPECT_EQ(ids[4].size(), 2u);  // even one hidden frame ends E's track
  EXPECT_EQ(ids[5].size(), 2u);
  for (const TrackerFrame& f : run.frames) EXPECT_TRUE(f.lostTracks.empty());
}

TEST(Tracker, EndAllReportsEveryLiveTrackOnceAndIdsGoOn) {
  TrackerOptions options;
  const Scene scene = trackingScene(options.lostFrames, testSeed());
  auto engine = makeCpuEngine(CpuPath::Auto);
  ASSERT_TRUE(engine->setTemplates(scene.templates).ok());
  Tracker tracker(options);
  std::vector<TruthBox> truth;
  TrackerFrame f0, f1, f2;
  ASSERT_TRUE(tracker.track(*engine, scene.frame(0, &truth).view(), trackParams(), &f0).ok());
  ASSERT_GE(f0.matches.size(), 5u);
  EXPECT_EQ(tracker.liveTracks(), f0.matches.size());
  const uint64_t next = tracker.nextId();
  tracker.endAll();
  EXPECT_EQ(tracker.liveTracks(), 0u);
  ASSERT_TRUE(tracker.track(*engine, scene.frame(1, &truth).view(), trackParams(), &f1).ok());
  EXPECT_TRUE(f1.fullFrameSearch);
  EXPECT_EQ(f1.endedTracks.size(), f0.matches.size());
  for (const TrackedMatch& m : f1.matches) {
    EXPECT_EQ(m.state, TrackState::New);
    EXPECT_GE(m.trackId, next);
  }
  ASSERT_TRUE(tracker.track(*engine, scene.frame(2, &truth).view(), trackParams(), &f2).ok());
  EXPECT_TRUE(f2.endedTracks.empty());
}

TEST(Tracker, ScaledBankTracksOriginals) {
  TrackerOptions options;
  const Scene scene = trackingScene(options.lostFrames, testSeed());
  ScaledBank scaled;
  ASSERT_TRUE(scaleTemplates(scene.templates, {0.9, 1.0}, &scaled).ok());
  auto engine = makeCpuEngine(CpuPath::Auto);
  ASSERT_TRUE(engine->setTemplates(scaled.templates).ok());
  Tracker tracker(options);
  std::map<uint64_t, int> owner;
  for (int t = 0; t < 30; ++t) {
    std::vector<TruthBox> truth;
    const Image img = scene.frame(t, &truth);
    TrackerFrame out;
    ASSERT_TRUE(tracker.track(*engine, img.view(), trackParams(), scaled, &out).ok());
    if (t > 0) {
      EXPECT_EQ(out.fullFrameSearch, t % 10 == 0) << t;
    }
    if (!out.fullFrameSearch) {
      EXPECT_EQ(out.regionsSearched % 2, 0u);  // each window at both scales
    }
    for (const TrackedMatch& m : out.matches) {
      EXPECT_EQ(m.match.scale, 1.0);  // the objects are drawn at scale 1
      const int o = objectOf(scene, truth, m.match);
      ASSERT_GE(o, 0) << "frame " << t;
      auto [it, fresh] = owner.emplace(m.trackId, o);
      EXPECT_EQ(it->second, o);
    }
  }
  // A scaled bank that is not the engine's is refused.
  ScaledBank other;
  ASSERT_TRUE(scaleTemplates({scene.templates[0]}, {1.0}, &other).ok());
  std::vector<TruthBox> truth;
  TrackerFrame out;
  EXPECT_FALSE(tracker.track(*engine, scene.frame(0, &truth).view(), trackParams(), other, &out).ok());
  EXPECT_FALSE(tracker.track(*engine, scene.frame(0, &truth).view(), trackParams(), nullptr).ok());
}

}  // namespace
}  // namespace nccmatch::test
