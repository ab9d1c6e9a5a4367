// A live source in front of nccmatch: `appsrc is-live=true` pushes pre-made GRAY8 frames at a fixed
// rate (each push at its own wall-clock time, PTS = index x period) into
//   appsrc ! nccmatch <properties> ! appsink sync=false
// and each frame's latency is measured twice: from just before its push to its buffer (with its ROI
// metas) reaching the appsink, and to its `nccmatch` bus message (a synchronous bus handler, so the
// time is that of posting). Used by bench/bench_live.cpp and tests/plugin/test_element_live_latency.cpp.
#pragma once

#include <gst/app/gstappsink.h>
#include <gst/app/gstappsrc.h>
#include <gst/gst.h>
#include <gst/video/video.h>

#include <algorithm>
#include <chrono>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace nccmatch::live {

struct LiveRun {
  int width = 160, height = 120;   // GRAY8, default layout (rows padded to 4 bytes)
  int fps = 60;
  int frames = 90;
  std::string element;             // "nccmatch ..." with its properties (name=m is added)
  std::vector<std::vector<uint8_t>> premade;  // tightly packed luma frames of width x height, cycled
};

struct FrameLatency {
  double metaUs = -1;     // push -> buffer at the appsink (-1: never arrived)
  double messageUs = -1;  // push -> `nccmatch` message posted (-1: none)
  int rois = 0;           // ROI metas on the buffer
  int roiX = -1, roiY = -1;  // the first ROI's place
};

struct LiveResult {
  bool ok = false;
  std::string error;
  std::vector<FrameLatency> frames;  // by frame index
};

namespace detail {

using Clock = std::chrono::steady_clock;

struct Shared {
  std::mutex mutex;
  std::vector<Clock::time_point> pushed;
  std::vector<FrameLatency>* frames = nullptr;
  GstClockTime period = 0;
};

inline double microsSince(Clock::time_point from, Clock::time_point to) {
  return std::chrono::duration<double, std::micro>(to - from).count();
}

// The frame index a PTS stands for (PTS = index x period), or -1.
inline int indexOf(GstClockTime pts, GstClockTime period, std::size_t count) {
  if (!GST_CLOCK_TIME_IS_VALID(pts) || period == 0) return -1;
  const guint64 i = (pts + period / 2) / period;
  return i < count ? int(i) : -1;
}

inline GstFlowReturn onSample(GstAppSink* sink, gpointer data) {
  const Clock::time_point now = Clock::now();
  auto* shared = static_cast<Shared*>(data);
  GstSample* sample = gst_app_sink_pull_sample(sink);
  if (sample == nullptr) return GST_FLOW_EOS;
  GstBuffer* buffer = gst_sample_get_buffer(sample);
  std::lock_guard<std::mutex> lock(shared->mutex);
  const int i = indexOf(GST_BUFFER_PTS(buffer), shared->period, shared->frames->size());
  if (i >= 0) {
    FrameLatency& f = (*shared->frames)[std::size_t(i)];
    f.metaUs = microsSince(shared->pushed[std::size_t(i)], now);
    gpointer state = nullptr;
    while (GstMeta* meta = gst_buffer_iterate_meta_filtered(buffer, &state, GST_VIDEO_REGION_OF_INTEREST_META_API_TYPE)) {
      auto* roi = reinterpret_cast<GstVideoRegionOfInterestMeta*>(meta);
      if (f.rois++ == 0) f.roiX = int(roi->x), f.roiY = int(roi->y);
    }
  }
  gst_sample_unref(sample);
  return GST_FLOW_OK;
}

inline GstBusSyncReply onMessage(GstBus*, GstMessage* message, gpointer data) {
  const Clock::time_point now = Clock::now();
  auto* shared = static_cast<Shared*>(data);
  const GstStructure* s = gst_message_get_structure(message);
  guint64 pts = GST_CLOCK_TIME_NONE;
  if (GST_MESSAGE_TYPE(message) == GST_MESSAGE_ELEMENT && s != nullptr && gst_structure_has_name(s, "nccmatch") &&
      gst_structure_get_uint64(s, "timestamp", &pts)) {
    std::lock_guard<std::mutex> lock(shared->mutex);
    const int i = indexOf(pts, shared->period, shared->frames->size());
    if (i >= 0) (*shared->frames)[std::size_t(i)].messageUs = microsSince(shared->pushed[std::size_t(i)], now);
  }
  return GST_BUS_PASS;  // EOS and errors still reach the waiting thread
}

}  // namespace detail

