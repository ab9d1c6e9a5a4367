// main() of the GPU suites: like gtest_main, but a binary whose every test skipped (no device)
// exits with 77, which meson test reports as SKIP instead of a silent OK.
#include <gtest/gtest.h>

int main(int argc, char** argv) {
  ::testing::InitGoogleTest(&argc, argv);
  const int rc = RUN_ALL_TESTS();
  const ::testing::UnitTest& unit = *::testing::UnitTest::GetInstance();
  if (rc == 0 && unit.test_to_run_count() > 0 && unit.skipped_test_count() == unit.test_to_run_count())
    return 77;
  return rc;
}
