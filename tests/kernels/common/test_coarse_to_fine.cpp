// Coarse-to-fine search (coarse_to_fine.hpp): halving of templates consistent with the frame's,
// option and bank checks with clear messages, and scenes with objects at random angles and scales
// on noisy textured backgrounds where the coarse-to-fine search must report exactly the matches
// and best of the exhaustive search (the CPU engine on the full bank, the oracle) for both
// rotation supports, masked and unmasked templates, one and two pyramid levels, several templates,
// on the CPU engine and, where a device is present, on the CUDA engine. The finer levels'
// variants are prepared on an engine once (Engine::prepareRegionTemplates): again only for another
// engine or after releasePrepared, with identical results every time.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <string>

#include "nccmatch/coarse_to_fine.hpp"
#include "nccmatch/engine.hpp"
#include "nccmatch/rotations.hpp"
#include "rotation_scene.hpp"
#include "test_support.hpp"

namespace nccmatch::test {
namespace {

// The halving of a template cut from a frame at an even corner is the cut of the halved frame:
// coarse templates and coarse frames average the same four pixels. Odd sizes drop the last
// column or row.
TEST(HalveTemplate, AgreesWithTheHalvedFrame) {
  struct Size {
    int frameW, frameH, x, y, w, h;
  };
  const Size sizes[] = {{37, 29, 4, 2, 11, 9}, {20, 20, 0, 0, 20, 20}, {9, 7, 2, 2, 3, 3}, {64, 48, 10, 6, 33, 17}};
  for (const Size& s : sizes) {
    const Image frame = makeImage(s.frameW, s.frameH, Fill::Random, 3);
    const TemplateImage cut = cutTemplate(frame, s.x, s.y, s.w, s.h);
    const TemplateImage half = halveTemplate(cut);
    ASSERT_EQ(half.width, s.w / 2);
    ASSERT_EQ(half.height, s.h / 2);
    EXPECT_TRUE(half.mask.empty());
    for (int y = 0; y < half.height; ++y)
      for (int x = 0; x < half.width; ++x) {
        const int fx = s.x + 2 * x, fy = s.y + 2 * y;
        const int sum = frame.at(fx, fy) + frame.at(fx + 1, fy) + frame.at(fx, fy + 1) + frame.at(fx + 1, fy + 1);
        ASSERT_EQ(half.pixels[std::size_t(y) * half.width + x], (sum + 2) / 4)
            << s.w << "x" << s.h << " at " << x << "," << y << " seed " << testSeed();
      }
  }
}

TEST(HalveTemplate, ACoarsePixelIsComparedOnlyWhenAllFourAre) {
  TemplateImage t = makeTemplate(9, 8, Fill::Random);
  t.mask.assign(t.pixels.size(), 255);
  t.mask[std::size_t(3) * 9 + 3] = 0;  // in coarse pixel (1, 1)
  t.mask[std::size_t(7) * 9 + 8] = 0;  // in the dropped last column
  const TemplateImage half = halveTemplate(t);
  ASSERT_EQ(half.width, 4);
  ASSERT_EQ(half.height, 4);
  ASSERT_EQ(half.mask.size(), 16u);
  for (int y = 0; y < 4; ++y)
    for (int x = 0; x < 4; ++x) EXPECT_EQ(half.mask[std::size_t(y) * 4 + x] != 0, !(x == 1 && y == 1)) << x << "," << y;
}

TEST(CoarseToFineOptions, RefusedNamingTheOption) {
  struct Case {
    CoarseToFineOptions options;
    const char* names;
  };
  auto with = [](auto set) {
    CoarseToFineOptions o;
    set(o);
    return o;
  };
  const Case cases[] = {
      {with([](CoarseToFineOptions& o) { o.levels = -1; }), "pyramid levels -1"},
      {with([](CoarseToFineOptions& o) { o.levels = 3; }), "pyramid levels 3"},
      {with([](CoarseToFineOptions& o) { o.keepBest = 0; }), "keep-best 0"},
      {with([](CoarseToFineOptions& o) { o.scoreMargin = NAN; }), "score margin"},
      {with([](CoarseToFineOptions& o) { o.scoreMargin = -0.1; }), "score margin -0.1"},
      {with([](CoarseToFineOptions& o) { o.angleNeighbours = 17; }), "angle neighbours 17"},
      {with([](CoarseToFineOptions& o) { o.scaleNeighbours = -1; }), "scale neighbours -1"},
      {with([](CoarseToFineOptions& o) { o.searchRadius = 0; }), "search radius 0"},
      {with([](CoarseToFineOptions& o) { o.searchRadius = 17; }), "search radius 17"},
  };
  ScaledBank bank;
  ASSERT_TRUE(scaleTemplates({makeTemplate(16, 16, Fill::Random)}, {1.0}, &bank).ok());
  for (const Case& c : cases) {
    CoarseToFineSearch search;
    const Status st = CoarseToFineSearch::create(bank, c.options, &search);
    ASSERT_FALSE(st.ok()) << c.names;
    EXPECT_NE(st.message().find(c.names), std::string::npos) << st.message();
  }
  EXPECT_TRUE(validateCoarseToFineOptions({}).ok());
}

// A variant too small for the coarsest level is refused, naming it; fewer levels work.
TEST(CoarseToFineSearch, RefusesVariantsTooSmallForTheCoarseLevel) {
  ScaledBank bank;
  ASSERT_TRUE(rotateAndScaleTemplates({makeTemplate(40, 40, Fill::Random, "big"), makeTemplate(10, 12, Fill::Random, "tiny")},
                                      {1.0, 0.8}, {0, 90}, &bank)
                  .ok());
  CoarseToFineSearch search;
  CoarseToFineOptions options;
  options.levels = 2;
  Status st = CoarseToFineSearch::create(bank, options, &search);
  ASSERT_FALSE(st.ok());
  // 10x12 at scale 1: 5x6 at level 1, 2x3 at level 2.
  EXPECT_NE(st.message().find("template 1 ('tiny') at scale 1, angle 0 is 10x12"), std::string::npos) << st.message();
  EXPECT_NE(st.message().find("pyramid level 2 it would be 2x3"), std::string::npos) << st.message();
  EXPECT_NE(st.message().find("use fewer levels"), std::string::npos) << st.message();
  // At scale 0.8 the tiny template is 8x10: 4x5 (20 compared pixels) at level 1 is enough.
  options.levels = 1;
  EXPECT_TRUE(CoarseToFineSearch::create(bank, options, &search).ok());
  // Masked: a disc of 10 keeps too few pixels whose four sources are all compared.
  ScaledBank disc;
  ASSERT_TRUE(rotateAndScaleTemplates({makeTemplate(10, 10, Fill::Random, "coin")}, {1.0}, {0, 45}, &disc,
                                      RotationSupport::Disc)
                  .ok());
  st = CoarseToFineSearch::create(disc, options, &search);
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.message().find("template 0 ('coin')"), std::string::npos) << st.message();
  EXPECT_NE(st.message().find("compared pixels"), std::string::npos) << st.message();
  options.levels = 0;  // the exhaustive search has no minimum
  EXPECT_TRUE(CoarseToFineSearch::create(disc, options, &search).ok());
}

TEST(CoarseToFineSearch, RefusesAWrongEngineBankAnUnnormalisedMethodAndNoSearch) {
  ScaledBank bank;
  ASSERT_TRUE(rotateAndScaleTemplates({objectTemplate()}, {1.0}, angleRange(0, 360, 30), &bank).ok());
  CoarseToFineSearch search;
  ASSERT_TRUE(CoarseToFineSearch::create(bank, {}, &search).ok());
  auto engine = makeCpuEngine(CpuPath::Auto, 2);
  const Image frame = makeImage(96, 80, Fill::Smooth);
  FrameResult result;
  MatchParams params;
  ASSERT_TRUE(engine->setTemplates(bank.templates).ok());  // the full bank, not the coarse one
  Status st = search.match(*engine, frame.view(), params, &result);
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.message().find("search.engineTemplates()"), std::string::npos) << st.message();
  ASSERT_TRUE(engine->setTemplates(search.engineTemplates()).ok());
  for (Method m : {Method::CCorr, Method::CCoeff, Method::SqDiff}) {
    params.method = m;
    st = search.match(*engine, frame.view(), params, &result);
    ASSERT_FALSE(st.ok()) << methodName(m);
    EXPECT_NE(st.message().find(std::string("normalised method")), std::string::npos) << st.message();
    EXPECT_NE(st.message().find(methodName(m)), std::string::npos) << st.message();
  }
  params.method = Method::CCoeffNormed;
  EXPECT_TRUE(search.match(*engine, frame.view(), params, &result).ok());
  CoarseToFineSearch none;
  st = none.match(*engine, frame.view(), params, &result);
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.message().find("not created"), std::string::npos) << st.message();
}

