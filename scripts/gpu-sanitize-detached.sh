#!/usr/bin/env bash
# compute-sanitizer runs longer than one device command (600 s): scripts/gpu-sanitize.sh started in
# a process session of its own (setsid), which outlives the command that started it while the
# machine stays warm, and collected by later commands. A command that runs into its own limit
# loses the machine, and these runs with it: keep every command well inside its limit (`wait`
# takes the seconds it may spend) and make the next call at once.
# Usage, from the repository root on the GPU host (after `source scripts/gpu-env.sh`):
#   scripts/gpu-sanitize-detached.sh start PACK       starts gpu-sanitize.sh on PACK with this
#                                                     environment (GPU_SANITIZE_RUNS, _JOBS,
#                                                     _DEADLINE: the whole set's seconds, ...)
#   scripts/gpu-sanitize-detached.sh wait SECONDS [OUT]
#                                                     waits until the runs end or SECONDS pass,
#                                                     prints the runs ended so far and the summary,
#                                                     and copies the progress file and the logs
#                                                     (xz) into OUT (default $OUT); exit status 0
#                                                     when the runs have ended, 3 while they run
# State and logs: /tmp/gpu-sanitize-detached (progress.txt, sanitize.log, gpu-sanitize-PACK/).
set -u
state=/tmp/gpu-sanitize-detached
repo=$(cd "$(dirname "$0")/.." && pwd)
case "${1:-}" in
  start)
    pack=${2:?usage: gpu-sanitize-detached.sh start PACK}
    case $pack in /*) ;; *) pack=$repo/$pack ;; esac
    [ -d "$pack" ] || { echo "no pack folder $pack" >&2; exit 2; }
    if [ -f "$state/pid" ] && kill -0 "$(cat "$state/pid")" 2>/dev/null; then
      echo "runs already under way (pid $(cat "$state/pid"))" >&2
      exit 2
    fi
    rm -rf "$state" && mkdir -p "$state"
    cd "$state" || exit 2
    GPU_SANITIZE_PROGRESS=$state/progress.txt setsid nohup bash "$repo/scripts/gpu-sanitize.sh" "$pack" \
      >"$state/sanitize.log" 2>&1 </dev/null &
    echo $! >"$state/pid"
    echo "started: pid $!, runs: ${GPU_SANITIZE_RUNS:-every (tool, binary)}, logs in $state"
    ;;
  wait)
    seconds=${2:?usage: gpu-sanitize-detached.sh wait SECONDS [OUT]}
    out=${3:-${OUT:-}}
    case "$seconds" in '' | *[!0-9]*) echo "SECONDS must be a whole number, not '$seconds'" >&2; exit 2 ;; esac
    [ -f "$state/pid" ] || { echo "nothing started (no $state/pid)" >&2; exit 2; }
    pid=$(cat "$state/pid")
    end=$((SECONDS + seconds))
    while kill -0 "$pid" 2>/dev/null && [ "$SECONDS" -lt "$end" ]; do sleep 2; done
    running=0
    kill -0 "$pid" 2>/dev/null && running=1
    echo "== runs ended so far ($(date +%T)):"
    cat "$state/progress.txt" 2>/dev/null
    if [ "$running" = 1 ]; then echo "== still running"; else echo "== done:"; tail -20 "$state/sanitize.log"; fi
    if [ -n "$out" ]; then
      cp "$state/progress.txt" "$out/" 2>/dev/null
      tar -C "$state" -cJf "$out/sanitize-detached.tar.xz" . 2>/dev/null
    fi
    [ "$running" = 0 ] || exit 3
    ;;
  *)
    echo "usage: scripts/gpu-sanitize-detached.sh start PACK | wait SECONDS [OUT]" >&2
    exit 2
    ;;
esac
