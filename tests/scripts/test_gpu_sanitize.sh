#!/usr/bin/env bash
# scripts/gpu-sanitize.sh's plan and summary, without a GPU: a stand-in compute-sanitizer (first on
# PATH) runs stand-in gtest binaries and prints the tool's summary line, reporting 2 errors for any
# test named Leaky. Checked: GPU_SANITIZE_SHARDS=each runs one test a process (3 runs of a binary
# of 3 tests, 1 of a binary of 1), a skip of scripts' sanitizer_skips leaves its test out, reports
# are summed and fail the run, GPU_SANITIZE_RUNS picks exactly its runs, GPU_SANITIZE_FIRST's tests
# run first, GPU_SANITIZE_DONE leaves out what an earlier call ended clean on the same code (a
# binary changed since, or a line without code=, runs again unless GPU_SANITIZE_DONE_ANY_CODE=1;
# with GPU_SANITIZE_SKIP_FAILED=1, what it saw killed or cut is listed for a call of their own), a
# bad value is refused.
set -u
repo=$(cd "$(dirname "$0")/../.." && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }
mkdir -p "$work/bin" "$work/pack/tests" "$work/run"
# A gtest binary: $1 = its tests (space-separated); honours --gtest_list_tests, the shard
# variables and a negative --gtest_filter of one test.
make_binary() {
  cat >"$work/pack/tests/$1" <<STUB
#!/usr/bin/env bash
tests="$2"
skip=""
for a in "\$@"; do case \$a in --gtest_filter=*-*) skip=\${a##*-}; skip=\${skip#*.} ;; esac; done
if [[ " \$* " == *" --gtest_list_tests "* ]]; then echo Suite.; for t in \$tests; do echo "  \$t"; done; exit 0; fi
i=0; ran=0
for t in \$tests; do
  if [ \$((i % \${GTEST_TOTAL_SHARDS:-1})) = \${GTEST_SHARD_INDEX:-0} ] && [ "\$t" != "\$skip" ]; then
    echo "[ RUN      ] Suite.\$t"; ran=\$((ran + 1)); fi
  i=\$((i + 1))
done
echo "[  PASSED  ] \$ran tests."
STUB
  chmod +x "$work/pack/tests/$1"
}
make_binary test_three "Alpha Beta Leaky"
make_binary test_one "Gamma"
make_binary test_host_memory "Kept RegisteringTwiceOrUnregisteringTwiceIsRefusedNamingTheCall"
cat >"$work/bin/compute-sanitizer" <<'STUB'
#!/usr/bin/env bash
tool=memcheck
while [ $# -gt 0 ] && [ ! -x "$1" ]; do [ "$1" = --tool ] && tool=$2; shift; done
out=$("$@")
echo "$out"
echo "$tool $(basename "$1") ${GTEST_SHARD_INDEX}/${GTEST_TOTAL_SHARDS} $(echo "$out" | grep -c RUN)" >>"$CALLS"
n=0; echo "$out" | grep -q 'Suite.Leaky' && n=2
if [ "$tool" = racecheck ]; then echo "========= RACECHECK SUMMARY: $n hazards displayed"; else echo "========= ERROR SUMMARY: $n errors"; fi
[ $n = 0 ] || exit 99
STUB
chmod +x "$work/bin/compute-sanitizer"
export CALLS="$work/calls.txt" PATH="$work/bin:$PATH"
cd "$work/run" || exit 1

# One test a process, two tools.
: >"$CALLS"
out=$(GPU_SANITIZE_TOOLS="memcheck racecheck" GPU_SANITIZE_SHARDS=each GPU_SANITIZE_JOBS=3 \
  bash "$repo/scripts/gpu-sanitize.sh" "$work/pack" 2>&1)
status=$?
[ "$status" = 1 ] || fail "the Leaky reports must fail the run (exit $status): $out"
for tool in memcheck racecheck; do
  for shard in 0/3 1/3 2/3; do
    grep -q "^$tool test_three $shard 1$" "$CALLS" || fail "$tool test_three shard $shard: not one test ($(cat "$CALLS"))"
  done
  grep -q "^$tool test_one 0/1 1$" "$CALLS" || fail "$tool test_one: not one run of its one test"
done
[ "$(grep -c . "$CALLS")" = 12 ] || fail "12 runs expected (3 + 1 + 2 per tool), got: $(cat "$CALLS")"
grep -q "^memcheck test_host_memory 1/2 0$" "$CALLS" || fail "memcheck must skip test_host_memory's refusals test"
grep -q "^racecheck test_host_memory 1/2 1$" "$CALLS" || fail "racecheck runs test_host_memory's refusals test"
echo "$out" | grep -q "^memcheck   2 reports in 3 binaries (one test a process)" || fail "memcheck summary: $out"
echo "$out" | grep -q "^racecheck  2 reports in 3 binaries (one test a process)" || fail "racecheck summary: $out"

# Exactly the runs listed.
: >"$CALLS"
GPU_SANITIZE_RUNS="synccheck:test_three:1/3 initcheck:test_one:0/1" bash "$repo/scripts/gpu-sanitize.sh" "$work/pack" \
  >/dev/null 2>&1 || fail "two clean runs must pass"
[ "$(sort "$CALLS" | tr '\n' ';')" = "initcheck test_one 0/1 1;synccheck test_three 1/3 1;" ] ||
  fail "GPU_SANITIZE_RUNS ran: $(cat "$CALLS")"

# GPU_SANITIZE_FIRST: the matching tests of every binary run before the others (one job: in order).
: >"$CALLS"
out=$(GPU_SANITIZE_TOOLS=synccheck GPU_SANITIZE_SHARDS=each GPU_SANITIZE_FIRST="Leaky|Gamma" \
  bash "$repo/scripts/gpu-sanitize.sh" "$work/pack" 2>&1)
[ "$(head -2 "$CALLS" | sort | tr '\n' ';')" = "synccheck test_one 0/1 1;synccheck test_three 2/3 1;" ] ||
  fail "GPU_SANITIZE_FIRST: Leaky and Gamma first, ran: $(cat "$CALLS")"
[ "$(grep -c . "$CALLS")" = 6 ] || fail "GPU_SANITIZE_FIRST: every run still once, ran: $(cat "$CALLS")"
echo "$out" | grep -q "GPU_SANITIZE_FIRST: 2 runs first" || fail "GPU_SANITIZE_FIRST's count: $out"

# GPU_SANITIZE_DONE: a second call runs only what the first call's progress file does not show
# ended clean (here: Leaky, which reported), and its summary counts the others.
: >"$CALLS"
GPU_SANITIZE_TOOLS=racecheck GPU_SANITIZE_SHARDS=each GPU_SANITIZE_PROGRESS="$work/progress.txt" \
  bash "$repo/scripts/gpu-sanitize.sh" "$work/pack" >/dev/null 2>&1
[ "$(grep -c . "$CALLS")" = 6 ] || fail "the first call runs all 6: $(cat "$CALLS")"
: >"$CALLS"
out=$(GPU_SANITIZE_TOOLS=racecheck GPU_SANITIZE_SHARDS=each GPU_SANITIZE_DONE="$work/progress.txt" \
  bash "$repo/scripts/gpu-sanitize.sh" "$work/pack" 2>&1)
[ "$(cat "$CALLS")" = "racecheck test_three 2/3 1" ] || fail "GPU_SANITIZE_DONE: only Leaky again, ran: $(cat "$CALLS")"
echo "$out" | grep -q "GPU_SANITIZE_DONE: 5 runs ended clean earlier, left out; 1 to run" || fail "GPU_SANITIZE_DONE: $out"
echo "$out" | grep -q "^racecheck  2 reports in 1 binaries (besides 5 runs clean in GPU_SANITIZE_DONE)" ||
  fail "GPU_SANITIZE_DONE summary: $out"
GPU_SANITIZE_DONE="$work/none.txt" bash "$repo/scripts/gpu-sanitize.sh" "$work/pack" >/dev/null 2>&1
[ $? = 2 ] || fail "a GPU_SANITIZE_DONE file that does not exist must exit 2"
grep -q "^racecheck test_one exit=0 reports=0 .* code=[0-9a-f]\{12\}$" "$work/progress.txt" ||
  fail "a progress line names its binary's code: $(cat "$work/progress.txt")"

# Other code: test_one rebuilt (one more line: another sha256) runs again, the summary says why;
# GPU_SANITIZE_DONE_ANY_CODE=1 takes the earlier line as it is.
echo "# rebuilt" >>"$work/pack/tests/test_one"
: >"$CALLS"
out=$(GPU_SANITIZE_TOOLS=racecheck GPU_SANITIZE_SHARDS=each GPU_SANITIZE_DONE="$work/progress.txt" \
  bash "$repo/scripts/gpu-sanitize.sh" "$work/pack" 2>&1)
[ "$(sort "$CALLS" | tr '\n' ';')" = "racecheck test_one 0/1 1;racecheck test_three 2/3 1;" ] ||
  fail "a changed binary's clean run must run again, ran: $(cat "$CALLS")"
echo "$out" | grep -q "GPU_SANITIZE_DONE: 1 of those to run ended clean earlier on other code" || fail "stale count: $out"
: >"$CALLS"
GPU_SANITIZE_TOOLS=racecheck GPU_SANITIZE_SHARDS=each GPU_SANITIZE_DONE="$work/progress.txt" GPU_SANITIZE_DONE_ANY_CODE=1 \
  bash "$repo/scripts/gpu-sanitize.sh" "$work/pack" >/dev/null 2>&1
[ "$(cat "$CALLS")" = "racecheck test_three 2/3 1" ] || fail "GPU_SANITIZE_DONE_ANY_CODE=1: only Leaky again, ran: $(cat "$CALLS")"
GPU_SANITIZE_DONE_ANY_CODE=yes GPU_SANITIZE_DONE="$work/progress.txt" bash "$repo/scripts/gpu-sanitize.sh" "$work/pack" \
  >/dev/null 2>&1
[ $? = 2 ] || fail "GPU_SANITIZE_DONE_ANY_CODE=yes must exit 2"
# A line written before code= existed holds for unknown code: it runs again.
: >"$CALLS"
echo "racecheck test_one exit=0 reports=0 host-memory-peak=0.1 GB" >"$work/legacy.txt"
GPU_SANITIZE_TOOLS=racecheck GPU_SANITIZE_TESTS=test_one GPU_SANITIZE_DONE="$work/legacy.txt" \
  bash "$repo/scripts/gpu-sanitize.sh" "$work/pack" >/dev/null 2>&1
[ "$(cat "$CALLS")" = "racecheck test_one 0/1 1" ] || fail "a line without code= must run again, ran: $(cat "$CALLS")"
# A pack's code.txt (gpu-pack.sh: the sources' hash) is the code of every line, whatever the binary's bytes.
echo 0123456789abcdef >"$work/pack/code.txt"
GPU_SANITIZE_TOOLS=racecheck GPU_SANITIZE_TESTS=test_one GPU_SANITIZE_PROGRESS="$work/packed.txt" \
  bash "$repo/scripts/gpu-sanitize.sh" "$work/pack" >/dev/null 2>&1
grep -q " code=0123456789ab$" "$work/packed.txt" || fail "code= from code.txt: $(cat "$work/packed.txt")"
echo "# rebuilt again" >>"$work/pack/tests/test_one"
: >"$CALLS"
GPU_SANITIZE_TOOLS=racecheck GPU_SANITIZE_TESTS=test_one GPU_SANITIZE_DONE="$work/packed.txt" \
  bash "$repo/scripts/gpu-sanitize.sh" "$work/pack" >/dev/null 2>&1
[ ! -s "$CALLS" ] || fail "same code.txt, rebuilt binary: nothing to run, ran: $(cat "$CALLS")"
rm "$work/pack/code.txt"

# GPU_SANITIZE_SKIP_FAILED: runs an earlier call saw killed for memory or cut are left out too and
# listed for GPU_SANITIZE_RUNS; the summary says so and the call does not pass while they are out.
# (Leaky's run marked clean there: nothing else of the call reports, so only the left-out runs fail it.)
three=$(sha256sum "$work/pack/tests/test_three" | cut -c1-12)
printf '%s\n' "racecheck test_three shard 0/3 exit=0 reports=0 host-memory-peak=0.1 GB code=$three" \
  "racecheck test_three shard 2/3 exit=0 reports=0 host-memory-peak=0.1 GB code=$three" \
  "racecheck test_three shard 1/3 exit=memory reports=none host-memory-peak=9.1 GB" \
  "racecheck test_one exit=124 reports=none host-memory-peak=1.0 GB" >"$work/failed.txt"
: >"$CALLS"
out=$(GPU_SANITIZE_TOOLS=racecheck GPU_SANITIZE_SHARDS=each GPU_SANITIZE_DONE="$work/failed.txt" GPU_SANITIZE_SKIP_FAILED=1 \
  bash "$repo/scripts/gpu-sanitize.sh" "$work/pack" 2>&1)
status=$?
[ "$(sort "$CALLS" | tr '\n' ';')" = "racecheck test_host_memory 0/2 1;racecheck test_host_memory 1/2 1;" ] ||
  fail "GPU_SANITIZE_SKIP_FAILED ran: $(cat "$CALLS")"
echo "$out" | grep -q "GPU_SANITIZE_SKIP_FAILED: 2 runs killed or cut earlier, left out" || fail "skipped count: $out"
echo "$out" | grep -q 'GPU_SANITIZE_RUNS=".*racecheck:test_three:1/3' || fail "the RUNS list names test_three 1/3: $out"
echo "$out" | grep -q 'GPU_SANITIZE_RUNS=".*racecheck:test_one:0/1' || fail "the RUNS list names test_one: $out"
echo "$out" | grep -q "^racecheck .*; 2 runs killed or cut earlier not run (GPU_SANITIZE_SKIP_FAILED)" || fail "summary: $out"
[ "$status" = 1 ] || fail "runs left out unchecked must not pass (exit $status)"
# Without it the same file's failed runs run again.
: >"$CALLS"
GPU_SANITIZE_TOOLS=racecheck GPU_SANITIZE_SHARDS=each GPU_SANITIZE_DONE="$work/failed.txt" \
  bash "$repo/scripts/gpu-sanitize.sh" "$work/pack" >/dev/null 2>&1
[ "$(grep -c . "$CALLS")" = 4 ] || fail "without GPU_SANITIZE_SKIP_FAILED 4 runs (all but the clean two): $(cat "$CALLS")"
# Refused without progress files to read, or with a value other than 0 or 1.
: >"$CALLS"
GPU_SANITIZE_SKIP_FAILED=1 bash "$repo/scripts/gpu-sanitize.sh" "$work/pack" >/dev/null 2>&1
[ $? = 2 ] || fail "GPU_SANITIZE_SKIP_FAILED=1 without GPU_SANITIZE_DONE must exit 2"
GPU_SANITIZE_SKIP_FAILED=yes GPU_SANITIZE_DONE="$work/failed.txt" bash "$repo/scripts/gpu-sanitize.sh" "$work/pack" >/dev/null 2>&1
[ $? = 2 ] || fail "GPU_SANITIZE_SKIP_FAILED=yes must exit 2"
[ ! -s "$CALLS" ] || fail "nothing may run after GPU_SANITIZE_SKIP_FAILED's refusal"

# GPU_SANITIZE_FIRST without one test a process has nothing to order: refused, not ignored.
: >"$CALLS"
GPU_SANITIZE_FIRST=Leaky bash "$repo/scripts/gpu-sanitize.sh" "$work/pack" >/dev/null 2>&1
[ $? = 2 ] || fail "GPU_SANITIZE_FIRST without GPU_SANITIZE_SHARDS=each must exit 2"
[ ! -s "$CALLS" ] || fail "nothing may run after GPU_SANITIZE_FIRST's refusal"

# A bad shard count is refused before anything runs.
: >"$CALLS"
GPU_SANITIZE_SHARDS=some bash "$repo/scripts/gpu-sanitize.sh" "$work/pack" >/dev/null 2>&1
[ $? = 2 ] || fail "GPU_SANITIZE_SHARDS=some must exit 2"
[ ! -s "$CALLS" ] || fail "nothing may run after a refusal"
echo "gpu-sanitize.sh: plan, skips, summary and refusals as documented"
