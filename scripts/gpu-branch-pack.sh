#!/usr/bin/env bash
# Builds a few binaries of another branch in this checkout's build folder (no second build of the
# whole project, no worktree): the changes BRANCH made since it left HEAD's history (its diff from
# their merge base) are applied to the working tree (which must be clean; a conflict with what HEAD
# changed since stops the script), the CUDA objects they make stale deleted (stale-cuda-objects.py: nvcc has
# no depfiles), the named binaries built and packed, stripped, into gpu-pack-branch-LABEL.tar.xz
# (gpu-pack-branch-LABEL/{tests,bench,plugin}); then HEAD's files are put back, and the objects
# built from the branch's files are marked stale for the next build. scripts/gpu-env.sh unpacks
# every gpu-pack-branch-*.tar.xz beside the pack on the GPU host; carry them with the pack, and run
# e.g. gpu-pack-branch-LABEL/tests/test_cuda_regions, or that folder's plugin through
# GST_PLUGIN_PATH (before the pack's), against the pack's own binaries in the same command.
# Usage: scripts/gpu-branch-pack.sh BUILD BRANCH LABEL NAME...   (NAME: test_*, bench_*, plugin;
#        BRANCH: a branch or commit, or revert:COMMIT for HEAD without COMMIT)
set -euo pipefail
cd "$(dirname "$0")/.."
[ $# -ge 4 ] || { echo "usage: scripts/gpu-branch-pack.sh BUILD BRANCH LABEL NAME..." >&2; exit 2; }
build=$1 branch=$2 label=$3
shift 3
[ -f "$build/build.ninja" ] || { echo "$build is not a build folder (no build.ninja)" >&2; exit 2; }
source scripts/gpu-targets.sh
# BRANCH revert:COMMIT: HEAD without that commit (its diff applied backwards), the base of an A/B
# against a change already on main.
if [[ $branch == revert:* ]]; then
  commit=${branch#revert:}
  git rev-parse --verify --quiet "$commit^{commit}" >/dev/null || { echo "no commit '$commit'" >&2; exit 2; }
  from=$commit to=$commit^
  what="HEAD $(git rev-parse --short HEAD) without $(git rev-parse --short "$commit")"
else
  git rev-parse --verify --quiet "$branch^{commit}" >/dev/null || { echo "no branch or commit '$branch'" >&2; exit 2; }
  from=$(git merge-base HEAD "$branch") to=$branch
  what="$branch at $(git rev-parse --short "$branch")"
fi
if ! git diff --quiet || ! git diff --cached --quiet; then
  echo "the working tree has uncommitted changes: commit or stash them first" >&2
  exit 2
fi
changed=() added=() removed=()
while IFS=$'\t' read -r status path; do
  case $status in
    A) added+=("$path") ;;
    D) removed+=("$path") ;;
    *) changed+=("$path") ;;
  esac
done < <(git diff --no-renames --name-status "$from" "$to")
[ $(( ${#changed[@]} + ${#added[@]} + ${#removed[@]} )) -gt 0 ] || { echo "$branch changes nothing" >&2; exit 2; }
restore() {
  [ ${#changed[@]} -eq 0 ] && [ ${#removed[@]} -eq 0 ] || git checkout HEAD -- "${changed[@]}" "${removed[@]}"
  [ ${#added[@]} -eq 0 ] || rm -f -- "${added[@]}"
  python3 scripts/stale-cuda-objects.py "$build" --newer --delete >/dev/null
}
trap restore EXIT
echo "$what: ${#changed[@]} changed, ${#added[@]} added, ${#removed[@]} removed"
git diff --binary --no-renames "$from" "$to" | git apply
python3 scripts/stale-cuda-objects.py "$build" --newer --delete | sed 's/^/stale, rebuilt: /'
# A branch that adds a binary changes a meson.build: the build folder's files regenerated first.
ninja -C "$build" build.ninja >/dev/null
nccmatch_targets "$build" "$@" || exit 2
ninja -C "$build" "${targets[@]}"
stage=$(mktemp -d)
dir=gpu-pack-branch-$label
nccmatch_copy_targets "$build" "$stage/$dir" "${targets[@]}"
echo "$what" >"$stage/$dir/commit.txt"
strip --strip-unneeded "$stage/$dir"/{tests,bench,plugin}/* 2>/dev/null || true
tar -C "$stage" -cf - "$dir" | xz -T1 --lzma2=preset=6,dict=64MiB >"$dir.tar.xz"
rm -rf "$stage"
echo "$dir.tar.xz: $(du -h "$dir.tar.xz" | cut -f1), $(tar -tJf "$dir.tar.xz" | grep -vc '/$') files, $what"
