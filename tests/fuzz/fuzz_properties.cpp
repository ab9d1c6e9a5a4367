// Fuzz target (3): the element's properties set from text or values that no one checked: the
// string properties `templates`, `masks`, `scales`, `angles` and `search-region`, `mode` as a
// launch line sets it (text through gst_util_set_object_arg), and the numeric properties
// `search-margin`, `lost-frames`, `acquire-interval`, `template-update` and `pyramid-levels`, as
// text (a launch line) and as typed values (g_object_set, any bits: NaN, infinities, huge).
// Each input is the element's property to set (a byte), a frame size, a typed value, and a text
// (the rest, up to the first NUL, as a GValue string is a C string), tried at two levels:
// - the parsers of plugin/nccmatch_settings.*: any text gives a value or a refusal message, and a
//   value reads back (join, then parse) as itself; a refusal leaves the previous value untouched;
//   placeSearchRegion puts any accepted region inside any frame with the region's size kept
//   where the frame allows it;
// - one nccmatch element (element_properties.cpp): g_object_set then g_object_get gives the
//   parsed value, or the previous value and the refusal kept for start() to report. A numeric
//   value reads back as set when its property's range holds it, else it is refused (GObject's
//   warning, the only log line allowed) and the previous value stays; each accepted set bumps
//   settings-generation once and a refused one not at all; the settings the element then holds
//   are accepted by the library (validateTrackerOptions, validateCoarseToFineOptions), and a
//   changed pyramid-levels makes the bank again (templatesGeneration), an unchanged one does not.
// Anything else aborts (a finding).
#include <fuzzer/FuzzedDataProvider.h>
#include <gst/gst.h>

#include <atomic>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "fuzz_check.hpp"
#include "element_state.hpp"
#include "gstnccmatch.hpp"
#include "leak_checks_after_start.hpp"
#include "nccmatch/coarse_to_fine.hpp"
#include "nccmatch/rotations.hpp"
#include "nccmatch/scales.hpp"
#include "nccmatch/tracker.hpp"
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

// GObject refuses a value outside a property's range (or no value of its enum) with a warning of
// the GLib-GObject domain ("... is invalid or out of range for property ..."), and the element
// with one of its own for a double GObject let through at float precision (element_properties.cpp):
// counted here, so that the checks know when one was posted. Any other warning or critical is a
// finding.
std::atomic<int> gobjectRefusals{0}, elementRefusals{0};

GLogWriterOutput logWriter(GLogLevelFlags level, const GLogField* fields, gsize count, gpointer) {
  if ((level & (G_LOG_LEVEL_ERROR | G_LOG_LEVEL_CRITICAL | G_LOG_LEVEL_WARNING)) == 0) return G_LOG_WRITER_HANDLED;
  const char* domain = "";
  const char* message = "";
  for (gsize i = 0; i < count; ++i) {
    if (fields[i].length >= 0) continue;  // not a C string
    if (std::strcmp(fields[i].key, "GLIB_DOMAIN") == 0) domain = static_cast<const char*>(fields[i].value);
    if (std::strcmp(fields[i].key, "MESSAGE") == 0) message = static_cast<const char*>(fields[i].value);
  }
  if (std::strstr(message, "out of range for property") != nullptr) {
    ++(std::strcmp(domain, "GLib-GObject") == 0 ? gobjectRefusals : elementRefusals);
    return G_LOG_WRITER_HANDLED;
  }
  FUZZ_CHECK(false, "unexpected log message (%s): %s", domain, message);
  return G_LOG_WRITER_HANDLED;
}

// The numeric properties (`mode` too, as a typed enum value).
constexpr const char* kNumericProperties[] = {"search-margin",   "lost-frames",    "acquire-interval",
                                              "template-update", "pyramid-levels", "mode"};

Settings settingsOf(GstElement* element) {
  GstNccMatch* self = GST_NCCMATCH(element);
  GST_OBJECT_LOCK(self);
  Settings copy = *self->settings;
  GST_OBJECT_UNLOCK(self);
  return copy;
}

