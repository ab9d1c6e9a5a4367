#!/usr/bin/env bash
# Where a GEMM bank tile's time goes, without hardware counters: bench_bank against its builds that
# do one stage of every tile twice (bench_bank_repeat_*, NCC_GEMM_REPEAT_STAGE in gemm_bank.cu), on
# the same cases, in alternating rounds. A stage's time is the repeated build's sparse launch less
# the plain build's (medians over the rounds); the digests of the sparse outputs must be the plain
# build's (each repeat gives the same results). Hopper only (the repeated builds are sm_90a code).
# A repeated stage may hide partly behind the other block of its SM, so a difference is at most
# what the stage costs the launch, not more. "products" repeats the first slab's products only:
# the digest line says how many slabs a case's templates take.
# Usage: bench/gemm_stages.sh BENCH_DIR [ROUNDS] [CASES]
#   BENCH_DIR: the folder holding bench_bank and bench_bank_repeat_* (gpu-pack/bench)
#   ROUNDS: rounds of every build (default 3); CASES: bench_bank case numbers (default "5 2 7":
#   1080p 64 x 32², 256 x 16², 16 x 64²)
# BENCH_BANK_ARGS in the environment: more bench_bank options for every run (e.g. --zero-mean: the
# zero-mean templates' kernel, whose fold and screen stages repeat its own screen)
set -euo pipefail
dir=${1:?usage: bench/gemm_stages.sh BENCH_DIR [ROUNDS] [CASES]}
rounds=${2:-3}
cases=${3:-5 2 7}
stages=(tile_load window_sums hankel products fold screen)
for s in "" "${stages[@]}"; do
  b="$dir/bench_bank${s:+_repeat_$s}"
  [ -x "$b" ] || { echo "gemm_stages: $b is missing (build with cuda-arch 90)" >&2; exit 2; }
done
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
for ((r = 0; r < rounds; r++)); do
  for s in plain "${stages[@]}"; do
    b="$dir/bench_bank"
    [ "$s" = plain ] || b="$dir/bench_bank_repeat_$s"
    for c in $cases; do
      "$b" --gemm-only --digest --case "$c" ${BENCH_BANK_ARGS:-} >>"$out/$s.txt"
    done
  done
done
python3 "$(dirname "$0")/bank_summary.py" stages "$out" "${stages[@]}"
