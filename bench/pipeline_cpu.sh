#!/usr/bin/env bash
# Pipeline frame rate on the CPU: the nccmatch element (CPU backend, Auto path) next to
# gst-plugins-bad's templatematch (OpenCV; BGR only, so videoconvert in its branch), on the same
# 1920x1080 I420 frames from videotestsrc, one template, drawing off, no clock sync.
#   bench/pipeline_cpu.sh [BUILD_DIR] [FRAMES] [TEMPLATE_SIZE]
# BUILD_DIR must hold a build with the plugin (meson setup DIR -Dcuda=disabled -Dplugin=enabled).
# Needs gst-launch-1.0 and gstreamer1.0-opencv (templatematch). Prints a markdown table row.
set -euo pipefail
build=${1:-build-cpu-gst}
frames=${2:-60}
size=${3:-64}
width=1920 height=1080
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
# The template: a crop of the first frame, so both elements find the same spot.
left=900 top=500
gst-launch-1.0 -q videotestsrc num-buffers=1 pattern=smpte \
  ! "video/x-raw,width=$width,height=$height" \
  ! videocrop left=$left top=$top right=$((width - left - size)) bottom=$((height - top - size)) \
  ! videoconvert ! pngenc ! filesink location="$work/template.png"

source="videotestsrc num-buffers=$frames pattern=smpte ! video/x-raw,format=I420,width=$width,height=$height,framerate=30/1"
seconds() {  # wall-clock seconds of one gst-launch run
  local t0 t1
  t0=$(date +%s.%N)
  gst-launch-1.0 -q $1 >/dev/null
  t1=$(date +%s.%N)
  echo "$t1 - $t0" | bc -l
}
# Source and conversion alone, so the table can show what each element adds.
base=$(seconds "$source ! fakesink sync=false")
ncc=$(seconds "$source ! nccmatch template=$work/template.png method=5 display=false ! fakesink sync=false")
ocv=$(seconds "$source ! videoconvert ! video/x-raw,format=BGR ! templatematch template=$work/template.png method=5 display=false ! fakesink sync=false")
fps() { echo "scale=1; $frames / $1" | bc -l; }
echo "| ${width}x${height} I420 | ${size}x${size} | $frames | $(fps "$ncc") | $(fps "$ocv") | $(echo "scale=2; $ocv / $ncc" | bc -l)x | $(fps "$base") |"
