// The CUDA engine under injected faults (cuda/fault_injection.hpp): out of device memory at each
// allocation in turn (setTemplates, the first frame, a larger frame, a larger bank, matchRegions'
// windows: its counters are left zero by each call for the next, and renewed after a failed one),
// past a byte
// limit mid-stream, out of pinned memory, a lost context at each checked call in turn, a device
// that does not exist. Every failure is a Status naming the fault; no crash, no hang; once the
// fault is lifted the same engine matches exactly as one that never failed.
// NCCMATCH_FAULT_SWEEP_STEP=k tries every k-th failing step only (scripts/gpu-sanitize.sh sets it:
// under compute-sanitizer every step would take too long).
#include <gtest/gtest.h>

#include <climits>
#include <cstdlib>
#include <string>
#include <vector>

#include "cuda/fault_injection.hpp"
#include "region_check.hpp"
#include "test_support.hpp"

namespace nccmatch::test {
namespace {

namespace faults = cuda::faults;

// The sweeps' stride: 1 (every step) unless NCCMATCH_FAULT_SWEEP_STEP says otherwise.
long long sweepStep() { return envSetting("NCCMATCH_FAULT_SWEEP_STEP", 1, 1, LLONG_MAX); }

// Two frame sizes and two banks: the second of each grows the engine's buffers.
struct Workload {
  Image small, large;
  std::vector<TemplateImage> bank, biggerBank;
  MatchParams params;
};

Workload makeWorkload() {
  Workload w;
  w.small = makeImage(160, 120, Fill::Smooth);
  w.large = makeImage(400, 300, Fill::Smooth, 3);
  const TemplateImage a = makeTemplate(12, 10, Fill::Random, "a"), b = makeTemplate(40, 30, Fill::Random, "b");
  paste(&w.small, a, 20, 30);
  paste(&w.small, b, 90, 60);
  paste(&w.large, a, 300, 200);
  paste(&w.large, b, 50, 40);
  w.bank = {a, b};
  w.biggerBank = {a, b, makeTemplate(64, 48, Fill::Random, "c"), makeTemplate(9, 9, Fill::Random, "d"),
                  makeTemplate(9, 9, Fill::Smooth, "e"), cutTemplate(w.large, 120, 100, 30, 20, "f")};
  w.params.threshold = 0.7;
  w.params.maxMatches = 4;
  return w;
}

// What each step of a workload gave: its Status and, when it matched, its result (a frame's, or
// its windows' for matchRegions).
struct Step {
  std::string name;
  Status status;
  FrameResult result;
  std::vector<RegionResult> regions;
};

// setTemplates(bank), the small frame, windows of it, the large frame, setTemplates(biggerBank), the
// large frame, more windows of it. Stops at nothing: every step runs, so a step after a failed one
// shows that the engine goes on.
std::vector<Step> runWorkload(Engine& engine, const Workload& w) {
  std::vector<Step> steps;
  auto set = [&](const char* name, const std::vector<TemplateImage>& bank) {
    steps.push_back({name, engine.setTemplates(bank), {}, {}});
  };
  auto match = [&](const char* name, const Image& image) {
    Step s{name, Status(), {}, {}};
    s.status = engine.match(image.view(), w.params, &s.result);
    steps.push_back(std::move(s));
  };
  auto windows = [&](const char* name, const Image& image, const std::vector<RegionQuery>& regions) {
    Step s{name, Status(), {}, {}};
    s.status = engine.matchRegions(image.view(), regions, w.params, &s.regions);
    steps.push_back(std::move(s));
  };
  set("setTemplates(bank)", w.bank);
  match("small frame", w.small);
  windows("windows of the small frame", w.small, {{10, 20, 40, 40, 0, nullptr}, {80, 50, 70, 50, 1, nullptr}});
  match("large frame", w.large);
  set("setTemplates(biggerBank)", w.biggerBank);
  match("large frame, bigger bank", w.large);
  windows("windows of the large frame", w.large,
          {{280, 180, 60, 50, 0, nullptr}, {30, 20, 90, 80, 1, nullptr}, {0, 0, 400, 300, 2, nullptr},
           {100, 100, 30, 30, 3, nullptr}, {110, 90, 60, 50, 5, nullptr}});
  return steps;
}

void expectSameMatches(const FrameResult& got, const FrameResult& want, const std::string& where) {
  ASSERT_EQ(got.best.size(), want.best.size()) << where;
  for (std::size_t i = 0; i < want.best.size(); ++i) {
    ASSERT_EQ(got.best[i].has_value(), want.best[i].has_value()) << where << " template " << i;
    if (!want.best[i]) continue;
    EXPECT_EQ(got.best[i]->x, want.best[i]->x) << where << " template " << i;
    EXPECT_EQ(got.best[i]->y, want.best[i]->y) << where << " template " << i;
    EXPECT_EQ(got.best[i]->score, want.best[i]->score) << where << " template " << i;
  }
  ASSERT_EQ(got.matches.size(), want.matches.size()) << where;
  for (std::size_t k = 0; k < want.matches.size(); ++k) {
    EXPECT_EQ(got.matches[k].templateIndex, want.matches[k].templateIndex) << where << " match " << k;
    EXPECT_EQ(got.matches[k].x, want.matches[k].x) << where << " match " << k;
    EXPECT_EQ(got.matches[k].y, want.matches[k].y) << where << " match " << k;
    EXPECT_EQ(got.matches[k].score, want.matches[k].score) << where << " match " << k;
  }
}

// Every step succeeded, with the results of a run that never failed.
void expectClean(const std::vector<Step>& got, const std::vector<Step>& clean, const std::string& where) {
  ASSERT_EQ(got.size(), clean.size());
  for (std::size_t i = 0; i < got.size(); ++i) {
    ASSERT_TRUE(got[i].status.ok()) << where << ", " << got[i].name << ": " << got[i].status.message();
    expectSameMatches(got[i].result, clean[i].result, where + ", " + got[i].name);
    expectSameRegions(got[i].regions, clean[i].regions, where + ", " + got[i].name);
  }
}

// A windows step after a failed setTemplates: the regions name templates of the bank it was to set,
// and matchRegions refuses them naming the bank that failing call left.
bool refusedForAFailedBank(const std::vector<Step>& steps, std::size_t i) {
  bool bankFailed = false;
  for (std::size_t k = 0; k < i; ++k)
    bankFailed = bankFailed || (steps[k].name.rfind("setTemplates", 0) == 0 && !steps[k].status.ok());
  return bankFailed && steps[i].name.rfind("windows", 0) == 0 &&
         steps[i].status.message().find("is outside the bank of") != std::string::npos;
}

bool namesOutOfMemory(const std::string& message) {
  return message.find("cudaErrorMemoryAllocation") != std::string::npos ||
         message.find("CUFFT_ALLOC_FAILED") != std::string::npos;
}

std::unique_ptr<Engine> cudaEngine(CudaNumerator numerator, Status* status) {
  EngineOptions o;
  o.backend = Backend::Cuda;
  o.cudaNumerator = numerator;
  std::unique_ptr<Engine> e;
  *status = Engine::create(o, &e);
  return e;
}

class CudaFaults : public ::testing::TestWithParam<CudaNumerator> {
 protected:
  void SetUp() override {
    faults::lift();
    workload_ = makeWorkload();
  }
  void TearDown() override { faults::lift(); }

