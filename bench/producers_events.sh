#!/usr/bin/env bash
# What each producer sends nccmatch per frame, counted from the element's own debug log
# (GST_DEBUG=nccmatch:7): sink events by type, set_info calls, ALLOCATION queries from upstream,
# those passed on downstream, pinned pools made, drains of the frames in flight and upstream
# LATENCY queries, for N frames of each producer.
# A count that grows with N is a per-frame cost.
#   bench/producers_events.sh PLUGIN_DIR [FRAMES] [WIDTHxHEIGHT]
# ELEMENT_ARGS (env) adds properties to nccmatch, e.g. ELEMENT_ARGS="device=cpu".
set -uo pipefail
plugin_dir=$(cd "${1:?usage: bench/producers_events.sh PLUGIN_DIR [FRAMES] [WIDTHxHEIGHT]}" && pwd)
frames=${2:-100}
size=${3:-640x360}
W=${size%x*} H=${size#*x}
export GST_PLUGIN_PATH="$plugin_dir${GST_PLUGIN_PATH:+:$GST_PLUGIN_PATH}"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
scene="videotestsrc num-buffers=1 pattern=pinwheel ! video/x-raw,width=$W,height=$H,format=GRAY8"
gst-launch-1.0 -q $scene ! pnmenc ! filesink location="$work/frame.pgm" >/dev/null
gst-launch-1.0 -q $scene ! videocrop left=$((W / 2)) top=$((H / 2)) right=$((W / 2 - 64)) bottom=$((H / 2 - 64)) \
  ! pngenc ! filesink location="$work/t64.png" >/dev/null
ncc="nccmatch template=$work/t64.png display=false post-messages=false frames-in-flight=2 ${ELEMENT_ARGS:-}"
producers=(
  "pnmdec|multifilesrc location=$work/frame.pgm loop=true num-buffers=$frames caps=image/x-portable-graymap ! pnmdec"
  "videotestsrc|videotestsrc num-buffers=$frames pattern=black ! video/x-raw,format=GRAY8,width=$W,height=$H"
  "videoconvert I420|videotestsrc num-buffers=$frames ! video/x-raw,format=I420,width=$W,height=$H ! videoconvert ! video/x-raw,format=GRAY8"
  "videoconvert RGB|videotestsrc num-buffers=$frames ! video/x-raw,format=RGB,width=$W,height=$H ! videoconvert ! video/x-raw,format=GRAY8"
)
printf '| producer (%s frames) | caps events | other sink events | set_info | allocation queries | asked downstream | pools made | drains | latency queries |\n' "$frames"
printf '|---|---|---|---|---|---|---|---|---|\n'
for p in "${producers[@]}"; do
  name=${p%%|*} head=${p#*|}
  GST_DEBUG="nccmatch:7" GST_DEBUG_NO_COLOR=1 gst-launch-1.0 -q $head ! $ncc ! fakesink sync=false >/dev/null 2>"$work/log" \
    || { echo "| $name | failed | | | | | | | |"; continue; }
  count() { grep -c "$1" "$work/log"; }
  pools=$(grep -o "pinned pool [^ ]* ([0-9]* made)" "$work/log" | tail -1 | grep -o "[0-9]* made" | grep -o "[0-9]*")
  printf '| %s | %s | %s | %s | %s | %s | %s | %s | %s |\n' "$name" "$(count 'sink event caps')" \
    "$(grep 'sink event' "$work/log" | grep -vc 'sink event caps')" "$(count 'set_info')" \
    "$(count 'ALLOCATION query from upstream')" "$(count 'asked downstream')" "${pools:-0 (no pinned pool)}" \
    "$(count 'draining')" \
    "$(count 'asking upstream whether it is live')"
done
