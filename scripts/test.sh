#!/usr/bin/env bash
# Installs what is missing (Debian 12), builds, and runs every test. GPU tests skip with a reason
# when no CUDA device is present; scripts/gpu-test.sh runs them on a GPU host.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/deps.sh
nccmatch_install_deps
nccmatch_build "${BUILD_DIR:-build}"
meson test -C "${BUILD_DIR:-build}" --print-errorlogs --num-processes "$(nproc)"
# The installed library, as an application outside this tree uses it.
bash scripts/check-install.sh "${BUILD_DIR:-build}"
# The element's tests under ThreadSanitizer (a second build, the library and the plugin only).
bash scripts/tsan-test.sh
