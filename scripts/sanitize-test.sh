#!/usr/bin/env bash
# Builds the CPU backend, the plugin and the examples with AddressSanitizer and UBSan (folder
# build-asan, no CUDA) and runs the C++ tests and examples there. The Python examples are left
# out: /usr/bin/python3 cannot load an instrumented plugin.
# GST_REGISTRY_FORK=no: the plugin scanner would be a separate, uninstrumented process.
# Leak checks are off: GLib and GStreamer keep global allocations until exit.
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build-asan}
if [ ! -f "$build/build.ninja" ]; then
  meson setup "$build" -Dcuda=disabled -Db_sanitize=address,undefined -Dbuildtype=debugoptimized
fi
ninja -C "$build"
rm -f "$build"/tests/plugin/registry.bin "$build"/examples/registry.bin
export GST_REGISTRY_FORK=no ASAN_OPTIONS=detect_leaks=0 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
meson test -C "$build" --no-rebuild --print-errorlogs --num-processes "$(nproc)" -t 4 \
  --suite kernels --suite plugin
meson test -C "$build" --no-rebuild --print-errorlogs -t 4 \
  example_demo example_library_stream example_library_stream_in_flight_1 example_library_stream_in_flight_3