// Runs the pipeline to EOS (or an error, or a timeout of the run's length + 30 s).
inline LiveResult measureLiveLatency(const LiveRun& run) {
  LiveResult result;
  result.frames.assign(std::size_t(std::max(0, run.frames)), FrameLatency());
  if (run.premade.empty() || run.fps <= 0) {
    result.error = "no frames or no frame rate";
    return result;
  }
  const std::string description = "appsrc name=src is-live=true format=time ! " + run.element +
                                  " name=m ! appsink name=out sync=false max-buffers=0";
  GError* error = nullptr;
  GstElement* pipeline = gst_parse_launch(description.c_str(), &error);
  if (pipeline == nullptr) {
    result.error = description + ": " + (error != nullptr ? error->message : "does not parse");
    g_clear_error(&error);
    return result;
  }
  // Everything the streaming threads read is set, and read back at the end, under shared.mutex:
  // GStreamer hands work to its threads through GLib primitives that ThreadSanitizer cannot see.
  detail::Shared shared;
  {
    std::lock_guard<std::mutex> lock(shared.mutex);
    shared.frames = &result.frames;
    shared.pushed.assign(result.frames.size(), detail::Clock::time_point());
    shared.period = gst_util_uint64_scale_int(GST_SECOND, 1, run.fps);
  }
  GstElement* src = gst_bin_get_by_name(GST_BIN(pipeline), "src");
  GstElement* out = gst_bin_get_by_name(GST_BIN(pipeline), "out");
  GstCaps* caps = gst_caps_new_simple("video/x-raw", "format", G_TYPE_STRING, "GRAY8", "width", G_TYPE_INT, run.width,
                                      "height", G_TYPE_INT, run.height, "framerate", GST_TYPE_FRACTION, run.fps, 1,
                                      nullptr);
  g_object_set(src, "caps", caps, nullptr);
  gst_caps_unref(caps);
  GstAppSinkCallbacks callbacks{};
  callbacks.new_sample = detail::onSample;
  gst_app_sink_set_callbacks(GST_APP_SINK(out), &callbacks, &shared, nullptr);
  GstBus* bus = gst_element_get_bus(pipeline);
  gst_bus_set_sync_handler(bus, detail::onMessage, &shared, nullptr);

  // The frames as GStreamer lays out GRAY8 (rows padded to a multiple of 4).
  GstVideoInfo info;
  gst_video_info_set_format(&info, GST_VIDEO_FORMAT_GRAY8, guint(run.width), guint(run.height));
  const std::size_t stride = std::size_t(GST_VIDEO_INFO_PLANE_STRIDE(&info, 0));
  std::vector<GstBuffer*> frames;
  for (const std::vector<uint8_t>& luma : run.premade) {
    GstBuffer* b = gst_buffer_new_allocate(nullptr, GST_VIDEO_INFO_SIZE(&info), nullptr);
    GstMapInfo map;
    gst_buffer_map(b, &map, GST_MAP_WRITE);
    for (int y = 0; y < run.height; ++y)
      std::copy_n(luma.data() + std::size_t(y) * run.width, run.width, map.data + std::size_t(y) * stride);
    gst_buffer_unmap(b, &map);
    frames.push_back(b);
  }

  gst_element_set_state(pipeline, GST_STATE_PLAYING);
  std::thread feeder([&] {
    std::chrono::nanoseconds period;
    GstClockTime step = 0;
    {
      std::lock_guard<std::mutex> lock(shared.mutex);
      period = std::chrono::nanoseconds(shared.period);
      step = shared.period;
    }
    const auto start = detail::Clock::now() + std::chrono::milliseconds(50);
    for (int i = 0; i < run.frames; ++i) {
      std::this_thread::sleep_until(start + i * period);
      GstBuffer* b = gst_buffer_copy(frames[std::size_t(i) % frames.size()]);  // shares the memory
      GST_BUFFER_PTS(b) = guint64(i) * step;
      GST_BUFFER_DURATION(b) = step;
      {
        std::lock_guard<std::mutex> lock(shared.mutex);
        shared.pushed[std::size_t(i)] = detail::Clock::now();
      }
      if (gst_app_src_push_buffer(GST_APP_SRC(src), b) != GST_FLOW_OK) break;
    }
    gst_app_src_end_of_stream(GST_APP_SRC(src));
  });
  const GstClockTime timeout = guint64(run.frames) * gst_util_uint64_scale_int(GST_SECOND, 1, run.fps) + 30 * GST_SECOND;
  GstMessage* message = gst_bus_timed_pop_filtered(bus, timeout, GstMessageType(GST_MESSAGE_EOS | GST_MESSAGE_ERROR));
  if (message != nullptr && GST_MESSAGE_TYPE(message) == GST_MESSAGE_EOS) {
    result.ok = true;
  } else if (message == nullptr) {
    result.error = "no EOS within the run's length + 30 s";
  } else {
    GError* err = nullptr;
    gst_message_parse_error(message, &err, nullptr);
    result.error = err != nullptr ? err->message : "error";
    g_clear_error(&err);
  }
  if (message != nullptr) gst_message_unref(message);
  gst_element_set_state(pipeline, GST_STATE_NULL);  // unblocks a feeder stuck after an error
  feeder.join();
  gst_bus_set_sync_handler(bus, nullptr, nullptr, nullptr);
  { std::lock_guard<std::mutex> lock(shared.mutex); }  // the callbacks' last writes before these reads
  for (GstBuffer* b : frames) gst_buffer_unref(b);
  gst_object_unref(bus);
  gst_object_unref(src);
  gst_object_unref(out);
  gst_object_unref(pipeline);
  return result;
}

// The q-quantile (0..1) of the values >= 0 (frames that never arrived are left out), or -1.
inline double quantile(std::vector<double> values, double q) {
  values.erase(std::remove_if(values.begin(), values.end(), [](double v) { return v < 0; }), values.end());
  if (values.empty()) return -1;
  std::sort(values.begin(), values.end());
  const std::size_t i = std::min(values.size() - 1, std::size_t(q * double(values.size() - 1) + 0.5));
  return values[i];
}

}  // namespace nccmatch::live
