#!/usr/bin/env bash
# Rebuilds a few binaries of a GPU build and packs them, stripped, as an overlay of a pack that
# scripts/gpu-pack.sh made earlier: gpu-pack-overlay.tar.xz holds gpu-pack/tests/NAME,
# gpu-pack/bench/NAME and gpu-pack/plugin/libgstnccmatch.so ('plugin'), which scripts/gpu-env.sh
# lays over the unpacked pack on the GPU host. A few MB and a minute instead of the whole pack's xz
# (about 10 minutes on 2 cores) when a session changed a few binaries; carry both archives.
# Usage: scripts/gpu-overlay.sh BUILD NAME...   (NAME: test_cuda_regions, bench_track, plugin, ...)
# bench_rotations brings the OpenCV libraries it loads into gpu-pack/lib (as GPU_PACK_OPENCV=1 does;
# LD_LIBRARY_PATH=$PWD/gpu-pack/lib there, which scripts/gpu-env.sh sets when lib/ exists).
# Meson gives nvcc no depfiles: the CUDA objects older than a header they include are deleted first
# (scripts/stale-cuda-objects.py), so ninja rebuilds them.
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:?usage: scripts/gpu-overlay.sh BUILD NAME...}
shift
[ $# -gt 0 ] || { echo "usage: scripts/gpu-overlay.sh BUILD NAME... (no binary named)" >&2; exit 2; }
[ -f "$build/build.ninja" ] || { echo "$build is not a build folder (no build.ninja)" >&2; exit 2; }
source scripts/gpu-targets.sh
nccmatch_targets "$build" "$@" || exit 2
stage=$(mktemp -d)
trap 'rm -rf "$stage"' EXIT
python3 scripts/stale-cuda-objects.py "$build" --newer --delete | sed 's/^/stale, rebuilt: /'
ninja -C "$build" "${targets[@]}"
nccmatch_copy_targets "$build" "$stage/gpu-pack" "${targets[@]}"
if [[ " ${targets[*]} " == *" bench/bench_rotations "* ]]; then
  source scripts/opencv-libs.sh
  copy_opencv_libs "$build/bench/bench_rotations" "$stage/gpu-pack/lib"
fi
strip --strip-unneeded "$stage"/gpu-pack/{tests,bench,plugin}/* 2>/dev/null || true
# The binaries share the library's CUDA fat binaries: a 64 MiB window stores each copy once.
tar -C "$stage" -cf - gpu-pack | xz -T1 --lzma2=preset=6,dict=64MiB >gpu-pack-overlay.tar.xz
echo "gpu-pack-overlay.tar.xz: $(du -h gpu-pack-overlay.tar.xz | cut -f1), $(tar -tJf gpu-pack-overlay.tar.xz | grep -vc '/$') files"
