// nccmatch-demo: a self-contained run of the nccmatch element, nothing to download.
//
// It generates a 640x360 GRAY8 scene (a textured background with three 32x32 sprites moving on
// their own paths; one hides for a while, one comes closer and goes away again, shown from 0.75x
// to 1.375x its first size), cuts the three templates out of the first frame and writes them as
// PNG, then runs
//
//   appsrc ! nccmatch templates=target.png,checker.png,cross.png scales=0.75,...,1.375 display=true
//          ! tee ! jpegenc ! avimux ! filesink       (demo-output/nccmatch-demo.avi)
//               ! pngenc ! multifilesink            (a few annotated frames as PNG)
//
// and prints every frame's matches from the element's `nccmatch` bus messages next to where (and
// how large) the sprites really are.
//
// Usage: nccmatch-demo [OUTPUT_DIR] [--device=auto|cpu|cuda] [--frames=N]
#include <gst/app/gstappsrc.h>
#include <gst/gst.h>
#include <gst/video/video.h>
#include <glib/gstdio.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "nccmatch/scales.hpp"

namespace {

constexpr int kWidth = 640;
constexpr int kHeight = 360;
constexpr int kFps = 30;
constexpr int kSprite = 32;
constexpr int kSensorNoise = 10;  // +-10 gray levels of fresh noise per frame
const int kSnapshotFrames[] = {0, 45, 89};
// The factors the element searches at; the zooming sprite is shown at each of them in turn.
const double kScales[] = {0.75, 0.875, 1.0, 1.125, 1.25, 1.375};
constexpr int kScaleCount = int(sizeof kScales / sizeof kScales[0]);
constexpr int kUnitScale = 2;        // kScales[kUnitScale] == 1
constexpr int kFramesPerScale = 8;   // the zooming sprite changes size every this many frames

struct Gray {
  int width = 0, height = 0;
  std::vector<uint8_t> pixels;
  uint8_t& at(int x, int y) { return pixels[std::size_t(y) * width + x]; }
  uint8_t at(int x, int y) const { return pixels[std::size_t(y) * width + x]; }
};

Gray blank(int w, int h, uint8_t v = 0) { return Gray{w, h, std::vector<uint8_t>(std::size_t(w) * h, v)}; }

// Three sprites with distinct textures, so each template matches only its own sprite.
Gray makeSprite(int kind, std::mt19937& rng) {
  Gray s = blank(kSprite, kSprite);
  std::uniform_int_distribution<int> noise(-12, 12);
  for (int y = 0; y < kSprite; ++y) {
    for (int x = 0; x < kSprite; ++x) {
      double dx = x - 15.5, dy = y - 15.5, r = std::sqrt(dx * dx + dy * dy);
      int v = 0;
      if (kind == 0) v = (int(r / 3.0) % 2) ? 230 : 30;                            // bullseye
      if (kind == 1) v = (((x / 8) + (y / 8)) % 2) ? 210 : 50, v += (x == y) ? 40 : 0;  // checker
      if (kind == 2) v = (std::abs(x - 16) < 5 || std::abs(y - 16) < 5) ? 240 : 20;    // cross
      s.at(x, y) = uint8_t(std::clamp(v + noise(rng), 0, 255));
    }
  }
  return s;
}

struct Mover {
  const char* name;
  Gray sprite;
  // Position at frame f: a Lissajous-like path inside the frame.
  double ax, ay, fx, fy, px, py;
  int hiddenFrom = -1, hiddenTo = -1;  // frames in [from, to) do not show the sprite
  bool zooms = false;                  // shown at each of kScales in turn (1 at frame 0)
  bool visible(int f) const { return !(f >= hiddenFrom && f < hiddenTo); }
  // Index into kScales at frame f: 1, up to the largest, down to the smallest, up again, ...
  int scaleIndex(int f) const {
    if (!zooms) return kUnitScale;
    const int period = 2 * (kScaleCount - 1), step = (f / kFramesPerScale + kUnitScale) % period;
    return step < kScaleCount ? step : period - step;
  }
  int side(int f) const { return int(std::lround(kSprite * kScales[scaleIndex(f)])); }
  int x(int f) const { return int(std::lround((kWidth - side(f)) * (0.5 + ax * std::sin(fx * f + px)))); }
  int y(int f) const { return int(std::lround((kHeight - side(f)) * (0.5 + ay * std::sin(fy * f + py)))); }
};

// The sprite as the scene shows it at frame f: resized as the element resizes its templates
// (nccmatch/scales.hpp), so a sprite shown at a searched scale matches its scaled template.
Gray shownSprite(const Mover& m, int f) {
  const int side = m.side(f);
  if (side == kSprite) return m.sprite;
  nccmatch::TemplateImage t{m.name, kSprite, kSprite, m.sprite.pixels, {}};
  nccmatch::TemplateImage r = nccmatch::resizeTemplate(t, side, side);
  return Gray{side, side, std::move(r.pixels)};
}

Gray background(std::mt19937& rng) {
  Gray bg = blank(kWidth, kHeight);
  std::uniform_int_distribution<int> noise(-20, 20);
  for (int y = 0; y < kHeight; ++y)
    for (int x = 0; x < kWidth; ++x) {
      double v = 110 + 50 * std::sin(x / 45.0) * std::cos(y / 60.0) + 0.08 * x;
      bg.at(x, y) = uint8_t(std::clamp(int(v) + noise(rng), 0, 255));
    }
  return bg;
}

// The sprites over the background, plus fresh sensor noise (sensorNoise > 0) so that even a
// perfect position scores below 1.
Gray renderFrame(const Gray& bg, const std::vector<Mover>& movers, int f, int sensorNoise, std::mt19937* rng) {
  Gray frame = bg;
  for (const Mover& m : movers) {
    if (!m.visible(f)) continue;
    const Gray sprite = shownSprite(m, f);
    const int ox = m.x(f), oy = m.y(f);
    for (int y = 0; y < sprite.height; ++y)
      std::memcpy(&frame.at(ox, oy + y), &sprite.pixels[std::size_t(y) * sprite.width], std::size_t(sprite.width));
  }
  if (sensorNoise > 0) {
    std::uniform_int_distribution<int> noise(-sensorNoise, sensorNoise);
    for (uint8_t& p : frame.pixels) p = uint8_t(std::clamp(int(p) + noise(*rng), 0, 255));
  }
  return frame;
}

GstCaps* grayCaps(int w, int h) {
  return gst_caps_new_simple("video/x-raw", "format", G_TYPE_STRING, "GRAY8", "width", G_TYPE_INT, w, "height",
                             G_TYPE_INT, h, "framerate", GST_TYPE_FRACTION, kFps, 1, nullptr);
}

// GRAY8 buffers use GStreamer's default stride (rows rounded up to 4 bytes).
GstBuffer* toBuffer(const Gray& img) {
  GstVideoInfo info;
  gst_video_info_set_format(&info, GST_VIDEO_FORMAT_GRAY8, img.width, img.height);
  GstBuffer* buffer = gst_buffer_new_allocate(nullptr, GST_VIDEO_INFO_SIZE(&info), nullptr);
  GstMapInfo map;
  gst_buffer_map(buffer, &map, GST_MAP_WRITE);
  for (int y = 0; y < img.height; ++y)
    std::memcpy(map.data + y * GST_VIDEO_INFO_PLANE_STRIDE(&info, 0), &img.pixels[std::size_t(y) * img.width],
                img.width);
  gst_buffer_unmap(buffer, &map);
  return buffer;
}

std::string errorOf(GstMessage* m) {
  GError* e = nullptr;
  gchar* dbg = nullptr;
  if (GST_MESSAGE_TYPE(m) == GST_MESSAGE_ERROR) gst_message_parse_error(m, &e, &dbg);
  else gst_message_parse_warning(m, &e, &dbg);
  std::string text = e ? e->message : "?";
  g_clear_error(&e);
  g_free(dbg);
  return text;
}

// Runs a pipeline to EOS; returns false (and prints why) on error.
bool runToEos(GstElement* pipeline) {
  gst_element_set_state(pipeline, GST_STATE_PLAYING);
  GstBus* bus = gst_element_get_bus(pipeline);
  GstMessage* m = gst_bus_timed_pop_filtered(bus, 30 * GST_SECOND,
                                             static_cast<GstMessageType>(GST_MESSAGE_EOS | GST_MESSAGE_ERROR));
  bool ok = m != nullptr && GST_MESSAGE_TYPE(m) == GST_MESSAGE_EOS;
  if (m != nullptr && !ok) std::fprintf(stderr, "error: %s\n", errorOf(m).c_str());
  if (m != nullptr) gst_message_unref(m);
  gst_object_unref(bus);
  gst_element_set_state(pipeline, GST_STATE_NULL);
  return ok;
}

bool writePng(const std::string& path, const Gray& img) {
  GstElement* p = gst_parse_launch("appsrc name=src format=time ! pngenc ! filesink name=sink", nullptr);
  if (p == nullptr) return false;
  GstElement* src = gst_bin_get_by_name(GST_BIN(p), "src");
  GstElement* sink = gst_bin_get_by_name(GST_BIN(p), "sink");
  GstCaps* caps = grayCaps(img.width, img.height);
  g_object_set(src, "caps", caps, nullptr);
  g_object_set(sink, "location", path.c_str(), nullptr);
  gst_caps_unref(caps);
  gst_app_src_push_buffer(GST_APP_SRC(src), toBuffer(img));
  gst_app_src_end_of_stream(GST_APP_SRC(src));
  bool ok = runToEos(p);
  gst_object_unref(src);
  gst_object_unref(sink);
  gst_object_unref(p);
  return ok;
}

Gray cut(const Gray& img, int x0, int y0, int w, int h) {
  Gray t = blank(w, h);
  for (int y = 0; y < h; ++y) std::memcpy(&t.at(0, y), &img.pixels[std::size_t(y0 + y) * img.width + x0], w);
  return t;
}

// Keeps only the snapshot frames on the PNG branch.
GstPadProbeReturn keepSnapshots(GstPad*, GstPadProbeInfo* info, gpointer) {
  GstBuffer* buffer = GST_PAD_PROBE_INFO_BUFFER(info);
  if (buffer == nullptr || !GST_BUFFER_PTS_IS_VALID(buffer)) return GST_PAD_PROBE_OK;
  int frame = int(gst_util_uint64_scale_round(GST_BUFFER_PTS(buffer), kFps, GST_SECOND));
  for (int f : kSnapshotFrames)
    if (f == frame) return GST_PAD_PROBE_OK;
  return GST_PAD_PROBE_DROP;
}

std::string clockText(GstClockTime t) {
  char text[40];
  std::snprintf(text, sizeof text, "%" GST_TIME_FORMAT, GST_TIME_ARGS(t));
  return std::string(text).substr(0, 11);  // h:mm:ss.mmm
}

}  // namespace

