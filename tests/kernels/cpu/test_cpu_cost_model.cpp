// The cost model that resolves CpuPath::Auto: small templates go Direct, large ones Fft (only when
// FFTW is present), explicit paths pass through, and the Auto engine gives Reference's matches.
#include <gtest/gtest.h>

#include <cmath>

#include "cpu/cpu_cost_model.hpp"
#include "nccmatch/engine.hpp"
#include "test_support.hpp"

namespace nccmatch::test {
namespace {

TEST(CpuCostModel, ExplicitPathsPassThrough) {
  for (CpuPath p : {CpuPath::Reference, CpuPath::Direct, CpuPath::Fft})
    EXPECT_EQ(resolveCpuPath(p, 1920, 1080, 64, 64), p);
}

TEST(CpuCostModel, AutoPicksDirectForSmallAndFftForLargeTemplates) {
  struct Case { int frameW, frameH, tplW, tplH; CpuPath withFftw; };
  const Case cases[] = {
      //  frame        template   expected with FFTW
      {1920, 1080,  1, 1,      CpuPath::Direct},
      {1920, 1080,  8, 8,      CpuPath::Direct},
      {640, 480,    4, 60,     CpuPath::Direct},
      {1920, 1080,  64, 64,    CpuPath::Fft},
      {1920, 1080,  256, 256,  CpuPath::Fft},
      {640, 480,    128, 128,  CpuPath::Fft},
  };
  for (const Case& c : cases) {
    const CpuPath want = cpuFftAvailable() ? c.withFftw : CpuPath::Direct;
    EXPECT_EQ(resolveCpuPath(CpuPath::Auto, c.frameW, c.frameH, c.tplW, c.tplH), want)
        << c.tplW << "x" << c.tplH << " on " << c.frameW << "x" << c.frameH;
  }
}

TEST(CpuCostModel, DirectCostGrowsWithTemplateAreaFftCostBarely) {
  const double d8 = directNumeratorSeconds(1920, 1080, 8, 8);
  const double d64 = directNumeratorSeconds(1920, 1080, 64, 64);
  EXPECT_GT(d64, 40 * d8);
  EXPECT_NEAR(directNumeratorSeconds(1920, 1080, 64, 64, 4), d64 / 4, d64 * 1e-12);
  if (!cpuFftAvailable()) {
    EXPECT_TRUE(std::isinf(fftNumeratorSeconds(1920, 1080, 64, 64)));
    return;
  }
  const double f8 = fftNumeratorSeconds(1920, 1080, 8, 8);
  const double f64 = fftNumeratorSeconds(1920, 1080, 64, 64);
  EXPECT_GT(f64, 0);
  EXPECT_LT(f64, 4 * f8);
}

TEST(CpuCostModel, AutoEngineGivesReferenceMatches) {
  Image img = makeImage(300, 200, Fill::Random, 2);
  TemplateImage small = makeTemplate(5, 4, Fill::Random, "small");
  TemplateImage large = makeTemplate(120, 90, Fill::Random, "large");
  paste(&img, small, 10, 180);
  paste(&img, large, 150, 60);
  std::unique_ptr<Engine> reference, automatic;
  EngineOptions o;
  o.backend = Backend::Cpu;
  o.cpuPath = CpuPath::Reference;
  ASSERT_TRUE(Engine::create(o, &reference).ok());
  o.cpuPath = CpuPath::Auto;
  ASSERT_TRUE(Engine::create(o, &automatic).ok());
  ASSERT_TRUE(reference->setTemplates({small, large}).ok());
  ASSERT_TRUE(automatic->setTemplates({small, large}).ok());
  MatchParams p;
  p.threshold = 0.95;
  p.maxMatches = 3;
  FrameResult want, got;
  ASSERT_TRUE(reference->match(img.view(), p, &want).ok());
  ASSERT_TRUE(automatic->match(img.view(), p, &got).ok());
  ASSERT_EQ(got.matches.size(), want.matches.size());
  ASSERT_EQ(want.matches.size(), 2u);
  for (std::size_t k = 0; k < want.matches.size(); ++k) {
    EXPECT_EQ(got.matches[k].x, want.matches[k].x);
    EXPECT_EQ(got.matches[k].y, want.matches[k].y);
    EXPECT_EQ(got.matches[k].score, want.matches[k].score);
  }
}

}  // namespace
}  // namespace nccmatch::test
