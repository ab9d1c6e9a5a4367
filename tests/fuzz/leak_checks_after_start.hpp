// Leak checks that start after GLib and GStreamer have set themselves up. GLib keeps one-time
// allocations that LeakSanitizer reports although no input caused them: its library constructor's
// quark table is replaced (and the old one deliberately leaked, see g_quark_from_string in GLib's
// gquark.c) once GStreamer's init has made more than 2048 quarks. LeakSanitizer is told to ignore
// this thread's allocations from before any library constructor runs (.preinit_array runs first)
// until the target calls startLeakChecks() at the end of LLVMFuzzerInitialize. Every input is
// checked in full; suppression files would have to name GLib's frames, which fast unwinding does
// not see (GLib has no frame pointers), so they would hide every GLib allocation.
// Include in one source file per target.
#pragma once

#include <sanitizer/lsan_interface.h>

namespace nccmatch::fuzz {
namespace {

void stopLeakChecksUntilStarted() { __lsan_disable(); }
__attribute__((section(".preinit_array"), used)) void (*const kStopLeakChecks)() = stopLeakChecksUntilStarted;

}  // namespace

inline void startLeakChecks() { __lsan_enable(); }

}  // namespace nccmatch::fuzz
