#!/usr/bin/env bash
# Runs the GPU test binaries under compute-sanitizer's memcheck (with leak check), racecheck,
# synccheck and initcheck on a GPU host, and prints one summary line per tool: the reports it made
# (errors, or hazards for racecheck) summed over the binaries, and the binaries whose tests failed
# or ran out of time. Exit status 1 when any tool reported anything or any run failed.
# Usage: scripts/gpu-sanitize.sh [build-or-pack-folder]   (default build-gpu; a gpu-pack.sh pack works:
#        its gpu-tests.txt lists the binaries of meson's 'gpu' suite). Logs: ./gpu-sanitize-<folder>/.
# Environment:
#   GPU_SANITIZE_TOOLS    tools to run (default "memcheck racecheck synccheck initcheck")
#   GPU_SANITIZE_TESTS    binaries to run (names; default: gpu-tests.txt, else every test_* binary)
#   GPU_SANITIZE_FILTER   a gtest filter for every binary (e.g. "CudaEngine.*"; default all tests)
#   GPU_SANITIZE_TIMEOUT  seconds per binary and tool (default 600; with GPU_SANITIZE_DEADLINE
#                         and no timeout given, a run may take whatever the deadline leaves)
#   GPU_SANITIZE_DEADLINE seconds from the script's start by which every run has ended: a run
#                         started late gets what is left (cut with exit 124, its progress line
#                         written), one with under 5 s left is not started (a line says so). Under
#                         the device tool's 600 s a command, e.g. 570: no run is lost unreported
#   GPU_SANITIZE_JOBS     (tool, binary) runs side by side (default 1)
#   GPU_SANITIZE_SHARDS   each (tool, binary) run split into this many gtest shards, run as
#                         separate processes (default 1): a slow binary's tests spread over
#                         the jobs instead of one process running them all. "each": one test a
#                         process (as many shards as the binary lists tests under
#                         GPU_SANITIZE_FILTER), so that no run holds more than one test's host
#                         memory and a cut run names its test
#   GPU_SANITIZE_RUNS     instead of every (tool, binary, shard): exactly these runs, each
#                         "tool:binary:index/total" (shard index of total gtest shards; gtest puts
#                         test j in shard j mod total, so shard i of 6 is shards i and i+6 of 12),
#                         e.g. "racecheck:test_cuda_engine:1/12 racecheck:test_gemm_bank:18/24": the
#                         runs a time-limited call left, split finer, without repeating the rest.
#                         A run may end in @KERNEL: only that kernel is checked in it
#                         (`--kernel-name kns=KERNEL`), e.g. "racecheck:test_cuda_engine:96/107@scanKernel":
#                         a test too big for the tool in one run, taken kernel by kernel
#   GPU_SANITIZE_OPTIONS  more compute-sanitizer options for every run, split at spaces (e.g.
#                         "--kernel-name-exclude kns=fft" to leave cuFFT's own kernels out of a run
#                         whose time they take; the summary line names them)
#   GPU_SANITIZE_MAX_RSS_GB  a run whose processes hold more host memory than this (GB) is killed
#                         and counted as failed ("killed: host memory"), so that it does not take
#                         the runs beside it down with it (default 0: no limit). Every run's peak
#                         goes to its log and progress line either way
#   GPU_SANITIZE_PROGRESS a file that gets one line per (tool, binary) run as it ends (tool,
#                         binary, exit status, reports): under a time limit that may cut the whole
#                         suite short (the device tool's 600 s a command), put it under $OUT so
#                         what ended comes back. The whole suite under the four tools, 8 at a
#                         time, took longer than 600 s on the H200 (session 10): split it by tool.
#   GPU_SANITIZE_DONE     progress files of earlier calls (space-separated): a planned run whose
#                         line there says it ended clean (exit 0 with 0 reports, or no CUDA call)
#                         on the same code is left out, so a suite longer than one call goes on
#                         where the last call stopped (same tool, same split; the summary counts
#                         them). Same code: the line's code= (written by every progress line: the
#                         pack's code.txt, a hash of the sources its binaries were built from, by
#                         scripts/gpu-pack.sh; in a build folder without one, the first 12 hex
#                         digits of the test binary's sha256, which changes with every build) is
#                         today's; a line of other code, or of a file written before code= existed,
#                         runs again
#   GPU_SANITIZE_DONE_ANY_CODE  1: honour GPU_SANITIZE_DONE's clean lines whatever code they were
#                         for (a knowing choice: what they proved was about that code)
#   GPU_SANITIZE_SKIP_FAILED  1: with GPU_SANITIZE_DONE, also leave out the runs an earlier call
#                         saw killed for host memory (exit=memory) or cut at a time limit (exit=124)
#                         and never clean, so that a call under a deadline spends it on runs not
#                         tried yet instead of failing the same heavy ones again; they are printed
#                         as a GPU_SANITIZE_RUNS list for a call of their own (alone, with more
#                         memory, or @KERNEL by kernel)
#   GPU_SANITIZE_FIRST    with GPU_SANITIZE_SHARDS=each: tests whose listed name (with gtest's
#                         "# GetParam() = ..." comment) matches this extended regex run first,
#                         every binary's, e.g. "BigFrames|1920x1080|4097x2049": the long runs
#                         start at once instead of after the short ones, where a deadline cuts them
# scripts/gpu-test.sh runs this after the tests when GPU_SANITIZE=1.
set -u
build=${1:-build-gpu}
tag=$(basename "$build")
logs=gpu-sanitize-$tag
mkdir -p "$logs"
[ -f .gst/env.sh ] && source .gst/env.sh
[ -d "$build/plugin" ] && export GST_PLUGIN_PATH="$PWD/$build/plugin${GST_PLUGIN_PATH:+:$GST_PLUGIN_PATH}"
export GST_REGISTRY_FORK=no  # the plugin scanner would be a child process outside the tool's view
cufft=$(python3 -c "import nvidia.cufft,os;print(os.path.dirname(nvidia.cufft.__file__)+'/lib')" 2>/dev/null || true)
export LD_LIBRARY_PATH=/usr/local/cuda/lib64${cufft:+:$cufft}${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
sanitizer=$(command -v compute-sanitizer || echo /usr/local/cuda/bin/compute-sanitizer)
if [ ! -x "$sanitizer" ]; then
  echo "compute-sanitizer not found (PATH, /usr/local/cuda/bin): it comes with the CUDA toolkit" >&2
  exit 2
fi
line_buffered=()
command -v stdbuf >/dev/null && line_buffered=(stdbuf -oL -eL)
tools=${GPU_SANITIZE_TOOLS:-memcheck racecheck synccheck initcheck}
names=${GPU_SANITIZE_TESTS:-}
if [ -z "$names" ] && [ -f "$build/gpu-tests.txt" ]; then names=$(cat "$build/gpu-tests.txt"); fi
binaries=()
if [ -n "$names" ]; then
  for n in $names; do
    b=$(find "$build/tests" -type f -name "$n" -perm -u+x | head -1)
    if [ -n "$b" ]; then binaries+=("$b"); else echo "no binary $n under $build/tests" >&2; fi
  done
else
  mapfile -t binaries < <(find "$build/tests" -type f -name 'test_*' -perm -u+x | sort)
fi
[ ${#binaries[@]} -gt 0 ] || { echo "no test binaries under $build/tests" >&2; exit 2; }
gtest_args=()
# Tests a tool skips (tool:binary:gtest pattern), each for NVIDIA's own decoders, not our code:
# - initcheck cannot see what NVDEC writes: every byte of a frame nvh264dec/nvjpegdec decoded
#   (the video engine's copy inside libnvcuvid) counts as never written, so GStreamer's own
#   download of such a frame (cudadownload handing on CUDA memory that the element maps on the
#   host) gave 4752 "uninitialized" reports in session 11, every one with libnvcuvid on its stack;
# - racecheck reports write-write races inside nvjpeg's own jpegdec_idct kernel (nvjpegdec: 7
#   hazards in session 12, none in any kernel of ours).
# - memcheck reports every CUDA call that returns an error: test_host_memory's refusals test makes
#   two on purpose (a buffer registered twice, one unregistered twice: 4 reports in session 21),
#   to check that the library returns them as a Status and leaves no error behind.
# Those cases run under the other tools.
sanitizer_skips=("initcheck:test_element_cuda:Codecs/GpuDecode.*" "racecheck:test_element_cuda:Codecs/GpuDecode.*/jpeg"
                 "memcheck:test_host_memory:HostMemory.RegisteringTwiceOrUnregisteringTwiceIsRefusedNamingTheCall")
# test_cuda_faults injects a fault at every allocation and checked call in turn: every 10th is
# enough under the tools, which would take hours for all.
export NCCMATCH_FAULT_SWEEP_STEP=${NCCMATCH_FAULT_SWEEP_STEP:-10}
# test_numerator_fft transforms one 1080p frame 600 times to compare the results run to run: 20
# under the tools (every transform's kernels are instrumented all the same; 600 under racecheck
# were killed by the host's memory limit in session 13).
export NCCMATCH_RUN_TO_RUN_REPEATS=${NCCMATCH_RUN_TO_RUN_REPEATS:-20}
# test_sat_gpu's two stream tests (RepeatedBuildsOnOneStream, TwoBuildersOnTwoStreams: 90 and 40
# builds of 1-4 MP frames) with frames half as wide and high: racecheck killed at 48 GB of host
# memory in session 28; the same builds, kernels and stream order on a quarter of the blocks.
export NCCMATCH_SAT_STREAM_DIVISOR=${NCCMATCH_SAT_STREAM_DIVISOR:-2}
[ -n "${GPU_SANITIZE_FILTER:-}" ] && gtest_args+=("--gtest_filter=$GPU_SANITIZE_FILTER")

shards=${GPU_SANITIZE_SHARDS:-1}
case "$shards" in
  each) ;;
  '' | *[!0-9]* | 0) echo "GPU_SANITIZE_SHARDS must be a positive integer or 'each', not '$shards'" >&2; exit 2 ;;
esac
# The tests of binary $1 under GPU_SANITIZE_FILTER, one a line ("Suite.Test  # GetParam() = ...").
tests_of() {
  "$1" --gtest_list_tests ${GPU_SANITIZE_FILTER:+"--gtest_filter=$GPU_SANITIZE_FILTER"} 2>/dev/null |
    awk '/^[^ ]/ { suite = $1 } /^  / { sub(/^  /, ""); print suite $0 }'
}
# The shards of binary $1: GPU_SANITIZE_SHARDS, or with "each" its tests (at least 1).
shards_of() {
  [ "$shards" != each ] && { echo "$shards"; return; }
  local n
  n=$(tests_of "$1" | grep -c .)
  echo $((n > 0 ? n : 1))
}
# GPU_SANITIZE_SKIP_FAILED reads the earlier calls' progress files: nothing to read otherwise.
case ${GPU_SANITIZE_SKIP_FAILED:-0} in
  0) ;;
  1) if [ -z "${GPU_SANITIZE_DONE:-}" ]; then
       echo "GPU_SANITIZE_SKIP_FAILED=1 needs GPU_SANITIZE_DONE (the progress files that name the failed runs)" >&2
       exit 2
     fi ;;
  *) echo "GPU_SANITIZE_SKIP_FAILED must be 0 or 1, not '$GPU_SANITIZE_SKIP_FAILED'" >&2; exit 2 ;;
