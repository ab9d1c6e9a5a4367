#!/usr/bin/env bash
# Builds the libFuzzer targets of tests/fuzz (clang, ASan+UBSan, folder build-fuzz, no CUDA),
# generates their seed corpora, replays the committed inputs of tests/fuzz/corpus/<target> (each
# once found a bug: they must pass now) and fuzzes each target for a budget:
#   scripts/fuzz.sh [SECONDS_PER_TARGET | -runs=N] [TARGET...]
# (default 60 seconds; targets: fuzz_engine fuzz_properties fuzz_template_loader, default all).
# A finding (crash, sanitizer report, leak, timeout, failed check) stops that target, leaves the
# input in build-fuzz/fuzz-artifacts/<target>/ and makes the script fail. The corpus grown while
# fuzzing stays in build-fuzz/fuzz-corpus/<target>, so later runs start from it.
# FUZZ_BUILD_DIR overrides the build folder. FUZZ_JOBS=N runs N libFuzzer jobs of each target side
# by side on the shared corpus (-jobs=N -workers=N; -runs=R is split into N jobs of R/N runs): the
# template loader waits on GStreamer's threads most of the time, so on a busy host several jobs
# keep more executions going than one; the executions of all jobs are added up.
# FUZZ_PREBUILT=1: the targets are already in the build folder (built here and packed by
# scripts/fuzz-pack.sh for a host with more cores and no build tools): nothing is installed or built.
set -euo pipefail
cd "$(dirname "$0")/.."
prebuilt=${FUZZ_PREBUILT:-0}
case "$prebuilt" in 0 | 1) ;; *) echo "FUZZ_PREBUILT must be 0 or 1, not '$prebuilt'" >&2; exit 2 ;; esac
if [ "$prebuilt" = 0 ]; then
  source scripts/deps.sh
  nccmatch_install_deps
fi

budget=${1:-60}
shift || true
targets=("$@")
[ ${#targets[@]} -eq 0 ] && targets=(fuzz_engine fuzz_properties fuzz_template_loader)
case "$budget" in
  -runs=*) budget_flag=$budget ;;
  *[!0-9]* | '') echo "usage: scripts/fuzz.sh [SECONDS_PER_TARGET | -runs=N] [TARGET...]" >&2; exit 2 ;;
  *) budget_flag=-max_total_time=$budget ;;
esac

build=${FUZZ_BUILD_DIR:-build-fuzz}
if [ "$prebuilt" = 1 ]; then
  for target in "${targets[@]}"; do
    [ -x "$build/tests/fuzz/$target" ] || { echo "FUZZ_PREBUILT=1: no $build/tests/fuzz/$target (scripts/fuzz-pack.sh packs it)" >&2; exit 2; }
  done
elif [ ! -f "$build/build.ninja" ]; then
  # -fsanitize=fuzzer-no-link: coverage feedback from the library and the plugin's units too.
  # -fno-sanitize-recover=all: a UBSan report stops the target, so libFuzzer keeps the input.
  CC=clang CXX=clang++ meson setup "$build" -Dcuda=disabled -Dtests=disabled -Dfuzz=true \
    -Dbuildtype=debugoptimized -Db_sanitize=address,undefined -Db_lundef=false \
    -Dcpp_args="-fsanitize=fuzzer-no-link -fno-sanitize-recover=all"
fi
[ "$prebuilt" = 1 ] || ninja -C "$build" "${targets[@]/#/tests/fuzz/}"

# Seed corpora, made here rather than committed: small valid inputs of each kind.
seeds=$build/fuzz-seeds
rm -rf "$seeds"
mkdir -p "$seeds"/{fuzz_engine,fuzz_properties,fuzz_template_loader}
# fuzz_engine: bytes from a fixed-seed generator (the input is a description, any bytes are one).
RANDOM=15
for i in $(seq 1 32); do
  n=$((16 + RANDOM % 240))
  for _ in $(seq 1 "$n"); do
    printf -v byte '%02x' $((RANDOM % 256))
    printf "\\x$byte"
  done >"$seeds/fuzz_engine/seed-$i"
done
# fuzz_properties: a property value, a NUL, then (read from the input's end backwards: one byte
# names the property set on the element, string ones by its value modulo 5 (0 templates, 1 scales,
# 2 search-region, 3 masks, 4 angles), numeric ones modulo 6 (0 search-margin, 1 lost-frames,
# 2 acquire-interval, 3 template-update, 4 pyramid-levels, 5 mode); 2+2 bytes the frame size;
# 8 bytes a typed value for the numeric property (its low bits as an unsigned or enum, all 64 as
# a double: here 1, 0.5, NaN, -0, 2^32, 16385).
i=0
values=('\x01\0\0\0\0\0\0\0' '\0\0\0\0\0\0\xe0\x3f' '\0\0\0\0\0\0\xf8\x7f' '\0\0\0\0\0\0\0\x80'
  '\0\0\0\0\x01\0\0\0' '\x01\x40\0\0\0\0\0\0')
