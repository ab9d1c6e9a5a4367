#!/usr/bin/env bash
# Builds the CPU backend and the plugin with ThreadSanitizer (folder build-tsan, no CUDA) and runs
# the element's tests there (meson suite 'plugin': GstHarness runs, frames in flight, a thread
# changing properties while PLAYING, caps changes mid-stream). Any report fails the run.
# Suppressions (scripts/tsan.supp) cover GLib/GStreamer internals only, each one explained there;
# the element's object lock is announced to TSan (plugin/object_lock.hpp), not suppressed.
# GST_REGISTRY_FORK=no: the plugin scanner would be a separate, uninstrumented process.
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build-tsan}
if [ ! -f "$build/build.ninja" ]; then
  meson setup "$build" -Dcuda=disabled -Db_sanitize=thread -Dbuildtype=debugoptimized
fi
# Only what the plugin suite runs: the library, the plugin and the plugin's test programs.
tests=$(meson test -C "$build" --no-rebuild --list --suite plugin 2>/dev/null | sed 's/.* \/ //')
ninja -C "$build" plugin/libgstnccmatch.so $(printf 'tests/plugin/%s ' $tests)
# The system plugins are registered first by the uninstrumented gst-inspect-1.0 (its plugin
# scanner loads each one in a separate process); the tests then load only nccmatch and the plugins
# they use in-process. A scan inside the TSan process would load every installed plugin and report
# their own mutex misuse (equalizer, goom, OpenNI2, DirectFB), none of it ours.
rm -f "$build"/tests/plugin/registry.bin
GST_REGISTRY_1_0="$PWD/$build/tests/plugin/registry.bin" GST_PLUGIN_PATH= gst-inspect-1.0 coreelements >/dev/null
export GST_REGISTRY_FORK=no
export TSAN_OPTIONS="suppressions=$PWD/scripts/tsan.supp halt_on_error=1 exitcode=66 second_deadlock_stack=1"
meson test -C "$build" --no-rebuild --print-errorlogs --num-processes "$(nproc)" -t 4 \
  --suite plugin
