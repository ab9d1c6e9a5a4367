// nccmatch-track-meta: track ids from the ROI meta of each buffer, in an application.
//
//   videotestsrc pattern=ball ! video/x-raw,format=GRAY8,width=320,height=240
//       ! nccmatch mode=track ! appsink
//
// The ball's template is cut from the first frame (the element's grab-template action signal,
// before start), the element follows it from frame to frame, and the application reads, from
// each buffer it pulls, the GstVideoRegionOfInterestMeta the element attached: the meta's id is
// the track id, and its "nccmatch" parameters carry track-id (guint64), track-state (new,
// tracked, reacquired), the score and the sub-pixel corner. It prints one line per frame and
// fails (exit 1) unless the ball is found in every frame with one id.
//
// Usage: nccmatch-track-meta [--device=auto|cpu|cuda] [--frames=N] [--quiet]
#include <gst/app/gstappsink.h>
#include <gst/gst.h>
#include <gst/video/video.h>

#include <cstdio>
#include <set>
#include <string>

namespace {

// videotestsrc's ball (radius 20) is centred at (160, 120) in the first 320x240 frame.
constexpr int kBallBox = 40, kBallX = 160 - kBallBox / 2, kBallY = 120 - kBallBox / 2;

struct Seen {
  int frames = 0, withBall = 0;
  std::set<guint64> ids;
};

// Reads the tracks of one buffer from its ROI metas; prints them.
void readTracks(GstBuffer* buffer, Seen* seen, bool quiet) {
  std::string line = "frame " + std::to_string(seen->frames) + ":";
  bool ball = false;
  gpointer state = nullptr;
  while (GstMeta* meta = gst_buffer_iterate_meta_filtered(buffer, &state, GST_VIDEO_REGION_OF_INTEREST_META_API_TYPE)) {
    auto* roi = reinterpret_cast<GstVideoRegionOfInterestMeta*>(meta);
    const GstStructure* params = gst_video_region_of_interest_meta_get_param(roi, "nccmatch");
    guint64 trackId = 0;
    double score = 0;
    const char* trackState = params != nullptr ? gst_structure_get_string(params, "track-state") : nullptr;
    if (params == nullptr || !gst_structure_get_uint64(params, "track-id", &trackId) || trackState == nullptr) continue;
    gst_structure_get_double(params, "score", &score);
    char text[160];
    std::snprintf(text, sizeof text, "  %s #%" G_GUINT64_FORMAT " (meta id %d) %s at %u,%u score %.3f",
                  g_quark_to_string(roi->roi_type), trackId, roi->id, trackState, roi->x, roi->y, score);
    line += text;
    seen->ids.insert(trackId);
    ball = true;
  }
  seen->withBall += ball ? 1 : 0;
  ++seen->frames;
  if (!quiet) std::printf("%s\n", ball ? line.c_str() : (line + "  -").c_str());
}

}  // namespace

int main(int argc, char** argv) {
  gst_init(&argc, &argv);
  std::string device = "auto";
  int frames = 60;
  bool quiet = false;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg.rfind("--device=", 0) == 0) device = arg.substr(9);
    else if (arg.rfind("--frames=", 0) == 0) frames = std::atoi(arg.c_str() + 9);
    else if (arg == "--quiet") quiet = true;
    else {
      std::printf("usage: %s [--device=auto|cpu|cuda] [--frames=N] [--quiet]\n", argv[0]);
      return arg == "--help" ? 0 : 2;
    }
  }
  if (frames < 1 || (device != "auto" && device != "cpu" && device != "cuda")) {
    std::fprintf(stderr, "--frames must be >= 1 and --device auto, cpu or cuda\n");
    return 2;
  }
  // The element: installed, or in this build folder.
  if (GstElementFactory* f = gst_element_factory_find("nccmatch")) gst_object_unref(f);
#ifdef NCCMATCH_PLUGIN_BUILD_DIR
  else gst_registry_scan_path(gst_registry_get(), NCCMATCH_PLUGIN_BUILD_DIR);
#endif
  const std::string launch = "videotestsrc pattern=ball num-buffers=" + std::to_string(frames) +
                             " ! video/x-raw,format=GRAY8,width=320,height=240,framerate=30/1 ! nccmatch name=m "
                             "mode=track display=false device=" + device + " ! appsink name=sink sync=false";
  GError* error = nullptr;
  GstElement* pipeline = gst_parse_launch(launch.c_str(), &error);
  if (pipeline == nullptr) {
    std::fprintf(stderr, "pipeline: %s (is the nccmatch plugin built?)\n", error != nullptr ? error->message : "?");
    g_clear_error(&error);
    return 1;
  }
  GstElement* match = gst_bin_get_by_name(GST_BIN(pipeline), "m");
  gboolean grabbed = FALSE;
  g_signal_emit_by_name(match, "grab-template", "ball", kBallX, kBallY, kBallBox, kBallBox, &grabbed);
  gst_object_unref(match);
  GstElement* sink = gst_bin_get_by_name(GST_BIN(pipeline), "sink");
  gst_element_set_state(pipeline, GST_STATE_PLAYING);
  Seen seen;
  while (GstSample* sample = gst_app_sink_pull_sample(GST_APP_SINK(sink))) {
    readTracks(gst_sample_get_buffer(sample), &seen, quiet);
    gst_sample_unref(sample);
  }
  GstBus* bus = gst_element_get_bus(pipeline);
  GstMessage* failure = gst_bus_pop_filtered(bus, GST_MESSAGE_ERROR);
  if (failure != nullptr) {
    GError* err = nullptr;
    gst_message_parse_error(failure, &err, nullptr);
    std::fprintf(stderr, "error: %s\n", err->message);
    g_clear_error(&err);
    gst_message_unref(failure);
  }
  gst_object_unref(bus);
  gst_element_set_state(pipeline, GST_STATE_NULL);
  gst_object_unref(sink);
  gst_object_unref(pipeline);
  std::printf("ball found in %d of %d frames with track id(s):", seen.withBall, seen.frames);
  for (guint64 id : seen.ids) std::printf(" %" G_GUINT64_FORMAT, id);
  std::printf("\n");
  const bool ok = grabbed && seen.frames == frames && seen.withBall == seen.frames && seen.ids.size() == 1;
  return ok ? 0 : 1;
}
