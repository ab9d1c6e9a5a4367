#!/usr/bin/env bash
# Where inside the GEMM bank kernel the warps wait (issue 12): Nsight Compute's PC sampling
# (SourceCounters) on one sparse launch of bench_bank --gemm-only (launch 20, as ncu_gemm.sh), then
# the executed count and stall samples of every SASS instruction. Prints them summed between the
# kernel's barriers (its phases: tile load, products, screen, scoring...) and the hottest
# instructions with their stall reasons; the report and the per-instruction table go to OUT_DIR.
# (ncu's CUDA-source view gave no per-line samples for this kernel, whose code is in headers.)
# Usage: bench/ncu_gemm_source.sh BENCH_DIR CASE OUT_DIR [bench_bank options, e.g. --zero-mean]
set -euo pipefail
dir=${1:?usage: bench/ncu_gemm_source.sh BENCH_DIR CASE OUT_DIR [bench_bank options]}
case_number=${2:?case}
out=${3:?out dir}
shift 3
mkdir -p "$out"
ncu=$(command -v ncu || echo /usr/local/cuda/bin/ncu)
[ -x "$ncu" ] || { echo "ncu_gemm_source: no ncu here" >&2; exit 2; }
report="$out/gemm-case$case_number"
"$ncu" --kernel-name regex:gemmBankKernel --launch-skip 20 --launch-count 1 --import-source yes \
  --section SourceCounters --section WarpStateStats -f -o "$report" \
  "$dir/bench_bank" --gemm-only --case "$case_number" "$@" >"$out/ncu-case$case_number.log" 2>&1
"$ncu" -i "$report.ncu-rep" --page source --csv --print-source sass >"$report-sass.csv"
python3 "$(dirname "$0")/ncu_source_summary.py" "$report-sass.csv" "${TOP:-30}" || head -5 "$report-sass.csv"
