// The CPU backend end to end: score maps against the brute-force definitions, matches of pasted
// templates, bank handling and argument errors.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <thread>

#include "nccmatch/engine.hpp"
#include "test_support.hpp"

namespace nccmatch::test {
namespace {

class CpuScoreMap : public ::testing::TestWithParam<ScoreMapCase> {};

TEST_P(CpuScoreMap, EveryMethodMatchesTheDefinition) {
  const ScoreMapCase c = GetParam();
  Image img = makeImage(c.frameW, c.frameH, c.frameFill, c.padding);
  TemplateImage t = makeTemplate(c.tplW, c.tplH, c.tplFill);
  auto engine = makeCpuEngine(CpuPath::Reference);
  ASSERT_TRUE(engine->setTemplates({t}).ok());
  const int mapW = c.frameW - c.tplW + 1, mapH = c.frameH - c.tplH + 1;
  for (int m = 0; m <= 5; ++m) {
    Method method = static_cast<Method>(m);
    std::vector<double> map;
    Status s = engine->scoreMap(img.view(), method, 0, &map);
    ASSERT_TRUE(s.ok()) << s.message();
    ASSERT_EQ(map.size(), std::size_t(mapW) * mapH);
    for (int y = 0; y < mapH; ++y) {
      for (int x = 0; x < mapW; ++x) {
        double got = map[std::size_t(y) * mapW + x];
        double want = bruteForceScore(img, t, method, x, y);
        ASSERT_TRUE(std::isfinite(got)) << methodName(method) << " at " << x << "," << y;
        double tol = (method == Method::SqDiff || method == Method::CCorr) ? 0.0 : 1e-9 * std::max(1.0, std::fabs(want));
        ASSERT_NEAR(got, want, tol) << methodName(method) << " at " << x << "," << y << " " << c;
      }
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Sizes, CpuScoreMap, ::testing::Values(
    //      frame     template  pad  frame fill     template fill
    ScoreMapCase{1, 1,     1, 1,     0,   Fill::Random, Fill::Random},
    ScoreMapCase{9, 7,     1, 1,     3,   Fill::Random, Fill::Random},
    ScoreMapCase{13, 11,   13, 11,   0,   Fill::Random, Fill::Random},   // template == frame
    ScoreMapCase{31, 17,   5, 3,     1,   Fill::Random, Fill::Random},
    ScoreMapCase{33, 29,   8, 8,     7,   Fill::Smooth, Fill::Smooth},
    ScoreMapCase{40, 23,   7, 9,     0,   Fill::Binary, Fill::Random},
    ScoreMapCase{24, 24,   6, 6,     2,   Fill::Flat,   Fill::Random},   // every window flat
    ScoreMapCase{24, 20,   6, 5,     0,   Fill::Random, Fill::Flat},     // flat template
    ScoreMapCase{64, 48,   16, 16,   0,   Fill::Random, Fill::Random},
    ScoreMapCase{1, 37,    1, 5,     0,   Fill::Random, Fill::Random},
    ScoreMapCase{37, 1,    4, 1,     5,   Fill::Random, Fill::Random}));

TEST(CpuEngine, FindsPastedTemplatesAtTheirPlaces) {
  Image img = makeImage(160, 120, Fill::Random, 8);
  TemplateImage a = makeTemplate(16, 12, Fill::Random, "a");
  TemplateImage b = makeTemplate(9, 21, Fill::Random, "b");
  paste(&img, a, 17, 33);
  paste(&img, a, 120, 90);
  paste(&img, b, 70, 5);
  auto engine = makeCpuEngine(CpuPath::Reference, 3);
  ASSERT_TRUE(engine->setTemplates({a, b}).ok());
  for (int m = 0; m <= 5; ++m) {
    MatchParams p;
    p.method = static_cast<Method>(m);
    if (m == 2 || m == 4) continue;  // unnormalised correlation peaks on bright areas, not on matches
    p.threshold = m == 0 ? 0.0 : (m == 1 ? 1e-9 : 0.999);
    p.maxMatches = 4;
    FrameResult r;
    Status s = engine->match(img.view(), p, &r);
    ASSERT_TRUE(s.ok()) << s.message();
    ASSERT_EQ(r.matches.size(), 3u) << methodName(p.method);
    EXPECT_EQ(r.matches[0].templateIndex, 0u);
    EXPECT_EQ(r.matches[2].templateIndex, 1u);
    // Two exact copies of "a" tie; raster order puts the upper one first.
    EXPECT_EQ(r.matches[0].x, 17); EXPECT_EQ(r.matches[0].y, 33);
    EXPECT_EQ(r.matches[1].x, 120); EXPECT_EQ(r.matches[1].y, 90);
    EXPECT_EQ(r.matches[2].x, 70); EXPECT_EQ(r.matches[2].y, 5);
    EXPECT_EQ(r.matches[2].width, 9); EXPECT_EQ(r.matches[2].height, 21);
    ASSERT_EQ(r.best.size(), 2u);
    ASSERT_TRUE(r.best[1]);
    EXPECT_EQ(r.best[1]->x, 70);
  }
}

TEST(CpuEngine, TemplateLargerThanFrameIsSkipped) {
  Image img = makeImage(20, 20, Fill::Random);
  auto engine = makeCpuEngine(CpuPath::Reference);
  ASSERT_TRUE(engine->setTemplates({makeTemplate(21, 5, Fill::Random), cutTemplate(img, 2, 3, 5, 5)}).ok());
  FrameResult r;
  MatchParams p;
  ASSERT_TRUE(engine->match(img.view(), p, &r).ok());
  ASSERT_EQ(r.best.size(), 2u);
  EXPECT_FALSE(r.best[0]);
  ASSERT_TRUE(r.best[1]);
  ASSERT_EQ(r.matches.size(), 1u);
  EXPECT_EQ(r.matches[0].templateIndex, 1u);
  EXPECT_EQ(r.matches[0].x, 2);
  std::vector<double> map;
  EXPECT_FALSE(engine->scoreMap(img.view(), Method::CCoeffNormed, 0, &map).ok());
}

TEST(CpuEngine, FrameSizeMayChangeBetweenCalls) {
  auto engine = makeCpuEngine(CpuPath::Reference);
  TemplateImage t = makeTemplate(7, 7, Fill::Random);
  ASSERT_TRUE(engine->setTemplates({t}).ok());
  for (int size : {50, 13, 90, 7}) {
    Image img = makeImage(size, size + 3, Fill::Random);
    paste(&img, t, size - 7, 3);
    FrameResult r;
    ASSERT_TRUE(engine->match(img.view(), MatchParams{}, &r).ok());
    ASSERT_EQ(r.matches.size(), 1u) << size;
    EXPECT_EQ(r.matches[0].x, size - 7);
  }
}

TEST(CpuEngine, ThreadCountDoesNotChangeResults) {
  Image img = makeImage(97, 61, Fill::Random, 3);
  TemplateImage t = makeTemplate(11, 6, Fill::Random);
  std::vector<double> reference;
  for (int threads : {1, 2, 5}) {
    auto engine = makeCpuEngine(CpuPath::Reference, threads);
    ASSERT_TRUE(engine->setTemplates({t}).ok());
    std::vector<double> map;
    ASSERT_TRUE(engine->scoreMap(img.view(), Method::CCoeffNormed, 0, &map).ok());
    if (reference.empty()) reference = map;
    ASSERT_EQ(map, reference) << threads << " threads";
  }
}

TEST(CpuEngine, RejectsBadInputWithMessages) {
  auto engine = makeCpuEngine(CpuPath::Reference);
  TemplateImage bad = makeTemplate(4, 4, Fill::Random, "broken");
  bad.pixels.pop_back();
  Status s = engine->setTemplates({bad});
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("broken"), std::string::npos) << s.message();
  TemplateImage empty;
  EXPECT_FALSE(engine->setTemplates({empty}).ok());

  ASSERT_TRUE(engine->setTemplates({makeTemplate(3, 3, Fill::Random)}).ok());
  Image img = makeImage(10, 10, Fill::Random);
  FrameResult r;
  FrameView v = img.view();
  v.stride = 5;
  s = engine->match(v, MatchParams{}, &r);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("stride"), std::string::npos);
  v = img.view();
  v.data = nullptr;
  EXPECT_FALSE(engine->match(v, MatchParams{}, &r).ok());
  v = img.view();
  v.memory = MemoryKind::Device;
  EXPECT_FALSE(engine->match(v, MatchParams{}, &r).ok());
  MatchParams p;
  p.threshold = std::nan("");
  EXPECT_FALSE(engine->match(img.view(), p, &r).ok());
  p = MatchParams{};
  p.nmsIou = 1.5;
  EXPECT_FALSE(engine->match(img.view(), p, &r).ok());
  p = MatchParams{};
  p.maxMatches = -1;
  EXPECT_FALSE(engine->match(img.view(), p, &r).ok());
  p = MatchParams{};
  p.method = static_cast<Method>(9);
  EXPECT_FALSE(engine->match(img.view(), p, &r).ok());
}

TEST(CpuEngine, EmptyBankGivesNoMatches) {
  auto engine = makeCpuEngine(CpuPath::Reference);
  Image img = makeImage(10, 10, Fill::Random);
  FrameResult r;
  ASSERT_TRUE(engine->match(img.view(), MatchParams{}, &r).ok());
  EXPECT_TRUE(r.matches.empty());
  EXPECT_TRUE(r.best.empty());
}

TEST(CpuEngine, SubmitAndCollectGiveEachFrameItsOwnResultInOrder) {
  auto engine = makeCpuEngine(CpuPath::Auto);
  TemplateImage t = makeTemplate(9, 7, Fill::Random);
  ASSERT_TRUE(engine->setTemplates({t}).ok());
  // Frames of different sizes, the template somewhere else in each.
  const int sizes[][2] = {{40, 30}, {23, 19}, {64, 48}, {40, 30}};
  std::vector<Image> frames;
  for (int i = 0; i < 4; ++i) {
    frames.push_back(makeImage(sizes[i][0], sizes[i][1], Fill::Random, std::size_t(i)));
    paste(&frames.back(), t, 2 + 3 * i, 1 + 2 * i);
  }
  ASSERT_EQ(engine->maxFramesInFlight(), Engine::kMaxFramesInFlight);
  std::size_t next = 0;
  for (std::size_t i = 0; i < frames.size(); ++i) {
    if (engine->framesInFlight() == engine->maxFramesInFlight()) {
      Status full = engine->submit(frames[i].view(), MatchParams{});
      ASSERT_FALSE(full.ok());
      EXPECT_NE(full.message().find("in flight"), std::string::npos) << full.message();
      FrameResult r;
      ASSERT_TRUE(engine->collect(&r).ok());
      ASSERT_EQ(r.matches.size(), 1u);
      EXPECT_EQ(r.matches[0].x, 2 + 3 * int(next));
      ++next;
    }
    ASSERT_TRUE(engine->submit(frames[i].view(), MatchParams{}).ok());
  }
  for (; next < frames.size(); ++next) {
    FrameResult r, direct;
    ASSERT_TRUE(engine->collect(&r).ok());
    ASSERT_TRUE(engine->match(frames[next].view(), MatchParams{}, &direct).ok());
    ASSERT_EQ(r.matches.size(), 1u);
    EXPECT_EQ(r.matches[0].x, 2 + 3 * int(next));
    EXPECT_EQ(r.matches[0].y, 1 + 2 * int(next));
    EXPECT_EQ(r.matches[0].score, direct.matches[0].score);
  }
  EXPECT_EQ(engine->framesInFlight(), 0);
  FrameResult none;
  Status empty = engine->collect(&none);
  ASSERT_FALSE(empty.ok());
  EXPECT_NE(empty.message().find("no frame in flight"), std::string::npos) << empty.message();
  EXPECT_FALSE(engine->collect(nullptr).ok());
  // A frame that fails is not in flight.
  FrameView bad = frames[0].view();
  bad.data = nullptr;
  EXPECT_FALSE(engine->submit(bad, MatchParams{}).ok());
  EXPECT_EQ(engine->framesInFlight(), 0);
}

TEST(Methods, NamesRoundTrip) {
  for (int m = 0; m <= 5; ++m) {
    Method parsed;
    ASSERT_TRUE(parseMethod(methodName(static_cast<Method>(m)), &parsed));
    EXPECT_EQ(static_cast<int>(parsed), m);
    ASSERT_TRUE(parseMethod(std::to_string(m), &parsed));
    EXPECT_EQ(static_cast<int>(parsed), m);
  }
  Method parsed;
  EXPECT_FALSE(parseMethod("ccoeff_normed", &parsed));
  EXPECT_FALSE(parseMethod("6", &parsed));
}

TEST(CpuEngine, WorkerThreadsFollowTheOptions) {
  const int cores = int(std::max(1u, std::thread::hardware_concurrency()));
  for (int threads : {0, 1, 2, 5}) {
    EngineOptions o;
    o.backend = Backend::Cpu;
    o.threads = threads;
    std::unique_ptr<Engine> e;
    ASSERT_TRUE(Engine::create(o, &e).ok());
    EXPECT_EQ(e->workerThreads(), threads == 0 ? cores : threads);
    // Same matches whatever the thread count.
    Image img = makeImage(97, 61, Fill::Random);
    TemplateImage t = cutTemplate(img, 40, 20, 9, 7);
    ASSERT_TRUE(e->setTemplates({t}).ok());
    FrameResult r;
    ASSERT_TRUE(e->match(img.view(), {}, &r).ok());
    ASSERT_EQ(r.matches.size(), 1u);
    EXPECT_EQ(r.matches[0].x, 40);
    EXPECT_EQ(r.matches[0].y, 20);
  }
}

TEST(Engine, CudaRequestWithoutDeviceFailsClearly) {
  std::string why;
  if (cudaAvailable(&why)) GTEST_SKIP() << "a CUDA device is present; this test covers hosts without one";
  EngineOptions o;
  o.backend = Backend::Cuda;
  std::unique_ptr<Engine> e;
  Status s = Engine::create(o, &e);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("CUDA"), std::string::npos);
  o.backend = Backend::Auto;
  ASSERT_TRUE(Engine::create(o, &e).ok());
  EXPECT_EQ(e->backend(), Backend::Cpu);
}

}  // namespace
}  // namespace nccmatch::test
