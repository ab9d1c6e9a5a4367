// Fuzz target (1): arbitrary bytes as a template file through the element's loader
// (plugin/template_loader.*: decodebin, or pnmdec for "P1".."P6" files, then GRAY8). Each input
// is written to one file and loaded. What must hold, else the target aborts (a finding):
// - success gives an image of at least 1x1 with width*height pixels, named after the file;
// - failure gives a failure kind and a message that names the file;
// - either within the loader's own 10-second bound (libFuzzer's -timeout catches a hang).
// Leaks are LeakSanitizer's (libFuzzer checks every input that allocates more than it frees).
#include <gst/gst.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <string>

#include "fuzz_check.hpp"
#include "leak_checks_after_start.hpp"
#include "template_loader.hpp"

namespace {

using namespace nccmatch::plugin;

// The file each input is written to: one per process, in a folder of its own.
const std::string& inputPath() {
  static const std::string path = [] {
    gchar* dir = g_dir_make_tmp("nccmatch-fuzz-XXXXXX", nullptr);
    FUZZ_CHECK(dir != nullptr, "cannot make a temporary folder");
    std::string p = std::string(dir) + "/input.img";
    g_free(dir);
    return p;
  }();
  return path;
}

void writeInput(const uint8_t* data, std::size_t size) {
  FILE* f = std::fopen(inputPath().c_str(), "wb");
  FUZZ_CHECK(f != nullptr, "cannot write %s", inputPath().c_str());
  FUZZ_CHECK(size == 0 || std::fwrite(data, 1, size, f) == size, "short write");
  std::fclose(f);
}

// Decodes one file of each kind the seed corpus has (PGM through pnmdec; PNG, JPEG and bytes no
// decoder takes through decodebin), so that plugins are loaded and types registered before leak
// checks start: those happen once per process, whatever the input.
void warmUp() {
  const std::string dir = inputPath().substr(0, inputPath().rfind('/'));
  const char* const kEncoders[] = {"pngenc", "jpegenc"};
  for (const char* encoder : kEncoders) {
    const std::string description = "videotestsrc num-buffers=1 ! video/x-raw,width=8,height=6 ! " +
                                    std::string(encoder) + " ! filesink location=" + dir + "/warm-up";
    GstElement* pipeline = gst_parse_launch(description.c_str(), nullptr);
    if (pipeline == nullptr) continue;  // that decoder is then warmed up by the first input instead
    gst_element_set_state(pipeline, GST_STATE_PLAYING);
    GstBus* bus = gst_element_get_bus(pipeline);
    GstMessage* done = gst_bus_timed_pop_filtered(
        bus, 10 * GST_SECOND, static_cast<GstMessageType>(GST_MESSAGE_EOS | GST_MESSAGE_ERROR));
    if (done != nullptr) gst_message_unref(done);
    gst_object_unref(bus);
    gst_element_set_state(pipeline, GST_STATE_NULL);
    gst_object_unref(pipeline);
    nccmatch::TemplateImage image;
    TemplateLoadError error;
    loadTemplateFile(dir + "/warm-up", &image, &error);
  }
  const std::string kOthers[] = {std::string("P5\n2 2\n255\n\1\2\3\4", 15), "not an image"};
  for (const std::string& bytes : kOthers) {
    writeInput(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size());
    nccmatch::TemplateImage image;
    TemplateLoadError error;
    loadTemplateFile(inputPath(), &image, &error);
  }
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  gst_init(nullptr, nullptr);
  warmUp();
  nccmatch::fuzz::startLeakChecks();
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, std::size_t size) {
  writeInput(data, size);
  nccmatch::TemplateImage image;
  TemplateLoadError error;
  if (loadTemplateFile(inputPath(), &image, &error)) {
    FUZZ_CHECK(image.width >= 1 && image.height >= 1, "decoded a %dx%d image", image.width, image.height);
    FUZZ_CHECK(image.pixels.size() == std::size_t(image.width) * image.height, "%zu pixels for %dx%d",
               image.pixels.size(), image.width, image.height);
    FUZZ_CHECK(image.name == "input", "named '%s'", image.name.c_str());
    FUZZ_CHECK(error.kind == TemplateLoadFailure::None, "success with a failure kind");
  } else {
    FUZZ_CHECK(error.kind != TemplateLoadFailure::None, "failure without a kind");
    FUZZ_CHECK(error.file == inputPath(), "failure names '%s'", error.file.c_str());
    FUZZ_CHECK(error.message.find(inputPath()) != std::string::npos, "message without the file: %s",
               error.message.c_str());
  }
  return 0;
}
