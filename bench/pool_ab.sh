#!/usr/bin/env bash
# The element's proposed pinned pool against `identity drop-allocation=true` for one producer, in
# interleaved rounds (alone, pool, no pool, then again), each run's steady frame rate, the CPU
# microseconds a buffer of the producer's streaming thread (the one pushing into nccmatch; alone,
# the one feeding the sink) and of the process over the same steady state (bench_producers), and
# the whole run's CPU seconds (user + sys) and context switches (voluntary, involuntary): a direct A/B
# for a producer whose own rate swings between runs, where bench/producers.sh's shares of "alone"
# spread too wide to decide. Prints one line a run, then medians and the per-round pool / no-pool
# ratio.
#   bench/pool_ab.sh PLUGIN_DIR [ROUNDS] [FRAMES]
# PRODUCER (env): the pipeline head with @N@ for the frame count (default: videotestsrc RGB 1080p
# through videoconvert to GRAY8); ELEMENT_ARGS adds properties to nccmatch; QUEUE=1 puts a queue
# after the producer in all three (`queue name=into`: the producer's thread is still the one
# feeding it). bench_producers beside this script's build, or BENCH_PRODUCERS (the GPU pack's
# gpu-pack/bench/bench_producers).
set -uo pipefail
plugin_dir=$(cd "${1:?usage: bench/pool_ab.sh PLUGIN_DIR [ROUNDS] [FRAMES]}" && pwd)
rounds=${2:-8}
frames=${3:-300}
probe=${BENCH_PRODUCERS:-$plugin_dir/../bench/bench_producers}
[ -x "$probe" ] || { echo "bench_producers not found at $probe (set BENCH_PRODUCERS)" >&2; exit 2; }
export GST_PLUGIN_PATH="$plugin_dir${GST_PLUGIN_PATH:+:$GST_PLUGIN_PATH}"
W=1920 H=1080
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
gst-launch-1.0 -q videotestsrc num-buffers=1 pattern=snow ! video/x-raw,width=$W,height=$H,format=GRAY8 \
  ! videocrop left=900 top=500 right=$((W - 964)) bottom=$((H - 564)) ! pngenc ! filesink location="$work/t64.png" \
  || { echo "could not make the template" >&2; exit 2; }
producer=${PRODUCER:-"videotestsrc num-buffers=@N@ pattern=pinwheel ! video/x-raw,format=RGB,width=$W,height=$H ! videoconvert ! video/x-raw,format=GRAY8"}
head=${producer//@N@/$frames}
ncc="nccmatch template=$work/t64.png display=false post-messages=false ${ELEMENT_ARGS:-}"
queue=""
[ "${QUEUE:-0}" = 1 ] && queue="! queue name=into"
declare -A tails=([alone]="$queue" [pool]="$queue ! $ncc" [nopool]="! identity drop-allocation=true $queue ! $ncc")
echo "rounds=$rounds frames=$frames producer: $head${queue:+ $queue}"
echo "round variant fps producer_thread_cpu_us process_cpu_us cpu_user_s cpu_sys_s voluntary_switches involuntary_switches"
for r in $(seq "$rounds"); do
  for v in alone pool nopool; do
    # The child's rusage (python3: no GNU time needed on the GPU host).
    out=$(python3 -c 'import subprocess, resource, sys
p = subprocess.run(sys.argv[1:], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
r = resource.getrusage(resource.RUSAGE_CHILDREN)
print(p.stdout.strip())
print("TIME %.2f %.2f %d %d" % (r.ru_utime, r.ru_stime, r.ru_nvcsw, r.ru_nivcsw))' "$probe" --warmup 30 $head ${tails[$v]})
    fps=$(grep -o "^fps [0-9.]*" <<<"$out" | cut -d' ' -f2)
    # The producer's thread: the one pushing into nccmatch, or alone the one feeding the sink.
    thread=$(grep -o "producer-thread-cpu-us [0-9.-]*" <<<"$out" | cut -d' ' -f2)
    [ -n "$thread" ] || thread=$(grep -o "sink-thread-cpu-us [0-9.-]*" <<<"$out" | cut -d' ' -f2)
    process=$(grep -o "process-cpu-us [0-9.]*" <<<"$out" | cut -d' ' -f2)
    echo "$r $v ${fps:-fail} ${thread:--} ${process:--} $(grep "^TIME" <<<"$out" | cut -d' ' -f2-)"
  done
done | tee "$work/runs.txt"
python3 - "$work/runs.txt" <<'PY'
import sys, statistics, collections
rows = collections.defaultdict(dict)
for line in open(sys.argv[1]):
    f = line.split()
    if len(f) == 9 and f[1] in ("alone", "pool", "nopool") and f[2] != "fail" and "-" not in (f[3], f[4]):
        rows[int(f[0])][f[1]] = (float(f[2]), float(f[3]), float(f[4]), float(f[5]) + float(f[6]), int(f[7]), int(f[8]))
full = [r for r in rows.values() if len(r) == 3]
if not full:
    sys.exit("no complete round")
med = lambda v, i: statistics.median([r[v][i] for r in full])
for v in ("alone", "pool", "nopool"):
    fps = [r[v][0] for r in full]
    print(f"{v}: fps median {statistics.median(fps):.1f} (min {min(fps):.1f} max {max(fps):.1f}), "
          f"producer thread {med(v, 1):.0f} CPU µs a buffer, process {med(v, 2):.0f}, run CPU s {med(v, 3):.2f}, "
          f"voluntary switches {med(v, 4):.0f}, involuntary {med(v, 5):.0f}")
for name, i, better in (("fps", 0, 1), ("producer thread CPU a buffer", 1, -1)):
    ratio = [r["pool"][i] / r["nopool"][i] for r in full]
    ahead = sum((x - 1) * better > 0 for x in ratio)
    print(f"pool / no pool, {name}, per round: median {statistics.median(ratio):.3f}, pool better in "
          f"{ahead} of {len(ratio)}: " + " ".join(f"{x:.2f}" for x in ratio))
PY
