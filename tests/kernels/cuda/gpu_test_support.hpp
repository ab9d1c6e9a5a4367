// Helpers shared by the GPU suites: skipping without a device, engines of both backends.
#pragma once

#include <gtest/gtest.h>

#include <memory>
#include <string>

#include "nccmatch/engine.hpp"

namespace nccmatch::test {

// GTEST_SKIP() needs to run in the test body itself, hence a macro.
#define SKIP_WITHOUT_GPU()                                              \
  do {                                                                  \
    std::string why_;                                                   \
    if (!::nccmatch::cudaAvailable(&why_)) GTEST_SKIP() << why_;        \
  } while (0)

inline std::unique_ptr<Engine> makeEngine(const EngineOptions& o) {
  std::unique_ptr<Engine> e;
  Status s = Engine::create(o, &e);
  EXPECT_TRUE(s.ok()) << s.message();
  return e;
}

inline std::unique_ptr<Engine> makeEngine(Backend backend, CudaNumerator numerator = CudaNumerator::Auto) {
  EngineOptions o;
  o.backend = backend;
  o.cpuPath = CpuPath::Reference;  // the oracle
  o.cudaNumerator = numerator;
  return makeEngine(o);
}

}  // namespace nccmatch::test

namespace nccmatch {
// gtest prints an EngineOptions::cudaGemmTemplates parameter by its name.
inline void PrintTo(CudaGemmTemplates t, std::ostream* os) { *os << cudaGemmTemplatesName(t); }
}  // namespace nccmatch