// The exhaustive search's merged result: the oracle.
FrameResult exhaustive(Engine& engine, const ScaledBank& bank, const Image& frame, const MatchParams& params) {
  FrameResult raw;
  EXPECT_TRUE(engine.setTemplates(bank.templates).ok());
  EXPECT_TRUE(engine.match(frame.view(), params, &raw).ok());
  return mergeScaledResult(bank, raw, params);
}

// The same match: template, position, box, scale, score and sub-pixel corner exactly; the angle
// exactly, except where the exhaustive search left it at its step (a neighbouring angle's only
// reports lay elsewhere in the frame) and the coarse-to-fine search, which scored the neighbours
// at this place, refined it: then within half a step of it (`angleStep`; 0: exactly).
void expectSameMatch(const Match& want, const Match& got, const std::string& where, double angleStep = 0) {
  EXPECT_EQ(got.templateIndex, want.templateIndex) << where;
  EXPECT_EQ(got.x, want.x) << where;
  EXPECT_EQ(got.y, want.y) << where;
  EXPECT_EQ(got.width, want.width) << where;
  EXPECT_EQ(got.height, want.height) << where;
  EXPECT_EQ(got.scale, want.scale) << where;
  const bool unrefined = angleStep > 0 && std::fmod(want.angle, angleStep) == 0;
  if (unrefined && std::fabs(got.angle - want.angle) > 1e-9) {
    std::printf("%s: the exhaustive search left the angle at its step %g, refined here to %.3f\n", where.c_str(),
                want.angle, got.angle);
    EXPECT_LE(angleError(got.angle, want.angle), angleStep / 2) << where;
  } else {
    EXPECT_NEAR(got.angle, want.angle, 1e-9) << where;
  }
  EXPECT_NEAR(got.score, want.score, 1e-9) << where;
  EXPECT_NEAR(got.subX, want.subX, 1e-9) << where;
  EXPECT_NEAR(got.subY, want.subY, 1e-9) << where;
}

