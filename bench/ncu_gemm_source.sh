#!/usr/bin/env bash
# Where inside the GEMM bank kernel the warps wait (issue 12): Nsight Compute's PC sampling
# (SourceCounters) on one sparse launch of bench_bank --gemm-only (launch 20, as ncu_gemm.sh), then
# the samples per SASS instruction joined to the source line it came from (the library is built
# with -lineinfo). Prints the source lines holding most of the samples, with their stall reasons,
# and the hottest instructions; the report and the per-instruction table go to OUT_DIR.
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
for view in cuda sass; do
  "$ncu" -i "$report.ncu-rep" --page source --csv --print-source "$view" >"$report-$view.csv" 2>&1 || true
  python3 "$(dirname "$0")/ncu_source_summary.py" "$report-$view.csv" "${TOP:-30}" || head -5 "$report-$view.csv"
done
