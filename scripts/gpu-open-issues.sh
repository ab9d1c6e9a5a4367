#!/usr/bin/env bash
# The open issues' first measurements on the GPU host, in parts that each fit the device tool's
# 600 s (several short ones may share a call), ending with a short summary in stdout (the device
# tool brings back little else). Run from the repository root with the pack carried
# (gpu-pack.tar.xz, .gst/):
#   bash scripts/gpu-open-issues.sh PART [PART ...]
# PART:
#   12-tests   test_gemm_bank (Banks, ZeroMeanBanks, host checks) and test_cuda_engine's
#              CudaGemmGroups (both kinds of GEMM templates): the zero-mean path's first runs
#   12-speed   bench/gemm_zero_mean.sh (bank alone with digests, then the whole frame through the
#              library, unsigned against zero-mean templates)
#   12-stages  bench/gemm_stages.sh (pack made with GPU_PACK_STAGES=1) and the GEMM kernel's SASS
#   12-fft     single large templates on the float-fft path: test_cuda_engine's fft cases (the
#              peak hand-off's first runs) and bench_stream --large with the map scan, then with
#              the hand-off (CudaEngine::setFftPeakHandoff), twice each, alternating
#   12-baselines  bench_bank with NPP's loop (--npp 4, scaled) and bench/opencv_bank.py (OpenCV's
#              loop on the host's CPUs) for every bank case: the tables for bench/plots/plots.py
#              --banks ... --opencv-banks ... (bank_baselines.png)
#   12-ncu     bench/ncu_gemm.sh on cases 5 and 2 (64 x 32², 256 x 16²), u8 and zero-mean
#              templates: the key lines in stdout, the whole reports under $OUT when set
#   13         bench_track --backend cuda --frames 200, TRACK_RUNS times (default 10): the issue-13
#              lines, then their medians (bench/track_ratio.py: the pinned and device-frame calls
#              against detect on the same frames, per run and of the medians)
#   12-memcheck  compute-sanitizer memcheck and racecheck of test_gemm_bank's ZeroMeanBanks
#   12-groups  compute-sanitizer memcheck, racecheck and synccheck of test_gemm_bank's cases whose
#              blocks hold several chunks (GemmBankShape::groupChunks: 64/70/256 x 16², 1000 x 8²,
#              the zero-mean fallback on nearly flat windows), one test a run
#   12-ncu-source  bench/ncu_gemm_source.sh on case 2 (256 x 16², zero-mean) and case 5 (64 x 32²,
#              zero-mean): where the warps wait, by instruction (reports under $OUT/ncu when set)
#   15-racecheck  racecheck of the 29 test_cuda_engine tests session 35's sweep of today's code did
#              not end (killed for host memory, cut at the time limit, not started), one test a
#              process, 4 side by side, 28 GB a run, within 570 s; progress lines to
#              $OUT/15-racecheck-progress.txt (or ./). A later call goes on where it stopped with
#              GPU_SANITIZE_DONE=<that file> GPU_SANITIZE_SKIP_FAILED=1 (or runs a killed one alone,
#              or kernel by kernel: GPU_SANITIZE_RUNS, README)
#   15-racecheck-big  racecheck's longest and largest runs, side by side, 50 GB of host memory
#              each, cuFFT's kernels left out, started detached (scripts/gpu-sanitize-detached.sh:
#              they may outlast the call, 1600 s in all): the two engine tests that held more than
#              24 GB (session 36: GemmGroupSliced..., FftPeakHandoff...) and test_gemm_bank's 1921 x
#              1079 bank (past 570 s); RACECHECK_BIG_DEADLINE (default 1600) and _MAX_RSS_GB
#              (default 50) override the limits; waited for RACECHECK_BIG_WAIT seconds (default
#              540), a later call collects them with `gpu-sanitize-detached.sh wait SECONDS`.
#              RACECHECK_BIG_EXTRA_RUNS: more runs (GPU_SANITIZE_RUNS' TOOL:BINARY:SHARD/SHARDS) after
#              those three, in the same set; RACECHECK_BIG_JOBS runs side by side (default 3)
#   15-initcheck-gemm  initcheck of test_gemm_bank's 1000 x 8x8 zero-mean bank (cut by session
#              36's call deadline), within INITCHECK_GEMM_DEADLINE seconds (default 400)
#   13-sanitize  the region kernel's tests (test_cuda_regions, test_cuda_masked_regions,
#              test_cuda_region_templates, test_tracker_gpu) under the four compute-sanitizer tools,
#              one test a process, 12 side by side, 9 GB a run, within 570 s (GPU_SANITIZE_DEADLINE);
#              progress lines to $OUT/13-sanitize-progress.txt (continue as 15-racecheck says)
#   13-ab      region-path changes against the pack: for each gpu-pack-branch-LABEL/ with a
#              bench_track (made by scripts/gpu-branch-pack.sh, e.g. wip/gather-shuffle gather
#              test_window_gather test_cuda_regions test_tracker_gpu bench_track), its tests, then
#              bench_track --backend cuda --frames 200 of the pack and the branch, alternating
#              (TRACK_ROUNDS, default 3): the issue-13 lines
#   12-ab      GEMM kernel changes against the kernel before them: test_gemm_bank and CudaGemmGroups
#              of the pack, then bench/gemm_ab.sh (both kinds of templates, digests must agree)
#              against each gpu-pack-branch-base*/bench (made here by scripts/gpu-branch-pack.sh
#              build revert:COMMIT base-NAME bench_bank: main without COMMIT; AB_ROUNDS, default 2,
#              AB_CASES, default "2 5 7 8": 256 x 16², 64 x 32², 16 x 64², 64 x 64²), then
#              bench_stream --banks
set -uo pipefail
[ $# -ge 1 ] || { echo "usage: scripts/gpu-open-issues.sh 12-tests|12-speed|12-stages|12-fft|12-baselines|12-ncu|13|13-ab|12-memcheck|12-groups|12-ncu-source|12-ab|13-sanitize|15-racecheck|15-racecheck-big|15-initcheck-gemm ..." >&2; exit 2; }
for part in "$@"; do
  case "$part" in
    12-tests | 12-speed | 12-stages | 12-fft | 12-baselines | 12-ncu | 13 | 13-ab | 12-memcheck | 12-groups | 12-ncu-source | 12-ab | \
      13-sanitize | 15-racecheck | 15-racecheck-big | 15-initcheck-gemm) ;;
    *) echo "gpu-open-issues: unknown part '$part'" >&2; exit 2 ;;
  esac