struct SceneCase {
  RotationSupport support;
  bool masked;  // the original template carries a ring mask
  int levels;
};

std::string describeCase(const SceneCase& c) {
  return std::string(c.support == RotationSupport::Disc ? "disc" : "rectangle") + (c.masked ? ", masked" : "") +
         ", levels " + std::to_string(c.levels);
}

// Objects at random angles (the first within a few degrees of 0, so angles wrap) and scales,
// jittered around three spots of a 240x200 frame.
std::vector<Placed> randomObjects() {
  std::uniform_real_distribution<double> angle(0, 360), jitter(-3, 3), nearZero(-4, 4);
  const double scales[] = {0.9, 1.0, 1.1};
  std::uniform_int_distribution<int> scale(0, 2);
  const double spots[][2] = {{65, 70}, {172, 78}, {110, 150}};
  std::vector<Placed> objects;
  for (int k = 0; k < 3; ++k) {
    const double a = k == 0 ? std::fmod(360 + nearZero(rng()), 360.0) : angle(rng());
    objects.push_back({spots[k][0] + jitter(rng()), spots[k][1] + jitter(rng()), a, scales[scale(rng())]});
  }
  return objects;
}

// Every case on several random scenes: the coarse-to-fine result equals the exhaustive one
// (every match: template, position, box, scale, refined angle, score; and the best), with far
// fewer window-pixel products.
void checkScenes(Backend backend) {
  const SceneCase cases[] = {
      {RotationSupport::Rectangle, false, 1}, {RotationSupport::Disc, false, 1}, {RotationSupport::Rectangle, true, 1},
      {RotationSupport::Disc, true, 1},       {RotationSupport::Disc, false, 2}, {RotationSupport::Rectangle, false, 2},
  };
  auto oracle = makeCpuEngine(CpuPath::Auto, 2);
  std::unique_ptr<Engine> engine;
  if (backend == Backend::Cpu) {
    engine = makeCpuEngine(CpuPath::Auto, 2);
  } else {
    EngineOptions options;
    options.backend = backend;
    ASSERT_TRUE(Engine::create(options, &engine).ok());
  }
  // Objects score above 0.9 and the clutter below 0.7 (its peaks near a threshold may differ: a
  // weak coarse peak need not be refined).
  MatchParams params;
  params.threshold = 0.75;
  params.maxMatches = 6;
  const std::vector<double> angles = angleRange(0, 360, 10), scales{0.9, 1.0, 1.1};
  for (const SceneCase& c : cases) {
    TemplateImage object = objectTemplate();
    if (c.masked) object.mask = makeMask(object.width, object.height, MaskShape::Ring);
    ScaledBank bank;
    ASSERT_TRUE(rotateAndScaleTemplates({object}, scales, angles, &bank, c.support).ok());
    CoarseToFineOptions options;
    options.levels = c.levels;
    CoarseToFineSearch search;
    const Status made = CoarseToFineSearch::create(bank, options, &search);
    ASSERT_TRUE(made.ok()) << describeCase(c) << ": " << made.message();
    for (int scene = 0; scene < 3; ++scene) {
      const std::vector<Placed> objects = randomObjects();
      const Image frame = rotatedScene(240, 200, objects);
      std::string where = describeCase(c) + ", scene " + std::to_string(scene) + " (seed " +
                          std::to_string(testSeed()) + "), objects";
      for (const Placed& o : objects)
        where += " (" + std::to_string(o.cx) + "," + std::to_string(o.cy) + " at " + std::to_string(o.angle) + " deg x" +
                 std::to_string(o.scale) + ")";
      const FrameResult want = exhaustive(*oracle, bank, frame, params);
      ASSERT_EQ(want.matches.size(), objects.size()) << "the exhaustive search should find each object: " << where;
      ASSERT_TRUE(engine->setTemplates(search.engineTemplates()).ok());
      FrameResult got;
      ASSERT_TRUE(search.match(*engine, frame.view(), params, &got).ok()) << where;
      ASSERT_EQ(got.matches.size(), want.matches.size()) << where;
      for (std::size_t k = 0; k < want.matches.size(); ++k)
        expectSameMatch(want.matches[k], got.matches[k], where + ", match " + std::to_string(k), 10.0);
      ASSERT_EQ(got.best.size(), 1u);
      ASSERT_TRUE(got.best[0].has_value());
      expectSameMatch(*want.best[0], *got.best[0], where + ", best", 10.0);
      const CoarseToFineWork& work = search.lastWork();
      const double full = exhaustiveProducts(bank.templates, frame.width, frame.height);
      std::printf("%s, scene %d: %zu regions, work %.3f of the exhaustive search's (coarse %.3f)\n",
                  describeCase(c).c_str(), scene, work.regions, (work.coarseProducts + work.refineProducts) / full,
                  work.coarseProducts / full);
      EXPECT_LT(work.coarseProducts + work.refineProducts, full * (c.levels == 1 ? 0.5 : 0.25)) << where;
      // The per-level stats: one a refinement level, coarsest first, adding up to the totals.
      ASSERT_EQ(work.refine.size(), std::size_t(c.levels)) << where;
      std::size_t regions = 0;
      double products = 0;
      for (std::size_t k = 0; k < work.refine.size(); ++k) {
        const CoarseToFineLevelStats& l = work.refine[k];
        EXPECT_EQ(l.level, c.levels - 1 - int(k)) << where;
        EXPECT_GT(l.candidates, 0u) << where;
        EXPECT_GT(l.regions, 0u) << where;
        EXPECT_GE(l.ms, 0.0) << where;
        regions += l.regions;
        products += l.products;
      }
      EXPECT_EQ(regions, work.regions) << where;
      EXPECT_EQ(products, work.refineProducts) << where;
      EXPECT_GT(work.coarseMs, 0.0) << where;
      EXPECT_GE(work.pyramidMs, 0.0) << where;
    }
  }
}

