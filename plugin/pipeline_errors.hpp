// Errors of every element of a pipeline, delivered on the pipeline's own bus even where a bin
// inside it holds them back. decodebin2 keeps the errors of an element it is still starting and
// drops them once that element has started, so an error from the element's own streaming thread
// in that window (asfdemux in pull mode on a corrupt ASF header, found by
// tests/fuzz/fuzz_template_loader) never reached the bus, and the template loader waited out its
// 10-second bound. A process-wide GstTracer hook sees each message before any bin handles it and
// posts a copy of each error from inside a registered pipeline on that pipeline's bus (a second
// copy may follow through the bins: the first one ends the wait).
#pragma once

#include <gst/gst.h>

namespace nccmatch::plugin {

// Registers `pipeline` for its lifetime: declare it after the pipeline it watches, so that it is
// gone (and no copy is posted any more) before the pipeline is stopped and freed.
class ForwardedPipelineErrors {
 public:
  explicit ForwardedPipelineErrors(GstElement* pipeline);
  ~ForwardedPipelineErrors();
  ForwardedPipelineErrors(const ForwardedPipelineErrors&) = delete;
  ForwardedPipelineErrors& operator=(const ForwardedPipelineErrors&) = delete;

 private:
  GstElement* pipeline_;
};

}  // namespace nccmatch::plugin
