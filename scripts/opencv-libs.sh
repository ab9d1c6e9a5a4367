# Sourced by scripts/gpu-pack.sh and scripts/gpu-overlay.sh: copy_opencv_libs BINARY DEST copies
# the OpenCV libraries BINARY loads and what they load in turn (ldd lists it all) into DEST,
# stripped, except what every Linux and the GPU host's CUDA toolkit have: bench_rotations links
# OpenCV, which the GPU host lacks as C++ libraries. Fails when BINARY links no OpenCV.
copy_opencv_libs() {
  local binary=$1 dest=$2 opencv lib name
  opencv=$(ldd "$binary" | awk '/libopencv/ {print $3}')
  if [ -z "$opencv" ]; then
    echo "$binary does not link OpenCV (no opencv4 found by meson?)" >&2
    return 1
  fi
  mkdir -p "$dest"
  local system='^(linux-vdso|ld-linux|libc|libm|libdl|libpthread|librt|libresolv|libstdc\+\+|libgcc_s|libcuda|libcudart|libcufft|libnvidia)[.-]'
  for lib in $opencv $(for l in $opencv; do ldd "$l" | awk 'NF >= 3 && $3 ~ /^\// {print $3}'; done | sort -u); do
    name=$(basename "$lib")
    [[ "$name" =~ $system ]] && continue
    cp -L "$lib" "$dest/$name"
  done
  strip --strip-unneeded "$dest"/* 2>/dev/null || true
}