TEST(CoarseToFineScenes, SameMatchesAsTheExhaustiveSearchOnTheCpu) { checkScenes(Backend::Cpu); }

TEST(CoarseToFineScenes, SameMatchesAsTheExhaustiveSearchOnCuda) {
  std::string why;
  if (!cudaAvailable(&why)) GTEST_SKIP() << "CUDA backend: " << why;
  checkScenes(Backend::Cuda);
}

// Two templates (the object and its mirror image, alike but for their handedness), two objects of
// each at random angles and scales: each template's matches and best as the exhaustive search's.
TEST(CoarseToFineScenes, SeveralTemplatesEachAsTheExhaustiveSearch) {
  const std::vector<TemplateImage> originals{objectTemplate(false), objectTemplate(true)};
  ScaledBank bank;
  ASSERT_TRUE(rotateAndScaleTemplates(originals, {0.9, 1.0, 1.1}, angleRange(0, 360, 10), &bank, RotationSupport::Disc).ok());
  CoarseToFineSearch search;
  ASSERT_TRUE(CoarseToFineSearch::create(bank, {}, &search).ok());
  auto oracle = makeCpuEngine(CpuPath::Auto, 2);
  auto engine = makeCpuEngine(CpuPath::Auto, 2);
  MatchParams params;
  params.threshold = 0.75;
  params.maxMatches = 4;
  std::uniform_real_distribution<double> angle(0, 360), jitter(-3, 3);
  std::uniform_int_distribution<int> scale(0, 2);
  const double scales[] = {0.9, 1.0, 1.1};
  const double spots[][2] = {{65, 65}, {205, 70}, {70, 165}, {210, 160}};
  for (int scene = 0; scene < 3; ++scene) {
    std::vector<Placed> objects;
    std::string where = "scene " + std::to_string(scene) + " (seed " + std::to_string(testSeed()) + "), objects";
    for (int k = 0; k < 4; ++k) {
      objects.push_back({spots[k][0] + jitter(rng()), spots[k][1] + jitter(rng()), angle(rng()), scales[scale(rng())],
                         k % 2 == 1});
      const Placed& o = objects.back();
      where += std::string(" (") + (o.mirrored ? "mirrored " : "") + std::to_string(o.cx) + "," + std::to_string(o.cy) +
               " at " + std::to_string(o.angle) + " deg x" + std::to_string(o.scale) + ")";
    }
    const Image frame = rotatedScene(280, 230, objects);
    const FrameResult want = exhaustive(*oracle, bank, frame, params);
    ASSERT_EQ(want.matches.size(), objects.size()) << "two of each template: " << where;
    ASSERT_TRUE(engine->setTemplates(search.engineTemplates()).ok());
    FrameResult got;
    ASSERT_TRUE(search.match(*engine, frame.view(), params, &got).ok()) << where;
    ASSERT_EQ(got.matches.size(), want.matches.size()) << where;
    for (std::size_t k = 0; k < want.matches.size(); ++k)
      expectSameMatch(want.matches[k], got.matches[k], where + ", match " + std::to_string(k), 10.0);
    ASSERT_EQ(got.best.size(), 2u);
    for (std::size_t i = 0; i < 2; ++i) {
      ASSERT_TRUE(got.best[i].has_value()) << where;
      expectSameMatch(*want.best[i], *got.best[i], where + ", best of template " + std::to_string(i), 10.0);
    }
  }
}

