#!/usr/bin/env bash
# OpenCV's masked matchTemplate looped over a rotated bank, every core used: one bench_rotations
# process with many threads leaves most of them idle (its matchTemplate parallelises little), so
# PROCESSES processes side by side each loop every PROCESSES-th variant with THREADS threads, and
# the bank's time is the wall time until the last one ends (printed with each process's own).
#   bench/rotations_opencv.sh BENCH_ROTATIONS [TEMPLATES=1] [PROCESSES=8] [THREADS=2]
# The scene and bank are bench_rotations' own at 1920x1080, 64x64 templates, 5-degree steps
# (issue 16's case); the processes build them on the CPU backend (no GPU needed).
set -euo pipefail
bench=${1:?usage: rotations_opencv.sh BENCH_ROTATIONS [TEMPLATES] [PROCESSES] [THREADS]}
templates=${2:-1}
processes=${3:-8}
threads=${4:-2}
logs=$(mktemp -d)
trap 'rm -rf "$logs"' EXIT
start=$(date +%s%N)
pids=()
for ((k = 0; k < processes; ++k)); do
  "$bench" --width=1920 --height=1080 --side=64 --step=5 --templates="$templates" --exhaustive=0 --levels=0 \
    --opencv-slice="$k" --opencv-slices="$processes" --opencv-threads="$threads" >"$logs/$k.txt" 2>&1 &
  pids+=($!)
done
status=0
for pid in "${pids[@]}"; do wait "$pid" || status=1; done
wall_ms=$((($(date +%s%N) - start) / 1000000))
grep -h '^OpenCV' "$logs"/*.txt || true
[ $status = 0 ] || { cat "$logs"/*.txt; echo "rotations_opencv: a process failed" >&2; exit 1; }
echo "OpenCV loop over $templates template(s) (all variants, rectangle support): $processes processes x $threads threads side by side: ${wall_ms} ms wall (the processes' bank building included)"