  // The workload on a fresh engine with no fault armed: the results every recovery must give.
  std::vector<Step> cleanRun() {
    Status s;
    auto engine = cudaEngine(GetParam(), &s);
    EXPECT_TRUE(s.ok()) << s.message();
    if (!engine) return {};
    std::vector<Step> steps = runWorkload(*engine, workload_);
    for (const Step& step : steps) EXPECT_TRUE(step.status.ok()) << step.name << ": " << step.status.message();
    return steps;
  }

  Workload workload_;
};

// The n-th device allocation and every later one fail, for each n the workload reaches: each
// failing step says the device is out of memory, the steps after it return too, and once lifted
// the same engine runs the workload as a clean one.
TEST_P(CudaFaults, OutOfDeviceMemoryAtEachAllocationThenRecovers) {
  SKIP_WITHOUT_GPU();
  const std::vector<Step> clean = cleanRun();
  ASSERT_FALSE(clean.empty());
  const std::uint64_t first = faults::deviceAllocationCount();
  { Status s; auto e = cudaEngine(GetParam(), &s); ASSERT_TRUE(s.ok()) << s.message(); runWorkload(*e, workload_); }
  const long long allocations = (long long)(faults::deviceAllocationCount() - first);
  ASSERT_GT(allocations, 0);
  for (long long n = 0; n < allocations; n += sweepStep()) {
    const std::string where = "device allocations failing after " + std::to_string(n);
    faults::FaultPlan plan;
    plan.deviceAllocationsLeft = n;
    faults::arm(plan);
    Status created;
    auto engine = cudaEngine(GetParam(), &created);
    int failed = 0;
    if (!created.ok()) {
      ++failed;
      EXPECT_TRUE(namesOutOfMemory(created.message())) << where << ": " << created.message();
    } else {
      const std::vector<Step> steps = runWorkload(*engine, workload_);
      for (std::size_t i = 0; i < steps.size(); ++i) {
        const Step& step = steps[i];
        if (step.status.ok()) continue;
        ++failed;
        EXPECT_TRUE(namesOutOfMemory(step.status.message()) || refusedForAFailedBank(steps, i))
            << where << ", " << step.name << ": " << step.status.message();
      }
    }
    EXPECT_GT(failed, 0) << where << ": the workload makes " << allocations << " allocations";
    faults::lift();
    if (!engine) engine = cudaEngine(GetParam(), &created);
    ASSERT_TRUE(created.ok()) << where << ": " << created.message();
    expectClean(runWorkload(*engine, workload_), clean, where + ", lifted");
    if (HasFatalFailure()) return;
  }
}

// A byte limit set mid-stream: frames of the size already seen still match (a stream of one size
// allocates nothing after its first frames); a larger bank and a larger frame fail naming the
// memory; lifted, the same engine runs them as a clean one. The bank goes first: a failed frame
// preparation frees the buffers it was growing, which could make room for a few templates.
TEST_P(CudaFaults, ByteLimitMidStreamRefusesGrowthOnly) {
  SKIP_WITHOUT_GPU();
  const std::vector<Step> clean = cleanRun();
  ASSERT_FALSE(clean.empty());
  Status s;
  auto engine = cudaEngine(GetParam(), &s);
  ASSERT_TRUE(s.ok()) << s.message();
  ASSERT_TRUE(engine->setTemplates(workload_.bank).ok());
  FrameResult result;
  for (int i = 0; i < Engine::kMaxFramesInFlight + 1; ++i) {  // every frame slot has its buffers
    s = engine->match(workload_.small.view(), workload_.params, &result);
    ASSERT_TRUE(s.ok()) << s.message();
  }
  faults::FaultPlan plan;
  plan.deviceByteLimit = faults::deviceBytesHeld();  // not one byte more
  faults::arm(plan);
  for (int i = 0; i < 2 * Engine::kMaxFramesInFlight; ++i) {
    s = engine->match(workload_.small.view(), workload_.params, &result);
    ASSERT_TRUE(s.ok()) << "same-size frame " << i << " under the limit: " << s.message();
    expectSameMatches(result, clean[1].result, "same-size frame under the limit");
  }
  s = engine->setTemplates(workload_.biggerBank);
  ASSERT_FALSE(s.ok()) << "a larger bank needs more device memory";
  EXPECT_TRUE(namesOutOfMemory(s.message())) << s.message();
  s = engine->match(workload_.large.view(), workload_.params, &result);
  ASSERT_FALSE(s.ok()) << "a larger frame needs more device memory";
  EXPECT_TRUE(namesOutOfMemory(s.message())) << s.message();
  faults::lift();
  expectClean(runWorkload(*engine, workload_), clean, "byte limit lifted");
}

// Pinned host memory (the results' host copies) running out: a Status naming it, then recovery.
TEST_P(CudaFaults, OutOfPinnedMemoryThenRecovers) {
  SKIP_WITHOUT_GPU();
  const std::vector<Step> clean = cleanRun();
  ASSERT_FALSE(clean.empty());
  Status s;
  auto engine = cudaEngine(GetParam(), &s);
  ASSERT_TRUE(s.ok()) << s.message();
  faults::FaultPlan plan;
  plan.pinnedAllocationsLeft = 0;
  faults::arm(plan);
  int failed = 0;
  for (const Step& step : runWorkload(*engine, workload_)) {
    if (step.status.ok()) continue;
    ++failed;
    EXPECT_TRUE(namesOutOfMemory(step.status.message())) << step.name << ": " << step.status.message();
  }
  EXPECT_GT(failed, 0) << "no step allocated pinned memory";
  faults::lift();
  expectClean(runWorkload(*engine, workload_), clean, "pinned faults lifted");
}

// A lost context at the n-th checked CUDA call, for each n until the workload gets through: the
// failing step names cudaErrorLaunchFailure (every step after it fails too while the context
// stays lost); once lifted, the same engine runs the workload as a clean one.
TEST_P(CudaFaults, LostContextAtEachCheckedCallThenRecovers) {
  SKIP_WITHOUT_GPU();
  const std::vector<Step> clean = cleanRun();
  ASSERT_FALSE(clean.empty());
  constexpr long long kCallsBound = 20000;  // far above what the workload makes
  long long n = 0;
  for (; n < kCallsBound; n += sweepStep()) {
    const std::string where = "checked calls failing after " + std::to_string(n);
    faults::FaultPlan plan;
    plan.checkedCallsLeft = n;
    faults::arm(plan);
    Status created;
    auto engine = cudaEngine(GetParam(), &created);
    bool anyFailed = !created.ok();
    if (!created.ok()) {
      EXPECT_NE(created.message().find("cudaErrorLaunchFailure"), std::string::npos) << where << ": " << created.message();
    } else {
      bool failedBefore = false;
      const std::vector<Step> steps = runWorkload(*engine, workload_);
      for (std::size_t i = 0; i < steps.size(); ++i) {
        const Step& step = steps[i];
        if (failedBefore) {
          EXPECT_FALSE(step.status.ok()) << where << ", " << step.name << " after a lost context";
        }
        if (step.status.ok()) continue;
        failedBefore = anyFailed = true;
        EXPECT_TRUE(step.status.message().find("cudaErrorLaunchFailure") != std::string::npos ||
                    refusedForAFailedBank(steps, i))
            << where << ", " << step.name << ": " << step.status.message();
      }
    }
    faults::lift();
    if (!engine) engine = cudaEngine(GetParam(), &created);
    ASSERT_TRUE(created.ok()) << where << ": " << created.message();
    expectClean(runWorkload(*engine, workload_), clean, where + ", lifted");
    if (HasFatalFailure() || !anyFailed) break;  // !anyFailed: every checked call got through
  }
  EXPECT_LT(n, kCallsBound) << "the workload never got through";
}

INSTANTIATE_TEST_SUITE_P(Numerators, CudaFaults,
                         ::testing::Values(CudaNumerator::Auto, CudaNumerator::Spatial, CudaNumerator::Fft),
                         [](const ::testing::TestParamInfo<CudaNumerator>& info) {
                           return std::string(cudaNumeratorName(info.param));
                         });

// A device index past the last device: a Status naming the index and how many devices exist.
TEST(CudaDevice, ADeviceThatDoesNotExistIsNamed) {
  SKIP_WITHOUT_GPU();
  int count = 0;
  ASSERT_EQ(cudaGetDeviceCount(&count), cudaSuccess);
  EngineOptions o;
  o.backend = Backend::Cuda;
  o.cudaDevice = count;
  std::unique_ptr<Engine> e;
  const Status s = Engine::create(o, &e);
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(e, nullptr);
  EXPECT_NE(s.message().find("CUDA device " + std::to_string(count)), std::string::npos) << s.message();
  EXPECT_NE(s.message().find(std::to_string(count) + " present"), std::string::npos) << s.message();
}

// The element's way in: NCCMATCH_CUDA_FAIL_ALLOC_AFTER read by each new engine, lifted by the
// next engine made with it unset; a value that is not a count stops the engine with its name.
TEST(CudaFaultEnvironment, VariablesArmAndLiftAtEngineCreation) {
  SKIP_WITHOUT_GPU();
  faults::LiftOnExit lifted;
  struct UnsetOnExit {
    ~UnsetOnExit() { unsetenv("NCCMATCH_CUDA_FAIL_ALLOC_AFTER"); }
  } unset;
  const Workload w = makeWorkload();
  setenv("NCCMATCH_CUDA_FAIL_ALLOC_AFTER", "0", 1);
  Status s;
  auto starved = cudaEngine(CudaNumerator::Auto, &s);
  ASSERT_TRUE(s.ok()) << s.message();
  s = starved->setTemplates(w.bank);
  ASSERT_FALSE(s.ok());
  EXPECT_TRUE(namesOutOfMemory(s.message())) << s.message();

  setenv("NCCMATCH_CUDA_FAIL_ALLOC_AFTER", "lots", 1);
  auto refused = cudaEngine(CudaNumerator::Auto, &s);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("NCCMATCH_CUDA_FAIL_ALLOC_AFTER='lots'"), std::string::npos) << s.message();

  unsetenv("NCCMATCH_CUDA_FAIL_ALLOC_AFTER");
  auto fine = cudaEngine(CudaNumerator::Auto, &s);
  ASSERT_TRUE(s.ok()) << s.message();
  EXPECT_TRUE(fine->setTemplates(w.bank).ok());
  EXPECT_TRUE(starved->setTemplates(w.bank).ok()) << "the first engine works again too";
  FrameResult result;
  s = fine->match(w.small.view(), w.params, &result);
  EXPECT_TRUE(s.ok()) << s.message();
}

}  // namespace
}  // namespace nccmatch::test
