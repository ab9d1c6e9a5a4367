// The `nccmatch` element: template matching on the luma plane of GRAY8/I420/NV12 frames, in place.
#pragma once

#include <gst/gst.h>
#include <gst/video/gstvideofilter.h>

G_BEGIN_DECLS

#define GST_TYPE_NCCMATCH (gst_nccmatch_get_type())
G_DECLARE_FINAL_TYPE(GstNccMatch, gst_nccmatch, GST, NCCMATCH, GstVideoFilter)

#define GST_TYPE_NCCMATCH_METHOD (gst_nccmatch_method_get_type())
GType gst_nccmatch_method_get_type(void);

#define GST_TYPE_NCCMATCH_DEVICE (gst_nccmatch_device_get_type())
GType gst_nccmatch_device_get_type(void);

#define GST_TYPE_NCCMATCH_MODE (gst_nccmatch_mode_get_type())
GType gst_nccmatch_mode_get_type(void);
#define GST_TYPE_NCCMATCH_ROTATION_SUPPORT (gst_nccmatch_rotation_support_get_type())
GType gst_nccmatch_rotation_support_get_type(void);

GST_ELEMENT_REGISTER_DECLARE(nccmatch);

G_END_DECLS