// An engine of `backend` (the CPU's Reference path: the oracle) that counts the region template
// sets prepared and released through it.
class CountingEngine : public Engine {
 public:
  explicit CountingEngine(Backend backend) {
    EngineOptions options;
    options.backend = backend;
    options.cpuPath = CpuPath::Reference;
    const Status made = Engine::create(options, &inner_);
    EXPECT_TRUE(made.ok()) << made.message();
  }
  Backend backend() const override { return inner_->backend(); }
  Status setTemplates(std::vector<TemplateImage> bank) override { return inner_->setTemplates(std::move(bank)); }
  const std::vector<TemplateImage>& templates() const override { return inner_->templates(); }
  Status match(const FrameView& frame, const MatchParams& params, FrameResult* result) override {
    return inner_->match(frame, params, result);
  }
  Status matchRegions(const FrameView& frame, const std::vector<RegionQuery>& regions, const MatchParams& params,
                      std::vector<RegionResult>* results) override {
    for (const RegionQuery& r : regions) {
      EXPECT_EQ(r.image, nullptr) << "the refinement names prepared sets, not own images";
      EXPECT_FALSE(r.set.empty());
    }
    return inner_->matchRegions(frame, regions, params, results);
  }
  Status copyPatch(const FrameView& frame, int x, int y, int width, int height,
                   std::vector<uint8_t>* pixels) override {
    return inner_->copyPatch(frame, x, y, width, height, pixels);
  }
  Status scoreMap(const FrameView& frame, Method method, uint32_t templateIndex, std::vector<double>* map) override {
    return inner_->scoreMap(frame, method, templateIndex, map);
  }
  Status prepareRegionTemplates(std::vector<TemplateImage> templates, RegionTemplateSet* set) override {
    ++prepared;
    return inner_->prepareRegionTemplates(std::move(templates), set);
  }
  Status releaseRegionTemplates(RegionTemplateSet* set) override {
    ++released;
    return inner_->releaseRegionTemplates(set);
  }
  bool holdsRegionTemplates(const RegionTemplateSet& set) const override { return inner_->holdsRegionTemplates(set); }

