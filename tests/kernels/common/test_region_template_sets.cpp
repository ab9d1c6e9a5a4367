// Prepared region template sets (Engine::prepareRegionTemplates, common/region_template_sets.hpp)
// on the CPU engine: the handles the engine issues, and every bad use refused with a Status naming
// the problem and the region, changing nothing: a handle of another engine, an index outside its
// set, a set released or replaced, an empty handle, a region naming both an image and a set, no or
// invalid templates, null pointers. Sets outlive setTemplates. (The CUDA engine keeps its sets in
// the same class: tests/kernels/cuda/engine/test_cuda_region_templates.cpp repeats the refusals.)
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "nccmatch/engine.hpp"
#include "test_support.hpp"

namespace nccmatch::test {
namespace {

std::vector<TemplateImage> twoTemplates() {
  return {makeTemplate(5, 4, Fill::Random, "a"), makeTemplate(3, 3, Fill::Random, "b")};
}

// Whether matchRegions with a region naming (set, index) works; its message otherwise.
Status matchWith(Engine& engine, const Image& img, const RegionTemplateSet& set, uint32_t index) {
  std::vector<RegionResult> results;
  return engine.matchRegions(img.view(), {RegionQuery{0, 0, 6, 6, 0}, RegionQuery{2, 3, 9, 8, set, index}},
                             MatchParams(), &results);
}

void expectRefused(const Status& st, const std::string& says) {
  ASSERT_FALSE(st.ok()) << "expected a refusal saying '" << says << "'";
  EXPECT_NE(st.message().find(says), std::string::npos) << st.message();
}

TEST(RegionTemplateSets, HandlesNameTheEngineTheSetAndItsSize) {
  auto engine = makeCpuEngine(CpuPath::Auto, 1);
  RegionTemplateSet empty;
  EXPECT_TRUE(empty.empty());
  EXPECT_FALSE(engine->holdsRegionTemplates(empty));
  RegionTemplateSet a, b;
  ASSERT_TRUE(engine->prepareRegionTemplates(twoTemplates(), &a).ok());
  ASSERT_TRUE(engine->prepareRegionTemplates({makeTemplate(1, 1, Fill::Random)}, &b).ok());
  EXPECT_FALSE(a.empty());
  EXPECT_EQ(a.size, 2u);
  EXPECT_EQ(b.size, 1u);
  EXPECT_EQ(a.engine, b.engine);
  EXPECT_NE(a.id, b.id);
  EXPECT_TRUE(engine->holdsRegionTemplates(a));
  EXPECT_TRUE(engine->holdsRegionTemplates(b));
  auto other = makeCpuEngine(CpuPath::Auto, 1);
  RegionTemplateSet c;
  ASSERT_TRUE(other->prepareRegionTemplates(twoTemplates(), &c).ok());
  EXPECT_NE(c.engine, a.engine);
  EXPECT_FALSE(other->holdsRegionTemplates(a));
  EXPECT_FALSE(engine->holdsRegionTemplates(c));
}

struct BadUse {
  const char* what;
  RegionTemplateSet set;  // the handle a region names
  uint32_t index;
  const char* says;
};

TEST(RegionTemplateSets, BadHandlesAndIndicesAreRefusedNamingTheRegion) {
  Image img = makeImage(40, 30, Fill::Random);
  auto engine = makeCpuEngine(CpuPath::Auto, 1);
  auto other = makeCpuEngine(CpuPath::Auto, 1);
  ASSERT_TRUE(engine->setTemplates({makeTemplate(3, 3, Fill::Random)}).ok());
  RegionTemplateSet live, foreign, released, replaced;
  ASSERT_TRUE(engine->prepareRegionTemplates(twoTemplates(), &live).ok());
  ASSERT_TRUE(other->prepareRegionTemplates(twoTemplates(), &foreign).ok());
  ASSERT_TRUE(engine->prepareRegionTemplates(twoTemplates(), &released).ok());
  RegionTemplateSet releasedCopy = released;
  ASSERT_TRUE(engine->releaseRegionTemplates(&released).ok());
  EXPECT_TRUE(released.empty());  // emptied
  ASSERT_TRUE(engine->prepareRegionTemplates(twoTemplates(), &replaced).ok());
  const RegionTemplateSet replacedCopy = replaced;
  ASSERT_TRUE(engine->prepareRegionTemplates({makeTemplate(2, 2, Fill::Random)}, &replaced).ok());
  EXPECT_NE(replaced.id, replacedCopy.id);
  EXPECT_EQ(replaced.size, 1u);
  RegionTemplateSet forged = live;
  forged.id += 1000;
  RegionTemplateSet noEngine = live;
  noEngine.engine = 0;
  const std::vector<BadUse> cases = {
      {"another engine's set", foreign, 0, "prepared by another engine"},
      {"a set of no engine", noEngine, 0, "prepared by another engine"},
      {"an index past the set", live, 2, "outside its set"},
      {"the largest index", live, 0xFFFFFFFFu, "outside its set"},
      {"a released set", releasedCopy, 0, "released or replaced"},
      {"a replaced set", replacedCopy, 0, "released or replaced"},
      {"an id never issued", forged, 0, "released or replaced"},
      {"the new set past its one template", replaced, 1, "outside its set"},
  };
  for (const BadUse& c : cases) {
    SCOPED_TRACE(c.what);
    const Status st = matchWith(*engine, img, c.set, c.index);
    expectRefused(st, c.says);
    EXPECT_NE(st.message().find("region 1"), std::string::npos) << st.message();
  }
  // Good uses still work, the bank's regions beside them.
  EXPECT_TRUE(matchWith(*engine, img, live, 1).ok());
  EXPECT_TRUE(matchWith(*engine, img, replaced, 0).ok());
  ASSERT_TRUE(other->setTemplates({makeTemplate(3, 3, Fill::Random)}).ok());
  EXPECT_TRUE(matchWith(*other, img, foreign, 0).ok());  // on its own engine
  // An image and a set in one region.
  const TemplateImage own = makeTemplate(4, 4, Fill::Random);
  RegionQuery both(0, 0, 8, 8, live, 0);
  both.image = &own;
  std::vector<RegionResult> results;
  expectRefused(engine->matchRegions(img.view(), {both}, MatchParams(), &results), "both its own image and");
}

TEST(RegionTemplateSets, BadPreparationsAndReleasesChangeNothing) {
  auto engine = makeCpuEngine(CpuPath::Auto, 1);
  auto other = makeCpuEngine(CpuPath::Auto, 1);
  RegionTemplateSet set;
  ASSERT_TRUE(engine->prepareRegionTemplates(twoTemplates(), &set).ok());
  const RegionTemplateSet before = set;
  TemplateImage noPixels;
  noPixels.width = 4;
  noPixels.height = 4;
  TemplateImage badMask = makeTemplate(4, 4, Fill::Random);
  badMask.mask.assign(3, 255);
  TemplateImage tooWide = makeTemplate(1, 1, Fill::Random);
  tooWide.width = 16385;
  expectRefused(engine->prepareRegionTemplates({}, &set), "no templates");
  expectRefused(engine->prepareRegionTemplates({makeTemplate(2, 2, Fill::Random), noPixels}, &set), "template 1");
  expectRefused(engine->prepareRegionTemplates({badMask}, &set), "mask");
  expectRefused(engine->prepareRegionTemplates({tooWide}, &set), "16384");
  expectRefused(engine->prepareRegionTemplates(twoTemplates(), nullptr), "null");
  EXPECT_EQ(set.id, before.id);  // unchanged, still held
  EXPECT_TRUE(engine->holdsRegionTemplates(set));

  RegionTemplateSet empty;
  expectRefused(engine->releaseRegionTemplates(&empty), "empty");
  RegionTemplateSet copy = set;
  expectRefused(other->releaseRegionTemplates(&copy), "another engine");
  EXPECT_EQ(copy.id, set.id);
  EXPECT_TRUE(engine->holdsRegionTemplates(set));
  expectRefused(engine->releaseRegionTemplates(nullptr), "null");
  ASSERT_TRUE(engine->releaseRegionTemplates(&copy).ok());
  expectRefused(engine->releaseRegionTemplates(&set), "released or replaced");  // twice
  EXPECT_FALSE(engine->holdsRegionTemplates(set));
}

// A set is independent of the bank: setTemplates keeps it, and its regions report the caller's
// templateIndex, whatever the bank holds.
TEST(RegionTemplateSets, SetsOutliveTheBank) {
  Image img = makeImage(60, 50, Fill::Smooth, 2);
  const TemplateImage t = cutTemplate(img, 20, 15, 9, 7, "t");
  auto engine = makeCpuEngine(CpuPath::Auto, 1);
  RegionTemplateSet set;
  ASSERT_TRUE(engine->prepareRegionTemplates({t}, &set).ok());
  for (int bankSize : {1, 3}) {
    std::vector<TemplateImage> bank;
    for (int k = 0; k < bankSize; ++k) bank.push_back(makeTemplate(4 + k, 4, Fill::Random));
    ASSERT_TRUE(engine->setTemplates(bank).ok());
    std::vector<RegionResult> results;
    MatchParams params;
    params.threshold = 0.99;
    ASSERT_TRUE(engine->matchRegions(img.view(), {RegionQuery{10, 10, 30, 25, set, 0, 42}}, params, &results).ok());
    ASSERT_EQ(results[0].matches.size(), 1u);
    EXPECT_EQ(results[0].matches[0].x, 20);
    EXPECT_EQ(results[0].matches[0].y, 15);
    EXPECT_EQ(results[0].matches[0].templateIndex, 42u);
    // The template cut from the frame: 1 up to the last bits of the path Auto picks (FFT or direct).
    EXPECT_NEAR(results[0].matches[0].score, 1.0, 1e-9);
  }
}

}  // namespace
}  // namespace nccmatch::test