for text in "" "1" "0.5,1,2" " 0.75 , 1.25 " "1e-2,16" "16.0001" "nan" "inf" "-1" "0x10" "1,,2" \
  "10,20,30,40" " 1 , 2 , 3 , 4 " "0,0,0,0" "1,2,3" "1,2,3,4,5" "2147483647,1,1,1" "4294967296,0,1,1" \
  "a.png,b.png" " dir/star.png , , x.pgm " ",,," "1.5e308" "0.0100000000000000002" \
  "0" "2" "3" "32" "16384" "16385" "1000000" "1000001" "4294967295" "0.999" "1.0000000000000002" "-0" \
  "max" "min" "010" " 7" "track" "1e0"; do
  for property in 0 1 2 3 4 5; do
    i=$((i + 1))
    { printf '%s' "$text"; printf '\0'; printf "${values[i % ${#values[@]}]}"; printf '\x07\x80\x04\x38'
      printf "\\x0$property"; } >"$seeds/fuzz_properties/seed-$i"
  done
done
# fuzz_template_loader: one tiny image per format the loader meets (PNM through pnmdec, the rest
# through decodebin), and files that are no image.
loader=$seeds/fuzz_template_loader
printf 'P5\n3 2\n255\n\x01\x02\x03\x04\x05\x06' >"$loader/gray.pgm"
printf 'P2\n2 2\n15\n0 5 10 15\n' >"$loader/ascii.pgm"
printf 'P6\n1 1\n255\n\xff\x80\x00' >"$loader/color.ppm"
printf 'P4\n8 1\n\xa5' >"$loader/bits.pbm"
printf 'P5\n2 2\n65535\n\x00\x01\x00\x02\x00\x03\x00\x04' >"$loader/deep.pgm"
printf '' >"$loader/empty"
printf 'P5' >"$loader/magic-only"
printf 'not an image at all' >"$loader/text"
for format in png:pngenc jpeg:jpegenc gif:avenc_gif bmp:avenc_bmp; do
  gst-launch-1.0 -q videotestsrc num-buffers=1 ! video/x-raw,width=5,height=3 ! videoconvert ! \
    "${format#*:}" ! filesink location="$loader/tiny.${format%%:*}" 2>/dev/null ||
    rm -f "$loader/tiny.${format%%:*}"  # that encoder is not installed: one seed fewer
done

# GStreamer: a registry of our own, made here by the usual out-of-process scanner, so that no
# target loads every installed plugin into itself (only the decoders an input needs are loaded).
export GST_REGISTRY_1_0=$(cd "$build" && pwd)/fuzz-registry.bin  # FUZZ_BUILD_DIR may be absolute
gst-inspect-1.0 >/dev/null
export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
# G_SLICE=always-malloc (FUZZ_SLICE_MALLOC=0 turns it off). GSlice (GLib 2.74) hands out
# GStreamer's events, buffers and codec frames from slabs of its own, which LeakSanitizer sees as a
# few reachable allocations, so a leaked object inside one is never reported (pngdec's and
# decodebin2's, in the loader target's suppressions, hid there until sessions 34-35).
slice_malloc=${FUZZ_SLICE_MALLOC:-1}
[ "$slice_malloc" = 1 ] && export G_SLICE=always-malloc
failed=()
asan_options_given=${ASAN_OPTIONS:-}
# LeakSanitizer's suppressions name functions, so the reports' frames must be symbolized: by
# llvm-symbolizer where it is installed, else by binutils' addr2line (a GPU host that unpacked
# scripts/fuzz-pack.sh's pack has no LLVM; the pack brings addr2line in .gst-fuzz/bin). Without
# either, every suppressed leak (GStreamer's own) would be reported as a finding.
symbolizer_option="" symbolized=1
if ! command -v llvm-symbolizer >/dev/null 2>&1; then
  addr2line_path=$(command -v addr2line 2>/dev/null || true)
  if [ -n "$addr2line_path" ]; then symbolizer_option=external_symbolizer_path=$addr2line_path; else symbolized=0; fi
