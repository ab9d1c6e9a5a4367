#include "template_loader.hpp"

#include <gst/app/gstappsink.h>
#include <gst/gst.h>
#include <gst/video/video.h>

#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstring>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "jpeg_header.hpp"
#include "pipeline_errors.hpp"
#include "pipeline_release.hpp"
#include "pnm_header.hpp"

namespace nccmatch::plugin {

namespace {

// How long a file may take to produce its first decoded image.
constexpr GstClockTime kDecodeTimeout = 10 * GST_SECOND;
// How long loadTemplateFile waits for the decoding thread: the decoding's bound and its teardown.
constexpr std::chrono::seconds kLoadTimeout(11);
// The bytes a PNM header (comments included) or a JPEG's segments before its first scan are
// looked for in.
constexpr std::size_t kPnmHeadBytes = 64 * 1024;

// Frees the pipeline only once it is in NULL throughout (pipeline_release.hpp).
struct PipelineDeleter {
  void operator()(GstElement* pipeline) const { releasePipeline(pipeline); }
};
using PipelinePtr = std::unique_ptr<GstElement, PipelineDeleter>;

bool fail(TemplateLoadError* error, TemplateLoadFailure kind, const std::string& path,
          const std::string& reason) {
  if (error != nullptr) {
    error->kind = kind;
    error->file = path;
    error->message = "template file '" + path + "': " + reason;
  }
  return false;
}

std::string errorText(GstMessage* message) {
  GError* gerror = nullptr;
  gchar* debug = nullptr;
  gst_message_parse_error(message, &gerror, &debug);
  std::string text = gerror != nullptr ? gerror->message : "unknown error";
  g_clear_error(&gerror);
  g_free(debug);
  return text;
}

// The mask of an AYUV sample of the same image (its alpha bytes; alpha passes through videoconvert
// unscaled): empty when no pixel is below kMaskThreshold.
bool copyAlphaMask(GstSample* sample, const std::string& path, nccmatch::TemplateImage* image,
                   TemplateLoadError* error) {
  GstVideoInfo info;
  GstCaps* caps = gst_sample_get_caps(sample);
  GstBuffer* buffer = gst_sample_get_buffer(sample);
  if (caps == nullptr || buffer == nullptr || !gst_video_info_from_caps(&info, caps))
    return fail(error, TemplateLoadFailure::Undecodable, path, "the decoder produced no usable alpha channel");
  GstVideoFrame frame;
  if (!gst_video_frame_map(&frame, &info, buffer, GST_MAP_READ))
    return fail(error, TemplateLoadFailure::Undecodable, path, "could not map the decoded alpha channel");
  const int width = GST_VIDEO_FRAME_WIDTH(&frame), height = GST_VIDEO_FRAME_HEIGHT(&frame);
  bool ok = width == image->width && height == image->height;
  if (ok) {
    const auto* data = static_cast<const uint8_t*>(GST_VIDEO_FRAME_PLANE_DATA(&frame, 0));
    const std::size_t stride = GST_VIDEO_FRAME_PLANE_STRIDE(&frame, 0);
    std::vector<uint8_t> mask(std::size_t(width) * height);
    bool ignoresAny = false;
    for (int y = 0; y < height; ++y) {
      for (int x = 0; x < width; ++x) {
        const uint8_t alpha = data[std::size_t(y) * stride + std::size_t(x) * 4];  // AYUV: A first
        mask[std::size_t(y) * width + x] = alpha < kMaskThreshold ? 0 : 255;
        ignoresAny = ignoresAny || alpha < kMaskThreshold;
      }
    }
    if (ignoresAny) image->mask = std::move(mask);
    else image->mask.clear();
  }
  gst_video_frame_unmap(&frame);
  if (!ok) return fail(error, TemplateLoadFailure::Undecodable, path, "its alpha channel has another size than its image");
  return true;
}

// Copies the luma plane of a GRAY8 sample row by row (the sample's stride may exceed its width).
bool copySample(GstSample* sample, const std::string& path, nccmatch::TemplateImage* image,
                TemplateLoadError* error) {
  GstVideoInfo info;
  GstCaps* caps = gst_sample_get_caps(sample);
  GstBuffer* buffer = gst_sample_get_buffer(sample);
  if (caps == nullptr || buffer == nullptr || !gst_video_info_from_caps(&info, caps))
    return fail(error, TemplateLoadFailure::Undecodable, path, "the decoder produced no usable image");
  GstVideoFrame frame;
  if (!gst_video_frame_map(&frame, &info, buffer, GST_MAP_READ))
    return fail(error, TemplateLoadFailure::Undecodable, path, "could not map the decoded image");
  int width = GST_VIDEO_FRAME_WIDTH(&frame);
  int height = GST_VIDEO_FRAME_HEIGHT(&frame);
  const auto* data = static_cast<const uint8_t*>(GST_VIDEO_FRAME_PLANE_DATA(&frame, 0));
  std::size_t stride = GST_VIDEO_FRAME_PLANE_STRIDE(&frame, 0);
  image->name = templateNameFromPath(path);
  image->width = width;
  image->height = height;
  image->pixels.resize(std::size_t(width) * height);
  for (int y = 0; y < height; ++y)
    std::memcpy(image->pixels.data() + std::size_t(y) * width, data + y * stride, width);
  gst_video_frame_unmap(&frame);
  return true;
}

// decodebin's "autoplug-select" answers (GstAutoplugSelectResult, which no public header declares).
constexpr int kAutoplugTry = 0;
constexpr int kAutoplugSkip = 2;

// Demuxers a template never needs, each found by tests/fuzz/fuzz_template_loader taking the
// loader past its 10-second bound: libav's (avdemux_*; avdemux_gif spun for over a minute on a
// truncated GIF header, "GIF8" and 5 bytes, and the pipeline cannot be stopped while its
// streaming thread is inside the demuxer), and flvdemux (an "FLV" header with a bad tag: its
// error, "Got EOS before any data", was dropped by decodebin, which was still trying it, so the
// load failed only at the bound), and rmdemux (a RealMedia ".RMF" header and a few bytes: the
// load waited out the bound). Skipped, such a file has no decoder and fails at once. The other
// demuxers stay: a video file in a container they read gives its first frame.
int skipContainerDemuxers(GstElement*, GstPad*, GstCaps*, GstElementFactory* factory, gpointer) {
  const gchar* name = GST_OBJECT_NAME(factory);
  return g_str_has_prefix(name, "avdemux_") || std::strcmp(name, "flvdemux") == 0 || std::strcmp(name, "rmdemux") == 0
             ? kAutoplugSkip
             : kAutoplugTry;
}

// Nor is any audio stream: decodebin stops at audio caps (the pad is left unlinked and the load
// fails as undecodable) instead of plugging an audio decoder. One of them, gmedec, aborts the
// process inside libgme's assertions on a truncated AY file ("ZXAYEMUL" and 20 bytes, found by
// tests/fuzz/fuzz_template_loader).
gboolean expandOnlyNonAudio(GstElement*, GstPad*, GstCaps* caps, gpointer) {
  if (caps == nullptr || gst_caps_is_any(caps) || gst_caps_is_empty(caps)) return TRUE;
  const gchar* name = gst_structure_get_name(gst_caps_get_structure(caps, 0));
  return !g_str_has_prefix(name, "audio/");
}

// Links two pads without GStreamer's link-time caps checks: they query the converters' long
// lists of caps, most of the time a load takes. The pipeline is fixed and known to fit, and
// caps are negotiated when the image flows, where any mismatch is an error message as before.
bool linkPads(GstPad* src, GstPad* sink) {
  return gst_pad_link_full(src, sink, GST_PAD_LINK_CHECK_NOTHING) == GST_PAD_LINK_OK;
}

bool linkElements(GstElement* from, GstElement* to) {
  GstPad* src = gst_element_get_static_pad(from, "src");
  GstPad* sink = gst_element_get_static_pad(to, "sink");
  const bool linked = src != nullptr && sink != nullptr && linkPads(src, sink);
  if (src != nullptr) gst_object_unref(src);
  if (sink != nullptr) gst_object_unref(sink);
  return linked;
}

// decodebin's "pad-added": its first raw video stream goes to the tee. Any other pad (a stream
// decodebin stopped at, such as audio) stays unlinked, so its data ends the load as an error.
void linkDecodedVideo(GstElement*, GstPad* pad, gpointer tee) {
  GstCaps* caps = gst_pad_get_current_caps(pad);
  if (caps == nullptr) caps = gst_pad_query_caps(pad, nullptr);
  const bool video = caps != nullptr && !gst_caps_is_empty(caps) && !gst_caps_is_any(caps) &&
                     g_str_has_prefix(gst_structure_get_name(gst_caps_get_structure(caps, 0)), "video/x-raw");
  if (caps != nullptr) gst_caps_unref(caps);
  GstPad* sink = gst_element_get_static_pad(GST_ELEMENT(tee), "sink");
  if (video && !gst_pad_is_linked(sink)) linkPads(pad, sink);
  gst_object_unref(sink);
}

// The decoding pipeline: filesrc ! (pnmdec | pngdec | decodebin) ! tee, and from the tee two branches,
// queue ! videoconvert ! video/x-raw,format=GRAY8 ! appsink "sink", and the same to AYUV into
// appsink "alpha" (its alpha channel: 255 everywhere for an image without one). Null, with the
// missing element named in *why, when an element is not installed.
GstElement* makeDecodingPipeline(const char* decoderName, std::string* why) {
  const bool fixed = std::strcmp(decoderName, "decodebin") != 0;  // a decoder of one format
  GstElement* pipeline = gst_pipeline_new(nullptr);
  auto add = [&](const char* factory, const char* name) -> GstElement* {
    GstElement* element = gst_element_factory_make(factory, name);
    if (element == nullptr) {
      if (why->empty()) *why = std::string("no element \"") + factory + "\"";
      return nullptr;
    }
    gst_bin_add(GST_BIN(pipeline), element);
    return element;
  };
  GstElement* src = add("filesrc", "src");
  GstElement* decoder = add(decoderName, "decoder");
  GstElement* tee = add("tee", "split");
  bool linked = src != nullptr && decoder != nullptr && tee != nullptr && linkElements(src, decoder) &&
                (!fixed || linkElements(decoder, tee));
  struct Branch {
    const char* format;
    const char* sink;
  };
  for (const Branch& b : {Branch{"GRAY8", "sink"}, Branch{"AYUV", "alpha"}}) {
    GstElement* queue = add("queue", nullptr);
    GstElement* convert = add("videoconvert", nullptr);
    GstElement* filter = add("capsfilter", nullptr);
    GstElement* sink = add("appsink", b.sink);
    if (queue == nullptr || convert == nullptr || filter == nullptr || sink == nullptr || tee == nullptr) {
      linked = false;
      continue;
    }
    GstCaps* caps = gst_caps_new_simple("video/x-raw", "format", G_TYPE_STRING, b.format, nullptr);
    g_object_set(filter, "caps", caps, nullptr);
    gst_caps_unref(caps);
    g_object_set(sink, "sync", FALSE, "max-buffers", 1u, nullptr);
    GstPad* teeSrc = gst_element_request_pad_simple(tee, "src_%u");
    GstPad* queueSink = gst_element_get_static_pad(queue, "sink");
    linked = linked && teeSrc != nullptr && linkPads(teeSrc, queueSink) && linkElements(queue, convert) &&
             linkElements(convert, filter) && linkElements(filter, sink);
    if (teeSrc != nullptr) gst_object_unref(teeSrc);
    gst_object_unref(queueSink);
  }
  if (!linked) {
    if (why->empty()) *why = "its elements did not link";
    gst_object_unref(pipeline);
    return nullptr;
  }
  if (!fixed) g_signal_connect(decoder, "pad-added", G_CALLBACK(linkDecodedVideo), tee);
  return pipeline;
}

}  // namespace

std::string templateNameFromPath(const std::string& path) {
  gchar* base = g_path_get_basename(path.c_str());
  std::string name(base);
  g_free(base);
  std::size_t dot = name.rfind('.');
  if (dot != std::string::npos && dot > 0) name.erase(dot);
  return name;
}

// Decodes `path` on the calling thread (loadTemplateFile bounds it in time).
static bool decodeTemplateFile(const std::string& path, nccmatch::TemplateImage* image, TemplateLoadError* error) {
  if (path.empty()) return fail(error, TemplateLoadFailure::NotFound, path, "the file name is empty");
  if (!g_file_test(path.c_str(), G_FILE_TEST_EXISTS))
    return fail(error, TemplateLoadFailure::NotFound, path, "no such file");
  if (g_file_test(path.c_str(), G_FILE_TEST_IS_DIR))
    return fail(error, TemplateLoadFailure::Unreadable, path, "it is a directory, not an image file");
  FILE* probe = std::fopen(path.c_str(), "rb");
  if (probe == nullptr) return fail(error, TemplateLoadFailure::Unreadable, path, "cannot be opened for reading");
  std::vector<uint8_t> head(kPnmHeadBytes);
  head.resize(std::fread(head.data(), 1, head.size(), probe));
  std::fseek(probe, 0, SEEK_END);
  const long fileSize = std::ftell(probe);
  std::fclose(probe);
  // GStreamer's type finder needs more bytes than a tiny PNM image (e.g. a 2x2 PGM) has, so PNM
  // files (magic "P1".."P6") go straight to pnmdec, once their header adds up (PnmHeader: pnmdec
  // crashes on some that do not); everything else is typefound by decodebin.
  bool pnm = head.size() >= 2 && head[0] == 'P' && head[1] >= '1' && head[1] <= '6';
  const std::size_t bytes = fileSize < 0 ? 0 : std::size_t(fileSize);
  if (pnm) {
    PnmHeader header;
    std::string why;
    if (!parsePnmHeader(head.data(), head.size(), bytes, &header, &why))
      return fail(error, TemplateLoadFailure::Undecodable, path, "not a decodable image (" + why + ")");
  }
  // A JPEG's segments are walked to its first scan first (JpegHeader: jpegdec spins forever on
  // some that do not add up).
  if (looksLikeJpeg(head.data(), head.size())) {
    std::string why;
    if (!checkJpegHeader(head.data(), head.size(), bytes, &why))
      return fail(error, TemplateLoadFailure::Undecodable, path, "not a decodable image (" + why + ")");
  }
  // PNG files go straight to pngdec too: decodebin2's teardown raced with itself on a PNG now and
  // then (an abort, "Attempt to unlock mutex that was not locked": tests/fuzz/fuzz_template_loader).
  static const uint8_t kPngMagic[8] = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n'};
  const bool png = head.size() >= 8 && std::memcmp(head.data(), kPngMagic, 8) == 0;
  const char* decoderName = pnm ? "pnmdec" : png ? "pngdec" : "decodebin";
  std::string buildError;
  GstElement* raw = makeDecodingPipeline(decoderName, &buildError);
  if (raw == nullptr)
    return fail(error, TemplateLoadFailure::Undecodable, path,
                "cannot build the decoding pipeline (" + buildError + "); are gst-plugins-base installed?");
  PipelinePtr pipeline(raw);
  // Every element's error reaches the bus below, also one that decodebin would drop.
  const ForwardedPipelineErrors forwardedErrors(raw);
  GstElement* src = gst_bin_get_by_name(GST_BIN(raw), "src");
  g_object_set(src, "location", path.c_str(), nullptr);
  gst_object_unref(src);
  if (GstElement* decoder = pnm || png ? nullptr : gst_bin_get_by_name(GST_BIN(raw), "decoder")) {
    // Decoding stops at raw video only: by default decodebin also stops at raw text, and a file
    // typefound as subtitles (an LRC file: "[" and "P4" among zeros, found by
    // tests/fuzz/fuzz_template_loader) then never reached the sinks, neither as an image nor as
    // an error, and the load failed only at the 10-second bound. Now such a stream has no
    // decoder to raw video and fails at once ("missing decoder").
    GstCaps* videoOnly = gst_caps_from_string("video/x-raw(ANY)");
    g_object_set(decoder, "caps", videoOnly, nullptr);
    gst_caps_unref(videoOnly);
    g_signal_connect(decoder, "autoplug-select", G_CALLBACK(skipContainerDemuxers), nullptr);
    g_signal_connect(decoder, "autoplug-continue", G_CALLBACK(expandOnlyNonAudio), nullptr);
    gst_object_unref(decoder);
  }

  // Preroll: the appsink holds the first decoded image once the pipeline reaches PAUSED.
  if (gst_element_set_state(raw, GST_STATE_PAUSED) == GST_STATE_CHANGE_FAILURE) {
    GstBus* bus = gst_element_get_bus(raw);
    GstMessage* message = gst_bus_pop_filtered(bus, GST_MESSAGE_ERROR);
    std::string why = message != nullptr ? errorText(message) : "the decoder refused to start";
    if (message != nullptr) gst_message_unref(message);
    gst_object_unref(bus);
    return fail(error, TemplateLoadFailure::Undecodable, path, "not a decodable image (" + why + ")");
  }
  GstBus* bus = gst_element_get_bus(raw);
  GstMessage* message = gst_bus_timed_pop_filtered(
      bus, kDecodeTimeout,
      static_cast<GstMessageType>(GST_MESSAGE_ASYNC_DONE | GST_MESSAGE_ERROR | GST_MESSAGE_EOS));
  gst_object_unref(bus);
  if (message == nullptr)
    return fail(error, TemplateLoadFailure::Undecodable, path, "no image was decoded within 10 seconds");
  GstMessageType type = GST_MESSAGE_TYPE(message);
  std::string why = type == GST_MESSAGE_ERROR ? errorText(message) : "";
  gst_message_unref(message);
  if (type == GST_MESSAGE_ERROR)
    return fail(error, TemplateLoadFailure::Undecodable, path, "not a decodable image (" + why + ")");
  if (type == GST_MESSAGE_EOS)
    return fail(error, TemplateLoadFailure::Undecodable, path, "the file holds no image");

  GstElement* sink = gst_bin_get_by_name(GST_BIN(raw), "sink");
  GstSample* sample = gst_app_sink_try_pull_preroll(GST_APP_SINK(sink), 0);
  gst_object_unref(sink);
  if (sample == nullptr)
    return fail(error, TemplateLoadFailure::Undecodable, path, "the decoder produced no image");
  bool copied = copySample(sample, path, image, error);
  gst_sample_unref(sample);
  if (!copied) return false;
  GstElement* alphaSink = gst_bin_get_by_name(GST_BIN(raw), "alpha");
  GstSample* alpha = gst_app_sink_try_pull_preroll(GST_APP_SINK(alphaSink), 0);
  gst_object_unref(alphaSink);
  if (alpha == nullptr)
    return fail(error, TemplateLoadFailure::Undecodable, path, "the decoder produced no alpha channel");
  copied = copyAlphaMask(alpha, path, image, error);
  gst_sample_unref(alpha);
  return copied;
}

namespace {

// One load handed to the decoding thread, and its outcome.
struct DecodeJob {
  std::string path;
  std::mutex mutex;
  std::condition_variable done;
  bool finished = false;
  bool ok = false;
  nccmatch::TemplateImage image;
  TemplateLoadError error;
};

// The thread that decodes template files, one at a time, for as long as the process runs: the
// per-thread data GLib and GStreamer make stay with a live thread (a thread per load would leave
// them to a finished one, which LeakSanitizer reports as leaks). A load that outlasts the bound
// leaves its thread stuck in the decoder; the next load starts a new one.
class DecodingThread {
 public:
  static std::shared_ptr<DecodingThread> start() {
    auto thread = std::make_shared<DecodingThread>();
    std::thread([thread] { thread->run(); }).detach();
    return thread;
  }
  void submit(std::shared_ptr<DecodeJob> job) {
    std::lock_guard<std::mutex> lock(mutex_);
    pending_ = std::move(job);
    wake_.notify_one();
  }