esac
# GPU_SANITIZE_FIRST orders one-test runs by their test's name: it has nothing to order otherwise.
if [ -n "${GPU_SANITIZE_FIRST:-}" ] && { [ "$shards" != each ] || [ -n "${GPU_SANITIZE_RUNS:-}" ]; }; then
  echo "GPU_SANITIZE_FIRST needs GPU_SANITIZE_SHARDS=each and no GPU_SANITIZE_RUNS (it orders one-test runs)" >&2
  exit 2
fi
case ${GPU_SANITIZE_DONE_ANY_CODE:-0} in
  0 | 1) ;;
  *) echo "GPU_SANITIZE_DONE_ANY_CODE must be 0 or 1, not '$GPU_SANITIZE_DONE_ANY_CODE'" >&2; exit 2 ;;
esac
case "${GPU_SANITIZE_DEADLINE:-1}" in
  '' | *[!0-9]* | 0) echo "GPU_SANITIZE_DEADLINE must be a positive number of seconds, not '$GPU_SANITIZE_DEADLINE'" >&2; exit 2 ;;
esac

# The log of one shard (index $3 of $4) of a binary under a tool, of kernel $5 alone when given.
log_of() {
  local suffix=""
  [ "$4" -gt 1 ] && suffix=".shard$3"
  # Runs of an explicit list may split a binary differently from the default: name the total too.
  [ "$4" -gt 1 ] && [ "$4" != "$shards" ] && suffix=".shard$3of$4"
  [ -n "${5:-}" ] && suffix+=".kernel-$5"
  echo "$logs/$1-$(basename "$2")$suffix.log"
}
# The code a progress line holds for: the pack's code.txt (scripts/gpu-pack.sh: the sources' hash),
# else the first 12 hex digits of binary $1's sha256.
declare -A codeOf=()
code_of() {
  if [ -z "${codeOf[$1]:-}" ]; then
    if [ -s "$build/code.txt" ]; then codeOf[$1]=$(head -c 12 "$build/code.txt")
    else codeOf[$1]=$(sha256sum "$1" | cut -c1-12); fi
  fi
  echo "${codeOf[$1]}"
}
# A run's name in progress lines and the summary: binary, shard, kernel.
run_name() {
  local name
  name=$(basename "$1")
  [ "$3" -gt 1 ] && name+=" shard $2/$3"
  [ -n "${4:-}" ] && name+=" kernel $4"
  echo "$name"
}
# The reports a log counts: memcheck, synccheck, initcheck "ERROR SUMMARY: N errors", racecheck
# "RACECHECK SUMMARY: N hazards" (empty when the log has no summary line).
reports_in() {
  grep -Eo '(ERROR SUMMARY: [0-9]+ error|RACECHECK SUMMARY: [0-9]+ hazard)' "$1" 2>/dev/null | grep -Eo '[0-9]+' |
    sort -n | tail -1
}

