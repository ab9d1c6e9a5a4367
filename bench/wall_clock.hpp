// Wall-clock timing for the CPU benchmarks: one warm-up run, then the median of `reps` runs, in ms.
#pragma once

#include <chrono>
#include <functional>
#include <vector>

#include "median.hpp"

namespace nccmatch::bench {

inline double medianWallMs(int reps, const std::function<void()>& run) {
  run();  // warm-up: plans, spectra, caches
  std::vector<double> ms;
  for (int i = 0; i < reps; ++i) {
    const auto t0 = std::chrono::steady_clock::now();
    run();
    ms.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
  }
  return median(ms);
}

}  // namespace nccmatch::bench
