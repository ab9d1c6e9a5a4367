#!/usr/bin/env bash
# Where a producer's time goes with nccmatch after it: pnmdec at 1080p with the element's pinned
# pool accepted or dropped, frames in flight 1 or 2, and the pinned allocations GStreamer logs
# (GST_MEMORY "new memory" lines of frame size) in each case.
#   bench/producers_probe.sh PLUGIN_DIR [FRAMES]
set -uo pipefail
plugin_dir=$(cd "${1:?usage: bench/producers_probe.sh PLUGIN_DIR [FRAMES]}" && pwd)
frames=${2:-500}
export GST_PLUGIN_PATH="$plugin_dir${GST_PLUGIN_PATH:+:$GST_PLUGIN_PATH}"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
scene="videotestsrc num-buffers=1 pattern=pinwheel ! video/x-raw,width=1920,height=1080,format=GRAY8"
gst-launch-1.0 -q $scene ! pnmenc ! filesink location="$work/frame.pgm" >/dev/null
gst-launch-1.0 -q $scene ! videocrop left=900 top=500 right=956 bottom=516 ! pngenc ! filesink location="$work/t64.png" >/dev/null
head="multifilesrc location=$work/frame.pgm loop=true num-buffers=$frames caps=image/x-portable-graymap ! pnmdec"
ncc="nccmatch template=$work/t64.png display=false post-messages=false"
run() {  # label tail
  local t0 t1
  t0=$(date +%s.%N)
  GST_DEBUG="GST_MEMORY:5" gst-launch-1.0 -q $head $2 ! fakesink sync=false >/dev/null 2>"$work/log" || echo "$1: failed"
  t1=$(date +%s.%N)
  local allocs
  allocs=$(grep -c "new memory.* size:2073600" "$work/log")
  awk -v l="$1" -v a="$t0" -v b="$t1" -v n="$frames" -v c="$allocs" \
    'BEGIN {printf "%-34s %7.1f fps (with start-up), frame-size allocations: %s\n", l, n / (b - a), c}'
}
run "pnmdec alone" ""
run "nccmatch" "! $ncc"
run "nccmatch frames-in-flight=1" "! $ncc frames-in-flight=1"
run "queue ! nccmatch" "! queue ! $ncc"
run "identity drop-allocation ! nccmatch" "! identity drop-allocation=true ! $ncc"
run "identity drop-allocation ! nccmatch fif=1" "! identity drop-allocation=true ! $ncc frames-in-flight=1"