# One run: a shard of a binary under a tool, its log and exit status in $logs.
run_one() {
  local tool=$1 b=$2 shard=$3 total=$4 kernel=${5:-} options
  case $tool in
    memcheck) options=(--tool memcheck --leak-check full) ;;
    *) options=(--tool "$tool") ;;
  esac
  # shellcheck disable=SC2206  # split at spaces on purpose
  [ -n "${GPU_SANITIZE_OPTIONS:-}" ] && options+=(${GPU_SANITIZE_OPTIONS})
  [ -n "$kernel" ] && options+=(--kernel-name "kns=$kernel")
  local log args=("${gtest_args[@]}") skip
  log=$(log_of "$tool" "$b" "$shard" "$total" "$kernel")
  for skip in "${sanitizer_skips[@]}"; do
    local skipTool=${skip%%:*} rest=${skip#*:}
    [ "$skipTool" = "$tool" ] && [ "${rest%%:*}" = "$(basename "$b")" ] || continue
    local filter=${GPU_SANITIZE_FILTER:-*}
    case "$filter" in *-*) filter+=":${rest#*:}" ;; *) filter+="-${rest#*:}" ;; esac
    args=("--gtest_filter=$filter")
  done
  local limit=${GPU_SANITIZE_TIMEOUT:-600}
  # A deadline without a timeout (the detached runs: scripts/gpu-sanitize-detached.sh) is the only
  # limit: a test may take longer than 600 s under racecheck.
  [ -n "${GPU_SANITIZE_DEADLINE:-}" ] && [ -z "${GPU_SANITIZE_TIMEOUT:-}" ] && limit=$GPU_SANITIZE_DEADLINE
  if [ -n "${GPU_SANITIZE_DEADLINE:-}" ]; then
    local left=$((GPU_SANITIZE_DEADLINE - SECONDS))
    if [ "$left" -lt 5 ]; then
      echo "not started: GPU_SANITIZE_DEADLINE ($GPU_SANITIZE_DEADLINE s) reached" >"$log"
      echo not-started >"$log.rc"
      [ -n "${GPU_SANITIZE_PROGRESS:-}" ] &&
        echo "$tool $(run_name "$b" "$shard" "$total" "$kernel") not started (deadline)" >>"$GPU_SANITIZE_PROGRESS"
      return
    fi
    [ "$left" -lt "$limit" ] && limit=$left
  fi
  # Every test's start and end in the log, line by line (stdbuf: the test's output is not held in a
  # buffer that a run cut by its time limit would lose), so a cut run shows which test it was in.
  # timeout puts the run in a process group of its own (its pid): the guard below sums that group's
  # resident memory, keeps the peak, and kills the group past GPU_SANITIZE_MAX_RSS_GB.
  GTEST_TOTAL_SHARDS=$total GTEST_SHARD_INDEX=$shard timeout "$limit" "${line_buffered[@]}" "$sanitizer" \
    "${options[@]}" --error-exitcode 99 "$b" "${args[@]}" >"$log" 2>&1 &
  local group=$! peakKb=0 killedForMemory=0 kb
  local maxKb=$(( ${GPU_SANITIZE_MAX_RSS_GB:-0} * 1024 * 1024 ))
  while kill -0 "$group" 2>/dev/null; do
    kb=$(group_rss_kb "$group")
    [ "$kb" -gt "$peakKb" ] && peakKb=$kb
    if [ "$maxKb" -gt 0 ] && [ "$kb" -gt "$maxKb" ]; then
      killedForMemory=1
      kill -KILL -- "-$group" 2>/dev/null
      break
    fi
    sleep 2
  done
  wait "$group" 2>/dev/null  # (a group killed for memory: no "Killed" line from the shell)
  local rc=$?
  local peak="$((peakKb / 1048576)).$(((peakKb % 1048576) * 10 / 1048576)) GB"
  if [ "$killedForMemory" = 1 ]; then
    echo "killed by gpu-sanitize.sh: host memory above GPU_SANITIZE_MAX_RSS_GB=$GPU_SANITIZE_MAX_RSS_GB GB" >>"$log"
    rc=memory
  fi
  echo "host memory peak: $peak" >>"$log"
  echo $rc >"$log.rc"
  if [ -n "${GPU_SANITIZE_PROGRESS:-}" ]; then
    local n
    n=$(reports_in "$log")
    grep -q 'terminated before first instrumented API call' "$log" && n="none (no CUDA call)"
    echo "$tool $(run_name "$b" "$shard" "$total" "$kernel") exit=$rc reports=${n:-none} host-memory-peak=$peak" \
      "code=$(code_of "$b")" >>"$GPU_SANITIZE_PROGRESS"
  fi
}
# Resident memory (kB) of every process in process group $1.
group_rss_kb() {
  ps -eo pgid=,rss= 2>/dev/null | awk -v g="$1" '$1 == g { s += $2 } END { print s + 0 }'
}
known_tool() {
  case $1 in
    memcheck | racecheck | synccheck | initcheck) ;;
    *) echo "unknown tool $1 (memcheck, racecheck, synccheck, initcheck)" >&2; exit 2 ;;
  esac
}
for tool in $tools; do known_tool "$tool"; done
# The plan: one "tool|binary|shard|total|kernel" a run (kernel empty: every kernel), every
# (tool, binary, shard) by default.
plan=()
if [ -n "${GPU_SANITIZE_RUNS:-}" ]; then
  tools=""
  for run in $GPU_SANITIZE_RUNS; do
    if ! [[ "$run" =~ ^([a-z]+):([A-Za-z0-9_]+):([0-9]+)/([0-9]+)(@([A-Za-z_][A-Za-z0-9_]*))?$ ]] ||
       [ "${BASH_REMATCH[4]}" -lt 1 ] || [ "${BASH_REMATCH[3]}" -ge "${BASH_REMATCH[4]}" ]; then
      echo "GPU_SANITIZE_RUNS: '$run' is not tool:binary:index/total[@KERNEL] with index < total" >&2
      exit 2
    fi
    tool=${BASH_REMATCH[1]} name=${BASH_REMATCH[2]} index=${BASH_REMATCH[3]} total=${BASH_REMATCH[4]}
    kernel=${BASH_REMATCH[6]}
    known_tool "$tool"
    b=$(find "$build/tests" -type f -name "$name" -perm -u+x | head -1)
    [ -n "$b" ] || { echo "GPU_SANITIZE_RUNS: no binary $name under $build/tests" >&2; exit 2; }
    plan+=("$tool|$b|$index|$total|$kernel")
    [[ " $tools " == *" $tool "* ]] || tools+=" $tool"
  done
