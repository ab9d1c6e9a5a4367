// Runs a gst-launch description to EOS (or its first error) and keeps what every nccmatch in it
// reported: its matches per frame (the 'nccmatch' messages), its backend and input memory (the
// stats), and the bus's warnings and errors with their source. Shared by the fault and the
// many-instances tests.
#pragma once

#include <gst/gst.h>

#include <functional>
#include <map>
#include <string>
#include <vector>

namespace nccmatch::test {

struct Found {
  guint templateIndex = 0, x = 0, y = 0;
  double score = 0.0;
  guint64 trackId = 0;     // mode=track: the match's track-id (0 in detect mode)
  std::string trackState;  // mode=track: new, tracked, reacquired
};

// One nccmatch of the pipeline.
struct ElementRun {
  std::vector<std::vector<Found>> matches;  // per frame, in order
  std::string backend;                      // the stats' backend at the end ("cpu", "cuda")
  guint64 frames = 0;                       // the stats' frame count
  // The gstcuda context (a GstCudaContext) the element kept through GstContext, null for none;
  // an identity only (compared while the pipelines holding it run).
  const void* cudaContext = nullptr;
};

struct PipelineRun {
  std::map<std::string, ElementRun> elements;  // every nccmatch, by name
  std::vector<std::string> warnings, errors;   // "source: text", in the order posted
  bool eos = false;
  // The messages of the warnings (or errors) posted by `source`.
  std::vector<std::string> from(const std::vector<std::string>& messages, const std::string& source) const;
};

// Parses and plays `description`; an appsrc named "src" gets `input` pushed (each buffer
// referenced, not taken) and then EOS. Where `caps` has non-null caps for a buffer, they replace
// appsrc's caps from that buffer on (a caps change mid-stream). `afterPush`, when given, is called
// with the pipeline and the count pushed so far after each buffer. Gives up after `timeoutSeconds`
// (a test failure).
PipelineRun runPipeline(const std::string& description, const std::vector<GstBuffer*>& input = {},
                        int timeoutSeconds = 60, const std::vector<GstCaps*>& caps = {},
                        const std::function<void(GstElement*, std::size_t)>& afterPush = nullptr);

// The matches of two runs of one element are the same, frame by frame (scores within `tolerance`;
// track ids and states equal).
void expectSameMatches(const ElementRun& got, const ElementRun& want, double tolerance);

}  // namespace nccmatch::test
