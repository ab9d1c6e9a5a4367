// The median the benchmarks report: the middle sample (the upper middle for an even count).
#pragma once

#include <algorithm>
#include <vector>

namespace nccmatch::bench {

inline double median(std::vector<double> samples) {
  if (samples.empty()) return 0.0;
  std::nth_element(samples.begin(), samples.begin() + samples.size() / 2, samples.end());
  return samples[samples.size() / 2];
}

}  // namespace nccmatch::bench