std::string contents(const GValue* value) {
  gchar* text = g_strdup_value_contents(value);
  std::string s = text;
  g_free(text);
  return s;
}

// Equal values of one type (doubles bit for bit: 0 and -0 differ, as the property then holds -0).
bool sameValue(const GValue* a, const GValue* b) {
  if (G_VALUE_TYPE(a) != G_VALUE_TYPE(b)) return false;
  if (G_VALUE_HOLDS_DOUBLE(a)) {
    const double x = g_value_get_double(a), y = g_value_get_double(b);
    return std::memcmp(&x, &y, sizeof x) == 0;
  }
  if (G_VALUE_HOLDS_UINT(a)) return g_value_get_uint(a) == g_value_get_uint(b);
  return G_VALUE_HOLDS_ENUM(a) && g_value_get_enum(a) == g_value_get_enum(b);
}

// Whatever the element holds, the library takes: the tracker's options and the pyramid's levels.
void checkSettingsUsable(const Settings& s) {
  const nccmatch::Status tracker = nccmatch::validateTrackerOptions(s.trackerOptions());
  FUZZ_CHECK(tracker.ok(), "the element holds tracker options the library refuses: %s", tracker.message().c_str());
  nccmatch::CoarseToFineOptions coarse;
  coarse.levels = s.pyramidLevels;
  const nccmatch::Status levels = nccmatch::validateCoarseToFineOptions(coarse);
  FUZZ_CHECK(levels.ok(), "the element holds pyramid-levels %d: %s", s.pyramidLevels, levels.message().c_str());
}

// `set` sets `pspec`'s property of `element`; `accepted` is the value it must hold then, or null
// when the set is refused (the previous value stays) with `warnings` refusals posted: by GObject,
// or by the element for a double GObject let through (that set reached the element, so it counts
// in settings-generation as every set does).
template <typename Set>
void checkNumericSet(GstElement* element, GParamSpec* pspec, const GValue* accepted, int warnings, const Set& set) {
  GValue before = G_VALUE_INIT, after = G_VALUE_INIT;
  g_value_init(&before, pspec->value_type);
  g_value_init(&after, pspec->value_type);
  g_object_get_property(G_OBJECT(element), pspec->name, &before);
  const Settings was = settingsOf(element);
  const int byGObject = gobjectRefusals, byElement = elementRefusals;
  set();
  g_object_get_property(G_OBJECT(element), pspec->name, &after);
  const Settings now = settingsOf(element);
  const GValue* want = accepted != nullptr ? accepted : &before;
  FUZZ_CHECK(sameValue(&after, want), "%s read back as %s, want %s", pspec->name, contents(&after).c_str(),
             contents(want).c_str());
  const int refusals = gobjectRefusals - byGObject + elementRefusals - byElement;
  FUZZ_CHECK(refusals == warnings, "%s: %d refusal warnings, want %d", pspec->name, refusals, warnings);
  const bool reachedElement = accepted != nullptr || elementRefusals != byElement;
  FUZZ_CHECK(now.generation == was.generation + (reachedElement ? 1 : 0),
             "%s: settings-generation went from %llu to %llu", pspec->name, (unsigned long long)was.generation,
             (unsigned long long)now.generation);
  const bool bankAgain = now.pyramidLevels != was.pyramidLevels;  // only pyramid-levels makes the bank again
  FUZZ_CHECK(now.templatesGeneration == was.templatesGeneration + (bankAgain ? 1 : 0),
             "%s: templates generation went from %llu to %llu", pspec->name,
             (unsigned long long)was.templatesGeneration, (unsigned long long)now.templatesGeneration);
  checkSettingsUsable(now);
  g_value_unset(&before);
  g_value_unset(&after);
}

// Whether the property's spec takes `value` as it is (GObject's validation would change it: refused).
bool inRange(GParamSpec* pspec, const GValue* value) {
  GValue copy = G_VALUE_INIT;
  g_value_init(&copy, G_VALUE_TYPE(value));
  g_value_copy(value, &copy);
  const bool changed = g_param_value_validate(pspec, &copy);
  g_value_unset(&copy);
  return !changed;
}

