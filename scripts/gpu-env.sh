# Sourced on the GPU host from the repository root (`source scripts/gpu-env.sh`): unpacks
# gpu-pack.tar.xz into gpu-pack/ (once), gpu-pack-overlay.tar.xz (scripts/gpu-overlay.sh) over it
# and each gpu-pack-branch-LABEL.tar.xz (scripts/gpu-branch-pack.sh) beside it when present, then
# sets what the pack's binaries need there: the GStreamer bundle (.gst/env.sh), the pack's plugin
# first on GST_PLUGIN_PATH, no registry fork (compute-sanitizer sees one process), cuFFT from the
# toolkit or the host's Python packages, the toolkit's tools (compute-sanitizer, ncu, cuobjdump) on
# PATH, nvJitLink from the host's Python packages. Prints the GPU.
if [ ! -d gpu-pack ] && [ -f gpu-pack.tar.xz ]; then tar -xJf gpu-pack.tar.xz; fi
if [ -f gpu-pack-overlay.tar.xz ]; then tar -xJf gpu-pack-overlay.tar.xz; fi
# Other branches' binaries (scripts/gpu-branch-pack.sh): each in its gpu-pack-branch-LABEL/.
for nccmatch_branch in gpu-pack-branch-*.tar.xz; do [ -f "$nccmatch_branch" ] && tar -xJf "$nccmatch_branch"; done
unset nccmatch_branch
[ -f .gst/env.sh ] && source .gst/env.sh
export GST_PLUGIN_PATH="$PWD/gpu-pack/plugin${GST_PLUGIN_PATH:+:$GST_PLUGIN_PATH}"
export GST_REGISTRY_FORK=no
nccmatch_cufft=$(python3 -c "import nvidia.cufft,os;print(os.path.dirname(nvidia.cufft.__file__)+'/lib')" 2>/dev/null || true)
# nvJitLink: what cuFFT links LTO callbacks with when a plan is made (bench_fft_callbacks).
nccmatch_jitlink=$(python3 -c "import nvidia.nvjitlink,os;print(os.path.dirname(nvidia.nvjitlink.__file__)+'/lib')" 2>/dev/null || true)
export LD_LIBRARY_PATH="/usr/local/cuda/lib64${nccmatch_cufft:+:$nccmatch_cufft}${nccmatch_jitlink:+:$nccmatch_jitlink}${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
unset nccmatch_cufft nccmatch_jitlink
# bench_rotations' OpenCV (GPU_PACK_OPENCV=1 or an overlay with it), last: the host's own libraries first.
[ -d gpu-pack/lib ] && export LD_LIBRARY_PATH="$LD_LIBRARY_PATH:$PWD/gpu-pack/lib"
export PATH="/usr/local/cuda/bin:$PATH"
command -v nvidia-smi >/dev/null && nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv,noheader
true
