#!/usr/bin/env bash
# Nsight Compute on one sparse launch of the GEMM bank (issue 12: where a missed target's time
# goes, by the hardware's counters): bench_bank --gemm-only on one case, ncu profiling the launch
# after the dense ones and the first sparse ones (bench_bank times each way kRuns + 3 = 18 times:
# launches 0-17 dense, 18-35 sparse; this takes launch 20). Sections: speed of light, compute
# workload (pipes, the tensor pipe among them), warp states (stall reasons), occupancy, instruction
# statistics. ncu locks the clocks to base (about 1.5 GHz on the H200): durations are longer
# than bench_bank's, shares and stall reasons compare.
# Usage: bench/ncu_gemm.sh BENCH_DIR CASE [bench_bank options, e.g. --zero-mean]
set -euo pipefail
dir=${1:?usage: bench/ncu_gemm.sh BENCH_DIR CASE [bench_bank options]}
case_number=${2:?usage: bench/ncu_gemm.sh BENCH_DIR CASE [bench_bank options]}
shift 2
ncu=$(command -v ncu || echo /usr/local/cuda/bin/ncu)
[ -x "$ncu" ] || { echo "ncu_gemm: no ncu here" >&2; exit 2; }
"$ncu" --kernel-name regex:gemmBankKernel --launch-skip 20 --launch-count 1 \
  --section SpeedOfLight --section ComputeWorkloadAnalysis --section WarpStateStats \
  --section Occupancy --section InstructionStats \
  "$dir/bench_bank" --gemm-only --case "$case_number" "$@"
