#!/usr/bin/env bash
# Builds the GPU suite here (sm_90 by default) and packs what a GPU host needs to run it into a
# small folder: stripped test and benchmark binaries, the plugin module, and the OpenCV script.
# The GPU host unpacks gpu-pack.tar.xz and runs `bash scripts/gpu-test.sh gpu-pack` (with .gst/).
# Usage: scripts/gpu-pack.sh [build-folder] [pack-folder]    (defaults: build-gpu gpu-pack)
# GPU_PACK_OPENCV=1: also bench_rotations (it links OpenCV, which the GPU host lacks as C++
# libraries) with the OpenCV libraries it loads and their dependencies beyond glibc, libstdc++
# and CUDA in the pack's lib/, stripped (about 6 MB more compressed); scripts/gpu-test.sh adds
# lib/ at the end of LD_LIBRARY_PATH. By hand, from the folder holding the pack:
#   LD_LIBRARY_PATH=$PWD/gpu-pack/lib gpu-pack/bench/bench_rotations --cuda=1 --width=1920 --height=1080 --side=64
# GPU_PACK_STAGES=1: also bench_bank_repeat_* (bench/gemm_stages.sh: bench_bank with one stage of the
# GEMM bank's tiles done twice; six 20 MB binaries that share most of their bytes with bench_bank).
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build-gpu}
pack=${2:-gpu-pack}
if [ ! -f "$build/build.ninja" ]; then
  meson setup "$build" -Dcuda=enabled -Dcuda-arch="${CUDA_ARCH:-90}"
fi
# Meson 1.0 gives nvcc no depfile flags, so a CUDA object is not rebuilt when a header it includes
# changes (a stale bench_ncc.cu.o once crashed on a changed EngineOptions): each CUDA object older
# than its .cu or any header that includes, transitively, is deleted first (stale-cuda-objects.py).
python3 scripts/stale-cuda-objects.py "$build" --newer --delete | sed 's/^/stale, rebuilt: /'
ninja -C "$build"
rm -rf "$pack"
mkdir -p "$pack/tests" "$pack/bench" "$pack/plugin"
# test_opencv_* compare the CPU backend with OpenCV and need its libraries: not for the GPU host.
find "$build/tests" -type f -name 'test_*' ! -name 'test_opencv_*' -perm -u+x -exec cp {} "$pack/tests/" \;
# The planted race of scripts/racecheck-self-check.sh (not a test).
find "$build/tests" -type f -name sanitizer_planted_race -perm -u+x -exec cp {} "$pack/tests/" \;
# What scripts/gpu-sanitize.sh runs: meson's 'gpu' suite (test_cuda_faults among them), the element
# on CUDA memory and 8 CUDA elements at once. Not test_element_faults: its device that does not exist
# makes gstcuda's driver calls fail on purpose, which the tools count as errors.
{ meson test -C "$build" --no-rebuild --list --suite gpu 2>/dev/null | sed 's/.* \/ //'
  echo test_element_cuda
  echo test_element_instances; } >"$pack/gpu-tests.txt"
# The code the binaries were built from, for gpu-sanitize.sh's progress lines (code=): the sources
# that go into them as committed, and what the working tree changes in them. nvcc's objects differ
# from build to build, so a binary's own hash would change with every pack.
# Outside a git checkout there is none (gpu-sanitize.sh then hashes each binary).
code_paths=(kernels tests plugin meson.build meson_options.txt)
if git rev-parse --git-dir >/dev/null 2>&1; then
  { git ls-tree -r HEAD -- "${code_paths[@]}"; git diff HEAD -- "${code_paths[@]}"; } | sha256sum | cut -c1-12 \
    >"$pack/code.txt"
fi
for b in bench_sat bench_ncc bench_stream bench_driver_calls bench_window_copy bench_bank bench_pipeline bench_track bench_live bench_producers \
    bench_fft_callbacks \
    bench_two_pipelines; do
  [ -x "$build/bench/$b" ] && cp "$build/bench/$b" "$pack/bench/"
done
cp "$build"/plugin/libgstnccmatch.so "$pack/plugin/" 2>/dev/null || true
if [ "${GPU_PACK_STAGES:-0}" = 1 ]; then
  stages=$(find "$build/bench" -maxdepth 1 -type f -name 'bench_bank_repeat_*' -perm -u+x)
  [ -n "$stages" ] || { echo "GPU_PACK_STAGES=1: no bench_bank_repeat_* (cuda-arch without 90?)" >&2; exit 1; }
  cp $stages "$pack/bench/"
fi
if [ "${GPU_PACK_OPENCV:-0}" = 1 ]; then
  source scripts/opencv-libs.sh
  copy_opencv_libs "$build/bench/bench_rotations" "$pack/lib" || { echo "GPU_PACK_OPENCV=1: no pack" >&2; exit 1; }
  cp "$build/bench/bench_rotations" "$pack/bench/"
  echo "GPU_PACK_OPENCV=1: bench_rotations and $(ls "$pack/lib" | wc -l) libraries in $pack/lib ($(du -sh "$pack/lib" | cut -f1))"
fi
strip --strip-unneeded "$pack"/tests/* "$pack"/bench/* "$pack"/plugin/* 2>/dev/null || true
# The GStreamer runtime for a host without GStreamer (decodebin for templates, nvcodec, codecs;
# videocrop for bench/producers.sh; openh264 as the software H.264 decoder there: not libav, whose
# libraries (about 200 MB with their dependencies) alone pass the 64 MB the device takes).
if [ "${GST_BUNDLE:-1}" = 1 ]; then  # remade each time: the plugin list below may change
  bash ../shared/tools/gst-bundle.sh .gst coreelements videotestsrc videoconvertscale app pbtypes \
    typefindfunctions png pnm playback nvcodec x264 videoparsersbad matroska jpeg jpegformat multifile \
    videocrop openh264
fi
# Every binary links the library's CUDA fat binaries: a 64 MiB window lets xz store each copy
# after the first as a reference (~70 MB with xz's default 8 MiB window, under the device's 64 MB
# carry with .gst/ only this way).
tar -cf - "$pack" | xz -T1 --lzma2=preset=6,dict=64MiB >"$pack.tar.xz"
du -sh "$pack" "$pack.tar.xz" .gst 2>/dev/null || true  # no .gst/ with GST_BUNDLE=0
