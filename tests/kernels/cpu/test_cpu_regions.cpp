// CpuEngine::matchRegions against its definition: for each region, what the Reference path's
// match() gives for that one template on a view of the region alone, moved to frame coordinates;
// every CPU path, the six methods, regions of 1x1, odd sizes, at the edges, smaller than the
// template, own images; templates of prepared sets (Engine::prepareRegionTemplates) give exactly
// what the same templates as own images give; and the refusals of bad regions.
#include <gtest/gtest.h>

#include <random>

#include "nccmatch/engine.hpp"
#include "region_set_scene.hpp"
#include "test_support.hpp"

namespace nccmatch::test {
namespace {

// The oracle: the template alone, matched on the region as a frame of its own.
RegionResult definition(const Image& img, const TemplateImage& t, const RegionQuery& r, const MatchParams& params) {
  auto engine = makeCpuEngine(CpuPath::Reference, 1);
  EXPECT_TRUE(engine->setTemplates({t}).ok());
  FrameView view = img.view();
  view.data += std::size_t(r.y) * view.stride + std::size_t(r.x);
  view.width = r.width;
  view.height = r.height;
  FrameResult result;
  Status st = engine->match(view, params, &result);
  EXPECT_TRUE(st.ok()) << st.message();
  RegionResult out;
  auto shift = [&](Match m) {
    m.x += r.x, m.y += r.y, m.subX += r.x, m.subY += r.y;
    m.templateIndex = r.templateIndex;
    return m;
  };
  for (const Match& m : result.matches) out.matches.push_back(shift(m));
  if (result.best[0]) out.best = shift(*result.best[0]);
  return out;
}

void expectSameMatch(const Match& got, const Match& want, const std::string& where) {
  EXPECT_EQ(got.templateIndex, want.templateIndex) << where;
  EXPECT_EQ(got.x, want.x) << where;
  EXPECT_EQ(got.y, want.y) << where;
  EXPECT_EQ(got.width, want.width) << where;
  EXPECT_EQ(got.height, want.height) << where;
  EXPECT_EQ(got.score, want.score) << where;
  EXPECT_EQ(got.subX, want.subX) << where;
  EXPECT_EQ(got.subY, want.subY) << where;
}

void expectSameResult(const RegionResult& got, const RegionResult& want, const std::string& where) {
  ASSERT_EQ(got.matches.size(), want.matches.size()) << where;
  for (std::size_t i = 0; i < got.matches.size(); ++i)
    expectSameMatch(got.matches[i], want.matches[i], where + " match " + std::to_string(i));
  ASSERT_EQ(got.best.has_value(), want.best.has_value()) << where;
  if (got.best) expectSameMatch(*got.best, *want.best, where + " best");
}

struct RegionCase {
  int x, y, w, h;     // the region
  int tpl;            // bank template (0: 7x5, 1: 1x1, 2: 16x16), or -1 for the own image (6x9)
};

TEST(CpuRegions, EachRegionIsTheMatchOfItsViewOnEveryPath) {
  Image img = makeImage(97, 71, Fill::Smooth, 5);
  std::vector<TemplateImage> bank = {makeTemplate(7, 5, Fill::Random, "a"), makeTemplate(1, 1, Fill::Random, "b"),
                                     cutTemplate(img, 40, 30, 16, 16, "c")};
  const TemplateImage own = cutTemplate(img, 11, 50, 6, 9, "own");
  paste(&img, bank[0], 3, 2);
  const std::vector<RegionCase> cases = {
      // x   y   w   h  template
      {0, 0, 97, 71, 0},    // the whole frame
      {0, 0, 20, 15, 0},    // the top-left corner, a pasted copy inside
      {90, 66, 7, 5, 0},    // the bottom-right corner, exactly the template's size
      {13, 17, 1, 1, 1},    // 1x1 region, 1x1 template
      {31, 9, 33, 23, 1},   // odd sizes
      {30, 22, 37, 31, 2},  // around the template's origin
      {5, 5, 10, 40, 2},    // narrower than the template: nothing
      {2, 44, 23, 25, -1},  // its own image
      {0, 0, 97, 71, -1},
  };
  for (CpuPath path : {CpuPath::Reference, CpuPath::Direct, CpuPath::Auto}) {
    auto engine = makeCpuEngine(path, 2);
    ASSERT_TRUE(engine->setTemplates(bank).ok());
    for (int m = 0; m <= 5; ++m) {
      MatchParams params;
      params.method = Method(m);
      params.maxMatches = 4;
      params.threshold = lowerIsBetter(params.method) ? 1e12 : -1e12;  // every local peak passes
      params.nmsIou = 0.2;
      std::vector<RegionQuery> regions;
      for (const RegionCase& c : cases)
        regions.push_back(RegionQuery{c.x, c.y, c.w, c.h, c.tpl < 0 ? 7u : uint32_t(c.tpl), c.tpl < 0 ? &own : nullptr});
      std::vector<RegionResult> results;
      Status st = engine->matchRegions(img.view(), regions, params, &results);
      ASSERT_TRUE(st.ok()) << st.message();
      ASSERT_EQ(results.size(), regions.size());
      for (std::size_t k = 0; k < regions.size(); ++k) {
        const TemplateImage& t = cases[k].tpl < 0 ? own : bank[cases[k].tpl];
        const std::string where = std::string(cpuPathName(path)) + " " + methodName(params.method) + " region " +
                                  std::to_string(k);
        expectSameResult(results[k], definition(img, t, regions[k], params), where);
      }
    }
  }
}

TEST(CpuRegions, FindsEachPastedCopyInItsWindowAtTheThreshold) {
  Image img = makeImage(200, 120, Fill::Random, 0);
  const TemplateImage t = makeTemplate(12, 10, Fill::Random, "t");
  std::mt19937_64& g = rng();
  std::vector<RegionQuery> regions;
  std::vector<std::pair<int, int>> places;
  for (int k = 0; k < 6; ++k) {
    const int x = 20 + 28 * k + int(g() % 5), y = 20 + int(g() % 70);
    paste(&img, t, x, y);
    places.emplace_back(x, y);
    regions.push_back(RegionQuery{x - 8, y - 8, 28, 26, 0, nullptr});
  }
  auto engine = makeCpuEngine(CpuPath::Auto);
  ASSERT_TRUE(engine->setTemplates({t}).ok());
  MatchParams params;
  params.threshold = 0.99;
  params.maxMatches = 3;
  std::vector<RegionResult> results;
  ASSERT_TRUE(engine->matchRegions(img.view(), regions, params, &results).ok());
  for (std::size_t k = 0; k < places.size(); ++k) {
    ASSERT_EQ(results[k].matches.size(), 1u) << "region " << k << " seed " << testSeed();
    EXPECT_EQ(results[k].matches[0].x, places[k].first);
    EXPECT_EQ(results[k].matches[0].y, places[k].second);
    EXPECT_DOUBLE_EQ(results[k].matches[0].score, 1.0);
  }
}

// Prepared sets against own images, bit for bit: every CPU path, every method, masked and
// unmasked templates of 1x1 to 91x91, several regions naming one template, two sets.
TEST(CpuRegions, PreparedSetsGiveWhatOwnImagesGive) {
  const RegionSetScene scene = makeRegionSetScene();
  for (CpuPath path : {CpuPath::Reference, CpuPath::Direct, CpuPath::Auto}) {
    auto engine = makeCpuEngine(path, 2);
    ASSERT_TRUE(engine->setTemplates({makeTemplate(3, 3, Fill::Random)}).ok());
    RegionTemplateSet handles[2];
    for (int set = 0; set < 2; ++set) {
      Status st = engine->prepareRegionTemplates(scene.sets[set], &handles[set]);
      ASSERT_TRUE(st.ok()) << st.message();
      EXPECT_EQ(handles[set].size, scene.sets[set].size());
    }
    const std::vector<RegionQuery> own = scene.ownQueries(), prepared = scene.setQueries(handles);
    for (int m = 0; m <= 5; ++m) {
      for (const MatchParams& params : {everyRegionPeak(Method(m)), usualRegionParams(Method(m))}) {
        std::vector<RegionResult> want, got;
        Status st = engine->matchRegions(scene.image.view(), own, params, &want);
        ASSERT_TRUE(st.ok()) << st.message();
        st = engine->matchRegions(scene.image.view(), prepared, params, &got);
        ASSERT_TRUE(st.ok()) << st.message();
        ASSERT_EQ(got.size(), want.size());
        std::size_t peaks = 0;
        for (std::size_t k = 0; k < got.size(); ++k) {
          peaks += want[k].matches.size();
          expectSameResult(got[k], want[k], std::string(cpuPathName(path)) + " " + methodName(params.method) +
                                                " region " + std::to_string(k) + " seed " + std::to_string(testSeed()));
        }
        EXPECT_GT(peaks, 0u) << "the scene must give matches to compare";
      }
    }
  }
}

TEST(CpuRegions, NoRegionsGiveNoResults) {
  Image img = makeImage(10, 10, Fill::Random);
  auto engine = makeCpuEngine(CpuPath::Auto);
  ASSERT_TRUE(engine->setTemplates({makeTemplate(3, 3, Fill::Random)}).ok());
  std::vector<RegionResult> results(3);
  ASSERT_TRUE(engine->matchRegions(img.view(), {}, MatchParams(), &results).ok());
  EXPECT_TRUE(results.empty());
}

TEST(CpuRegions, BadRegionsAreRefusedNamingThem) {
  Image img = makeImage(40, 30, Fill::Random);
  auto engine = makeCpuEngine(CpuPath::Auto);
  ASSERT_TRUE(engine->setTemplates({makeTemplate(3, 3, Fill::Random)}).ok());
  TemplateImage broken;
  broken.width = 4;
  broken.height = 4;  // no pixels
  struct Bad {
    RegionQuery region;
    const char* says;
  };
  const std::vector<Bad> cases = {
      {{-1, 0, 5, 5, 0, nullptr}, "not inside"},
      {{0, 0, 41, 5, 0, nullptr}, "not inside"},
      {{36, 26, 5, 5, 0, nullptr}, "not inside"},
      {{0, 0, 0, 5, 0, nullptr}, "not inside"},
      {{2147483647, 0, 5, 5, 0, nullptr}, "not inside"},
      {{0, 0, 5, 5, 1, nullptr}, "outside the bank"},
      {{0, 0, 5, 5, 0, &broken}, "own image"},
  };
  for (const Bad& c : cases) {
    std::vector<RegionResult> results;
    Status st = engine->matchRegions(img.view(), {RegionQuery{1, 1, 5, 5, 0, nullptr}, c.region}, MatchParams(), &results);
    ASSERT_FALSE(st.ok());
    EXPECT_NE(st.message().find("region 1"), std::string::npos) << st.message();
    EXPECT_NE(st.message().find(c.says), std::string::npos) << st.message();
  }
  EXPECT_FALSE(engine->matchRegions(img.view(), {}, MatchParams(), nullptr).ok());
  MatchParams bad;
  bad.maxMatches = -1;
  std::vector<RegionResult> results;
  EXPECT_FALSE(engine->matchRegions(img.view(), {RegionQuery{0, 0, 5, 5, 0, nullptr}}, bad, &results).ok());
}

TEST(CpuRegions, CopyPatchReadsTheBoxAndRefusesOneOutside) {
  Image img = makeImage(23, 17, Fill::Random, 3);
  auto engine = makeCpuEngine(CpuPath::Auto);
  std::vector<uint8_t> pixels;
  ASSERT_TRUE(engine->copyPatch(img.view(), 20, 15, 3, 2, &pixels).ok());
  ASSERT_EQ(pixels.size(), 6u);
  for (int y = 0; y < 2; ++y)
    for (int x = 0; x < 3; ++x) EXPECT_EQ(pixels[y * 3 + x], img.at(20 + x, 15 + y));
  EXPECT_FALSE(engine->copyPatch(img.view(), 21, 15, 3, 2, &pixels).ok());
  EXPECT_FALSE(engine->copyPatch(img.view(), 0, 0, 0, 2, &pixels).ok());
  EXPECT_FALSE(engine->copyPatch(img.view(), 0, 0, 1, 1, nullptr).ok());
}

}  // namespace
}  // namespace nccmatch::test
