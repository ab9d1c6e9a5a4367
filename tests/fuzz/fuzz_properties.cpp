// Fuzz target (3): the element's string properties `templates`, `masks`, `scales`, `angles` and
// `search-region`, and `mode` as a launch line sets it (text through gst_util_set_object_arg).
// Each input is one property (first byte) and its text (the rest, up to the first NUL, as a
// GValue string is a C string), tried at two levels:
// - the parsers of plugin/nccmatch_settings.*: any text gives a value or a refusal message, and a
//   value reads back (join, then parse) as itself; a refusal leaves the previous value untouched;
//   placeSearchRegion puts any accepted region inside any frame with the region's size kept
//   where the frame allows it;
// - one nccmatch element (element_properties.cpp): g_object_set then g_object_get gives the
//   parsed value, or the previous value and the refusal kept for start() to report.
// Anything else aborts (a finding).
#include <fuzzer/FuzzedDataProvider.h>
#include <gst/gst.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "fuzz_check.hpp"
#include "element_state.hpp"
#include "gstnccmatch.hpp"
#include "leak_checks_after_start.hpp"
#include "nccmatch/rotations.hpp"
#include "nccmatch/scales.hpp"
#include "nccmatch_settings.hpp"

namespace {

using namespace nccmatch::plugin;

// The blanks parseTemplateList trims (nccmatch_settings.cpp): space, tab, newline, carriage return.
bool isBlank(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; }

void checkTemplateList(const char* text) {
  const std::vector<std::string> files = parseTemplateList(text);
  for (const std::string& f : files) {
    FUZZ_CHECK(!f.empty() && f.find(',') == std::string::npos && !isBlank(f.front()) && !isBlank(f.back()),
               "template entry '%s'", f.c_str());
  }
  FUZZ_CHECK(parseTemplateList(joinTemplateList(files).c_str()) == files, "template list does not read back");
}

void checkScales(const char* text) {
  const std::vector<double> before{0.5, 2.0};
  std::vector<double> scales = before;
  std::string error;
  if (!parseScaleList(text, &scales, &error)) {
    FUZZ_CHECK(!error.empty(), "scales refused without a message");
    FUZZ_CHECK(scales == before, "refused scales changed the value");
    return;
  }
  FUZZ_CHECK(nccmatch::validateTemplateScales(scales).ok(), "accepted scales are invalid");
  std::vector<double> again;
  std::string joined = joinScaleList(scales);
  FUZZ_CHECK(parseScaleList(joined.c_str(), &again, &error) && again == scales, "scales '%s' do not read back",
             joined.c_str());
}

void checkMaskList(const char* text) {
  const std::vector<std::string> files = parseMaskList(text);
  bool anyFile = false;
  for (const std::string& f : files) {
    FUZZ_CHECK(f.find(',') == std::string::npos && (f.empty() || (!isBlank(f.front()) && !isBlank(f.back()))),
               "mask entry '%s'", f.c_str());
    anyFile = anyFile || !f.empty();
  }
  FUZZ_CHECK(files.empty() || anyFile, "a mask list of empty entries only");
  FUZZ_CHECK(parseMaskList(joinTemplateList(files).c_str()) == files, "mask list does not read back");
}

void checkAngles(const char* text) {
  const std::vector<double> before{3.0, 7.0};
  std::vector<double> angles = before;
  std::string error;
  if (!parseAngleList(text, &angles, &error)) {
    FUZZ_CHECK(!error.empty(), "angles refused without a message");
    FUZZ_CHECK(angles == before, "refused angles changed the value");
    return;
  }
  FUZZ_CHECK(nccmatch::validateTemplateAngles(angles).ok(), "accepted angles are invalid");
  FUZZ_CHECK(nccmatch::distinctAngles(angles) == angles, "accepted angles repeat modulo 360");
  std::vector<double> again;
  std::string joined = joinAngleList(angles);
  FUZZ_CHECK(parseAngleList(joined.c_str(), &again, &error) && again == angles, "angles '%s' do not read back",
             joined.c_str());
}

void checkRegion(const char* text, int frameW, int frameH) {
  const SearchRegion before{1, 2, 3, 4};
  SearchRegion region = before;
  std::string error;
  if (!parseSearchRegion(text, &region, &error)) {
    FUZZ_CHECK(!error.empty(), "search region refused without a message");
    FUZZ_CHECK(region == before, "a refused search region changed the value");
    return;
  }
  FUZZ_CHECK(region.whole() || (region.x >= 0 && region.y >= 0 && region.width >= 1 && region.height >= 1),
             "accepted region %d,%d,%d,%d", region.x, region.y, region.width, region.height);
  SearchRegion again;
  const std::string joined = joinSearchRegion(region);
  FUZZ_CHECK(parseSearchRegion(joined.c_str(), &again, &error) && again == region, "region '%s' does not read back",
             joined.c_str());
  const SearchRegion placed = placeSearchRegion(region, frameW, frameH);
  FUZZ_CHECK(placed.x >= 0 && placed.y >= 0 && placed.width >= 1 && placed.height >= 1 &&
                 placed.x + placed.width <= frameW && placed.y + placed.height <= frameH,
             "region %s placed at %d,%d,%d,%d in %dx%d", joined.c_str(), placed.x, placed.y, placed.width,
             placed.height, frameW, frameH);
  if (!region.whole())
    FUZZ_CHECK(placed.width == std::min(region.width, frameW) && placed.height == std::min(region.height, frameH),
               "placed region %dx%d, asked %dx%d in %dx%d", placed.width, placed.height, region.width,
               region.height, frameW, frameH);
}

std::string getString(GstElement* element, const char* property) {
  gchar* value = nullptr;
  g_object_get(element, property, &value, nullptr);
  std::string text = value != nullptr ? value : "";
  g_free(value);
  return text;
}

// Sets the property on the element and reads it back.
void checkElement(GstElement* element, const char* property, const char* text) {
  GstNccMatch* self = GST_NCCMATCH(element);
  const std::string before = getString(element, property);
  g_object_set(element, property, text, nullptr);
  const std::string after = getString(element, property);
  const std::string name(property);
  if (name == "templates") {
    FUZZ_CHECK(after == joinTemplateList(parseTemplateList(text)), "templates read back as '%s'", after.c_str());
    return;
  }
  if (name == "masks") {
    FUZZ_CHECK(after == joinTemplateList(parseMaskList(text)), "masks read back as '%s'", after.c_str());
    return;
  }
  std::string error;
  bool accepted;
  std::string want;
  if (name == "scales") {
    std::vector<double> scales;
    accepted = parseScaleList(text, &scales, &error);
    want = accepted ? joinScaleList(scales) : before;
  } else if (name == "angles") {
    std::vector<double> angles;
    accepted = parseAngleList(text, &angles, &error);
    want = accepted ? joinAngleList(angles) : before;
  } else {
    SearchRegion region;
    accepted = parseSearchRegion(text, &region, &error);
    want = accepted ? joinSearchRegion(region) : before;
  }
  FUZZ_CHECK(after == want, "%s read back as '%s', want '%s'", property, after.c_str(), want.c_str());
  GST_OBJECT_LOCK(self);
  const auto& kept = self->refused->beforeStart;
  const auto found = kept.find(name);
  const bool keptRefusal = found != kept.end() && found->second == error;
  GST_OBJECT_UNLOCK(self);
  FUZZ_CHECK(keptRefusal == !accepted, "%s: refusal %s kept for start()", property, keptRefusal ? "wrongly" : "not");
}

// `mode` from text, as gst-launch sets it (GStreamer's enum parsing, gstvalue.c: a value's name or
// nick, else the whole text as a C integer, strtol base 0 into a gint, so "" is 0 and "0x1" 1): a
// text naming detect (0) or track (1) selects that mode, any other text leaves the mode as it was.
void checkMode(GstElement* element, const char* text) {
  gint before = -1, after = -1;
  g_object_get(element, "mode", &before, nullptr);
  gst_util_set_object_arg(G_OBJECT(element), "mode", text);
  g_object_get(element, "mode", &after, nullptr);
  GEnumClass* modes = G_ENUM_CLASS(g_type_class_ref(GST_TYPE_NCCMATCH_MODE));
  const GEnumValue* named = g_enum_get_value_by_name(modes, text);
  if (named == nullptr) named = g_enum_get_value_by_nick(modes, text);
  char* end = nullptr;
  const gint number = gint(std::strtol(text, &end, 0));
  const int want = named != nullptr ? named->value : number;
  const bool selects = named != nullptr || (*end == '\0' && g_enum_get_value(modes, number) != nullptr);
  g_type_class_unref(modes);
  FUZZ_CHECK(after == (selects ? want : before), "mode '%s' read back as %d (was %d)", text, after, before);
  if (std::string(text) == "track") FUZZ_CHECK(after == 1, "mode 'track' read back as %d", after);
  if (std::string(text) == "detect") FUZZ_CHECK(after == 0, "mode 'detect' read back as %d", after);
}

GstElement* fuzzedElement() {
  static GstElement* e = [] {
    GstElement* made = GST_ELEMENT(g_object_new(GST_TYPE_NCCMATCH, nullptr));
    gst_object_ref_sink(made);
    return made;
  }();
  return e;
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  gst_init(nullptr, nullptr);
  // One set and get of each property with a valid and a refused value first: GObject's and
  // GStreamer's once-per-process allocations (class data, quarks) are made before leak checks.
  for (const char* property : {"templates", "masks", "scales", "angles", "search-region"})
    for (const char* text : {"1,2,3,4", "x"}) checkElement(fuzzedElement(), property, text);
  for (const char* text : {"track", "x", "detect"}) checkMode(fuzzedElement(), text);
  nccmatch::fuzz::startLeakChecks();
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, std::size_t size) {
  FuzzedDataProvider in(data, size);
  static const char* const kProperties[] = {"templates", "scales", "search-region", "masks", "angles"};
  const char* property = kProperties[in.ConsumeIntegralInRange<int>(0, 4)];
  // Any frame the element accepts (1..16384 a side), for placeSearchRegion. FuzzedDataProvider
  // takes integers from the input's end, so the text is the input's beginning.
  const int frameW = in.ConsumeIntegralInRange<int>(1, 16384), frameH = in.ConsumeIntegralInRange<int>(1, 16384);
  std::string text = in.ConsumeRemainingBytesAsString();
  text = text.substr(0, text.find('\0'));

  checkTemplateList(text.c_str());
  checkMaskList(text.c_str());
  checkScales(text.c_str());
  checkAngles(text.c_str());
  checkRegion(text.c_str(), frameW, frameH);
  checkElement(fuzzedElement(), property, text.c_str());
  checkMode(fuzzedElement(), text.c_str());
  return 0;
}
