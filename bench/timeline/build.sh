#!/usr/bin/env bash
# Builds the region timeline probe (issue 13) on the build host: the library of HEAD with
# region-timeline.patch applied (in a scratch worktree, never committed: globaltimer stamps in the
# gather and region kernels, steady_clock stamps in RegionSearch::run's host phases), then
# region_timeline.cpp against it. Packs OUT.tar.xz (the driver, region_timeline.py, libfftw3f) for
# the GPU host, where:
#   tar -xJf OUT.tar.xz && LD_LIBRARY_PATH=$LD_LIBRARY_PATH:$PWD/OUT OUT/region_timeline 200 >tl.txt
#   python3 OUT/region_timeline.py tl.txt
# Usage: bench/timeline/build.sh [OUT]   (default region-timeline; CUDA_ARCH as gpu-pack.sh, default 90)
# When the kernels change under the patch, remake it on a branch: apply what still applies, redo the
# rest, `git diff main -- kernels > bench/timeline/region-timeline.patch`.
set -euo pipefail
cd "$(dirname "$0")/../.."
out=${1:-region-timeline}
scratch=$(mktemp -d)
trap 'git worktree remove --force "$scratch/wt" 2>/dev/null; rm -rf "$scratch"' EXIT
git worktree add -q --detach "$scratch/wt" HEAD
git -C "$scratch/wt" apply "$PWD/bench/timeline/region-timeline.patch"
meson setup "$scratch/wt/build" "$scratch/wt" -Dcuda=enabled -Dcuda-arch="${CUDA_ARCH:-90}" >/dev/null
ninja -C "$scratch/wt/build" kernels/libnccmatch.a
rm -rf "$out" && mkdir -p "$out"
nvcc -std=c++17 -O2 -I"$scratch/wt/kernels/include" -o "$out/region_timeline" bench/timeline/region_timeline.cpp \
  "$scratch/wt/build/kernels/libnccmatch.a" -lcudart -lcufft -lfftw3f -Xcompiler -pthread
strip "$out/region_timeline"
cp bench/timeline/region_timeline.py "$out/"
cp "$(ldconfig -p | awk '/libfftw3f.so.3 /{print $NF; exit}')" "$out/"  # the GPU host has no FFTW
tar -cJf "$out.tar.xz" -C "$(dirname "$out")" "$(basename "$out")"
du -sh "$out.tar.xz"
