// The Tracker when its engine fails in the middle of a frame (a GPU fault: the element then tracks
// the same frame again on a CPU engine): a frame whose match, matchRegions or copyPatch call fails
// leaves the tracker as it was, so tracking the frame again gives exactly the frames, ids and
// states of a run that never failed. The engine here is the CPU engine behind a wrapper that fails
// one chosen call; every kind of call is failed at least once, at positions spread over the run.
#include <gtest/gtest.h>

#include <algorithm>
#include <set>
#include <string>

#include "nccmatch/tracker.hpp"
#include "test_support.hpp"
#include "track_scene.hpp"

namespace nccmatch::test {
namespace {

constexpr int kFrames = 30;  // full-frame searches at 0, 10 and 20; E is lost and back in between

// The CPU engine, except that engine call number `failAt` (0-based, counting match, matchRegions
// and copyPatch) fails once, naming itself as a CUDA error would.
class FailingEngine : public Engine {
 public:
  explicit FailingEngine(long failAt) : inner_(makeCpuEngine(CpuPath::Auto)), failAt_(failAt) {}

  Backend backend() const override { return inner_->backend(); }
  Status setTemplates(std::vector<TemplateImage> bank) override { return inner_->setTemplates(std::move(bank)); }
  const std::vector<TemplateImage>& templates() const override { return inner_->templates(); }
  Status match(const FrameView& frame, const MatchParams& params, FrameResult* result) override {
    NCC_RETURN_IF_ERROR(step("match"));
    return inner_->match(frame, params, result);
  }
  Status matchRegions(const FrameView& frame, const std::vector<RegionQuery>& regions, const MatchParams& params,
                      std::vector<RegionResult>* results) override {
    NCC_RETURN_IF_ERROR(step("matchRegions"));
    return inner_->matchRegions(frame, regions, params, results);
  }
  Status copyPatch(const FrameView& frame, int x, int y, int width, int height,
                   std::vector<uint8_t>* pixels) override {
    NCC_RETURN_IF_ERROR(step("copyPatch"));
    return inner_->copyPatch(frame, x, y, width, height, pixels);
  }
  Status scoreMap(const FrameView& frame, Method method, uint32_t templateIndex, std::vector<double>* map) override {
    return inner_->scoreMap(frame, method, templateIndex, map);
  }
  Status prepareRegionTemplates(std::vector<TemplateImage> templates, RegionTemplateSet* set) override {
    return inner_->prepareRegionTemplates(std::move(templates), set);
  }
  Status releaseRegionTemplates(RegionTemplateSet* set) override { return inner_->releaseRegionTemplates(set); }
  bool holdsRegionTemplates(const RegionTemplateSet& set) const override { return inner_->holdsRegionTemplates(set); }

  long calls() const { return calls_; }
  const std::vector<std::string>& kinds() const { return kinds_; }  // each call's kind, in order
  bool failed() const { return failed_; }

 private:
  Status step(const char* kind) {
    kinds_.push_back(kind);
    if (calls_++ != failAt_) return Status();
    failed_ = true;
    return Status::error(std::string(kind) + ": cudaErrorLaunchFailure (injected by the test)");
  }

