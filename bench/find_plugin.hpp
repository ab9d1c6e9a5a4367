// The benchmarks that run the element: find nccmatch where GST_PLUGIN_PATH says, else in the
// build folder beside the benchmark (<build>/bench/<bench> -> <build>/plugin).
#pragma once

#include <gst/gst.h>

#include <cstdio>

namespace nccmatch::bench {

// False (with a message) when no nccmatch element can be found. Call after gst_init.
inline bool findNccmatchPlugin() {
  if (gst_element_factory_find("nccmatch") == nullptr) {
    gchar* exe = g_file_read_link("/proc/self/exe", nullptr);
    gchar* dir = g_path_get_dirname(exe);
    gchar* plugin = g_build_filename(dir, "..", "plugin", nullptr);
    gst_registry_scan_path(gst_registry_get(), plugin);
    g_free(plugin), g_free(dir), g_free(exe);
  }
  if (gst_element_factory_find("nccmatch") != nullptr) return true;
  std::fprintf(stderr, "nccmatch element not found (GST_PLUGIN_PATH)\n");
  return false;
}

}  // namespace nccmatch::bench