else
  # Per binary, listed once for every tool: its shard count and, for GPU_SANITIZE_FIRST, the shards
  # (one test each) whose test name matches.
  declare -A totals=() firstShards=()
  for b in "${binaries[@]}"; do
    if [ -n "${GPU_SANITIZE_FIRST:-}" ]; then
      mapfile -t names < <(tests_of "$b")
      totals[$b]=$((${#names[@]} > 0 ? ${#names[@]} : 1))
      for i in "${!names[@]}"; do [[ "${names[$i]}" =~ $GPU_SANITIZE_FIRST ]] && firstShards[$b]+=" $i "; done
    else
      totals[$b]=$(shards_of "$b")
    fi
  done
  first=()  # GPU_SANITIZE_FIRST's runs, planned before the others
  for tool in $tools; do
    for b in "${binaries[@]}"; do
      for ((shard = 0; shard < ${totals[$b]}; ++shard)); do
        if [[ "${firstShards[$b]:-}" == *" $shard "* ]]; then first+=("$tool|$b|$shard|${totals[$b]}|")
        else plan+=("$tool|$b|$shard|${totals[$b]}|"); fi
      done
    done
  done
  [ -n "${GPU_SANITIZE_FIRST:-}" ] && echo "GPU_SANITIZE_FIRST: ${#first[@]} runs first"
  plan=("${first[@]}" "${plan[@]}")
fi
# Runs that ended clean in an earlier call's progress file (GPU_SANITIZE_DONE) are left out.
doneEarlier=0
declare -A doneEarlierOf=() skippedFailedOf=()  # per tool, for its summary line
if [ -n "${GPU_SANITIZE_DONE:-}" ]; then
  declare -A cleanEarlier=() failedEarlier=()
  for f in $GPU_SANITIZE_DONE; do
    [ -f "$f" ] || { echo "GPU_SANITIZE_DONE: no file $f" >&2; exit 2; }
    while IFS= read -r line; do
      case "$line" in
        *" exit=0 reports=0 "* | *" exit=255 reports=none (no CUDA call) "*)
          code=none
          [[ "$line" =~ \ code=([0-9a-f]+) ]] && code=${BASH_REMATCH[1]}
          cleanEarlier["${line%% exit=*}"]+=" $code " ;;
        *" exit=memory "* | *" exit=124 "*) failedEarlier["${line%% exit=*}"]=1 ;;
      esac
    done <"$f"
  done
  kept=()
  staleEarlier=0    # runs clean earlier on other code: run again
  skippedFailed=()  # GPU_SANITIZE_RUNS entries of the runs GPU_SANITIZE_SKIP_FAILED leaves out
  for entry in "${plan[@]}"; do
    IFS='|' read -r tool b shard total kernel <<<"$entry"
    key="$tool $(run_name "$b" "$shard" "$total" "$kernel")"
    codes=${cleanEarlier["$key"]:-}
    if [ -n "$codes" ] && { [[ "$codes" == *" $(code_of "$b") "* ]] || [ "${GPU_SANITIZE_DONE_ANY_CODE:-0}" = 1 ]; }; then
      doneEarlier=$((doneEarlier + 1))
      doneEarlierOf[$tool]=$((${doneEarlierOf[$tool]:-0} + 1))
    elif [ -n "$codes" ]; then
      staleEarlier=$((staleEarlier + 1))
      kept+=("$entry")
    elif [ "${GPU_SANITIZE_SKIP_FAILED:-0}" = 1 ] && [ -n "${failedEarlier["$key"]:-}" ]; then
      skippedFailed+=("$tool:$(basename "$b"):$shard/$total${kernel:+@$kernel}")
      skippedFailedOf[$tool]=$((${skippedFailedOf[$tool]:-0} + 1))
    else
      kept+=("$entry")
    fi
  done
  plan=("${kept[@]}")
  echo "GPU_SANITIZE_DONE: $doneEarlier runs ended clean earlier, left out; ${#plan[@]} to run"
  [ "$staleEarlier" -gt 0 ] &&
    echo "GPU_SANITIZE_DONE: $staleEarlier of those to run ended clean earlier on other code (their binary changed" \
      "since, or the line has no code=), run again (GPU_SANITIZE_DONE_ANY_CODE=1 leaves them out)"
  if [ ${#skippedFailed[@]} -gt 0 ]; then
    echo "GPU_SANITIZE_SKIP_FAILED: ${#skippedFailed[@]} runs killed or cut earlier, left out; for a call of their own:"
    echo "  GPU_SANITIZE_RUNS=\"${skippedFailed[*]}\""
  fi
fi
# GPU_SANITIZE_JOBS runs (tool, binary) pairs side by side on the one GPU (default 1: one at a
# time); each test binary makes its own device memory, so they do not see each other's.
jobs=${GPU_SANITIZE_JOBS:-1}
running=0
for entry in "${plan[@]}"; do
  IFS='|' read -r tool b shard total kernel <<<"$entry"
  run_one "$tool" "$b" "$shard" "$total" "$kernel" &
  running=$((running + 1))
  if [ "$running" -ge "$jobs" ]; then wait -n; running=$((running - 1)); fi
done
wait

status=0
summary=()
for tool in $tools; do
  reports=0
  failed=()
  declare -A counted=()
  for entry in "${plan[@]}"; do
    IFS='|' read -r entryTool b shard total kernel <<<"$entry"
    [ "$entryTool" = "$tool" ] || continue
    counted[$b]=1
    name=$(run_name "$b" "$shard" "$total" "$kernel")
    log=$(log_of "$tool" "$b" "$shard" "$total" "$kernel")
    rc=$(cat "$log.rc" 2>/dev/null || echo missing)
    n=$(reports_in "$log")
    # A run whose tests made no CUDA call (host-only tests, or a shard of them) ends with the
    # tool's "terminated before first instrumented API call" and exit 255: nothing to check,
    # a pass when its tests passed.
    if [ "$rc" = 255 ] && grep -q 'terminated before first instrumented API call' "$log" &&
       grep -q '^\[  PASSED  \]' "$log" && ! grep -q '^\[  FAILED  \]' "$log"; then
      rc=0
      n=0
    fi
    reports=$((reports + ${n:-0}))
    case $rc in
      0 | 77) ;;  # 77: every test skipped (no device)
      99) ;;      # the tool's own reports, counted above
      124) failed+=("$name (timed out)") ;;
      memory) failed+=("$name (killed: host memory above ${GPU_SANITIZE_MAX_RSS_GB} GB)") ;;
    not-started) failed+=("$name (not started: GPU_SANITIZE_DEADLINE)") ;;
      *) failed+=("$name (exit $rc)") ;;
    esac
    [ -z "$n" ] && [ "$rc" != 124 ] && [ "$rc" != not-started ] && [ "$rc" != memory ] && failed+=("$name (no summary line)")
  done
  line=$(printf '%-10s %d reports in %d binaries' "$tool" "$reports" "${#counted[@]}")
  unset counted
  [ -n "${doneEarlierOf[$tool]:-}" ] && line+=" (besides ${doneEarlierOf[$tool]} runs clean in GPU_SANITIZE_DONE)"
  if [ -n "${GPU_SANITIZE_RUNS:-}" ]; then line+=" (the runs GPU_SANITIZE_RUNS lists)"
  elif [ "$shards" = each ]; then line+=" (one test a process)"
  elif [ "$shards" -gt 1 ]; then line+=" ($shards shards each)"; fi
  [ -n "${GPU_SANITIZE_OPTIONS:-}" ] && line+=" (options: $GPU_SANITIZE_OPTIONS)"
  [ ${#failed[@]} -gt 0 ] && line+="; failed: ${failed[*]}"
  # Left out, not passed: the suite is not through while they are.
  [ -n "${skippedFailedOf[$tool]:-}" ] &&
    line+="; ${skippedFailedOf[$tool]} runs killed or cut earlier not run (GPU_SANITIZE_SKIP_FAILED)"
  summary+=("$line")
  echo "$line"
  if [ "$reports" != 0 ] || [ ${#failed[@]} -gt 0 ] || [ -n "${skippedFailedOf[$tool]:-}" ]; then status=1; fi
done
echo "===== compute-sanitizer summary (logs in $logs/) ====="
printf '%s\n' "${summary[@]}" | tee "$logs/summary.txt"
exit $status
