#!/usr/bin/env bash
# Frame rate of real producers (decoders, converters, uploaders) alone and with nccmatch after
# them: directly, behind a queue, and with the element's proposed allocation dropped
# (identity drop-allocation=true), for one 64x64 template and for a bank of 16 32x32 templates.
#   bench/producers.sh PLUGIN_DIR [FRAMES] [REPEATS] [WARMUP]
# PLUGIN_DIR holds libgstnccmatch.so; gst-launch-1.0 must be on PATH (on a GPU host without
# GStreamer: source .gst/env.sh first) and bench_producers beside this script's build (BENCH_PRODUCERS
# names it elsewhere: the GPU pack's gpu-pack/bench/bench_producers). Each run is one pipeline of
# FRAMES (default 600) buffers whose steady-state rate bench_producers takes at the sink between
# buffer WARMUP (default 60) and the last, so start-up never enters it; the median of REPEATS
# (default 3), taken round-robin over the variants. Producers missing on this machine are reported and skipped.
# Prints markdown tables: fps per producer and variant with its share of the producer alone (the
# median over the rounds of each round's cell against that round's alone), the shares' spread, the
# element's own time a buffer in the producer's streaming thread (its stats' streaming-us after the
# warm-up), then the producer thread's CPU time a buffer (bench_producers).
# ELEMENT_ARGS (env) adds properties to every nccmatch, e.g. ELEMENT_ARGS="device=cpu";
# PRODUCERS (env, space-separated names) runs only those rows: a row's first word takes every row
# it starts (videoconvert: I420 and RGB), its whole name with _ for spaces only that row
# (videoconvert_RGB). REGISTER_UPSTREAM=1 adds the two
# pool-less variants with register-upstream=true (the producer's own memories page-locked on their
# second sighting: the element's staging copy saved).
set -uo pipefail
plugin_dir=${1:?usage: bench/producers.sh PLUGIN_DIR [FRAMES] [REPEATS]}
frames=${2:-600}
repeats=${3:-3}
warmup=${4:-60}
plugin_dir=$(cd "$plugin_dir" && pwd)
probe=${BENCH_PRODUCERS:-$plugin_dir/../bench/bench_producers}
[ -x "$probe" ] || { echo "bench_producers not found at $probe (set BENCH_PRODUCERS)" >&2; exit 2; }
export GST_PLUGIN_PATH="$plugin_dir${GST_PLUGIN_PATH:+:$GST_PLUGIN_PATH}"
gst-inspect-1.0 nccmatch >/dev/null 2>&1 || { echo "nccmatch does not load from $plugin_dir" >&2; exit 2; }
W=1920 H=1080
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
have() { gst-inspect-1.0 "$1" >/dev/null 2>&1; }

# Inputs, made here from videotestsrc: one textured frame (noise) as PGM, PNG and JPEG; H.264
# clip of N frames; a 64x64 template and sixteen 32x32 templates cut from the frame, each
# found once in it. (Until session 8 the scene was the pinwheel: four of its sixteen 32x32 crops
# were flat, and a flat template scores 1 at every position under ccoeff-normed (README, Scores),
# so the 16 x 32² cells measured 8 million above-threshold positions a frame, not a bank.)
scene="videotestsrc num-buffers=1 pattern=snow ! video/x-raw,width=$W,height=$H,format=GRAY8"
gst-launch-1.0 -q $scene ! pnmenc ! filesink location="$work/frame.pgm" >/dev/null
frame="filesrc location=$work/frame.pgm ! pnmdec"  # the same noise again (snow is not seeded alike)
have pngenc && gst-launch-1.0 -q $frame ! pngenc ! filesink location="$work/frame.png" >/dev/null
have jpegenc && gst-launch-1.0 -q $frame ! videoconvert ! jpegenc ! filesink location="$work/frame.jpg" >/dev/null
crop() {  # crop X Y SIZE FILE
  gst-launch-1.0 -q $frame ! videocrop left=$1 top=$2 right=$((W - $1 - $3)) bottom=$((H - $2 - $3)) \
    ! pngenc ! filesink location="$4" >/dev/null
}
crop 900 500 64 "$work/t64.png"
bank=""
for i in $(seq 0 15); do
  crop $((100 + 110 * i)) $((200 + 37 * i)) 32 "$work/t32_$i.png"
  bank="${bank:+$bank,}$work/t32_$i.png"
done
if have x264enc && have matroskamux; then
  for n in "$frames"; do
    gst-launch-1.0 -q videotestsrc pattern=ball num-buffers=$n ! video/x-raw,width=$W,height=$H,format=I420,framerate=60/1 \
      ! x264enc speed-preset=ultrafast key-int-max=60 ! h264parse ! matroskamux ! filesink location="$work/clip$n.mkv" >/dev/null
  done
