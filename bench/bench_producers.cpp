// Steady-state frame rate of one gst-launch-style pipeline: the buffers that reach its last
// element (a fakesink named `sink`, added when the description has none) are counted by a pad
// probe, and the rate is taken between buffer --warmup and the last one, so that start-up (plugin
// loading, template decoding, the first negotiation and allocation) never enters it. Prints one
// line: `fps N buffers B seconds S`, and where the pipeline has an nccmatch, its stats over the same
// steady state: `streaming-us X engine-us Y` (the element's mean time a buffer in the streaming
// thread, and its engine's a frame: plugin/README.md, `stats`), from the stats read when buffer
// --warmup reaches the sink and at EOS, so the first frames' one-off work (plans, buffers, graph
// capture) is not spread over the mean; then the same means since start
// (`since-start streaming-us X engine-us Y`); last, the CPU microseconds a buffer over the steady
// state of the thread that hands buffers to the sink, of the thread that pushes them into the first
// nccmatch (the producer's) and of the whole process (`sink-thread-cpu-us X producer-thread-cpu-us Y
// process-cpu-us Z`). An element named `into` takes the first nccmatch's place there (e.g. `queue
// name=into ! nccmatch`: the producer's thread is the one feeding the queue, not the queue's own),
// with or without an nccmatch after it. bench/producers.sh runs it once per cell and repeat.
//   bench_producers [--warmup N] PIPELINE...   (the words are joined, as gst-launch-1.0 does)
#include <gst/gst.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <time.h>

#include "find_plugin.hpp"

namespace {

// One reading of an nccmatch's stats: the frames and input buffers counted and their means.
struct StatsReading {
  bool valid = false;
  guint64 frames = 0, inputs = 0;
  double engineUs = 0, streamingUs = 0;
};

StatsReading readStats(GstElement* nccmatch) {
  StatsReading r;
  if (nccmatch == nullptr) return r;
  GstStructure* stats = nullptr;
  g_object_get(nccmatch, "stats", &stats, nullptr);
  if (stats == nullptr) return r;
  r.valid = gst_structure_get_uint64(stats, "frames", &r.frames) &&
            gst_structure_get_uint64(stats, "streaming-buffers", &r.inputs) &&
            gst_structure_get_double(stats, "mean-us", &r.engineUs) &&
            gst_structure_get_double(stats, "streaming-us", &r.streamingUs);
  gst_structure_free(stats);
  return r;
}

// The mean of what was counted between readings a and b (a mean over n, then over m >= n).
double meanBetween(double meanA, guint64 a, double meanB, guint64 b) {
  return b > a ? (meanB * double(b) - meanA * double(a)) / double(b - a) : 0.0;
}

// CPU seconds of the calling thread or of the whole process so far.
double cpuSeconds(clockid_t clock) {
  timespec t{};
  clock_gettime(clock, &t);
  return double(t.tv_sec) + 1e-9 * double(t.tv_nsec);
}

// CPU time of the thread that pushes buffers through one pad, from buffer `warmup` to the last:
// microseconds a buffer, or none when the buffers came on more than one thread.
struct ThreadCpu {
  long warmup = 0;
  long buffers = 0;
  double first = 0, last = 0;
  std::thread::id thread;
  bool oneThread = true;

