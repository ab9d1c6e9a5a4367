#!/usr/bin/env bash
# Pipeline frame rate on the CPU: the nccmatch element (CPU backend, Auto path) next to
# gst-plugins-bad's templatematch (OpenCV; BGR only, so videoconvert in its branch), on the same
# I420 frames from videotestsrc, one template, drawing off, no clock sync.
#   bench/pipeline_cpu.sh [BUILD_DIR] [FRAMES] [TEMPLATE_SIZE] [WIDTHxHEIGHT] [REPEATS] [TM_FRAMES]
# BUILD_DIR must hold a build with the plugin (meson setup DIR -Dcuda=disabled -Dplugin=enabled).
# Needs gst-launch-1.0 and gstreamer1.0-opencv (templatematch). Frame rates are steady-state:
# N / (wall time of 2N frames - wall time of N frames), so start-up (plugin loading, template
# decoding, FFTW planning on the first frame) cancels out; N = FRAMES, or TM_FRAMES (default
# FRAMES) for the slower templatematch. Every pipeline runs once first (registry, page cache; do
# not rebuild the plugin meanwhile: a changed plugin file makes GStreamer rescan), then REPEATS
# times, alternating, and the median counts (the host may be shared). Prints a markdown
# table row: frame, template, frames, nccmatch fps, templatematch fps, ratio, source alone fps,
# source + videoconvert to BGR alone fps.
set -euo pipefail
build=${1:-build-cpu-gst}
frames=${2:-60}
size=${3:-64}
geometry=${4:-1920x1080}
repeats=${5:-3}
tm_frames=${6:-$frames}
width=${geometry%x*} height=${geometry#*x}
here=$(cd "$(dirname "$0")/.." && pwd)
plugin_dir="$here/$build/plugin"
if ! ls "$plugin_dir"/*.so >/dev/null 2>&1; then
  echo "no plugin in $plugin_dir: meson setup $build -Dcuda=disabled -Dplugin=enabled && ninja -C $build" >&2
  exit 2
fi
export GST_PLUGIN_PATH="$plugin_dir${GST_PLUGIN_PATH:+:$GST_PLUGIN_PATH}"
gst-inspect-1.0 nccmatch >/dev/null || { echo "the nccmatch element does not load from $plugin_dir" >&2; exit 2; }
gst-inspect-1.0 templatematch >/dev/null || { echo "templatematch missing: apt-get install gstreamer1.0-opencv" >&2; exit 2; }

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
# The template: a crop of the first frame, so both elements find the same spot. It is centred on
# the corner where the third and fourth colour bars meet the strip below them (four different
# colours): a crop inside one bar would be flat, every window would score 1 and both elements
# would spend the frame on ties.
left=$((width * 3 / 7 - size / 2)) top=$((height * 2 / 3 - size / 2))
gst-launch-1.0 -q videotestsrc num-buffers=1 pattern=smpte \
  ! "video/x-raw,width=$width,height=$height" \
  ! videocrop left=$left top=$top right=$((width - left - size)) bottom=$((height - top - size)) \
  ! videoconvert ! pngenc ! filesink location="$work/template.png"

frames_of() { echo "videotestsrc num-buffers=$1 pattern=smpte ! video/x-raw,format=I420,width=$width,height=$height,framerate=30/1"; }
seconds() {  # wall-clock seconds of one gst-launch run
  local t0 t1
  t0=$(date +%s.%N)
  gst-launch-1.0 -q $1 >/dev/null
  t1=$(date +%s.%N)
  echo "$t1 - $t0" | bc -l
}
steady_fps() {  # frames per second of pipeline tail $1 after start-up, over $2 frames
  local short long
  short=$(seconds "$(frames_of "$2") ! $1")
  long=$(seconds "$(frames_of $((2 * $2))) ! $1")
  echo "scale=2; $2 / ($long - $short)" | bc -l
}
median() { printf '%s\n' "$@" | sort -g | awk '{v[NR] = $1} END {print v[int((NR + 1) / 2)]}'; }
ncc_tail="nccmatch template=$work/template.png method=5 display=false ! fakesink sync=false"
ocv_tail="videoconvert ! video/x-raw,format=BGR ! templatematch template=$work/template.png method=5 display=false ! fakesink sync=false"
# Source (and conversion) alone, so the table can show what each element adds.
base_tail="fakesink sync=false"
conv_tail="videoconvert ! video/x-raw,format=BGR ! fakesink sync=false"
for tail in "$ncc_tail" "$ocv_tail" "$base_tail" "$conv_tail"; do seconds "$(frames_of 2) ! $tail" >/dev/null; done
ncc=() ocv=() base=() conv=()
for ((r = 0; r < repeats; ++r)); do
  ncc+=("$(steady_fps "$ncc_tail" "$frames")")
  ocv+=("$(steady_fps "$ocv_tail" "$tm_frames")")
  base+=("$(steady_fps "$base_tail" "$frames")")
  conv+=("$(steady_fps "$conv_tail" "$frames")")
done
n=$(median "${ncc[@]}") o=$(median "${ocv[@]}") b=$(median "${base[@]}") c=$(median "${conv[@]}")
echo "| ${width}x${height} I420 | ${size}x${size} | $frames / $tm_frames | $n | $o | $(echo "scale=2; $n / $o" | bc -l)x | $b | $c |"
