// The element's frames in flight: each frame is mapped and handed to the engine as it arrives,
// held until its result is collected, then finished (ROI meta, messages, boxes) and pushed.
#pragma once

#include <gst/gst.h>

#include "element_state.hpp"

namespace nccmatch::plugin::element {

// Maps a writable frame and submits its luma plane; the frame joins the frames in flight. Takes
// the buffer.
GstFlowReturn submitFrame(GstNccMatch* self, GstBuffer* buffer);
// Collects a frame's result, attaches the metas, posts the messages, draws the boxes; the buffer
// to push, or null after posting an error.
GstBuffer* finishFrame(GstNccMatch* self, InFlightFrame& frame);
// Drops every frame in flight unpushed (flush, stop).
void discardFramesInFlight(GstNccMatch* self);
// Finishes and pushes every frame in flight, oldest first; a failed push drops the rest.
GstFlowReturn pushFramesInFlight(GstNccMatch* self);
// Frames to hold for the current settings (upstream liveness asked once per caps); posts a
// latency message when it changes.
int framesInFlightNow(GstNccMatch* self, const Settings& settings);

}  // namespace nccmatch::plugin::element