done
set +u  # the sourced environments may read unset variables
source scripts/gpu-env.sh
set -u
pack=gpu-pack
status=0
summary=()
# run NAME COMMAND...: the command's output to the log and its tail to stdout; rc into the summary.
run() {
  local name=$1
  shift
  local start=$SECONDS
  "$@" >"/tmp/open-issues-$name.log" 2>&1
  local rc=$?
  tail -n "${TAIL_LINES:-25}" "/tmp/open-issues-$name.log"
  summary+=("$name: rc $rc, $((SECONDS - start)) s")
  [ $rc -eq 0 ] || status=1
}
# trackRun DIR LABEL: DIR's bench_track --backend cuda --frames 200, its issue-13 line (or its
# tail) to stdout; rc into the summary.
trackRun() {
  local log=/tmp/open-issues-track.log
  "$1/bench/bench_track" --backend cuda --frames 200 >"$log" 2>&1
  local rc=$?
  echo "$1 $2 (rc $rc): $(grep -h "issue-13:" "$log" || tail -n 5 "$log")"
  summary+=("bench_track $1 $2: rc $rc")
  [ $rc -eq 0 ] || status=1
}
# runOf TOOL BINARY TEST -> TOOL:BINARY:INDEX/TOTAL: one test a process by position in its binary's
# list (gtest puts test j in shard j of as many shards as tests), found by name so that added tests
# do not move it.
runOf() {
  local list
  list=$("$pack/tests/$2" --gtest_list_tests | awk '/^[^ ]/ { suite = $1 } /^  / { print suite $1 }')
  local index
  index=$(grep -n -x -F "$3" <<<"$list" | cut -d: -f1)
  [ -n "$index" ] || { echo "gpu-open-issues: no test $3 in $2" >&2; return 1; }
  echo "$1:$2:$((index - 1))/$(wc -l <<<"$list")"
}
for part in "$@"; do
  case "$part" in
    12-tests)
      run test_gemm_bank "$pack/tests/test_gemm_bank" --gtest_brief=1
      run test_cuda_engine_gemm "$pack/tests/test_cuda_engine" --gtest_brief=1 --gtest_filter='*CudaGemmGroups*'
      ;;
    12-speed)
      TAIL_LINES=40 run gemm_zero_mean bash bench/gemm_zero_mean.sh "$pack/bench" 3
      ;;
    12-stages)
      TAIL_LINES=45 run gemm_stages bash bench/gemm_stages.sh "$pack/bench" 3 "5 2 7"
      TAIL_LINES=60 run sass bash scripts/sass-report.sh "$pack/tests/test_gemm_bank" gemmBankKernel
      ;;
    12-fft)
      run test_cuda_engine_fft "$pack/tests/test_cuda_engine" --gtest_brief=1 \
        --gtest_filter='*Fft*:*CudaScoreMap*:*CudaBank*:*CudaSampledMap*'
      for r in 1 2; do
        TAIL_LINES=6 run "stream_large_scan_$r" "$pack/bench/bench_stream" --large
        TAIL_LINES=6 run "stream_large_handoff_$r" "$pack/bench/bench_stream" --large --fft-peak-handoff
      done
      ;;
    12-baselines)
      TAIL_LINES=20 run bench_bank_npp "$pack/bench/bench_bank" --npp 4
      TAIL_LINES=16 run opencv_bank python3 bench/opencv_bank.py 2
      ;;
    12-ncu)
      for c in 5 2; do
        for kind in unsigned zero-mean; do
          extra=()
          [ "$kind" = zero-mean ] && extra=(--zero-mean)
          log="/tmp/open-issues-ncu-$c-$kind.log"
          bash bench/ncu_gemm.sh "$pack/bench" "$c" "${extra[@]}" >"$log" 2>&1
          rc=$?
          echo "-- ncu case $c, $kind templates (rc $rc)"
          grep -E "^\| 1920|Duration|Throughput|Executed Ipc|Issue Slots Busy|Warp Cycles Per Issued|Occupancy|stall|Stall" "$log" |
            cut -c1-220 | head -40
          [ -n "${OUT:-}" ] && cp "$log" "$OUT/"
          summary+=("ncu case $c $kind: rc $rc")
          [ $rc -eq 0 ] || status=1
        done
      done
      ;;
    13)
      lines=${OUT:-/tmp}/13-track-lines.txt
      : >"$lines"
      for ((r = 1; r <= ${TRACK_RUNS:-10}; r++)); do
        trackRun "$pack" "run $r"
        grep -h "issue-13:" /tmp/open-issues-track.log >>"$lines"
      done
      python3 bench/track_ratio.py "$lines"
      ;;
    13-ab)
      for branch in $(ls -d gpu-pack-branch-*/ 2>/dev/null); do
        branch=${branch%/}
        [ -x "$branch/bench/bench_track" ] || continue
        echo "$branch: $(cat "$branch/commit.txt" 2>/dev/null)"
        for t in "$branch"/tests/test_*; do
          [ -x "$t" ] && TAIL_LINES=3 run "${branch#gpu-pack-branch-}-$(basename "$t")" "$t" --gtest_brief=1
        done
        for ((r = 1; r <= ${TRACK_ROUNDS:-3}; r++)); do
          for b in "$pack" "$branch"; do trackRun "$b" "round $r"; done
        done
      done
      ;;
    12-memcheck)
      for tool in memcheck racecheck; do
        run "$tool-zero-mean" compute-sanitizer --tool "$tool" --error-exitcode 3 \
          "$pack/tests/test_gemm_bank" --gtest_brief=1 --gtest_filter='*ZeroMeanBanks*'
      done
      ;;
    12-groups)
      # The grouped cases by their parameters (test indices move as cases are added).
      groups=$("$pack/tests/test_gemm_bank" --gtest_list_tests |
        awk '/^[A-Za-z]/ { suite = $1 } /EveryTemplate/ && / x (16x16|8x8) / && !/ (7|32) x / { print suite $1 }')
      for tool in memcheck synccheck racecheck; do
        for t in $groups; do
          TAIL_LINES=3 run "$tool-${t//\//-}" compute-sanitizer --tool "$tool" --error-exitcode 3 \
            "$pack/tests/test_gemm_bank" --gtest_brief=1 --gtest_filter="$t"
        done
      done
      ;;
    12-ncu-source)
      for c in 2 5; do
        TAIL_LINES=40 run "ncu-source-$c" bash bench/ncu_gemm_source.sh "$pack/bench" "$c" "${OUT:-/tmp}/ncu" --zero-mean
      done
      ;;
    12-ab)
      run test_gemm_bank "$pack/tests/test_gemm_bank" --gtest_brief=1
      run test_cuda_engine_gemm "$pack/tests/test_cuda_engine" --gtest_brief=1 --gtest_filter='*CudaGemmGroups*'
      bases=$(ls -d gpu-pack-branch-base*/ 2>/dev/null)
      for base in $bases; do
        base=${base%/}
        echo "$base: $(cat "$base/commit.txt" 2>/dev/null)"
        TAIL_LINES=20 run "gemm_ab_${base#gpu-pack-branch-}" bash bench/gemm_ab.sh "$base/bench" "$pack/bench" \
          "${AB_ROUNDS:-2}" "${AB_CASES:-2 5 7 8}"
      done
      if [ -z "$bases" ]; then
        echo "12-ab: no gpu-pack-branch-base*/ (scripts/gpu-branch-pack.sh build revert:COMMIT base bench_bank)"
        summary+=("gemm_ab: no base pack")
        status=1
      fi
      TAIL_LINES=16 run stream_banks "$pack/bench/bench_stream" --banks
      ;;
    13-sanitize)
      TAIL_LINES=8 run region-sanitize env GPU_SANITIZE_TESTS="test_cuda_regions test_cuda_masked_regions test_cuda_region_templates test_tracker_gpu" \
        GPU_SANITIZE_SHARDS=each GPU_SANITIZE_JOBS="${GPU_SANITIZE_JOBS:-12}" GPU_SANITIZE_MAX_RSS_GB="${GPU_SANITIZE_MAX_RSS_GB:-9}" \
        GPU_SANITIZE_DEADLINE="${GPU_SANITIZE_DEADLINE:-570}" GPU_SANITIZE_PROGRESS="${OUT:-.}/13-sanitize-progress.txt" \
        bash scripts/gpu-sanitize.sh "$pack"
      ;;
    15-racecheck)
      sampled=BigFrames/CudaSampledMap.SampledPositionsMatchTheDefinition
      heavy=CudaEngine.GemmGroupSlicedWhileAnotherEngineLivesMatchesTheCpuEngine:CudaEngine.FftPeakHandoffGivesTheMapScansMatches
      heavy+=:CudaEngine.HostFunctionStagingGivesTheCallerThreadsMatches:CudaEngine.HugeMaxMatchesOnAFlatFrameFinishesWithTheCpuMatches
      for i in 0 1 2 3 4 5 9 10 11 25 26 28 29; do heavy+=":$sampled/$i"; done
      heavy+=":Banks/CudaBank.MatchesEqualTheCpuEngine/*"
      TAIL_LINES=6 run racecheck-heavy env GPU_SANITIZE_TOOLS=racecheck GPU_SANITIZE_TESTS=test_cuda_engine \
        GPU_SANITIZE_FILTER="$heavy" GPU_SANITIZE_SHARDS=each GPU_SANITIZE_JOBS="${GPU_SANITIZE_JOBS:-4}" \
        GPU_SANITIZE_MAX_RSS_GB="${GPU_SANITIZE_MAX_RSS_GB:-28}" GPU_SANITIZE_DEADLINE="${GPU_SANITIZE_DEADLINE:-570}" \
        GPU_SANITIZE_PROGRESS="${OUT:-.}/15-racecheck-progress.txt" bash scripts/gpu-sanitize.sh "$pack"
      ;;
    15-racecheck-big)
      big="$(runOf racecheck test_cuda_engine CudaEngine.GemmGroupSlicedWhileAnotherEngineLivesMatchesTheCpuEngine)" &&
        big+=" $(runOf racecheck test_cuda_engine CudaEngine.FftPeakHandoffGivesTheMapScansMatches)" &&
        big+=" $(runOf racecheck test_gemm_bank Banks/GemmBankScores.EveryTemplateAsTheCpuScoresIt/22)" || {
        status=1
        continue
      }
      big+="${RACECHECK_BIG_EXTRA_RUNS:+ $RACECHECK_BIG_EXTRA_RUNS}"
      echo "detached: $big"
      GPU_SANITIZE_RUNS="$big" GPU_SANITIZE_JOBS="${RACECHECK_BIG_JOBS:-3}" GPU_SANITIZE_MAX_RSS_GB="${RACECHECK_BIG_MAX_RSS_GB:-50}" \
        GPU_SANITIZE_DEADLINE="${RACECHECK_BIG_DEADLINE:-1600}" GPU_SANITIZE_OPTIONS="--kernel-name-exclude kns=fft" \
        bash scripts/gpu-sanitize-detached.sh start "$pack"
      TAIL_LINES=12 run racecheck-big bash scripts/gpu-sanitize-detached.sh wait "${RACECHECK_BIG_WAIT:-540}" "${OUT:-}"
      ;;
    15-initcheck-gemm)
      initGemm=$(runOf initcheck test_gemm_bank ZeroMeanBanks/GemmBankScores.EveryTemplateAsTheCpuScoresIt/13) || {
        status=1
        continue
      }
      TAIL_LINES=4 run initcheck-gemm env GPU_SANITIZE_RUNS="$initGemm" GPU_SANITIZE_DEADLINE="${INITCHECK_GEMM_DEADLINE:-400}" \
        GPU_SANITIZE_PROGRESS="${OUT:-.}/15-initcheck-gemm-progress.txt" bash scripts/gpu-sanitize.sh "$pack"
      ;;
  esac
done
echo
echo "== gpu-open-issues $*: summary"
printf '%s\n' "${summary[@]}"
exit $status
