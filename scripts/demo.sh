#!/usr/bin/env bash
# Installs what is missing (Debian 12), builds, and runs the demo: a generated scene of moving
# objects matched against templates cut from it; prints the matches and writes an annotated video.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/deps.sh
nccmatch_install_deps
# Only the demo and the element it loads: the tests and benchmarks are not needed here.
nccmatch_build "${BUILD_DIR:-build}" examples/nccmatch-demo plugin/libgstnccmatch.so
exec meson devenv -C "${BUILD_DIR:-build}" --workdir "$PWD" ./"${BUILD_DIR:-build}"/examples/nccmatch-demo "$@"
