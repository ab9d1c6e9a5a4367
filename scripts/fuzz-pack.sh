#!/usr/bin/env bash
# Packs fuzz targets built here by scripts/fuzz.sh (build-fuzz/tests/fuzz/<target>), the corpora
# they grew (build-fuzz/fuzz-corpus/<target>) and this host's whole GStreamer runtime (every
# installed plugin, as the loader meets them here: .gst-fuzz/, made by gst-bundle.sh) for a GPU
# host, whose 16 cores run issue 15's million loader executions in minutes where this 2-core host
# takes hours. The device tool carries 64 MB a call and the pack is larger (libav's dependencies):
# it is cut into parts of FUZZ_PACK_PART_MB (default 50) MB, fuzz-pack.tar.xz.part-aa, -ab, ...;
# carry them in consecutive calls to a warm machine (a carried file stays there for the next call),
# then, there:
#   cat fuzz-pack.tar.xz.part-* | xz -d | tar -x && source .gst-fuzz/env.sh &&
#   FUZZ_PREBUILT=1 FUZZ_JOBS=14 bash scripts/fuzz.sh -runs=1000000 fuzz_template_loader
# Usage: scripts/fuzz-pack.sh [TARGET...]   (default fuzz_template_loader)
set -euo pipefail
cd "$(dirname "$0")/.."
targets=("$@")
[ ${#targets[@]} -eq 0 ] && targets=(fuzz_template_loader)
build=${FUZZ_BUILD_DIR:-build-fuzz}
part_mb=${FUZZ_PACK_PART_MB:-50}
case "$part_mb" in '' | *[!0-9]* | 0) echo "FUZZ_PACK_PART_MB must be a whole number of MB, not '$part_mb'" >&2; exit 2 ;; esac
files=()
for target in "${targets[@]}"; do
  [ -x "$build/tests/fuzz/$target" ] || { echo "no $build/tests/fuzz/$target: run scripts/fuzz.sh 10 $target first" >&2; exit 2; }
  mkdir -p "$build/fuzz-corpus/$target"
  files+=("$build/tests/fuzz/$target" "$build/fuzz-corpus/$target")
done
plugins=()
for plugin in /usr/lib/x86_64-linux-gnu/gstreamer-1.0/libgst*.so; do
  name=${plugin##*/libgst}
  plugins+=("${name%.so}")
done
bash ../shared/tools/gst-bundle.sh .gst-fuzz "${plugins[@]}"
# binutils' addr2line and the libraries it needs beyond glibc: scripts/fuzz.sh symbolizes the
# LeakSanitizer reports with it where the host has no llvm-symbolizer (its suppressions name
# functions; without symbols the committed inputs' suppressed GStreamer leaks fail the replay).
cp "$(command -v addr2line)" .gst-fuzz/bin/
ldd "$(command -v addr2line)" | awk '$3 ~ /^\// { print $3 }' | grep -v -E '/(libc|libm|ld-linux[^/]*)\.so' |
  xargs -r cp -L -t .gst-fuzz/lib/
rm -f fuzz-pack.tar.xz.part-*
tar -cf - "${files[@]}" .gst-fuzz | xz -6 -T0 | split -b "${part_mb}M" - fuzz-pack.tar.xz.part-
ls -l fuzz-pack.tar.xz.part-*