fi

# Producers: name | pipeline head (with @N@ for the frame count) | elements it needs
producers=(
  "pnmdec|multifilesrc location=$work/frame.pgm loop=true num-buffers=@N@ caps=image/x-portable-graymap ! pnmdec|pnmdec multifilesrc"
  "pngdec|multifilesrc location=$work/frame.png loop=true num-buffers=@N@ caps=image/png ! pngdec|pngdec multifilesrc"
  "jpegdec|multifilesrc location=$work/frame.jpg loop=true num-buffers=@N@ caps=image/jpeg ! jpegdec|jpegdec multifilesrc"
  "avdec_h264|filesrc location=$work/clip@N@.mkv ! matroskademux ! h264parse ! avdec_h264|avdec_h264 matroskademux"
  "nvh264dec|filesrc location=$work/clip@N@.mkv ! matroskademux ! h264parse ! nvh264dec|nvh264dec matroskademux"
  "openh264dec|filesrc location=$work/clip@N@.mkv ! matroskademux ! h264parse ! openh264dec|openh264dec matroskademux"
  "decodebin|filesrc location=$work/clip@N@.mkv ! decodebin|decodebin matroskademux"
  "videoconvert I420|videotestsrc num-buffers=@N@ pattern=pinwheel ! video/x-raw,format=I420,width=$W,height=$H ! videoconvert ! video/x-raw,format=GRAY8|videoconvert"
  "videoconvert RGB|videotestsrc num-buffers=@N@ pattern=pinwheel ! video/x-raw,format=RGB,width=$W,height=$H ! videoconvert ! video/x-raw,format=GRAY8|videoconvert"
  "videotestsrc|videotestsrc num-buffers=@N@ pattern=black ! video/x-raw,format=GRAY8,width=$W,height=$H|videotestsrc"
  "cudaupload|videotestsrc num-buffers=@N@ pattern=pinwheel ! video/x-raw,format=NV12,width=$W,height=$H ! cudaupload|cudaupload"
)
ncc64="nccmatch template=$work/t64.png display=false post-messages=false ${ELEMENT_ARGS:-}"
ncc16="nccmatch templates=$bank display=false post-messages=false ${ELEMENT_ARGS:-}"
variants=(
  "alone|"
  "1x64²|! $ncc64"
  "1x64² queue|! queue name=into ! $ncc64"
  "1x64² no pool|! identity drop-allocation=true ! $ncc64"
  "16x32²|! $ncc16"
  "16x32² no pool|! identity drop-allocation=true ! $ncc16"
)
if [ "${REGISTER_UPSTREAM:-0}" = 1 ]; then
  variants+=("1x64² no pool, registered|! identity drop-allocation=true ! $ncc64 register-upstream=true"
             "16x32² no pool, registered|! identity drop-allocation=true ! $ncc16 register-upstream=true")
fi

