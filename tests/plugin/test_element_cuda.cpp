// nccmatch in real pipelines with nvcodec's CUDA elements (a GPU host with the GStreamer bundle):
// frames in CUDA memory from cudaupload, nvh264dec and nvjpegdec give the same matches as the same
// frames in system memory, and with display=true the boxes drawn on the GPU are the CPU's boxes to
// the byte. Skipped, saying why, where a GPU or an element is missing.
#include <gst/app/gstappsink.h>
#include <gst/app/gstappsrc.h>
#include <gst/video/video.h>
#include <gtest/gtest.h>

#include <functional>

#include <cmath>
#include <string>
#include <vector>

#include "nccmatch/engine.hpp"
#include "nccmatch/host_memory.hpp"
#include "nccmatch/scales.hpp"
#include "plugin_test_support.hpp"

namespace nccmatch::test {
namespace {

struct Found {
  guint templateIndex, x, y;
  double score;
};

struct PipelineRun {
  std::vector<std::vector<Found>> matches;  // per frame, from the nccmatch messages
  std::vector<Image> lumas;                  // per frame, from appsink "out" when present
  std::string memory;                        // the stats' input memory
  guint64 frames = 0;                        // the stats' frame count
};

std::string missingElements(std::initializer_list<const char*> names) {
  std::string missing;
  for (const char* name : names) {
    GstElementFactory* factory = gst_element_factory_find(name);
    if (factory == nullptr) missing += std::string(missing.empty() ? "" : ", ") + name;
    else gst_object_unref(factory);
  }
  return missing;
}

Image lumaOf(GstSample* sample) {
  GstVideoInfo info;
  EXPECT_TRUE(gst_video_info_from_caps(&info, gst_sample_get_caps(sample)));
  GstVideoFrame frame;
  Image luma;
  if (!gst_video_frame_map(&frame, &info, gst_sample_get_buffer(sample), GST_MAP_READ)) {
    ADD_FAILURE() << "cannot map an output frame";
    return luma;
  }
  luma.width = GST_VIDEO_FRAME_WIDTH(&frame);
  luma.height = GST_VIDEO_FRAME_HEIGHT(&frame);
  luma.stride = std::size_t(luma.width);
  const uint8_t* data = static_cast<const uint8_t*>(GST_VIDEO_FRAME_PLANE_DATA(&frame, 0));
  const int stride = GST_VIDEO_FRAME_PLANE_STRIDE(&frame, 0);
  for (int y = 0; y < luma.height; ++y) luma.bytes.insert(luma.bytes.end(), data + y * stride, data + y * stride + luma.width);
  gst_video_frame_unmap(&frame);
  return luma;
}

// Runs the pipeline to EOS. It names its nccmatch "m"; an appsrc "src" gets `input` pushed; an
// appsink "out" has its frames' luma kept; `prepare` is called with "m" before it plays.
PipelineRun runPipeline(const std::string& description, const std::vector<GstBuffer*>& input = {},
                        const std::function<void(GstElement*)>& prepare = nullptr) {
  PipelineRun run;
  GError* error = nullptr;
  GstElement* pipeline = gst_parse_launch(description.c_str(), &error);
  if (pipeline == nullptr || error != nullptr) {  // a missing element leaves a partial pipeline
    ADD_FAILURE() << description << ": " << (error ? error->message : "parse failed");
    g_clear_error(&error);
    if (pipeline != nullptr) gst_object_unref(pipeline);
    return run;
  }
  GstElement* src = gst_bin_get_by_name(GST_BIN(pipeline), "src");
  GstElement* out = gst_bin_get_by_name(GST_BIN(pipeline), "out");
  GstElement* m = gst_bin_get_by_name(GST_BIN(pipeline), "m");
  if (prepare && m != nullptr) prepare(m);
  gst_element_set_state(pipeline, GST_STATE_PLAYING);
  if (src != nullptr) {
    for (GstBuffer* b : input) gst_app_src_push_buffer(GST_APP_SRC(src), gst_buffer_ref(b));
    gst_app_src_end_of_stream(GST_APP_SRC(src));
  }
  GstBus* bus = gst_element_get_bus(pipeline);
  const gint64 deadline = g_get_monotonic_time() + 60 * G_TIME_SPAN_SECOND;
  bool done = false;
  while (!done) {
    if (g_get_monotonic_time() > deadline) {
      ADD_FAILURE() << description << ": no EOS within 60 s";
      break;
    }
    if (out != nullptr) {
      while (GstSample* sample = gst_app_sink_try_pull_sample(GST_APP_SINK(out), 0)) {
        run.lumas.push_back(lumaOf(sample));
        gst_sample_unref(sample);
      }
    }
    GstMessage* msg = gst_bus_timed_pop_filtered(
        bus, 50 * GST_MSECOND, GstMessageType(GST_MESSAGE_EOS | GST_MESSAGE_ERROR | GST_MESSAGE_ELEMENT));
    if (msg == nullptr) continue;
    switch (GST_MESSAGE_TYPE(msg)) {
      case GST_MESSAGE_ERROR: {
        GError* err = nullptr;
        gchar* debug = nullptr;
        gst_message_parse_error(msg, &err, &debug);
        ADD_FAILURE() << description << ": " << err->message << " (" << (debug ? debug : "") << ")";
        g_clear_error(&err);
        g_free(debug);
        done = true;
        break;
      }
      case GST_MESSAGE_EOS:
        done = true;
        break;
      default: {
        const GstStructure* s = gst_message_get_structure(msg);
        if (gst_structure_has_name(s, "nccmatch")) {
          std::vector<Found> frame;
          const GValue* list = gst_structure_get_value(s, "matches");
          for (guint i = 0; i < gst_value_list_get_size(list); ++i) {
            const GstStructure* match = gst_value_get_structure(gst_value_list_get_value(list, i));
            Found f{};
            gst_structure_get_uint(match, "template", &f.templateIndex);
            gst_structure_get_uint(match, "x", &f.x);
            gst_structure_get_uint(match, "y", &f.y);
            gst_structure_get_double(match, "score", &f.score);
            frame.push_back(f);
          }
          run.matches.push_back(frame);
        }
      }
    }
    gst_message_unref(msg);
  }
  if (out != nullptr) {
    while (GstSample* sample = gst_app_sink_try_pull_sample(GST_APP_SINK(out), 0)) {
      run.lumas.push_back(lumaOf(sample));
      gst_sample_unref(sample);
    }
  }
  if (m != nullptr) {
    GstStructure* stats = nullptr;
    g_object_get(m, "stats", &stats, nullptr);
    run.memory = gst_structure_get_string(stats, "memory");
    gst_structure_get_uint64(stats, "frames", &run.frames);
    gst_structure_free(stats);
  }
  gst_element_set_state(pipeline, GST_STATE_NULL);
  for (GstElement* e : {src, out, m})
    if (e != nullptr) gst_object_unref(e);
  gst_object_unref(bus);
  gst_object_unref(pipeline);
  return run;
}

void expectSameMatches(const PipelineRun& gpu, const PipelineRun& system, double scoreTolerance) {
  ASSERT_EQ(gpu.matches.size(), system.matches.size());
  for (std::size_t f = 0; f < gpu.matches.size(); ++f) {
    SCOPED_TRACE(::testing::Message() << "frame " << f);
    ASSERT_EQ(gpu.matches[f].size(), system.matches[f].size());
    for (std::size_t i = 0; i < gpu.matches[f].size(); ++i) {
      EXPECT_EQ(gpu.matches[f][i].templateIndex, system.matches[f][i].templateIndex);
      EXPECT_EQ(gpu.matches[f][i].x, system.matches[f][i].x);
      EXPECT_EQ(gpu.matches[f][i].y, system.matches[f][i].y);
      EXPECT_NEAR(gpu.matches[f][i].score, system.matches[f][i].score, scoreTolerance);
    }
  }
}

class CudaPipelines : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { initGstreamer(); }
  void SetUp() override {
    std::string why;
    if (!cudaAvailable(&why)) GTEST_SKIP() << why;
    if (std::string missing = missingElements({"cudaupload", "cudadownload"}); !missing.empty())
      GTEST_SKIP() << "missing GStreamer elements: " << missing;
  }
  TempDir dir_;
};

// Known frames (two templates pasted, several places each) through cudaupload: same matches as
// in system memory, and boxes drawn on the GPU byte-identical to the CPU's.
TEST_F(CudaPipelines, CudaUploadMatchesAndDrawsLikeSystemMemory) {
  for (const char* format : {"NV12", "I420"}) {
    SCOPED_TRACE(format);
    const int width = 328, height = 250;  // odd multiples: pitched device rows
    TemplateImage a = makeTemplate(24, 20, Fill::Random, "a"), b = makeTemplate(40, 33, Fill::Random, "b");
    std::string files = dir_.path("a.pgm") + "," + dir_.path("b.pgm");
    writePgm(dir_.path("a.pgm"), a);
    writePgm(dir_.path("b.pgm"), b);
    FrameLayout layout = makeLayout(gst_video_format_from_string(format), width, height, 0);
    std::vector<GstBuffer*> frames;
    for (int i = 0; i < 6; ++i) {
      Image luma = makeImage(width, height, Fill::Random);
      paste(&luma, a, 5 + 7 * i, 9);
      paste(&luma, a, 200, 180 - 3 * i);
      paste(&luma, b, 100 + i, 100);
      paste(&luma, b, 130 + i, 121);  // overlaps the other b a little: boxes drawn over each other
      GstBuffer* buffer = makeFrame(layout, luma);
      GST_BUFFER_PTS(buffer) = i * GST_SECOND / 30;
      GST_BUFFER_DURATION(buffer) = GST_SECOND / 30;
      frames.push_back(buffer);
    }
    gchar* caps = gst_caps_to_string(capsFor(layout));
    const std::string element = "nccmatch name=m device=cuda max-matches=4 nms-iou=1 threshold=0.8 templates=\"" +
                                files + "\"";
    const std::string source = "appsrc name=src format=time caps=\"" + std::string(caps) + "\"";
    const std::string sink = "appsink name=out sync=false max-buffers=0";
    g_free(caps);
    PipelineRun system = runPipeline(source + " ! " + element + " ! " + sink, frames);
    PipelineRun gpu = runPipeline(source + " ! cudaupload ! video/x-raw(memory:CUDAMemory) ! " + element + " ! cudadownload ! video/x-raw,format=" +
                                      format + " ! " + sink,
                                  frames);
    for (GstBuffer* f : frames) gst_buffer_unref(f);
    EXPECT_EQ(system.memory, "system");
    EXPECT_EQ(gpu.memory, "cuda") << "frames did not reach nccmatch in CUDA memory";
    EXPECT_EQ(gpu.frames, 6u);
    ASSERT_EQ(system.matches.size(), 6u);
    EXPECT_EQ(system.matches[0].size(), 4u) << "two a and two b expected";
    expectSameMatches(gpu, system, 1e-4);
    ASSERT_EQ(gpu.lumas.size(), system.lumas.size());
    for (std::size_t f = 0; f < gpu.lumas.size(); ++f)
      EXPECT_TRUE(gpu.lumas[f].bytes == system.lumas[f].bytes) << "drawn luma differs in frame " << f;
  }
}

// scales, search-region and grab-template on CUDA memory: the same matches as in system memory
// (the region's view and the grabbed patch come from device frames).
TEST_F(CudaPipelines, ScalesSearchRegionAndGrabTemplateOnCudaMemoryMatchSystemMemory) {
  const int width = 328, height = 250;
  TemplateImage a = makeTemplate(24, 20, Fill::Random, "a");
  const TemplateImage larger = resizeTemplate(a, 30, 25);  // scale 1.25
  writePgm(dir_.path("a.pgm"), a);
  FrameLayout layout = makeLayout(GST_VIDEO_FORMAT_NV12, width, height, 0);
  std::vector<GstBuffer*> frames;
  for (int i = 0; i < 6; ++i) {
    Image luma = makeImage(width, height, Fill::Random);
    paste(&luma, a, 41 + 5 * i, 33);
    paste(&luma, larger, 150, 101 + 4 * i);
    paste(&luma, a, 300, 220);  // outside the search region below
    GstBuffer* buffer = makeFrame(layout, luma);
    GST_BUFFER_PTS(buffer) = i * GST_SECOND / 30;
    GST_BUFFER_DURATION(buffer) = GST_SECOND / 30;
    frames.push_back(buffer);
  }
  gchar* caps = gst_caps_to_string(capsFor(layout));
  const std::string source = "appsrc name=src format=time caps=\"" + std::string(caps) + "\"";
  g_free(caps);
  const std::string toCuda = " ! cudaupload ! video/x-raw(memory:CUDAMemory) ! ";
  const std::string sink = " ! fakesink";
  {
    SCOPED_TRACE("scales and search-region");
    const std::string element = "nccmatch name=m device=cuda max-matches=3 threshold=0.8 scales=1,1.25 "
                                "search-region=3,5,281,230 template=\"" + dir_.path("a.pgm") + "\"";
    PipelineRun system = runPipeline(source + " ! " + element + sink, frames);
    PipelineRun gpu = runPipeline(source + toCuda + element + sink, frames);
    EXPECT_EQ(gpu.memory, "cuda");
    ASSERT_EQ(system.matches.size(), 6u);
    EXPECT_EQ(system.matches[0].size(), 2u) << "a at 1 and at 1.25, not the one outside the region";
    expectSameMatches(gpu, system, 1e-4);
  }
  {
    SCOPED_TRACE("grab-template");
    const std::string element = "nccmatch name=m device=cuda max-matches=2 threshold=0.8";
    auto grab = [](GstElement* m) {
      gboolean accepted = FALSE;
      g_signal_emit_by_name(m, "grab-template", "grabbed", 150, 101, 30, 25, &accepted);  // the larger a
      EXPECT_TRUE(accepted);
    };
    PipelineRun system = runPipeline(source + " ! " + element + sink, frames, grab);
    PipelineRun gpu = runPipeline(source + toCuda + element + sink, frames, grab);
    EXPECT_EQ(gpu.memory, "cuda");
    ASSERT_EQ(system.matches.size(), 6u);
    ASSERT_FALSE(system.matches[0].empty());
    EXPECT_EQ(system.matches[0][0].x, 150u);
    EXPECT_EQ(system.matches[0][0].y, 101u);
    expectSameMatches(gpu, system, 1e-4);
  }
  for (GstBuffer* f : frames) gst_buffer_unref(f);
}

// register-upstream: frames pushed again in the same memory (as a producer's own pool recycles
// its memories) give the matches of the pageable run, and the element has page-locked that memory
// (registering it again is refused as already registered); with the property off it has not.
TEST_F(CudaPipelines, RegisteredUpstreamMemoryMatchesLikePageableMemory) {
  const int width = 640, height = 480;
  TemplateImage a = makeTemplate(32, 32, Fill::Random, "a");
  writePgm(dir_.path("a.pgm"), a);
  FrameLayout layout = makeLayout(GST_VIDEO_FORMAT_GRAY8, width, height, 0);
  std::vector<GstBuffer*> distinct;
  for (int i = 0; i < 3; ++i) {
    Image luma = makeImage(width, height, Fill::Random);
    paste(&luma, a, 50 + 100 * i, 60 + 40 * i);
    distinct.push_back(makeFrame(layout, luma));
  }
  std::vector<GstBuffer*> frames;  // each memory three times
  for (int round = 0; round < 3; ++round)
    for (GstBuffer* b : distinct) frames.push_back(b);
  gchar* caps = gst_caps_to_string(capsFor(layout));
  const auto description = [&](bool registerUpstream) {
    return "appsrc name=src format=time caps=\"" + std::string(caps) +
           "\" ! nccmatch name=m device=cuda display=false max-matches=2 register-upstream=" +
           (registerUpstream ? "true" : "false") + " template=\"" + dir_.path("a.pgm") + "\" ! fakesink";
  };
  // Asked of the runtime, not by registering the memory again: a refused second registration is a
  // CUDA API error, which compute-sanitizer's memcheck counts.
  const auto pinned = [&](GstBuffer* b) {
    GstMapInfo map;
    EXPECT_TRUE(gst_buffer_map(b, &map, GST_MAP_READ));
    const bool locked = hostMemoryPinned(map.data, map.size);
    gst_buffer_unmap(b, &map);
    return locked;
  };
  PipelineRun pageable = runPipeline(description(false), frames);
  for (GstBuffer* b : distinct) EXPECT_FALSE(pinned(b)) << "registered with register-upstream=false";
  PipelineRun registered = runPipeline(description(true), frames);
  g_free(caps);
  ASSERT_EQ(pageable.matches.size(), frames.size());
  EXPECT_EQ(registered.memory, "system");
  expectSameMatches(registered, pageable, 0.0);
  for (std::size_t f = 0; f < frames.size(); ++f) EXPECT_FALSE(pageable.matches[f].empty()) << "frame " << f;
  for (GstBuffer* b : distinct) EXPECT_TRUE(pinned(b)) << "not registered by the element";
  for (GstBuffer* b : distinct) gst_buffer_unref(b);  // their memories' registrations end here
}

// CUDA memory from a plain source: videotestsrc ! cudaupload ! nccmatch ! cudadownload ! fakesink.
TEST_F(CudaPipelines, VideotestsrcThroughCudaUploadFindsWhatSystemMemoryFinds) {
  // The template: the moving ball's neighbourhood in the first frame.
  PipelineRun first = runPipeline(
      "videotestsrc num-buffers=1 pattern=ball animation-mode=frames ! video/x-raw,format=NV12,width=320,height=240 "
      "! appsink name=out sync=false");
  ASSERT_EQ(first.lumas.size(), 1u);
  const Image& luma = first.lumas[0];
  long sx = 0, sy = 0, n = 0;
  for (int y = 0; y < luma.height; ++y)
    for (int x = 0; x < luma.width; ++x)
      if (luma.at(x, y) > 128) sx += x, sy += y, ++n;
  ASSERT_GT(n, 0);
  const int cx = int(sx / n), cy = int(sy / n), size = 48;
  TemplateImage ball = cutTemplate(luma, std::clamp(cx - size / 2, 0, luma.width - size),
                                   std::clamp(cy - size / 2, 0, luma.height - size), size, size, "ball");
  writePgm(dir_.path("ball.pgm"), ball);
  const std::string source =
      "videotestsrc num-buffers=20 pattern=ball animation-mode=frames ! video/x-raw,format=NV12,width=320,height=240";
  const std::string element = "nccmatch name=m device=cuda threshold=0.5 template=\"" + dir_.path("ball.pgm") + "\"";
  PipelineRun system = runPipeline(source + " ! " + element + " ! fakesink");
  PipelineRun gpu = runPipeline(source + " ! cudaupload ! video/x-raw(memory:CUDAMemory) ! " + element +
                                " ! cudadownload ! fakesink");
  EXPECT_EQ(gpu.memory, "cuda");
  ASSERT_EQ(system.matches.size(), 20u);
  ASSERT_EQ(system.matches[0].size(), 1u);
  EXPECT_NEAR(system.matches[0][0].score, 1.0, 1e-6);
  expectSameMatches(gpu, system, 1e-4);
}

// An encoded stream made here, decoded on the GPU by nvcodec into nccmatch (CUDA memory) and into
// nccmatch in system memory (H.264: the same decoder's frames through cudadownload; JPEG: jpegdec,
// which may round differently from nvjpegdec): the same objects.
struct DecodeCase {
  const char* name;
  const char* encoder;     // after the raw source
  const char* parser;      // after matroskademux
  const char* gpuDecoder;
  const char* systemDecoder;  // a chain ending in system memory
  double scoreTolerance;
};

class GpuDecode : public CudaPipelines, public ::testing::WithParamInterface<DecodeCase> {};

TEST_P(GpuDecode, DecodedOnTheGpuMatchesDecodedOnTheCpu) {
  const DecodeCase& c = GetParam();
  std::string encoderName = std::string(c.encoder).substr(0, std::string(c.encoder).find(' '));
  std::string systemName = std::string(c.systemDecoder).substr(0, std::string(c.systemDecoder).find(' '));
  if (std::string missing = missingElements({encoderName.c_str(), c.parser, c.gpuDecoder, systemName.c_str(),
                                             "matroskamux", "matroskademux"});
      !missing.empty())
    GTEST_SKIP() << "missing GStreamer elements: " << missing;
  // A textured needle on a smooth background: the codec keeps the needle recognisable.
  TemplateImage needle = makeTemplate(32, 32, Fill::Random, "needle");
  writePgm(dir_.path("needle.pgm"), needle);
  const int width = 352, height = 288;
  FrameLayout layout = makeLayout(GST_VIDEO_FORMAT_I420, width, height, 0);
  std::vector<GstBuffer*> frames;
  for (int i = 0; i < 8; ++i) {
    Image luma = makeImage(width, height, Fill::Smooth);
    paste(&luma, needle, 40 + 9 * i, 60 + 4 * i);
    GstBuffer* buffer = makeFrame(layout, luma);
    GST_BUFFER_PTS(buffer) = i * GST_SECOND / 30;
    GST_BUFFER_DURATION(buffer) = GST_SECOND / 30;
    frames.push_back(buffer);
  }
  gchar* caps = gst_caps_to_string(capsFor(layout));
  const std::string file = dir_.path(std::string(c.name) + ".mkv");
  runPipeline("appsrc name=src format=time caps=\"" + std::string(caps) + "\" ! " + c.encoder +
                  " ! matroskamux ! filesink location=\"" + file + "\"",
              frames);
  g_free(caps);
  for (GstBuffer* f : frames) gst_buffer_unref(f);

  const std::string demux = "filesrc location=\"" + file + "\" ! matroskademux ! " + c.parser;
  const std::string element = "nccmatch name=m device=cuda threshold=0.6 template=\"" + dir_.path("needle.pgm") + "\"";
  PipelineRun cpu = runPipeline(demux + " ! " + c.systemDecoder + " ! video/x-raw ! " + element + " ! fakesink");
  EXPECT_EQ(cpu.memory, "system");
  PipelineRun gpu = runPipeline(demux + " ! " + c.gpuDecoder + " ! video/x-raw(memory:CUDAMemory) ! " + element +
                                " ! cudadownload ! fakesink");
  EXPECT_EQ(gpu.memory, "cuda") << "the decoder's frames did not reach nccmatch in CUDA memory";
  ASSERT_EQ(cpu.matches.size(), 8u);
  for (std::size_t f = 0; f < cpu.matches.size(); ++f) {
    ASSERT_EQ(cpu.matches[f].size(), 1u) << "frame " << f;
    EXPECT_EQ(cpu.matches[f][0].x, 40u + 9 * f);
    EXPECT_EQ(cpu.matches[f][0].y, 60u + 4 * f);
  }
  expectSameMatches(gpu, cpu, c.scoreTolerance);
}

INSTANTIATE_TEST_SUITE_P(
    Codecs, GpuDecode,
    ::testing::Values(DecodeCase{"h264", "x264enc tune=zerolatency speed-preset=ultrafast qp-max=20 ! h264parse",
                                 "h264parse", "nvh264dec", "nvh264dec ! cudadownload", 1e-4},
                      DecodeCase{"jpeg", "jpegenc quality=95", "jpegparse", "nvjpegdec", "jpegdec", 2e-2}),
    [](const ::testing::TestParamInfo<DecodeCase>& info) { return std::string(info.param.name); });

}  // namespace
}  // namespace nccmatch::test
