#!/usr/bin/env bash
# Installs a build into a scratch folder and builds the library-only example against the
# installed headers and `pkg-config --static nccmatch`, as an application outside this tree
# would, then runs it on the CPU. Usage: scripts/check-install.sh [build-folder] (default build).
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build}
stage=$(mktemp -d)
trap 'rm -rf "$stage"' EXIT
meson install -C "$build" --no-rebuild --destdir "$stage" >/dev/null
read -r prefix libdir < <(meson introspect "$build" --buildoptions | python3 -c \
  "import json,sys; o={x['name']:x['value'] for x in json.load(sys.stdin)}; print(o['prefix'], o['libdir'])")
export PKG_CONFIG_PATH="$stage$prefix/$libdir/pkgconfig"
# The staged copy stands where the prefix would be; other paths (the CUDA toolkit) stay as they are.
flags=$(pkg-config --define-variable=prefix="$stage$prefix" --cflags --static --libs nccmatch)
# Every installed public header compiles on its own with the package's flags.
for header in "$stage$prefix"/include/nccmatch/*.hpp; do
  echo "#include <nccmatch/$(basename "$header")>" | g++ -std=c++17 -fsyntax-only -x c++ - $flags
done
g++ -std=c++17 -O1 examples/library_stream.cpp $flags -o "$stage/library_stream"
"$stage/library_stream" --frames=10 --quiet --device=cpu
echo "installed library: every header, the static library and nccmatch.pc work for an outside application"