// A numeric property from text, as gst-launch sets it (gst_util_set_object_arg: GStreamer's
// deserialisation for the property, then GObject's range check). The expected value comes from
// GStreamer's own parser; independently of it, a plain decimal reads back as its number when the
// range holds it.
void checkNumericText(GstElement* element, const char* property, const char* text) {
  GParamSpec* pspec = g_object_class_find_property(G_OBJECT_GET_CLASS(element), property);
  GValue parsed = G_VALUE_INIT;
  g_value_init(&parsed, pspec->value_type);
  const bool parses = gst_value_deserialize_with_pspec(&parsed, text, pspec) != FALSE;
  const bool accepted = parses && inRange(pspec, &parsed);
  checkNumericSet(element, pspec, accepted ? &parsed : nullptr, parses && !accepted ? 1 : 0,
                  [&] { gst_util_set_object_arg(G_OBJECT(element), property, text); });
  g_value_unset(&parsed);

  const std::size_t digits = std::strspn(text, "0123456789");
  const char* dot = text + digits;
  const bool decimal = digits > 0 && (text[digits] == '\0' ||
                                      (*dot == '.' && dot[1 + std::strspn(dot + 1, "0123456789")] == '\0'));
  // (No leading zero: GStreamer reads integers as C does, "010" as octal 8.)
  if (!decimal || digits > 12 || (text[0] == '0' && digits > 1)) return;
  const double number = std::strtod(text, nullptr);
  GValue now = G_VALUE_INIT;
  g_value_init(&now, pspec->value_type);
  g_object_get_property(G_OBJECT(element), property, &now);
  if (G_IS_PARAM_SPEC_UINT(pspec) && *dot == '\0' && number <= G_PARAM_SPEC_UINT(pspec)->maximum)
    FUZZ_CHECK(g_value_get_uint(&now) == guint(number), "%s '%s' read back as %u", property, text, g_value_get_uint(&now));
  if (G_IS_PARAM_SPEC_DOUBLE(pspec) && number <= G_PARAM_SPEC_DOUBLE(pspec)->maximum)
    FUZZ_CHECK(g_value_get_double(&now) == number, "%s '%s' read back as %.17g", property, text,
               g_value_get_double(&now));
  g_value_unset(&now);
}

// A numeric property set to a typed value made of `bits` (an unsigned or an enum value of its low
// bits, or a double of all 64: NaN, infinities, subnormals), as an application's g_object_set.
void checkNumericValue(GstElement* element, const char* property, uint64_t bits) {
  GParamSpec* pspec = g_object_class_find_property(G_OBJECT_GET_CLASS(element), property);
  GValue value = G_VALUE_INIT;
  g_value_init(&value, pspec->value_type);
  if (G_IS_PARAM_SPEC_UINT(pspec)) {
    g_value_set_uint(&value, guint(bits));
  } else if (G_IS_PARAM_SPEC_DOUBLE(pspec)) {
    double d;
    std::memcpy(&d, &bits, sizeof d);
    g_value_set_double(&value, d);
  } else {
    g_value_set_enum(&value, gint(bits));
  }
  const bool accepted = inRange(pspec, &value);
  checkNumericSet(element, pspec, accepted ? &value : nullptr, accepted ? 0 : 1,
                  [&] { g_object_set_property(G_OBJECT(element), property, &value); });
  g_value_unset(&value);
}