  void count(long n) {
    const double now = cpuSeconds(CLOCK_THREAD_CPUTIME_ID);
    buffers += n;
    if (buffers - n < warmup && buffers >= warmup) {
      first = now;
      thread = std::this_thread::get_id();
    } else if (buffers > warmup && std::this_thread::get_id() != thread) {
      oneThread = false;
    }
    last = now;
  }
  // " NAME X" (X "-" when the thread changed or too few buffers came).
  std::string field(const char* name) const {
    char text[96];
    if (oneThread && buffers > warmup)
      std::snprintf(text, sizeof text, " %s %.1f", name, (last - first) * 1e6 / double(buffers - warmup));
    else
      std::snprintf(text, sizeof text, " %s -", name);
    return text;
  }
};

struct Counter {
  long warmup = 0;
  long buffers = 0;
  std::chrono::steady_clock::time_point first, last;
  GstElement* nccmatch = nullptr;  // the first nccmatch, read when buffer `warmup` arrives
  StatsReading atWarmup;
  // CPU time over the same steady state: the thread that hands buffers to the sink, the one that
  // pushes them into the first nccmatch or the element named `into` (the producer's streaming
  // thread: its decode or conversion and the element's hand-over; with the element's worker thread
  // the sink is fed by the element), and the whole process. Less swayed than frames/s by the host
  // scheduling other work, though a slowed core still costs more CPU seconds a buffer.
  ThreadCpu sinkThread, producerThread;
  double processCpuFirst = 0, processCpuLast = 0;
};

// The buffers a probe call carries (one, or a list's length).
long bufferCount(GstPadProbeInfo* info) {
  if (GST_PAD_PROBE_INFO_TYPE(info) & GST_PAD_PROBE_TYPE_BUFFER_LIST)
    return long(gst_buffer_list_length(GST_PAD_PROBE_INFO_BUFFER_LIST(info)));
  return 1;
}

GstPadProbeReturn countBuffer(GstPad*, GstPadProbeInfo* info, gpointer data) {
  auto* c = static_cast<Counter*>(data);
  const long n = bufferCount(info);
  const auto now = std::chrono::steady_clock::now();
  const double processCpu = cpuSeconds(CLOCK_PROCESS_CPUTIME_ID);
  c->sinkThread.count(n);
  c->buffers += n;
  if (c->buffers - n < c->warmup && c->buffers >= c->warmup) {
    c->first = now;
    c->atWarmup = readStats(c->nccmatch);
    c->processCpuFirst = processCpu;
  }
  c->last = now;
  c->processCpuLast = processCpu;
  return GST_PAD_PROBE_OK;
}

GstPadProbeReturn countProducerBuffer(GstPad*, GstPadProbeInfo* info, gpointer data) {
  static_cast<ThreadCpu*>(data)->count(bufferCount(info));
  return GST_PAD_PROBE_OK;
}

// The pipeline's first nccmatch (a new reference), or null when it has none.
GstElement* findNccmatch(GstElement* pipeline) {
  GstElement* found = nullptr;
  GstIterator* it = gst_bin_iterate_recurse(GST_BIN(pipeline));
  GValue item = G_VALUE_INIT;
  while (found == nullptr && gst_iterator_next(it, &item) == GST_ITERATOR_OK) {
    auto* element = GST_ELEMENT(g_value_get_object(&item));
    GstElementFactory* factory = gst_element_get_factory(element);
    if (factory != nullptr && std::strcmp(GST_OBJECT_NAME(factory), "nccmatch") == 0)
      found = GST_ELEMENT(gst_object_ref(element));
    g_value_reset(&item);
  }
  g_value_unset(&item);
  gst_iterator_free(it);
  return found;
}

// " streaming-us X engine-us Y since-start streaming-us X' engine-us Y'" (the steady state: between
// the warm-up reading and the end), or "" without an nccmatch.
std::string statsLine(const StatsReading& warm, const StatsReading& end) {
  if (!end.valid) return "";
  char line[160];
  if (warm.valid && end.inputs > warm.inputs)  // engine-us 0 where no frame was matched (no templates)
    std::snprintf(line, sizeof line, " streaming-us %.1f engine-us %.1f since-start streaming-us %.1f engine-us %.1f",
                  meanBetween(warm.streamingUs, warm.inputs, end.streamingUs, end.inputs),
                  meanBetween(warm.engineUs, warm.frames, end.engineUs, end.frames), end.streamingUs, end.engineUs);
  else  // no reading after the warm-up (too few buffers): the means since start only
    std::snprintf(line, sizeof line, " since-start streaming-us %.1f engine-us %.1f", end.streamingUs, end.engineUs);
  return line;
}

}  // namespace

