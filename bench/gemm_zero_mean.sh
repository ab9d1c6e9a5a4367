#!/usr/bin/env bash
# The GEMM bank's two kinds of templates side by side (issue 12): u8 pixels with the per-pair
# screen against s8 T - r with the zero-mean screen (rules/zero_mean_screen.hpp), ccoeff-normed.
# 1. bench_bank --gemm-only --digest on CASES, with and without --zero-mean, in alternating rounds:
#    the sparse launch's medians and whether the outputs hash the same (they must: the screens
#    differ, the exact scores, tile bests and above-threshold bits do not);
# 2. (unless FRAMES=0) bench_stream --banks with --gemm-templates unsigned and zero-mean: the whole
#    per-frame cost through the library, 2 frames in flight (issue 12's measure).
# Ends with one summary table. Usage: bench/gemm_zero_mean.sh BENCH_DIR [ROUNDS] [CASES]
#   BENCH_DIR: the folder holding bench_bank and bench_stream (gpu-pack/bench); ROUNDS: default 3;
#   CASES: bench_bank case numbers (default "0 1 2 4 5 7": 1080p 16/64/256 x 16², 16/64 x 32²,
#   16 x 64²); FRAMES=0 in the environment leaves step 2 out.
set -euo pipefail
dir=${1:?usage: bench/gemm_zero_mean.sh BENCH_DIR [ROUNDS] [CASES]}
rounds=${2:-3}
cases=${3:-0 1 2 4 5 7}
for b in bench_bank bench_stream; do
  [ -x "$dir/$b" ] || { echo "gemm_zero_mean: $dir/$b is missing" >&2; exit 2; }
done
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
for ((r = 0; r < rounds; r++)); do
  for c in $cases; do
    "$dir/bench_bank" --gemm-only --digest --case "$c" >>"$out/unsigned.txt"
    "$dir/bench_bank" --gemm-only --digest --zero-mean --case "$c" >>"$out/zero-mean.txt"
  done
done
if [ "${FRAMES:-1}" != 0 ]; then
  "$dir/bench_stream" --banks --gemm-templates unsigned | tee "$out/stream-unsigned.txt"
  "$dir/bench_stream" --banks --gemm-templates zero-mean | tee "$out/stream-zero-mean.txt"
fi
python3 "$(dirname "$0")/bank_summary.py" zero-mean "$out"
