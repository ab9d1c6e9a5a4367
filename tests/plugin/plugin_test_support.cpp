#include "plugin_test_support.hpp"

#include <glib/gstdio.h>
#include <gst/app/gstappsrc.h>

#include <cstdio>
#include <cstring>
#include <stdexcept>

namespace nccmatch::test {

void initGstreamer() {
  static bool done = [] {
    gst_init(nullptr, nullptr);
    if (gst_element_factory_find("nccmatch") == nullptr)
      gst_registry_scan_path(gst_registry_get(), NCCMATCH_PLUGIN_BUILD_DIR);
    if (gst_element_factory_find("nccmatch") == nullptr) {
      // The build folder moved (e.g. copied to a GPU host): <build>/tests/plugin/test_x -> <build>/plugin.
      gchar* exe = g_file_read_link("/proc/self/exe", nullptr);
      if (exe != nullptr) {
        gchar* dir = g_path_get_dirname(exe);
        gchar* plugin = g_build_filename(dir, "..", "..", "plugin", nullptr);
        gst_registry_scan_path(gst_registry_get(), plugin);
        g_free(plugin);
        g_free(dir);
        g_free(exe);
      }
    }
    return true;
  }();
  (void)done;
}

TempDir::TempDir() {
  GError* error = nullptr;
  gchar* dir = g_dir_make_tmp("nccmatch-test-XXXXXX", &error);
  if (dir == nullptr) throw std::runtime_error(error->message);
  dir_ = dir;
  g_free(dir);
}

TempDir::~TempDir() {
  GDir* dir = g_dir_open(dir_.c_str(), 0, nullptr);
  if (dir != nullptr) {
    while (const gchar* name = g_dir_read_name(dir)) {
      std::string p = path(name);
      if (g_file_test(p.c_str(), G_FILE_TEST_IS_DIR))
        g_rmdir(p.c_str());
      else
        g_remove(p.c_str());
    }
    g_dir_close(dir);
  }
  g_rmdir(dir_.c_str());
}

std::string TempDir::path(const std::string& fileName) const { return dir_ + "/" + fileName; }

void writeBytes(const std::string& path, const std::vector<uint8_t>& bytes) {
  FILE* f = std::fopen(path.c_str(), "wb");
  if (f == nullptr) throw std::runtime_error("cannot write " + path);
  if (!bytes.empty()) std::fwrite(bytes.data(), 1, bytes.size(), f);
  std::fclose(f);
}

void writePgm(const std::string& path, const TemplateImage& image) {
  std::string header = "P5\n" + std::to_string(image.width) + " " + std::to_string(image.height) + "\n255\n";
  std::vector<uint8_t> bytes(header.begin(), header.end());
  bytes.insert(bytes.end(), image.pixels.begin(), image.pixels.end());
  writeBytes(path, bytes);
}

namespace {

// pngenc writes one frame (caps and buffer, both taken) to path; throws where it does not.
void encodePng(const std::string& path, GstCaps* caps, GstBuffer* buffer) {
  GError* error = nullptr;
  GstElement* pipeline = gst_parse_launch("appsrc name=src format=time ! pngenc ! filesink name=sink", &error);
  if (pipeline == nullptr) {
    gst_caps_unref(caps);
    gst_buffer_unref(buffer);
    throw std::runtime_error(error ? error->message : "cannot build pngenc pipeline");
  }
  GstElement* src = gst_bin_get_by_name(GST_BIN(pipeline), "src");
  GstElement* sink = gst_bin_get_by_name(GST_BIN(pipeline), "sink");
  g_object_set(sink, "location", path.c_str(), nullptr);
  g_object_set(src, "caps", caps, nullptr);
  gst_caps_unref(caps);
  GST_BUFFER_PTS(buffer) = 0;
  GST_BUFFER_DURATION(buffer) = GST_SECOND;
  gst_element_set_state(pipeline, GST_STATE_PLAYING);
  gst_app_src_push_buffer(GST_APP_SRC(src), buffer);
  gst_app_src_end_of_stream(GST_APP_SRC(src));
  GstBus* bus = gst_element_get_bus(pipeline);
  GstMessage* message = gst_bus_timed_pop_filtered(
      bus, 10 * GST_SECOND, static_cast<GstMessageType>(GST_MESSAGE_EOS | GST_MESSAGE_ERROR));
  bool ok = message != nullptr && GST_MESSAGE_TYPE(message) == GST_MESSAGE_EOS;
  if (message != nullptr) gst_message_unref(message);
  gst_object_unref(bus);
  gst_element_set_state(pipeline, GST_STATE_NULL);
  gst_object_unref(src);
  gst_object_unref(sink);
  gst_object_unref(pipeline);
  if (!ok) throw std::runtime_error("pngenc failed to write " + path);
}

}  // namespace

void writePng(const std::string& path, const TemplateImage& image) {
  FrameLayout layout = makeLayout(GST_VIDEO_FORMAT_GRAY8, image.width, image.height, 0);
  Image luma;
  luma.width = image.width;
  luma.height = image.height;
  luma.stride = image.width;
  luma.bytes = image.pixels;
  encodePng(path, capsFor(layout), makeFrame(layout, luma));
}

void writePngWithAlpha(const std::string& path, const TemplateImage& image, const std::vector<uint8_t>& alpha) {
  GstVideoInfo info;
  gst_video_info_set_format(&info, GST_VIDEO_FORMAT_RGBA, guint(image.width), guint(image.height));
  GST_VIDEO_INFO_FPS_N(&info) = 1;
  GST_VIDEO_INFO_FPS_D(&info) = 1;
  GstBuffer* buffer = gst_buffer_new_allocate(nullptr, GST_VIDEO_INFO_SIZE(&info), nullptr);
  GstMapInfo map;
  gst_buffer_map(buffer, &map, GST_MAP_WRITE);
  const std::size_t stride = std::size_t(GST_VIDEO_INFO_PLANE_STRIDE(&info, 0));
  for (int y = 0; y < image.height; ++y) {
    for (int x = 0; x < image.width; ++x) {
      uint8_t* p = map.data + std::size_t(y) * stride + std::size_t(x) * 4;
      const std::size_t k = std::size_t(y) * image.width + x;
      p[0] = p[1] = p[2] = image.pixels[k];
      p[3] = alpha[k];
    }
  }
  gst_buffer_unmap(buffer, &map);
  encodePng(path, gst_video_info_to_caps(&info), buffer);
}

FrameLayout makeLayout(GstVideoFormat format, int width, int height, int lumaPadding) {
  FrameLayout layout;
  layout.format = format;
  layout.width = width;
  layout.height = height;
  GstVideoInfo info;
  gst_video_info_set_format(&info, format, width, height);
  for (guint p = 0; p < GST_VIDEO_INFO_N_PLANES(&info); ++p) {
    layout.offset[p] = GST_VIDEO_INFO_PLANE_OFFSET(&info, p);
    layout.stride[p] = GST_VIDEO_INFO_PLANE_STRIDE(&info, p);
  }
  layout.size = GST_VIDEO_INFO_SIZE(&info);
  if (lumaPadding <= 0) return layout;

  // Custom layout: each plane's natural row length plus the padding, planes one after another.
  layout.videoMeta = true;
  int chromaWidth = (width + 1) / 2, chromaHeight = (height + 1) / 2;
  int rowBytes[3] = {width, 0, 0};
  int rows[3] = {height, 0, 0};
  int planes = 1;
  if (format == GST_VIDEO_FORMAT_I420) {
    planes = 3;
    rowBytes[1] = rowBytes[2] = chromaWidth;
    rows[1] = rows[2] = chromaHeight;
  } else if (format == GST_VIDEO_FORMAT_NV12) {
    planes = 2;
    rowBytes[1] = 2 * chromaWidth;
    rows[1] = chromaHeight;
  }
  gsize offset = 0;
  for (int p = 0; p < planes; ++p) {
    layout.offset[p] = offset;
    layout.stride[p] = rowBytes[p] + lumaPadding;
    offset += gsize(layout.stride[p]) * rows[p];
  }
  layout.size = offset;
  return layout;
}

GstCaps* capsFor(const FrameLayout& layout) {
  return gst_caps_new_simple("video/x-raw", "format", G_TYPE_STRING, gst_video_format_to_string(layout.format),
                             "width", G_TYPE_INT, layout.width, "height", G_TYPE_INT, layout.height, "framerate",
                             GST_TYPE_FRACTION, 30, 1, nullptr);
}

GstBuffer* makeFrame(const FrameLayout& layout, const Image& luma) {
  GstBuffer* buffer = gst_buffer_new_allocate(nullptr, layout.size, nullptr);
  GstMapInfo map;
  gst_buffer_map(buffer, &map, GST_MAP_WRITE);
  std::memset(map.data, kPoison, map.size);
  for (int y = 0; y < layout.height; ++y)
    std::memcpy(map.data + layout.offset[0] + gsize(y) * layout.stride[0], &luma.bytes[y * luma.stride],
                layout.width);
  // Chroma rows (not their padding) set to neutral gray.
  int chromaWidth = (layout.width + 1) / 2, chromaHeight = (layout.height + 1) / 2;
  if (layout.format == GST_VIDEO_FORMAT_I420) {
    for (int p = 1; p <= 2; ++p)
      for (int y = 0; y < chromaHeight; ++y)
        std::memset(map.data + layout.offset[p] + gsize(y) * layout.stride[p], 128, chromaWidth);
  } else if (layout.format == GST_VIDEO_FORMAT_NV12) {
    for (int y = 0; y < chromaHeight; ++y)
      std::memset(map.data + layout.offset[1] + gsize(y) * layout.stride[1], 128, 2 * chromaWidth);
  }
  gst_buffer_unmap(buffer, &map);
  if (layout.videoMeta) {
    GstVideoInfo info;
    gst_video_info_set_format(&info, layout.format, layout.width, layout.height);
    gsize offsets[GST_VIDEO_MAX_PLANES];
    gint strides[GST_VIDEO_MAX_PLANES];
    for (int p = 0; p < GST_VIDEO_MAX_PLANES; ++p) {
      offsets[p] = layout.offset[p];
      strides[p] = layout.stride[p];
    }
    gst_buffer_add_video_meta_full(buffer, GST_VIDEO_FRAME_FLAG_NONE, layout.format, layout.width, layout.height,
                                   GST_VIDEO_INFO_N_PLANES(&info), offsets, strides);
  }
  return buffer;
}

Image readLuma(GstBuffer* buffer, const FrameLayout& layout) {
  Image luma;
  luma.width = layout.width;
  luma.height = layout.height;
  luma.stride = std::size_t(layout.stride[0]);
  luma.bytes.resize(luma.stride * luma.height);
  GstMapInfo map;
  gst_buffer_map(buffer, &map, GST_MAP_READ);
  for (int y = 0; y < layout.height; ++y)
    std::memcpy(&luma.bytes[y * luma.stride], map.data + layout.offset[0] + gsize(y) * layout.stride[0], luma.stride);
  gst_buffer_unmap(buffer, &map);
  return luma;
}

std::vector<GstMessage*> popMessages(GstBus* bus, GstMessageType type) {
  std::vector<GstMessage*> messages;
  while (GstMessage* message = gst_bus_pop_filtered(bus, type)) messages.push_back(message);
  return messages;
}

void unrefMessages(std::vector<GstMessage*>* messages) {
  for (GstMessage* m : *messages) gst_message_unref(m);
  messages->clear();
}

std::vector<const GstStructure*> structuresNamed(const std::vector<GstMessage*>& messages, const char* name) {
  std::vector<const GstStructure*> found;
  for (GstMessage* m : messages) {
    const GstStructure* s = gst_message_get_structure(m);
    if (s != nullptr && gst_structure_has_name(s, name)) found.push_back(s);
  }
  return found;
}

std::string messageText(GstMessage* message) {
  GError* error = nullptr;
  gchar* debug = nullptr;
  if (GST_MESSAGE_TYPE(message) == GST_MESSAGE_ERROR)
    gst_message_parse_error(message, &error, &debug);
  else if (GST_MESSAGE_TYPE(message) == GST_MESSAGE_WARNING)
    gst_message_parse_warning(message, &error, &debug);
  std::string text = error != nullptr ? error->message : "";
  g_clear_error(&error);
  g_free(debug);
  return text;
}

bool drainElement(GstHarness* harness) {
  GstQuery* drain = gst_query_new_drain();
  const bool answered = gst_pad_peer_query(harness->srcpad, drain);
  gst_query_unref(drain);
  return answered;
}

GstFlowReturn pushForFlow(GstHarness* harness, GstBuffer* buffer) {
  GstBuffer* again = gst_buffer_copy(buffer);
  const GstFlowReturn flow = gst_harness_push(harness, buffer);
  if (flow != GST_FLOW_OK) {
    gst_buffer_unref(again);
    return flow;
  }
  drainElement(harness);
  return gst_harness_push(harness, again);
}

}  // namespace nccmatch::test