 private:
  [[noreturn]] void run() {
    for (;;) {
      std::shared_ptr<DecodeJob> job;
      {
        std::unique_lock<std::mutex> lock(mutex_);
        wake_.wait(lock, [&] { return pending_ != nullptr; });
        job = std::move(pending_);
      }
      nccmatch::TemplateImage decoded;
      TemplateLoadError why;
      const bool ok = decodeTemplateFile(job->path, &decoded, &why);
      std::lock_guard<std::mutex> lock(job->mutex);
      job->ok = ok;
      job->image = std::move(decoded);
      job->error = std::move(why);
      job->finished = true;
      job->done.notify_all();
    }
  }

  std::mutex mutex_;
  std::condition_variable wake_;
  std::shared_ptr<DecodeJob> pending_;
};

}  // namespace

bool loadTemplateFile(const std::string& path, nccmatch::TemplateImage* image, TemplateLoadError* error) {
  // The decoding runs on the decoding thread and is waited for up to kLoadTimeout: a decoder that
  // never returns (GStreamer 1.22's jpegdec spun forever on a truncated JPEG stream, inside the
  // state change: tests/fuzz/fuzz_template_loader) would otherwise hold the caller, since neither
  // the pipeline's bound nor its teardown can stop a streaming thread inside a decoder. Such a
  // thread is left behind with its pipeline, and the load fails naming the file. Loads of the
  // process take turns.
  static std::mutex loads;
  static std::shared_ptr<DecodingThread>* decoding = new std::shared_ptr<DecodingThread>();
  std::lock_guard<std::mutex> turn(loads);
  if (*decoding == nullptr) *decoding = DecodingThread::start();
  auto job = std::make_shared<DecodeJob>();
  job->path = path;
  (*decoding)->submit(job);
  std::unique_lock<std::mutex> lock(job->mutex);
  if (!job->done.wait_for(lock, kLoadTimeout, [&] { return job->finished; })) {
    decoding->reset();  // stuck in a decoder: the next load gets a new thread
    return fail(error, TemplateLoadFailure::Undecodable, path,
                "no image was decoded within " + std::to_string(kLoadTimeout.count()) +
                    " seconds (the decoder does not return; its thread is left behind)");
  }
  if (!job->ok) {
    if (error != nullptr) *error = std::move(job->error);
    return false;
  }
  *image = std::move(job->image);
  return true;
}

bool loadTemplateMask(const std::string& path, std::size_t entry, nccmatch::TemplateImage* t,
                      TemplateLoadError* error) {
  nccmatch::TemplateImage decoded;
  TemplateLoadError why;
  const std::string which = "mask file '" + path + "' (masks entry " + std::to_string(entry) + ", for template '" +
                            t->name + "')";
  if (!loadTemplateFile(path, &decoded, &why)) {
    if (error != nullptr) {
      *error = why;
      const std::size_t prefix = std::string("template file '" + path + "': ").size();
      error->message = which + ": " + (why.message.size() > prefix ? why.message.substr(prefix) : why.message);
    }
    return false;
  }
  if (decoded.width != t->width || decoded.height != t->height) {
    if (error != nullptr) {
      error->kind = TemplateLoadFailure::BadMask;
      error->file = path;
      error->message = which + ": the mask is " + std::to_string(decoded.width) + "x" +
                       std::to_string(decoded.height) + " but the template is " + std::to_string(t->width) + "x" +
                       std::to_string(t->height);
    }
    return false;
  }
  t->mask.resize(decoded.pixels.size());
  for (std::size_t k = 0; k < decoded.pixels.size(); ++k) t->mask[k] = decoded.pixels[k] < kMaskThreshold ? 0 : 255;
  return true;
}

bool loadTemplateBank(const std::vector<std::string>& paths, const std::vector<std::string>& maskPaths,
                      std::vector<nccmatch::TemplateImage>* bank, TemplateLoadError* error) {
  if (maskPaths.size() > paths.size()) {
    if (error != nullptr) {
      error->kind = TemplateLoadFailure::BadMask;
      error->file = maskPaths[paths.size()];
      error->message = "masks lists " + std::to_string(maskPaths.size()) + " entries but there " +
                       (paths.size() == 1 ? "is 1 template" : "are " + std::to_string(paths.size()) + " templates") +
                       "; mask file '" + maskPaths[paths.size()] + "' has no template";
    }
    return false;
  }
  std::vector<nccmatch::TemplateImage> loaded(paths.size());
  for (std::size_t i = 0; i < paths.size(); ++i)
    if (!loadTemplateFile(paths[i], &loaded[i], error)) return false;
  for (std::size_t i = 0; i < maskPaths.size(); ++i)
    if (!maskPaths[i].empty() && !loadTemplateMask(maskPaths[i], i, &loaded[i], error)) return false;
  *bank = std::move(loaded);
  return true;
}

}  // namespace nccmatch::plugin
