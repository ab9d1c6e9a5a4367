// Prepared region template sets on the CUDA engine (Engine::prepareRegionTemplates,
// cuda/engine/region_templates.hpp): regions naming a set's templates give bit for bit what the
// CPU Reference engine gives for the same templates as own images, and what the CUDA engine gives
// for them as own images, on host and device frames, every method: templates of 1x1, 17x13, 64x64
// and 91x91, masked and unmasked (fused and masked kernels), several regions naming one template,
// two sets; a coarse-to-fine-like call of a thousand regions over hundreds of rotated masked
// variants; sets kept across setTemplates and across many calls, replaced in place; bad handles
// refused naming the region; a preparation failing for want of device memory or a lost context
// (injected: cuda/fault_injection.hpp) names it and leaves the sets as they were. Skips without a
// GPU.
#include <gtest/gtest.h>

#include <random>
#include <string>
#include <vector>

#include "cuda/fault_injection.hpp"
#include "nccmatch/rotations.hpp"
#include "region_check.hpp"
#include "region_set_scene.hpp"

namespace nccmatch::test {
namespace {

// The scene's regions on the CPU (own images: the oracle) and on the GPU (own images and prepared
// sets), host and device frames, every method with `paramsFor`.
void expectPreparedLikeOwn(const RegionSetScene& scene, const std::function<MatchParams(Method)>& paramsFor,
                           const std::string& what) {
  auto cpu = makeEngine(Backend::Cpu);
  auto gpu = makeEngine(Backend::Cuda);
  const std::vector<TemplateImage> bank{makeTemplate(5, 5, Fill::Random, "bank")};
  ASSERT_TRUE(cpu->setTemplates(bank).ok());
  ASSERT_TRUE(gpu->setTemplates(bank).ok());
  RegionTemplateSet handles[2];
  for (int set = 0; set < 2; ++set) {
    const Status st = gpu->prepareRegionTemplates(scene.sets[set], &handles[set]);
    ASSERT_TRUE(st.ok()) << st.message();
  }
  const std::vector<RegionQuery> own = scene.ownQueries(), prepared = scene.setQueries(handles);
  DeviceImage device;
  const FrameView onDevice = upload(scene.image, &device);
  for (int m = 0; m <= 5; ++m) {
    const MatchParams params = paramsFor(Method(m));
    const std::string where = what + ", " + methodName(params.method);
    std::vector<RegionResult> want, gpuOwn, host, dev;
    ASSERT_TRUE(cpu->matchRegions(scene.image.view(), own, params, &want).ok());
    Status st = gpu->matchRegions(scene.image.view(), own, params, &gpuOwn);
    ASSERT_TRUE(st.ok()) << st.message();
    expectSameRegions(gpuOwn, want, where + ", own images");
    st = gpu->matchRegions(scene.image.view(), prepared, params, &host);
    ASSERT_TRUE(st.ok()) << st.message();
    expectSameRegions(host, want, where + ", prepared sets, host frame");
    st = gpu->matchRegions(onDevice, prepared, params, &dev);
    ASSERT_TRUE(st.ok()) << st.message();
    expectSameRegions(dev, want, where + ", prepared sets, device frame");
    std::size_t peaks = 0;
    for (const RegionResult& r : want) peaks += r.matches.size();
    EXPECT_GT(peaks, 0u) << where << ": the scene must give matches to compare";
  }
}

TEST(CudaRegionTemplates, PreparedSetsGiveWhatOwnImagesGiveEveryPeak) {
  SKIP_WITHOUT_GPU();
  expectPreparedLikeOwn(makeRegionSetScene(), everyRegionPeak, "every peak");
}

TEST(CudaRegionTemplates, PreparedSetsGiveWhatOwnImagesGiveUsualSettings) {
  SKIP_WITHOUT_GPU();
  expectPreparedLikeOwn(makeRegionSetScene(), usualRegionParams, "threshold, NMS, 3 matches");
}

// As a coarse-to-fine refinement calls it: rotated masked variants (disc support) and unmasked
// ones (rectangle support at 0 and 90 degrees) of two templates at three scales, prepared once,
// a thousand small overlapping regions around a few places on a 1080p frame, in three calls
// (the set reused): the CPU engine's results with own images, bit for bit.
TEST(CudaRegionTemplates, AThousandRegionsOverRotatedVariants) {
  SKIP_WITHOUT_GPU();
  Image img = makeImage(1920, 1080, Fill::Smooth, 0);
  const std::vector<TemplateImage> originals{cutTemplate(img, 500, 300, 64, 64, "a"),
                                             cutTemplate(img, 1200, 700, 48, 40, "b")};
  ScaledBank disc, rect;
  ASSERT_TRUE(rotateAndScaleTemplates(originals, {0.9, 1.0, 1.1}, angleRange(0, 360, 10), &disc,
                                      RotationSupport::Disc).ok());
  ASSERT_TRUE(rotateAndScaleTemplates(originals, {1.0}, {0, 90}, &rect, RotationSupport::Rectangle).ok());
  std::vector<TemplateImage> variants = disc.templates;
  variants.insert(variants.end(), rect.templates.begin(), rect.templates.end());
  auto cpu = makeEngine(Backend::Cpu);
  auto gpu = makeEngine(Backend::Cuda);
  RegionTemplateSet set;
  ASSERT_TRUE(gpu->prepareRegionTemplates(variants, &set).ok());
  EXPECT_EQ(set.size, variants.size());
  std::mt19937_64& g = rng();
  for (int call = 0; call < 3; ++call) {
    std::vector<RegionQuery> own, prepared;
    for (int k = 0; k < 1000; ++k) {
      const uint32_t v = uint32_t(g() % variants.size());
      const TemplateImage& t = variants[v];
      const int w = t.width + 2 + int(g() % 5), h = t.height + 2 + int(g() % 5);
      const int place = int(g() % 4);
      const int x = std::min(1920 - w, 200 + 450 * place + int(g() % 9));
      const int y = std::min(1080 - h, 150 + 200 * place + int(g() % 9));
      own.emplace_back(x, y, w, h, v, &t);
      prepared.emplace_back(x, y, w, h, set, v, v);
    }
    for (Method method : {Method::CCoeffNormed, Method::SqDiffNormed, Method::CCorr}) {
      const MatchParams params = everyRegionPeak(method);
      std::vector<RegionResult> want, got;
      ASSERT_TRUE(cpu->matchRegions(img.view(), own, params, &want).ok());
      const Status st = gpu->matchRegions(img.view(), prepared, params, &got);
      ASSERT_TRUE(st.ok()) << st.message();
      expectSameRegions(got, want, "call " + std::to_string(call) + ", " + methodName(method));
    }
  }
}

// A set outlives setTemplates, serves many calls, and a set replaced in place (prepared into the
// same handle) answers with its new templates; the replaced handle is refused.
TEST(CudaRegionTemplates, SetsOutliveTheBankAndAreReplacedInPlace) {
  SKIP_WITHOUT_GPU();
  Image img = makeImage(200, 150, Fill::Smooth, 4);
  const TemplateImage a = cutTemplate(img, 30, 40, 20, 18, "a");
  TemplateImage b = cutTemplate(img, 120, 70, 33, 31, "b");
  b.mask = makeMask(33, 31, MaskShape::Disc);
  auto gpu = makeEngine(Backend::Cuda);
  auto cpu = makeEngine(Backend::Cpu);
  RegionTemplateSet set;
  for (int round = 0; round < 20; ++round) {
    const TemplateImage& t = round % 2 == 0 ? a : b;
    const RegionTemplateSet before = set;
    ASSERT_TRUE(gpu->prepareRegionTemplates({t}, &set).ok());
    if (round > 0) {
      EXPECT_FALSE(gpu->holdsRegionTemplates(before));
      std::vector<RegionResult> results;
      const Status st = gpu->matchRegions(img.view(), {RegionQuery(0, 0, 60, 60, before, 0)}, MatchParams(), &results);
      ASSERT_FALSE(st.ok());
      EXPECT_NE(st.message().find("released or replaced"), std::string::npos) << st.message();
    }
    ASSERT_TRUE(gpu->setTemplates({makeTemplate(3 + round, 4, Fill::Random)}).ok());
    const std::vector<RegionQuery> own{RegionQuery(0, 0, 200, 150, 0, &t), RegionQuery(10, 20, 90, 80, 0, &t)};
    const std::vector<RegionQuery> prepared{RegionQuery(0, 0, 200, 150, set, 0), RegionQuery(10, 20, 90, 80, set, 0)};
    const MatchParams params = usualRegionParams(Method::CCoeffNormed);
    std::vector<RegionResult> want, got;
    ASSERT_TRUE(cpu->matchRegions(img.view(), own, params, &want).ok());
    ASSERT_TRUE(gpu->matchRegions(img.view(), prepared, params, &got).ok());
    expectSameRegions(got, want, "round " + std::to_string(round));
    ASSERT_FALSE(got[0].matches.empty());
    EXPECT_EQ(got[0].matches[0].x, t.name == "a" ? 30 : 120);
  }
  ASSERT_TRUE(gpu->releaseRegionTemplates(&set).ok());
  EXPECT_TRUE(set.empty());
}

// Bad handles on the CUDA engine: the same refusals as the CPU engine's, naming the region, and
// the engine still works after them.
TEST(CudaRegionTemplates, BadHandlesAreRefusedNamingTheRegion) {
  SKIP_WITHOUT_GPU();
  Image img = makeImage(64, 48, Fill::Random);
  auto gpu = makeEngine(Backend::Cuda);
  auto otherGpu = makeEngine(Backend::Cuda);
  auto cpu = makeEngine(Backend::Cpu);
  const std::vector<TemplateImage> two{makeTemplate(5, 4, Fill::Random), makeTemplate(70, 3, Fill::Random)};
  RegionTemplateSet live, fromGpu, fromCpu, released;
  ASSERT_TRUE(gpu->prepareRegionTemplates(two, &live).ok());
  ASSERT_TRUE(otherGpu->prepareRegionTemplates(two, &fromGpu).ok());
  ASSERT_TRUE(cpu->prepareRegionTemplates(two, &fromCpu).ok());
  ASSERT_TRUE(gpu->prepareRegionTemplates(two, &released).ok());
  const RegionTemplateSet releasedCopy = released;
  ASSERT_TRUE(gpu->releaseRegionTemplates(&released).ok());
  const TemplateImage own = makeTemplate(4, 4, Fill::Random);
  RegionQuery both(0, 0, 8, 8, live, 0);
  both.image = &own;
  struct Bad {
    RegionQuery region;
    const char* says;
  };
  const std::vector<Bad> cases = {
      {RegionQuery(0, 0, 9, 9, fromGpu, 0), "prepared by another engine"},
      {RegionQuery(0, 0, 9, 9, fromCpu, 0), "prepared by another engine"},
      {RegionQuery(0, 0, 9, 9, live, 2), "outside its set"},
      {RegionQuery(0, 0, 9, 9, releasedCopy, 0), "released or replaced"},
      {both, "both its own image and"},
  };
  for (const Bad& c : cases) {
    std::vector<RegionResult> results;
    const Status st = gpu->matchRegions(img.view(), {RegionQuery(0, 0, 9, 9, live, 0), c.region}, MatchParams(),
                                        &results);
    ASSERT_FALSE(st.ok()) << c.says;
    EXPECT_NE(st.message().find("region 1"), std::string::npos) << st.message();
    EXPECT_NE(st.message().find(c.says), std::string::npos) << st.message();
  }
  RegionTemplateSet copy = fromGpu;
  EXPECT_FALSE(gpu->releaseRegionTemplates(&copy).ok());
  EXPECT_TRUE(otherGpu->holdsRegionTemplates(fromGpu));
  EXPECT_FALSE(gpu->prepareRegionTemplates({}, &copy).ok());
  // Still working: a region of the live set's 70x3 template (the masked kernel) and its 5x4 one.
  std::vector<RegionResult> results;
  const Status st = gpu->matchRegions(img.view(), {RegionQuery(0, 0, 64, 48, live, 0), RegionQuery(0, 0, 64, 48, live, 1)},
                                      MatchParams(), &results);
  ASSERT_TRUE(st.ok()) << st.message();
  EXPECT_TRUE(results[0].best.has_value());
  EXPECT_FALSE(results[1].best.has_value());  // 70 wide: larger than the region
}

// A preparation that fails (the device allocation refused; the context lost at the upload)
// returns a Status naming the fault and changes nothing: the handle it was to replace is still
// held and gives the same results; once the fault is lifted the preparation succeeds.
TEST(CudaRegionTemplates, AFailedPreparationChangesNothing) {
  SKIP_WITHOUT_GPU();
  namespace faults = nccmatch::cuda::faults;
  faults::LiftOnExit lifted;
  Image img = makeImage(160, 120, Fill::Smooth, 6);
  TemplateImage masked = cutTemplate(img, 40, 30, 25, 23, "masked");
  masked.mask = makeMask(25, 23, MaskShape::Ring);
  const std::vector<TemplateImage> templates{cutTemplate(img, 90, 60, 16, 16, "fused"), masked};
  auto gpu = makeEngine(Backend::Cuda);
  RegionTemplateSet set;
  ASSERT_TRUE(gpu->prepareRegionTemplates(templates, &set).ok());
  const std::vector<RegionQuery> regions{RegionQuery(70, 40, 60, 60, set, 0), RegionQuery(20, 10, 70, 60, set, 1)};
  const MatchParams params = everyRegionPeak(Method::CCoeffNormed);
  std::vector<RegionResult> before;
  ASSERT_TRUE(gpu->matchRegions(img.view(), regions, params, &before).ok());
  struct Fault {
    const char* what;
    faults::FaultPlan plan;
    const char* says;
  };
  faults::FaultPlan noMemory, lostContext;
  noMemory.deviceAllocationsLeft = 0;
  lostContext.checkedCallsLeft = 0;
  for (const Fault& f : {Fault{"out of device memory", noMemory, "cudaErrorMemoryAllocation"},
                         Fault{"a lost context", lostContext, "cudaErrorLaunchFailure"}}) {
    const RegionTemplateSet held = set;
    faults::arm(f.plan);
    const Status st = gpu->prepareRegionTemplates({makeTemplate(200, 3, Fill::Random)}, &set);
    faults::lift();
    ASSERT_FALSE(st.ok()) << f.what;
    EXPECT_NE(st.message().find(f.says), std::string::npos) << f.what << ": " << st.message();
    EXPECT_EQ(set.id, held.id) << f.what;
    EXPECT_TRUE(gpu->holdsRegionTemplates(set)) << f.what;
    std::vector<RegionResult> after;
    const Status again = gpu->matchRegions(img.view(), regions, params, &after);
    ASSERT_TRUE(again.ok()) << f.what << ": " << again.message();
    expectSameRegions(after, before, std::string("after ") + f.what);
  }
  RegionTemplateSet other;
  ASSERT_TRUE(gpu->prepareRegionTemplates(templates, &other).ok());
}

}  // namespace
}  // namespace nccmatch::test
