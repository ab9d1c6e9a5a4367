#!/usr/bin/env bash
# Does compute-sanitizer's racecheck, with the options of a run, check the launches it should?
# Runs tests/.../sanitizer_planted_race (a kernel with a shared-memory race planted on purpose,
# launched LAUNCHES times) under racecheck with `--kernel-name kns=plantedRaceKernel` and the
# options given, and prints the hazards reported. Exit status 0 when the outcome is the expected
# one: hazards reported (default), or none with --expect-none (e.g. for `--launch-skip 1000`,
# where no launch is checked); 1 otherwise; 2 for a missing binary or tool.
# --graph: each launch is a launch of a CUDA graph the kernel was captured into (the engine
# replays captured graphs: are kernels inside graphs checked too?).
# Usage, on a GPU host from the repository root (after `source scripts/gpu-env.sh` for a pack):
#   scripts/racecheck-self-check.sh BUILD-OR-PACK [--expect-none] [--graph] [--launches N] [RACECHECK OPTIONS...]
# e.g. scripts/racecheck-self-check.sh gpu-pack --launch-count 1000
#      scripts/racecheck-self-check.sh gpu-pack --expect-none --launch-skip 1000
set -u
build=${1:?usage: racecheck-self-check.sh BUILD-OR-PACK [--expect-none] [--graph] [--launches N] [OPTIONS...]}
shift
expect=some
launches=3
graph=()
while [ $# -gt 0 ]; do
  case "$1" in
    --expect-none) expect=none; shift ;;
    --graph) graph=(--graph); shift ;;
    --launches) launches=${2:?--launches needs a number}; shift 2 ;;
    *) break ;;
  esac
done
probe=$(find "$build" -type f -name sanitizer_planted_race -perm -u+x 2>/dev/null | head -1)
[ -n "$probe" ] || { echo "no sanitizer_planted_race under $build (meson builds it with CUDA; gpu-pack.sh packs it)" >&2; exit 2; }
sanitizer=$(command -v compute-sanitizer || echo /usr/local/cuda/bin/compute-sanitizer)
[ -x "$sanitizer" ] || { echo "compute-sanitizer not found (PATH, /usr/local/cuda/bin)" >&2; exit 2; }
log=$(mktemp)
trap 'rm -f "$log"' EXIT
"$sanitizer" --tool racecheck --kernel-name kns=plantedRaceKernel "$@" "$probe" "$launches" "${graph[@]}" >"$log" 2>&1
rc=$?
hazards=$(sed -n 's/.*RACECHECK SUMMARY: \([0-9][0-9]*\) hazard.*/\1/p' "$log" | tail -1)
echo "racecheck $* on $launches planted-race launch(es)${graph:+ of a graph}: exit $rc, hazards ${hazards:-not reported}"
if [ -z "$hazards" ]; then
  tail -20 "$log" >&2
  exit 1
fi
if [ "$expect" = some ]; then [ "$hazards" -gt 0 ]; else [ "$hazards" -eq 0 ]; fi
