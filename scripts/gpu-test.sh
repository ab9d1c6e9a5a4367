#!/usr/bin/env bash
# Runs the whole GPU suite on a GPU host from binaries built elsewhere (no build here):
# every gtest binary of the build folder (test_cuda_faults, test_element_faults and
# test_element_instances among them), then every benchmark, then a short summary table.
# Usage: scripts/gpu-test.sh [build-folder]   (default build-gpu). Logs go to ./gpu-logs-<folder>;
# with $OUT set (the device tool's output folder, which brings back only a few files) they also
# go there as one gpu-logs-<folder>.tgz, beside summary-<folder>.txt, so that one call can run
# two packs (e.g. main and a branch) without mixing their logs.
# GPU_TEST_SKIP_BENCH=1: tests only. GPU_SANITIZE=1: also the GPU tests under compute-sanitizer.
set -u
build=${1:-build-gpu}
tag=$(basename "$build")
logs=gpu-logs-$tag
mkdir -p "$logs"
[ -f .gst/env.sh ] && source .gst/env.sh
# The plugin module of this build (the element tests and pipeline bench load it from here).
[ -d "$build/plugin" ] && export GST_PLUGIN_PATH="$PWD/$build/plugin${GST_PLUGIN_PATH:+:$GST_PLUGIN_PATH}"
# cuFFT: the host's toolkit, or the copy in its Python packages.
cufft=$(python3 -c "import nvidia.cufft,os;print(os.path.dirname(nvidia.cufft.__file__)+'/lib')" 2>/dev/null || true)
export LD_LIBRARY_PATH=/usr/local/cuda/lib64${cufft:+:$cufft}${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
# A pack made with GPU_PACK_OPENCV=1 carries OpenCV's libraries for bench_rotations: last, so the
# host's own libraries win where it has them.
[ -d "$build/lib" ] && export LD_LIBRARY_PATH="$LD_LIBRARY_PATH:$PWD/$build/lib"
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv,noheader 2>/dev/null | sed 's/^/gpu: /'
summary=()
status=0
for t in $(find "$build/tests" -type f -name 'test_*' -perm -u+x | sort); do
  name=$(basename "$t")
  "$t" --gtest_brief=1 >"$logs/$name.log" 2>&1
  rc=$?
  ran=$(grep -Eo '\[==========\] [0-9]+ tests? from' "$logs/$name.log" | grep -Eo '[0-9]+' | head -1)
  skipped=$(grep -Eo '\[  SKIPPED \] [0-9]+' "$logs/$name.log" | grep -Eo '[0-9]+$' | head -1)
  summary+=("$(printf '%-28s %-4s ran=%-4s skipped=%s' "$name" "$([ $rc = 0 ] && echo ok || echo FAIL)" "${ran:-?}" "${skipped:-0}")")
  if [ $rc != 0 ]; then status=1; tail -30 "$logs/$name.log"; fi
done
# GPU_SANITIZE=1: the GPU tests again under compute-sanitizer (scripts/gpu-sanitize.sh; its GPU_SANITIZE_*
# variables choose tools, binaries and a gtest filter), one summary line per tool.
if [ "${GPU_SANITIZE:-0}" = 1 ]; then
  bash scripts/gpu-sanitize.sh "$build" >"$logs/gpu-sanitize.log" 2>&1
  rc=$?
  [ $rc != 0 ] && status=1
  while IFS= read -r line; do summary+=("compute-sanitizer $line"); done < <(cat "gpu-sanitize-$tag/summary.txt" 2>/dev/null ||
    echo "did not run (exit $rc): see $logs/gpu-sanitize.log")
  cp -r "gpu-sanitize-$tag" "$logs/" 2>/dev/null || true
fi
if [ "${GPU_TEST_SKIP_BENCH:-0}" != 1 ]; then
  for b in $(find "$build/bench" -maxdepth 1 -type f -name 'bench_*' -perm -u+x | sort); do
    name=$(basename "$b")
    args=()
    # bench_live also writes every frame's latency, for bench/plots/plots.py.
    [ "$name" = bench_live ] && args=(--csv "$logs/bench_live.csv")
    # bench_rotations (GPU_PACK_OPENCV=1 packs): issue 16's figure, one template at 72 angles x 3
    # scales on a 1080p frame on CUDA, beside the exhaustive search; then OpenCV's loop over the
    # same variants in 8 processes of 2 threads side by side (bench/rotations_opencv.sh: one
    # process of 16 threads is ~7x slower).
    [ "$name" = bench_rotations ] && args=(--cuda=1 --width=1920 --height=1080 --side=64 --step=5 --opencv=0)
    "$b" "${args[@]}" >"$logs/$name.log" 2>&1
    rc=$?
    if [ "$name" = bench_rotations ] && [ $rc = 0 ]; then
      bash bench/rotations_opencv.sh "$b" 1 8 2 >>"$logs/$name.log" 2>&1
      rc=$?
    fi
    # bench_two_pipelines: then the same run's baseline, each pipeline in a CUDA context of its own
    # (exits 1 when unfair: expected there, so not counted); bench_bank: then the sliced GEMM.
    [ "$name" = bench_two_pipelines ] && "$b" --contexts separate >>"$logs/$name.log" 2>&1
    [ "$name" = bench_bank ] && { "$b" --gemm-only --sliced >>"$logs/$name.log" 2>&1 || rc=1; }
    summary+=("$(printf '%-28s %-4s (table in %s)' "$name" "$([ $rc = 0 ] && echo ok || echo FAIL)" "$logs/$name.log")")
    [ $rc != 0 ] && status=1
    cat "$logs/$name.log"
  done
fi
# GPU_TEST_SKIP_OPENCV=1: the OpenCV baseline (CPU only, ~40 s) was measured in an earlier run.
if [ "${GPU_TEST_SKIP_BENCH:-0}" != 1 ] && [ "${GPU_TEST_SKIP_OPENCV:-0}" != 1 ] && python3 -c "import cv2" 2>/dev/null; then
  python3 bench/opencv_matchtemplate.py >"$logs/opencv_matchtemplate.log" 2>&1
  rc=$?
  summary+=("$(printf '%-28s %-4s (table in %s)' opencv_matchtemplate "$([ $rc = 0 ] && echo ok || echo FAIL)" "$logs/opencv_matchtemplate.log")")
  cat "$logs/opencv_matchtemplate.log"
fi
echo "===== GPU suite summary ====="
printf '%s\n' "${summary[@]}"
if [ -n "${OUT:-}" ]; then
  printf '%s\n' "${summary[@]}" >"$OUT/summary-$tag.txt"
  tar czf "$OUT/gpu-logs-$tag.tgz" "$logs"
fi
exit $status
