#!/usr/bin/env bash
# Two builds of the GEMM bank side by side (issue 12): BASE_DIR's bench_bank against NEW_DIR's on
# the same cases, both kinds of templates (u8 and zero-mean), in alternating rounds; the sparse
# launch's medians and whether each case's outputs hash the same in both (a kernel change that
# keeps the results must keep them). BASE_DIR is typically a gpu-pack-branch-LABEL/bench made by
# scripts/gpu-branch-pack.sh (e.g. BRANCH revert:COMMIT: main without one commit), NEW_DIR the
# pack's gpu-pack/bench.
# Usage: bench/gemm_ab.sh BASE_DIR NEW_DIR [ROUNDS] [CASES]
#   ROUNDS: default 3; CASES: bench_bank case numbers (default "0 1 2 3 5 7": 1080p 16/64/256/1024 x
#   16², 64 x 32², 16 x 64²). KINDS in the environment: default "unsigned zero-mean".
set -euo pipefail
base=${1:?usage: bench/gemm_ab.sh BASE_DIR NEW_DIR [ROUNDS] [CASES]}
new=${2:?usage: bench/gemm_ab.sh BASE_DIR NEW_DIR [ROUNDS] [CASES]}
rounds=${3:-3}
cases=${4:-0 1 2 3 5 7}
kinds=${KINDS:-unsigned zero-mean}
for d in "$base" "$new"; do
  [ -x "$d/bench_bank" ] || { echo "gemm_ab: $d/bench_bank is missing" >&2; exit 2; }
done
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
for ((r = 0; r < rounds; r++)); do
  for c in $cases; do
    for kind in $kinds; do
      extra=()
      [ "$kind" = zero-mean ] && extra=(--zero-mean)
      "$base/bench_bank" --gemm-only --digest --case "$c" "${extra[@]}" >>"$out/base-$kind.txt"
      "$new/bench_bank" --gemm-only --digest --case "$c" "${extra[@]}" >>"$out/new-$kind.txt"
    done
  done
done
# shellcheck disable=SC2086
python3 "$(dirname "$0")/bank_summary.py" ab "$out" $kinds
