// Registers the nccmatch plugin (libgstnccmatch.so) and its element.
#include <gst/gst.h>

#include "gstnccmatch.hpp"

static gboolean plugin_init(GstPlugin* plugin) { return GST_ELEMENT_REGISTER(nccmatch, plugin); }

GST_PLUGIN_DEFINE(GST_VERSION_MAJOR, GST_VERSION_MINOR, nccmatch,
                  "Template matching by normalized cross-correlation (CPU and CUDA)", plugin_init, VERSION,
                  "LGPL", GST_PACKAGE_NAME, GST_PACKAGE_ORIGIN)
