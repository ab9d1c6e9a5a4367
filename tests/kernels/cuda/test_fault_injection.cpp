// The fault-injection hook's own rules, which need no device: countdowns that let N steps through
// and then fail every later one until lifted, a real error passing through unchanged, and the
// NCCMATCH_CUDA_* variables (bad values named; unset lifts only what they armed).
#include <gtest/gtest.h>

#include <cstdlib>
#include <string>

#include "cuda/cuda_check.hpp"
#include "cuda/fault_injection.hpp"

namespace nccmatch::cuda::faults {
namespace {

class FaultInjection : public ::testing::Test {
 protected:
  void SetUp() override { clearVariables(); }
  void TearDown() override {
    clearVariables();
    lift();
  }
  static void clearVariables() {
    for (const char* name : {"NCCMATCH_CUDA_FAIL_ALLOC_AFTER", "NCCMATCH_CUDA_ALLOC_LIMIT_BYTES",
                             "NCCMATCH_CUDA_FAIL_PINNED_AFTER", "NCCMATCH_CUDA_FAIL_CHECK_AFTER"})
      unsetenv(name);
  }
};

Status checked(cudaError_t result) {
  NCC_CUDA_CHECK(result);
  return Status();
}

TEST_F(FaultInjection, CheckedCallsFailAfterTheCountdownUntilLifted) {
  FaultPlan plan;
  plan.checkedCallsLeft = 2;
  arm(plan);
  EXPECT_TRUE(checked(cudaSuccess).ok());
  EXPECT_TRUE(checked(cudaSuccess).ok());
  for (int i = 0; i < 3; ++i) {  // a lost context stays lost
    const Status s = checked(cudaSuccess);
    ASSERT_FALSE(s.ok());
    EXPECT_NE(s.message().find("cudaErrorLaunchFailure"), std::string::npos) << s.message();
  }
  lift();
  EXPECT_TRUE(checked(cudaSuccess).ok());
}

// Every checked call counts, armed or not, failed or not: a test aims the countdown at each call.
TEST_F(FaultInjection, CheckedCallsAreCounted) {
  const std::uint64_t before = checkedCallCount();
  EXPECT_TRUE(checked(cudaSuccess).ok());
  EXPECT_FALSE(checked(cudaErrorInvalidValue).ok());
  EXPECT_EQ(checkedCallCount(), before + 2);
  FaultPlan plan;
  plan.checkedCallsLeft = 1;
  arm(plan);
  EXPECT_TRUE(checked(cudaSuccess).ok());
  EXPECT_FALSE(checked(cudaSuccess).ok());
  EXPECT_EQ(checkedCallCount(), before + 4);
}

TEST_F(FaultInjection, ARealErrorPassesThroughAndUsesNoStep) {
  FaultPlan plan;
  plan.checkedCallsLeft = 1;
  arm(plan);
  const Status real = checked(cudaErrorInvalidValue);
  ASSERT_FALSE(real.ok());
  EXPECT_NE(real.message().find("cudaErrorInvalidValue"), std::string::npos) << real.message();
  EXPECT_TRUE(checked(cudaSuccess).ok());  // the one step left
  EXPECT_FALSE(checked(cudaSuccess).ok());
}

TEST_F(FaultInjection, DeviceAllocationCountdownCountsEveryAttempt) {
  const std::uint64_t before = deviceAllocationCount();
  FaultPlan plan;
  plan.deviceAllocationsLeft = 1;
  arm(plan);
  EXPECT_EQ(deviceAllocationAllowed(), cudaSuccess);
  EXPECT_EQ(deviceAllocationAllowed(), cudaErrorMemoryAllocation);
  EXPECT_EQ(deviceAllocationAllowed(), cudaErrorMemoryAllocation);
  EXPECT_EQ(deviceAllocationCount(), before + 3);
  lift();
  EXPECT_EQ(deviceAllocationAllowed(), cudaSuccess);
}

TEST_F(FaultInjection, AnArmedCountdownRefusesBeforeAskingTheDriver) {
  FaultPlan plan;
  plan.deviceAllocationsLeft = 0;
  plan.pinnedAllocationsLeft = 0;
  arm(plan);
  void* p = reinterpret_cast<void*>(0x1);
  EXPECT_EQ(allocateDevice(&p, 64), cudaErrorMemoryAllocation);
  EXPECT_EQ(p, nullptr);
  p = reinterpret_cast<void*>(0x1);
  EXPECT_EQ(allocatePinned(&p, 64, cudaHostAllocDefault), cudaErrorMemoryAllocation);
  EXPECT_EQ(p, nullptr);
}

TEST_F(FaultInjection, TheEnvironmentArmsAndItsUnsettingLiftsOnlyWhatItArmed) {
  setenv("NCCMATCH_CUDA_FAIL_CHECK_AFTER", "0", 1);
  ASSERT_TRUE(applyEnvironment().ok());
  EXPECT_FALSE(checked(cudaSuccess).ok());
  unsetenv("NCCMATCH_CUDA_FAIL_CHECK_AFTER");
  ASSERT_TRUE(applyEnvironment().ok());
  EXPECT_TRUE(checked(cudaSuccess).ok());

  FaultPlan plan;  // armed by a test: the variables being unset leave it alone
  plan.checkedCallsLeft = 0;
  arm(plan);
  ASSERT_TRUE(applyEnvironment().ok());
  EXPECT_FALSE(checked(cudaSuccess).ok());
}

TEST_F(FaultInjection, ABadVariableIsNamed) {
  for (const char* bad : {"abc", "-1", "3x", "99999999999999999999999"}) {
    setenv("NCCMATCH_CUDA_ALLOC_LIMIT_BYTES", bad, 1);
    const Status s = applyEnvironment();
    ASSERT_FALSE(s.ok()) << bad;
    EXPECT_NE(s.message().find("NCCMATCH_CUDA_ALLOC_LIMIT_BYTES"), std::string::npos) << s.message();
    EXPECT_NE(s.message().find(bad), std::string::npos) << s.message();
  }
}

}  // namespace
}  // namespace nccmatch::cuda::faults