  std::unique_ptr<Engine> inner_;
  long failAt_;
  long calls_ = 0;
  bool failed_ = false;
  std::vector<std::string> kinds_;
};

MatchParams trackParams() {
  MatchParams params;
  params.threshold = 0.7;
  params.maxMatches = 8;
  params.nmsIou = 0.3;
  return params;
}

// Tracks the scene's first kFrames frames; a frame whose tracking fails is tracked again (once).
std::vector<TrackerFrame> runScene(const Scene& scene, const TrackerOptions& options, FailingEngine& engine) {
  EXPECT_TRUE(engine.setTemplates(scene.templates).ok());
  Tracker tracker(options);
  std::vector<TrackerFrame> frames;
  for (int t = 0; t < kFrames; ++t) {
    std::vector<TruthBox> truth;
    const Image img = scene.frame(t, &truth);
    TrackerFrame out;
    Status st = tracker.track(engine, img.view(), trackParams(), &out);
    if (!st.ok()) st = tracker.track(engine, img.view(), trackParams(), &out);
    EXPECT_TRUE(st.ok()) << "frame " << t << ": " << st.message();
    frames.push_back(out);
  }
  return frames;
}

void expectSameFrames(const std::vector<TrackerFrame>& got, const std::vector<TrackerFrame>& want) {
  ASSERT_EQ(got.size(), want.size());
  for (std::size_t t = 0; t < want.size(); ++t) {
    SCOPED_TRACE(::testing::Message() << "frame " << t);
    EXPECT_EQ(got[t].fullFrameSearch, want[t].fullFrameSearch);
    EXPECT_EQ(got[t].regionsSearched, want[t].regionsSearched);
    EXPECT_EQ(got[t].lostTracks, want[t].lostTracks);
    EXPECT_EQ(got[t].endedTracks, want[t].endedTracks);
    ASSERT_EQ(got[t].matches.size(), want[t].matches.size());
    for (std::size_t i = 0; i < want[t].matches.size(); ++i) {
      const TrackedMatch &g = got[t].matches[i], &w = want[t].matches[i];
      EXPECT_EQ(g.trackId, w.trackId) << "match " << i;
      EXPECT_EQ(g.state, w.state) << "match " << i;
      EXPECT_EQ(g.match.templateIndex, w.match.templateIndex) << "match " << i;
      EXPECT_EQ(g.match.x, w.match.x) << "match " << i;
      EXPECT_EQ(g.match.y, w.match.y) << "match " << i;
      EXPECT_EQ(g.match.score, w.match.score) << "match " << i;
    }
  }
}

struct Case {
  const char* name;
  TrackerOptions options;
};

TrackerOptions withUpdate(double update) {
  TrackerOptions o;
  o.templateUpdate = update;
  return o;
}

TrackerOptions withInterval(int interval) {
  TrackerOptions o;
  o.acquireInterval = interval;
  return o;
}

TEST(TrackerFaults, AFailedFrameTrackedAgainGivesTheRunThatNeverFailed) {
  const Case cases[] = {
      {"defaults", TrackerOptions()},
      {"template-update 0.3 (copyPatch calls)", withUpdate(0.3)},
      {"acquire-interval 0", withInterval(0)},
  };
  const uint64_t seed = testSeed();
  constexpr long kPositions = 24;  // fault positions per case, spread over the run's calls
  for (const Case& c : cases) {
    SCOPED_TRACE(::testing::Message() << c.name << "; seed " << seed);
    const Scene scene = trackingScene(c.options.lostFrames, seed);
    FailingEngine clean(-1);
    const std::vector<TrackerFrame> want = runScene(scene, c.options, clean);
    ASSERT_GT(clean.calls(), 0);
    // The positions: spread evenly, and the first call of each kind.
    std::set<long> positions;
    for (long k = 0; k < kPositions; ++k) positions.insert(k * clean.calls() / kPositions);
    std::set<std::string> kinds;
    for (long i = 0; i < clean.calls(); ++i)
      if (kinds.insert(clean.kinds()[std::size_t(i)]).second) positions.insert(i);
    if (c.options.templateUpdate > 0.0) {
      EXPECT_TRUE(kinds.count("copyPatch")) << "template-update makes copyPatch calls";
    }
    for (long failAt : positions) {
      SCOPED_TRACE(::testing::Message() << "call " << failAt << " of " << clean.calls() << " ("
                                        << clean.kinds()[std::size_t(failAt)] << ") fails");
      FailingEngine engine(failAt);
      expectSameFrames(runScene(scene, c.options, engine), want);
      EXPECT_TRUE(engine.failed());
    }
  }
}

}  // namespace
}  // namespace nccmatch::test