int main(int argc, char** argv) {
  gst_init(&argc, &argv);
  std::string outDir = "demo-output";
  std::string device = "auto";
  int frames = 90;
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    if (arg.rfind("--device=", 0) == 0) device = arg.substr(9);
    else if (arg.rfind("--frames=", 0) == 0) frames = std::max(1, std::atoi(arg.c_str() + 9));
    else if (arg == "-h" || arg == "--help") {
      std::printf("usage: %s [OUTPUT_DIR] [--device=auto|cpu|cuda] [--frames=N]\n", argv[0]);
      return 0;
    } else outDir = arg;
  }

  // The element: installed, or in this build folder (so the demo runs without `meson devenv`).
  if (GstElementFactory* f = gst_element_factory_find("nccmatch")) gst_object_unref(f);
#ifdef NCCMATCH_PLUGIN_BUILD_DIR
  else gst_registry_scan_path(gst_registry_get(), NCCMATCH_PLUGIN_BUILD_DIR);
#endif
  GstElementFactory* factory = gst_element_factory_find("nccmatch");
  if (factory == nullptr) {
    std::fprintf(stderr, "nccmatch element not found: build the plugin, or run through `meson devenv -C <build>`\n");
    return 1;
  }
  gst_object_unref(factory);

  g_mkdir_with_parents((outDir + "/templates").c_str(), 0755);

  // The scene (fixed seed: the same video every run).
  std::mt19937 rng(2024);
  Gray bg = background(rng);
  std::vector<Mover> movers = {
      {"target", makeSprite(0, rng), 0.42, 0.40, 0.050, 0.071, 0.0, 0.5},
      {"checker", makeSprite(1, rng), 0.40, 0.38, 0.037, 0.043, 2.0, 1.8, -1, -1, true},
      {"cross", makeSprite(2, rng), 0.30, 0.42, 0.061, 0.029, 4.0, 3.1, frames / 2, frames / 2 + 20},
  };

  // Templates: cut out of the first frame where each sprite is.
  Gray first = renderFrame(bg, movers, 0, 0, &rng);
  std::string templateList;
  for (const Mover& m : movers) {
    std::string path = outDir + "/templates/" + m.name + ".png";
    if (!writePng(path, cut(first, m.x(0), m.y(0), kSprite, kSprite))) {
      std::fprintf(stderr, "could not write %s\n", path.c_str());
      return 1;
    }
    templateList += (templateList.empty() ? "" : ",") + path;
  }

  std::string scaleList;
  for (double s : kScales) {
    char text[16];
    std::snprintf(text, sizeof text, "%g", s);
    scaleList += (scaleList.empty() ? "" : ",") + std::string(text);
  }
  std::string avi = outDir + "/nccmatch-demo.avi";
  std::string description =
      "appsrc name=src format=time is-live=false ! "
      "nccmatch name=match display=true threshold=0.8 max-matches=1 device=" + device + " ! tee name=t "
      "t. ! queue ! videoconvert ! jpegenc quality=90 ! avimux ! filesink name=avi "
      "t. ! queue name=snapshots ! videoconvert ! pngenc ! multifilesink name=png";
  GError* error = nullptr;
  GstElement* pipeline = gst_parse_launch(description.c_str(), &error);
  if (pipeline == nullptr) {
    std::fprintf(stderr, "cannot build the pipeline: %s\n", error ? error->message : "?");
    return 1;
  }
  GstElement* src = gst_bin_get_by_name(GST_BIN(pipeline), "src");
  GstElement* match = gst_bin_get_by_name(GST_BIN(pipeline), "match");
  GstElement* aviSink = gst_bin_get_by_name(GST_BIN(pipeline), "avi");
  GstElement* pngSink = gst_bin_get_by_name(GST_BIN(pipeline), "png");
  GstElement* snapshots = gst_bin_get_by_name(GST_BIN(pipeline), "snapshots");
  std::string pngPattern = outDir + "/frame-%02d.png";
  g_object_set(match, "templates", templateList.c_str(), "scales", scaleList.c_str(), nullptr);
  g_object_set(aviSink, "location", avi.c_str(), nullptr);
  g_object_set(pngSink, "location", pngPattern.c_str(), nullptr);
  GstCaps* caps = grayCaps(kWidth, kHeight);
  g_object_set(src, "caps", caps, nullptr);
  gst_caps_unref(caps);
  GstPad* snapshotPad = gst_element_get_static_pad(snapshots, "src");
  gst_pad_add_probe(snapshotPad, GST_PAD_PROBE_TYPE_BUFFER, keepSnapshots, nullptr, nullptr);
  gst_object_unref(snapshotPad);

  std::printf("nccmatch demo: %d frames of %dx%d GRAY8, templates %s at scales %s (device=%s)\n", frames, kWidth,
              kHeight, templateList.c_str(), scaleList.c_str(), device.c_str());
  std::printf("%-6s %-11s  %-34s %-34s %-34s\n", "frame", "time", "target", "checker (zooming)", "cross");

  if (gst_element_set_state(pipeline, GST_STATE_PLAYING) == GST_STATE_CHANGE_FAILURE) {
    GstBus* bus = gst_element_get_bus(pipeline);
    if (GstMessage* m = gst_bus_pop_filtered(bus, GST_MESSAGE_ERROR)) {
      std::fprintf(stderr, "error: %s\n", errorOf(m).c_str());
      gst_message_unref(m);
    }
    gst_object_unref(bus);
    return 1;
  }
  for (int f = 0; f < frames; ++f) {
    GstBuffer* buffer = toBuffer(renderFrame(bg, movers, f, kSensorNoise, &rng));
    GST_BUFFER_PTS(buffer) = gst_util_uint64_scale(f, GST_SECOND, kFps);
    GST_BUFFER_DURATION(buffer) = gst_util_uint64_scale(1, GST_SECOND, kFps);
    gst_app_src_push_buffer(GST_APP_SRC(src), buffer);
  }
  gst_app_src_end_of_stream(GST_APP_SRC(src));

  int found = 0, expected = 0, wrong = 0, falseAlarms = 0;
  bool ok = false;
  GstBus* bus = gst_element_get_bus(pipeline);
  while (GstMessage* m = gst_bus_timed_pop_filtered(
             bus, 120 * GST_SECOND,
             static_cast<GstMessageType>(GST_MESSAGE_EOS | GST_MESSAGE_ERROR | GST_MESSAGE_WARNING |
                                         GST_MESSAGE_ELEMENT))) {
    GstMessageType type = GST_MESSAGE_TYPE(m);
    const GstStructure* s = gst_message_get_structure(m);
    if (type == GST_MESSAGE_ELEMENT && gst_structure_has_name(s, "nccmatch")) {
      guint64 ts = 0;
      gst_structure_get_uint64(s, "timestamp", &ts);
      int f = int(gst_util_uint64_scale_round(ts, kFps, GST_SECOND));
      std::string cells[3] = {"-", "-", "-"};
      bool seen[3] = {false, false, false};
      const GValue* list = gst_structure_get_value(s, "matches");
      for (guint i = 0; list && i < gst_value_list_get_size(list); ++i) {
        const GstStructure* match = gst_value_get_structure(gst_value_list_get_value(list, i));
        guint t = 0, x = 0, y = 0;
        double score = 0, scale = 0;
        gst_structure_get(match, "template", G_TYPE_UINT, &t, "x", G_TYPE_UINT, &x, "y", G_TYPE_UINT, &y, "score",
                          G_TYPE_DOUBLE, &score, "scale", G_TYPE_DOUBLE, &scale, nullptr);
        if (t >= 3) continue;
        const Mover& mv = movers[t];
        bool right = mv.visible(f) && int(x) == mv.x(f) && int(y) == mv.y(f) && scale == kScales[mv.scaleIndex(f)];
        char cell[64];
        std::snprintf(cell, sizeof cell, "(%3u,%3u) x%.3f %.3f %s", x, y, scale, score,
                      right ? "ok" : (mv.visible(f) ? "WRONG" : "FALSE ALARM"));
        cells[t] = cell;
        seen[t] = true;
        if (right) ++found;
        else if (mv.visible(f)) ++wrong;
        else ++falseAlarms;
      }
      for (int t = 0; t < 3; ++t) {
        if (movers[t].visible(f)) ++expected;
        if (!seen[t] && !movers[t].visible(f)) cells[t] = "- (hidden)";
        else if (!seen[t]) cells[t] = "- MISSED";
      }
      std::printf("%-6d %-11s  %-34s %-34s %-34s\n", f, clockText(ts).c_str(), cells[0].c_str(), cells[1].c_str(),
                  cells[2].c_str());
    } else if (type == GST_MESSAGE_WARNING) {
      std::fprintf(stderr, "warning: %s\n", errorOf(m).c_str());
    } else if (type == GST_MESSAGE_ERROR) {
      std::fprintf(stderr, "error: %s\n", errorOf(m).c_str());
      gst_message_unref(m);
      break;
    } else if (type == GST_MESSAGE_EOS) {
      ok = true;
      gst_message_unref(m);
      break;
    }
    gst_message_unref(m);
  }
  gst_object_unref(bus);
  gst_element_set_state(pipeline, GST_STATE_NULL);
  for (GstElement* e : {src, match, aviSink, pngSink, snapshots}) gst_object_unref(e);
  gst_object_unref(pipeline);
  if (!ok) return 1;

  std::printf("\n%d of %d visible sprites found at their exact position, %d wrong, %d false alarms\n", found,
              expected, wrong, falseAlarms);
  // multifilesink numbered the snapshots 0, 1, 2: name them after their frames instead.
  gchar* absolute = g_canonicalize_filename(outDir.c_str(), nullptr);
  std::string where = absolute;
  g_free(absolute);
  std::printf("annotated video:  %s/nccmatch-demo.avi (MJPEG in AVI; any video player opens it)\n", where.c_str());
  int written = 0;
  for (int f : kSnapshotFrames) {
    if (f >= frames) continue;
    char from[32], to[32];
    std::snprintf(from, sizeof from, "/frame-%02d.png", written++);
    std::snprintf(to, sizeof to, "/frame-%03d.png", f);
    if (g_rename((outDir + from).c_str(), (outDir + to).c_str()) == 0)
      std::printf("annotated frame:  %s%s\n", where.c_str(), to);
  }
  std::printf("templates:        %s/templates/{target,checker,cross}.png\n", where.c_str());
  return (wrong == 0 && falseAlarms == 0 && found == expected) ? 0 : 2;
}