fi
for target in "${targets[@]}"; do
  exe=$build/tests/fuzz/$target
  committed=tests/fuzz/corpus/$target
  corpus=$build/fuzz-corpus/$target
  artifacts=$build/fuzz-artifacts/$target/
  mkdir -p "$corpus" "$artifacts" "$committed"
  # -timeout: the loader gives up on one file after 11 s, and libFuzzer runs an input a second
  # time when it suspects a leak (a decoder thread the loader left spinning looks like one);
  # -rss_limit_mb: a runaway allocation.
  flags=(-timeout=60 -rss_limit_mb=4096 -print_final_stats=1 -artifact_prefix="$artifacts")
  log=$build/fuzz-$target.log
  jobs=${FUZZ_JOBS:-1}
  # A target's LeakSanitizer suppressions (GStreamer's own leaks only, each explained in the file).
  # They name frames below GLib's allocator, which only the slow unwinder reaches (GLib has no
  # frame pointers): with GSlice off, where those leaks show, that target's allocations are
  # unwound so (about half its executions a second).
  supp=tests/fuzz/lsan-$target.supp
  if [ -f "$supp" ] && [ "$slice_malloc" = 1 ]; then
    if [ "$symbolized" = 0 ]; then
      echo "== $target: neither llvm-symbolizer nor addr2line found: its LeakSanitizer suppressions ($supp) could not match" >&2
      failed+=("$target")
      continue
    fi
    export LSAN_OPTIONS=suppressions=$PWD/$supp:print_suppressions=0
    export ASAN_OPTIONS=${asan_options_given:+$asan_options_given:}fast_unwind_on_malloc=0:malloc_context_size=24${symbolizer_option:+:$symbolizer_option}
  else
    unset LSAN_OPTIONS
    if [ -n "$asan_options_given" ]; then export ASAN_OPTIONS=$asan_options_given; else unset ASAN_OPTIONS; fi
  fi
  echo "== $target: replaying $(find "$committed" -type f | wc -l) committed inputs, then fuzzing ($budget_flag)"
  start=$(date +%s)
  if [ -n "$(ls -A "$committed")" ] && ! "$exe" "${flags[@]}" "$committed"/* >"$log.replay" 2>&1; then
    tail -40 "$log.replay"
    echo "== $target: a committed input fails again (log: $log.replay)"
    failed+=("$target")
    continue
  fi
  if [ "$jobs" -gt 1 ]; then
    # Each job logs to fuzz-JOB.log in the folder it starts in; paths made absolute for it.
    job_dir=$build/fuzz-jobs-$target
    rm -rf "$job_dir"
    mkdir -p "$job_dir"
    job_budget=$budget_flag
    case "$budget_flag" in -runs=*) job_budget=-runs=$(((${budget_flag#-runs=} + jobs - 1) / jobs)) ;; esac
    abs() { (cd "$1" && pwd); }
    job_flags=(-timeout=60 -rss_limit_mb=4096 -print_final_stats=1 -artifact_prefix="$(abs "$artifacts")/")
    inputs=("$(abs "$corpus")" "$(abs "$seeds/$target")" "$(abs "$committed")")
    job_exe=$(abs "$(dirname "$exe")")/$target
    ok=0
    (cd "$job_dir" && "$job_exe" "${job_flags[@]}" -jobs="$jobs" -workers="$jobs" "$job_budget" "${inputs[@]}") \
      >"$log" 2>&1 || ok=$?
    cat "$job_dir"/fuzz-*.log >>"$log" 2>/dev/null || true
    # A job's finding leaves its input in the artifacts folder (and fails that job). Not the slow
    # units libFuzzer also writes there (an input over 10 s: on a starved host, a loader input that
    # replays in a fraction of a second; -timeout is the hang check): listed, not counted.
    [ -n "$(ls -A "$artifacts" | grep -v '^slow-unit-')" ] && ok=1
    for slow in "$artifacts"slow-unit-*; do
      [ -e "$slow" ] && echo "== $target: a slow unit (over 10 s, not a finding): $slow"
    done
    grep -q -E '^==[0-9]+==ERROR|^SUMMARY: |deadly signal|-- timeout|out-of-memory' "$job_dir"/fuzz-*.log && ok=1
  else
    # LeakSanitizer's own failure ("Tracer caught signal 11 ... LeakSanitizer has encountered a
    # fatal error": its stop-the-world tracer crashing while the loader's GStreamer threads run, in
    # both CI runs of session 19) is not a finding when the input it kept passes on replay: that run
    # is retried once (a second such failure counts as a finding).
    for attempt in 1 2; do
      ok=0
      "$exe" "${flags[@]}" "$budget_flag" "$corpus" "$seeds/$target" "$committed" >"$log" 2>&1 || ok=$?
      [ "$ok" != 0 ] && [ "$attempt" = 1 ] && grep -q 'LeakSanitizer has encountered a fatal error' "$log" || break
      kept=$(ls -t "$artifacts" 2>/dev/null | head -1)
      [ -n "$kept" ] && "$exe" "${flags[@]}" "$artifacts$kept" >"$log.lsan-replay" 2>&1 || break
      echo "== $target: LeakSanitizer failed itself (its input $kept passes on replay; log kept as $log.lsan-fault): retried"
      mv "$log" "$log.lsan-fault"
      rm -f "$artifacts$kept"
    done
  fi
  if [ "$ok" = 0 ]; then
    # With jobs, the jobs' own logs only: the main log holds each job's final stats too.
    stats=("$log")
    [ "$jobs" -gt 1 ] && stats=("$job_dir"/fuzz-*.log)
    runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "${stats[@]}" | awk '{n += $1} END {print n}')
    echo "== $target: ${runs:-?} executions in $(($(date +%s) - start)) s ($jobs job(s)), no finding (corpus: $(ls "$corpus" | wc -l) inputs)"
  else
    tail -60 "$log"
    echo "== $target: FINDING (log: $log; input kept in $artifacts)"
    failed+=("$target")
  fi
done
if [ ${#failed[@]} -gt 0 ]; then
  echo "fuzz.sh: findings in: ${failed[*]}" >&2
  exit 1
fi