// The ranges the numeric properties declare are the library's: their ends are accepted by
// validateTrackerOptions / validateCoarseToFineOptions, one step past them refused.
void checkDeclaredRanges(GstElement* element) {
  GObjectClass* klass = G_OBJECT_GET_CLASS(element);
  auto uintMax = [&](const char* name) {
    return int(G_PARAM_SPEC_UINT(g_object_class_find_property(klass, name))->maximum);
  };
  auto tracker = [](int margin, int lost, int acquire, double update) {
    nccmatch::TrackerOptions o;
    o.searchMargin = margin;
    o.lostFrames = lost;
    o.acquireInterval = acquire;
    o.templateUpdate = update;
    return nccmatch::validateTrackerOptions(o).ok();
  };
  const int margin = uintMax("search-margin"), lost = uintMax("lost-frames"), acquire = uintMax("acquire-interval");
  GParamSpecDouble* update = G_PARAM_SPEC_DOUBLE(g_object_class_find_property(klass, "template-update"));
  FUZZ_CHECK(tracker(margin, lost, acquire, update->maximum) && tracker(0, 0, 0, update->minimum),
             "the tracker refuses the ends of the element's ranges");
  FUZZ_CHECK(!tracker(margin + 1, 0, 0, 0) && !tracker(0, lost + 1, 0, 0) && !tracker(0, 0, acquire + 1, 0) &&
                 !tracker(0, 0, 0, std::nextafter(update->maximum, 2.0)) &&
                 !tracker(0, 0, 0, std::nextafter(update->minimum, -1.0)),
             "the tracker takes values past the element's ranges");
  nccmatch::CoarseToFineOptions coarse;
  coarse.levels = uintMax("pyramid-levels");
  FUZZ_CHECK(nccmatch::validateCoarseToFineOptions(coarse).ok(), "pyramid-levels' maximum is refused");
  ++coarse.levels;
  FUZZ_CHECK(!nccmatch::validateCoarseToFineOptions(coarse).ok(), "pyramid-levels past its maximum is accepted");
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
  g_log_set_writer_func(logWriter, nullptr, nullptr);
  gst_init(nullptr, nullptr);
  // One set and get of each property with a valid and a refused value first: GObject's and
  // GStreamer's once-per-process allocations (class data, quarks) are made before leak checks.
  for (const char* property : {"templates", "masks", "scales", "angles", "search-region"})
    for (const char* text : {"1,2,3,4", "x"}) checkElement(fuzzedElement(), property, text);
  for (const char* text : {"track", "x", "detect"}) checkMode(fuzzedElement(), text);
  for (const char* property : kNumericProperties) {
    for (const char* text : {"1", "x", "-1"})
      if (std::strcmp(property, "mode") != 0) checkNumericText(fuzzedElement(), property, text);
    for (uint64_t bits : {uint64_t(0), ~uint64_t(0)}) checkNumericValue(fuzzedElement(), property, bits);
  }
  checkDeclaredRanges(fuzzedElement());
  checkSettingsUsable(Settings());
  nccmatch::fuzz::startLeakChecks();
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, std::size_t size) {
  FuzzedDataProvider in(data, size);
  // FuzzedDataProvider takes integers from the input's end, so the text is the input's beginning:
  // text, then (from the end backwards) the property byte, the frame size, the typed value's bits.
  const uint8_t which = in.ConsumeIntegral<uint8_t>();
  static const char* const kProperties[] = {"templates", "scales", "search-region", "masks", "angles"};
  const char* property = kProperties[which % 5];
  const char* numeric = kNumericProperties[which % 6];
  // Any frame the element accepts (1..16384 a side), for placeSearchRegion.
  const int frameW = in.ConsumeIntegralInRange<int>(1, 16384), frameH = in.ConsumeIntegralInRange<int>(1, 16384);
  const uint64_t bits = in.ConsumeIntegral<uint64_t>();
  std::string text = in.ConsumeRemainingBytesAsString();
  text = text.substr(0, text.find('\0'));

  checkTemplateList(text.c_str());
  checkMaskList(text.c_str());
  checkScales(text.c_str());
  checkAngles(text.c_str());
  checkRegion(text.c_str(), frameW, frameH);
  checkElement(fuzzedElement(), property, text.c_str());
  checkMode(fuzzedElement(), text.c_str());
  if (std::strcmp(numeric, "mode") != 0) checkNumericText(fuzzedElement(), numeric, text.c_str());
  checkNumericValue(fuzzedElement(), numeric, bits);
  return 0;
}
