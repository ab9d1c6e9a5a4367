// Integer helpers for grid and buffer sizes, on the host and in kernels.
#pragma once

#include <cstddef>

#include "nccmatch/sat.hpp"  // NCC_HOST_DEVICE

namespace nccmatch {

// a / b rounded up (a >= 0, b > 0): tiles of b that cover a.
NCC_HOST_DEVICE constexpr int ceilDiv(int a, int b) { return (a + b - 1) / b; }

// v rounded up to a multiple of m (m > 0).
NCC_HOST_DEVICE constexpr std::size_t roundUp(std::size_t v, std::size_t m) { return (v + m - 1) / m * m; }

}  // namespace nccmatch