steady_fps() {  # head tail -> "FPS/STREAMING_US/PRODUCER_CPU_US" after start-up, or "fail"
  local out
  if ! out=$("$probe" --warmup "$warmup" ${1//@N@/$frames} $2 2>"$work/run.log"); then
    cp "$work/run.log" "$work/failed.log"
    echo fail
    return
  fi
  # The first streaming-us is the steady state's (bench_producers: after the warm-up), "-" without
  # nccmatch; the producer's CPU a buffer: the thread pushing into nccmatch, alone the one feeding
  # the sink (with the queue, the thread feeding it: `queue name=into`, bench_producers).
  awk '{s = "-"; c = "-"
        for (i = 1; i < NF; ++i) if ($i == "streaming-us") { s = $(i + 1); break }
        for (i = 1; i < NF; ++i) if ($i == "sink-thread-cpu-us") c = $(i + 1)
        for (i = 1; i < NF; ++i) if ($i == "producer-thread-cpu-us") c = $(i + 1)
        print $2 "/" s "/" c}' <<<"$out"
}
median() { printf '%s\n' "$@" | sort -g | awk '{v[NR] = $1} END {print v[int((NR + 1) / 2)]}'; }

header="| producer"
rule="|---"
for v in "${variants[@]}"; do header+=" | ${v%%|*}"; rule+="|---"; done
streamingRows=()
spreadRows=()
cpuRows=()
echo "frames=$frames warmup=$warmup repeats=$repeats ${W}x${H} ELEMENT_ARGS='${ELEMENT_ARGS:-}'"
echo "$header |"
echo "$rule|"
for p in "${producers[@]}"; do
  IFS='|' read -r name head needs <<<"$p"
  if [ -n "${PRODUCERS:-}" ] && ! grep -qw -e "${name%% *}" -e "${name// /_}" <<<"$PRODUCERS"; then continue; fi
  missing=""
  for e in $needs; do have "$e" || missing+=" $e"; done
  if [ -n "$missing" ]; then echo "| $name | (missing:$missing) |"; continue; fi
  case $head in *clip@N@*) [ -f "$work/clip$frames.mkv" ] || { echo "| $name | (no H.264 clip: x264enc missing) |"; continue; };; esac
  row="| $name"
  streamingRow="| $name"
  spreadRow="| $name"
  cpuRow="| $name"
  alone=""
  # Repeats round-robin over the variants (every variant once, then again), so that a slow spell of
  # the host falls on every variant alike instead of on one cell. Each run gives FPS/STREAMING_US.
  declare -A runs=()
  for r in $(seq "$repeats"); do
    for i in "${!variants[@]}"; do runs[$i]+=" $(steady_fps "$head" "${variants[$i]#*|}")"; done
  done
  for i in "${!variants[@]}"; do
    v=${variants[$i]}
    if grep -qw fail <<<"${runs[$i]}"; then
      row+=" | fail"
      streamingRow+=" | -"
      spreadRow+=" | -"
      cpuRow+=" | -"
      echo "  ($name, ${v%%|*}: $(tail -2 "$work/failed.log" | tr '\n' ' '))" >&2
      continue
    fi
    # shellcheck disable=SC2086  # the runs of a cell, split at spaces
    fps=$(median $(tr ' ' '\n' <<<"${runs[$i]}" | cut -d/ -f1))
    # shellcheck disable=SC2086
    streaming=$(median $(tr ' ' '\n' <<<"${runs[$i]}" | cut -d/ -f2 | grep -v '^-$'))
    streamingRow+=" | ${streaming:--}"
    # shellcheck disable=SC2086
    cpu=$(median $(tr ' ' '\n' <<<"${runs[$i]}" | cut -d/ -f3 | grep -v '^-$'))
    cpuRow+=" | ${cpu:--}"
    if [ "$i" = 0 ] || [ -z "$alone" ]; then  # the producer alone (or, where that failed, no share)
      [ "$i" = 0 ] && alone=$fps
      row+=" | $fps"
      spreadRow+=" | -"
      continue
    fi
    # The share of the producer alone, round by round: each round's cell against the same round's
    # alone (run seconds apart), so that a producer whose own rate drifts between rounds (a
    # software decoder on a busy host) is compared with itself; the median of the rounds' shares,
    # and their lowest and highest in the spread table.
    # shellcheck disable=SC2086
    shares=$(paste -d' ' <(tr ' ' '\n' <<<"${runs[0]# }" | cut -d/ -f1) <(tr ' ' '\n' <<<"${runs[$i]# }" | cut -d/ -f1) |
      awk '$1 > 0 {printf "%d\n", 100 * $2 / $1}')
    # shellcheck disable=SC2086
    row+=" | $fps ($(median $shares)%)"
    spreadRow+=" | $(sort -n <<<"$shares" | head -1)-$(sort -n <<<"$shares" | tail -1)%"
  done
  unset runs
  streamingRows+=("$streamingRow |")
  spreadRows+=("$spreadRow |")
  cpuRows+=("$cpuRow |")
  echo "$row |"
done
# The rounds' shares of the producer alone, lowest to highest: a spread wider than the margin a
# target allows (e.g. 90%) means that cell needs more rounds (REPEATS) before it says anything.
echo
echo "spread: each round's share of the same round's producer alone, lowest-highest over the $repeats rounds"
echo "${header/| producer/| spread} |"
echo "$rule|"
printf '%s\n' "${spreadRows[@]}"
# The element's own time a buffer in the producer's streaming thread (its stats' streaming-us
# between the warm-up and the end, median of the repeats): what a producer without a queue waits for each frame.
echo
echo "streaming-us: the element's mean time a buffer in the streaming thread after the warm-up (µs, median of the repeats)"
echo "${header/| producer/| streaming µs} |"
echo "$rule|"
printf '%s\n' "${streamingRows[@]}"
# The producer's own CPU a buffer (bench_producers' thread CPU time over the steady state, median
# of the repeats): less swayed than frames/s by the host's other work, so a cell whose frame rate
# spreads too wide to say whether the pool costs the producer anything can be read here.
echo
echo "producer CPU: CPU µs a buffer of the thread pushing into nccmatch (alone: feeding the sink; with the queue: feeding the queue), median of the repeats"
echo "${header/| producer/| CPU µs} |"
echo "$rule|"
printf '%s\n' "${cpuRows[@]}"