int main(int argc, char** argv) {
  gst_init(&argc, &argv);
  long warmup = 50;
  std::string description;
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--warmup") == 0 && i + 1 < argc) {
      warmup = std::atol(argv[++i]);
    } else {
      description += (description.empty() ? "" : " ") + std::string(argv[i]);
    }
  }
  if (description.empty() || warmup < 1)
    return std::fprintf(stderr, "usage: bench_producers [--warmup N>=1] PIPELINE...\n"), 2;
  if (description.find("nccmatch") != std::string::npos && !nccmatch::bench::findNccmatchPlugin()) return 2;
  if (description.find("name=sink") == std::string::npos) description += " ! fakesink name=sink sync=false";

  GError* error = nullptr;
  GstElement* pipeline = gst_parse_launch(description.c_str(), &error);
  if (pipeline == nullptr || error != nullptr) {
    std::fprintf(stderr, "bad pipeline: %s\n", error != nullptr ? error->message : "(null)");
    return 2;
  }
  GstElement* sink = gst_bin_get_by_name(GST_BIN(pipeline), "sink");
  if (sink == nullptr) return std::fprintf(stderr, "the pipeline has no element named sink\n"), 2;
  GstPad* pad = gst_element_get_static_pad(sink, "sink");
  Counter counter;
  counter.warmup = warmup;
  counter.sinkThread.warmup = counter.producerThread.warmup = warmup;
  counter.nccmatch = findNccmatch(pipeline);
  const auto buffers = GstPadProbeType(GST_PAD_PROBE_TYPE_BUFFER | GST_PAD_PROBE_TYPE_BUFFER_LIST);
  gst_pad_add_probe(pad, buffers, countBuffer, &counter, nullptr);
  gst_object_unref(pad);
  // The producer's thread: the one pushing into the element named `into`, else into the first nccmatch.
  GstElement* into = gst_bin_get_by_name(GST_BIN(pipeline), "into");
  if (into == nullptr && counter.nccmatch != nullptr) into = GST_ELEMENT(gst_object_ref(counter.nccmatch));
  if (into != nullptr) {
    GstPad* intoPad = gst_element_get_static_pad(into, "sink");
    if (intoPad == nullptr) return std::fprintf(stderr, "the element named into has no sink pad\n"), 2;
    gst_pad_add_probe(intoPad, buffers, countProducerBuffer, &counter.producerThread, nullptr);
    gst_object_unref(intoPad);
  }
  gst_object_unref(sink);

  gst_element_set_state(pipeline, GST_STATE_PLAYING);
  GstBus* bus = gst_element_get_bus(pipeline);
  GstMessage* msg =
      gst_bus_timed_pop_filtered(bus, GST_CLOCK_TIME_NONE, GstMessageType(GST_MESSAGE_EOS | GST_MESSAGE_ERROR));
  int rc = 0;
  if (GST_MESSAGE_TYPE(msg) == GST_MESSAGE_ERROR) {
    GError* err = nullptr;
    gchar* debug = nullptr;
    gst_message_parse_error(msg, &err, &debug);
    std::fprintf(stderr, "error from %s: %s\n%s\n", GST_OBJECT_NAME(msg->src), err->message, debug ? debug : "");
    g_clear_error(&err);
    g_free(debug);
    rc = 1;
  }
  gst_message_unref(msg);
  gst_object_unref(bus);
  const std::string stats = statsLine(counter.atWarmup, readStats(counter.nccmatch));
  gst_element_set_state(pipeline, GST_STATE_NULL);
  if (counter.nccmatch != nullptr) gst_object_unref(counter.nccmatch);
  const bool producerMeasured = into != nullptr;
  if (into != nullptr) gst_object_unref(into);
  gst_object_unref(pipeline);
  if (rc != 0) return rc;
  if (counter.buffers <= warmup + 1)
    return std::fprintf(stderr, "only %ld buffers: fewer than --warmup %ld + 2\n", counter.buffers, warmup), 1;
  const double seconds = std::chrono::duration<double>(counter.last - counter.first).count();
  const long counted = counter.buffers - warmup;
  // CPU microseconds a buffer over the steady state.
  const std::string cpu = counter.sinkThread.field("sink-thread-cpu-us") +
                          (producerMeasured ? counter.producerThread.field("producer-thread-cpu-us") : "");
  std::printf("fps %.1f buffers %ld seconds %.4f%s%s process-cpu-us %.1f\n", seconds > 0 ? double(counted) / seconds : 0.0,
              counter.buffers, seconds, stats.c_str(), cpu.c_str(),
              (counter.processCpuLast - counter.processCpuFirst) * 1e6 / double(counted));
  return 0;
}