  int prepared = 0, released = 0;

 private:
  std::unique_ptr<Engine> inner_;
};

// Two results alike in every field, exactly.
void expectIdentical(const FrameResult& got, const FrameResult& want, const std::string& where) {
  ASSERT_EQ(got.matches.size(), want.matches.size()) << where;
  auto same = [&](const Match& g, const Match& w, const std::string& what) {
    EXPECT_EQ(g.templateIndex, w.templateIndex) << what;
    EXPECT_EQ(g.x, w.x) << what;
    EXPECT_EQ(g.y, w.y) << what;
    EXPECT_EQ(g.width, w.width) << what;
    EXPECT_EQ(g.height, w.height) << what;
    EXPECT_EQ(g.score, w.score) << what;
    EXPECT_EQ(g.subX, w.subX) << what;
    EXPECT_EQ(g.subY, w.subY) << what;
    EXPECT_EQ(g.scale, w.scale) << what;
    EXPECT_EQ(g.angle, w.angle) << what;
  };
  for (std::size_t k = 0; k < want.matches.size(); ++k)
    same(got.matches[k], want.matches[k], where + ", match " + std::to_string(k));
  ASSERT_EQ(got.best.size(), want.best.size()) << where;
  for (std::size_t i = 0; i < want.best.size(); ++i) {
    ASSERT_EQ(got.best[i].has_value(), want.best[i].has_value()) << where;
    if (want.best[i]) same(*got.best[i], *want.best[i], where + ", best " + std::to_string(i));
  }
}

// The refinement's sets: prepared at the first match with an engine (one a finer level), kept for
// the next frames and for copies of the search, prepared again for another engine (the first
// keeps its own until released) and after releasePrepared; the results identical throughout, and
// those of the exhaustive search.
void checkPreparedOnce(Backend backend) {
  ScaledBank bank;
  ASSERT_TRUE(rotateAndScaleTemplates({objectTemplate()}, {0.9, 1.0, 1.1}, angleRange(0, 360, 10), &bank,
                                      RotationSupport::Disc)
                  .ok());
  for (int levels : {1, 2}) {
    const std::string where = std::string(backendName(backend)) + ", levels " + std::to_string(levels) + ", seed " +
                              std::to_string(testSeed());
    CoarseToFineOptions options;
    options.levels = levels;
    CoarseToFineSearch search;
    ASSERT_TRUE(CoarseToFineSearch::create(bank, options, &search).ok());
    CountingEngine first(backend), second(backend);
    ASSERT_TRUE(first.setTemplates(search.engineTemplates()).ok());
    ASSERT_TRUE(second.setTemplates(search.engineTemplates()).ok());
    MatchParams params;
    params.threshold = 0.75;
    params.maxMatches = 6;
    auto oracle = makeCpuEngine(CpuPath::Auto, 2);
    std::vector<Image> frames;
    std::vector<FrameResult> wants;
    for (int f = 0; f < 2; ++f) {
      frames.push_back(rotatedScene(240, 200, randomObjects()));
      wants.push_back(FrameResult());
      ASSERT_TRUE(search.match(first, frames.back().view(), params, &wants.back()).ok()) << where;
      const FrameResult exhaustiveResult = exhaustive(*oracle, bank, frames.back(), params);
      ASSERT_EQ(wants.back().matches.size(), exhaustiveResult.matches.size()) << where;
      for (std::size_t k = 0; k < exhaustiveResult.matches.size(); ++k)
        expectSameMatch(exhaustiveResult.matches[k], wants.back().matches[k], where + ", match " + std::to_string(k),
                        10.0);
    }
    EXPECT_EQ(first.prepared, levels) << where << ": once per finer level, not per frame";
    // Every later match: nothing prepared again, the same results.
    const auto matchAll = [&](CoarseToFineSearch& s, Engine& engine, const std::string& what) {
      for (std::size_t f = 0; f < frames.size(); ++f) {
        FrameResult got;
        ASSERT_TRUE(s.match(engine, frames[f].view(), params, &got).ok()) << where << ", " << what;
        expectIdentical(got, wants[f], where + ", " + what + ", frame " + std::to_string(f));
      }
    };
    matchAll(search, first, "again");
    CoarseToFineSearch copy = search;
    matchAll(copy, first, "a copy of the search");
    EXPECT_EQ(first.prepared, levels) << where;
    matchAll(search, second, "another engine");
    EXPECT_EQ(second.prepared, levels) << where;
    matchAll(search, first, "back on the first engine");  // its sets were left to it
    EXPECT_EQ(first.prepared, levels) << where;
    search.releasePrepared(first);
    EXPECT_EQ(first.released, levels) << where;
    search.releasePrepared(first);  // nothing held any more: nothing released
    EXPECT_EQ(first.released, levels) << where;
    matchAll(search, first, "after releasePrepared");
    EXPECT_EQ(first.prepared, 2 * levels) << where;
    // The copy's handles were released with the search's: the copy prepares its own.
    matchAll(copy, first, "the copy after the release");
    EXPECT_EQ(first.prepared, 3 * levels) << where;
  }
}

TEST(CoarseToFineSearch, PreparesTheRefinementOncePerEngineOnTheCpu) { checkPreparedOnce(Backend::Cpu); }

TEST(CoarseToFineSearch, PreparesTheRefinementOncePerEngineOnCuda) {
  std::string why;
  if (!cudaAvailable(&why)) GTEST_SKIP() << "CUDA backend: " << why;
  checkPreparedOnce(Backend::Cuda);
}

// levels = 0 is the exhaustive search itself: the engine holds the full bank.
TEST(CoarseToFineSearch, LevelZeroIsTheExhaustiveSearch) {
  ScaledBank bank;
  ASSERT_TRUE(rotateAndScaleTemplates({objectTemplate()}, {1.0}, angleRange(0, 360, 15), &bank).ok());
  CoarseToFineOptions options;
  options.levels = 0;
  CoarseToFineSearch search;
  ASSERT_TRUE(CoarseToFineSearch::create(bank, options, &search).ok());
  EXPECT_EQ(search.engineTemplates().size(), bank.templates.size());
  const Image frame = rotatedScene(160, 120, {{80, 60, 40, 1.0}});
  MatchParams params;
  params.method = Method::CCorr;  // any method: nothing crosses levels
  params.threshold = 0;
  params.maxMatches = 2;
  auto oracle = makeCpuEngine(CpuPath::Auto, 2);
  auto engine = makeCpuEngine(CpuPath::Auto, 2);
  const FrameResult want = exhaustive(*oracle, bank, frame, params);
  ASSERT_TRUE(engine->setTemplates(search.engineTemplates()).ok());
  FrameResult got;
  ASSERT_TRUE(search.match(*engine, frame.view(), params, &got).ok());
  ASSERT_EQ(got.matches.size(), want.matches.size());
  for (std::size_t k = 0; k < want.matches.size(); ++k) expectSameMatch(want.matches[k], got.matches[k], "match");
}

}  // namespace
}  // namespace nccmatch::test
