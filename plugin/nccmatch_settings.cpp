#include "nccmatch_settings.hpp"

#include <algorithm>
#include <charconv>
#include <cmath>

#include "nccmatch/rotations.hpp"
#include "nccmatch/scales.hpp"

namespace nccmatch::plugin {

nccmatch::MatchParams Settings::matchParams() const {
  nccmatch::MatchParams params;
  params.method = method;
  params.threshold = threshold;
  params.maxMatches = maxMatches;
  params.nmsIou = nmsIou;
  return params;
}

nccmatch::TrackerOptions Settings::trackerOptions() const {
  nccmatch::TrackerOptions options;
  options.searchMargin = searchMargin;
  options.lostFrames = lostFrames;
  options.acquireInterval = acquireInterval;
  options.templateUpdate = templateUpdate;
  return options;
}

int framesInFlightFor(Mode mode, int setting, bool cudaBackend, bool upstreamLive, int engineMax) {
  return mode == Mode::Track ? 1 : framesInFlightFor(setting, cudaBackend, upstreamLive, engineMax);
}

int framesInFlightFor(int setting, bool cudaBackend, bool upstreamLive, int engineMax) {
  const int wanted = setting > 0 ? setting : (cudaBackend && !upstreamLive ? 2 : 1);
  return wanted < engineMax ? wanted : (engineMax > 0 ? engineMax : 1);
}

namespace {
bool isBlank(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; }
}  // namespace

namespace {
// The comma-separated entries of text, blanks trimmed; empty entries kept where keepEmpty.
std::vector<std::string> splitList(const char* text, bool keepEmpty) {
  std::vector<std::string> entries;
  if (text == nullptr) return entries;
  std::string all(text);
  std::size_t begin = 0;
  while (begin <= all.size()) {
    std::size_t end = all.find(',', begin);
    if (end == std::string::npos) end = all.size();
    std::size_t first = begin, last = end;
    while (first < last && isBlank(all[first])) ++first;
    while (last > first && isBlank(all[last - 1])) --last;
    if (keepEmpty || last > first) entries.push_back(all.substr(first, last - first));
    begin = end + 1;
  }
  return entries;
}
}  // namespace

std::vector<std::string> parseTemplateList(const char* text) { return splitList(text, false); }

std::string joinTemplateList(const std::vector<std::string>& files) {
  std::string joined;
  for (std::size_t i = 0; i < files.size(); ++i) {
    if (i > 0) joined += ",";
    joined += files[i];
  }
  return joined;
}

bool parseScaleList(const char* text, std::vector<double>* scales, std::string* error) {
  std::vector<double> parsed;
  for (const std::string& entry : parseTemplateList(text)) {
    double value = 0.0;
    const char* end = entry.data() + entry.size();
    // from_chars: the C locale's decimal point whatever the process locale is.
    const std::from_chars_result r = std::from_chars(entry.data(), end, value);
    if (r.ec != std::errc() || r.ptr != end) {
      *error = "scale factor '" + entry + "' is not a number";
      return false;
    }
    parsed.push_back(value);
  }
  if (parsed.empty()) parsed.push_back(1.0);
  nccmatch::Status status = nccmatch::validateTemplateScales(parsed);
  if (!status.ok()) {
    *error = status.message();
    return false;
  }
  *scales = std::move(parsed);
  return true;
}

std::vector<std::string> parseMaskList(const char* text) {
  // Empty entries stay: they keep each mask beside its template.
  std::vector<std::string> files = splitList(text, true);
  // Only blanks: no masks at all.
  if (std::all_of(files.begin(), files.end(), [](const std::string& f) { return f.empty(); })) files.clear();
  return files;
}

namespace {

// A decimal number in the C locale filling the whole text.
bool parseNumber(const std::string& text, double* value) {
  const char* end = text.data() + text.size();
  const std::from_chars_result r = std::from_chars(text.data(), end, *value);
  return r.ec == std::errc() && r.ptr == end;
}

std::string trimmed(const std::string& text) {
  std::size_t first = 0, last = text.size();
  while (first < last && isBlank(text[first])) ++first;
  while (last > first && isBlank(text[last - 1])) --last;
  return text.substr(first, last - first);
}

}  // namespace

bool parseAngleList(const char* text, std::vector<double>* angles, std::string* error) {
  std::vector<double> parsed;
  for (const std::string& entry : parseTemplateList(text)) {
    const std::size_t colon = entry.find(':');
    if (colon == std::string::npos) {
      double value = 0.0;
      if (!parseNumber(entry, &value)) {
        *error = "angle '" + entry + "' is not a number (nor a range start:stop:step)";
        return false;
      }
      // -0 is the angle 0: stored (and read back) as 0, so that "-0" and "0" are one setting.
      parsed.push_back(value == 0.0 ? 0.0 : value);
      continue;
    }
    const std::size_t second = entry.find(':', colon + 1);
    double start = 0, stop = 0, step = 0;
    if (second == std::string::npos || entry.find(':', second + 1) != std::string::npos ||
        !parseNumber(trimmed(entry.substr(0, colon)), &start) ||
        !parseNumber(trimmed(entry.substr(colon + 1, second - colon - 1)), &stop) ||
        !parseNumber(trimmed(entry.substr(second + 1)), &step)) {
      *error = "angle range '" + entry + "' is not start:stop:step (three numbers)";
      return false;
    }
    const std::vector<double> range = nccmatch::angleRange(start, stop, step);
    if (range.empty()) {
      *error = "angle range '" + entry + "' gives no angles: it needs a step above 0, stop >= start, and at most " +
               std::to_string(nccmatch::kMaxTemplateAngles) + " angles";
      return false;
    }
    parsed.insert(parsed.end(), range.begin(), range.end());
    // Bounded while parsing: a long list of ranges could otherwise hold millions of angles.
    parsed = nccmatch::distinctAngles(parsed);
    if (parsed.size() > std::size_t(nccmatch::kMaxTemplateAngles)) break;
  }
  if (parsed.empty()) parsed.push_back(0.0);
  // Drop angles equal modulo 360 to an earlier one (as the bank does), so the value reads back.
  std::vector<double> distinct = nccmatch::distinctAngles(parsed);
  nccmatch::Status status = nccmatch::validateTemplateAngles(distinct);
  if (!status.ok()) {
    *error = status.message();
    return false;
  }
  *angles = std::move(distinct);
  return true;
}

std::string joinAngleList(const std::vector<double>& angles) { return joinScaleList(angles); }

bool parseSearchRegion(const char* text, SearchRegion* region, std::string* error) {
  const std::vector<std::string> fields = parseTemplateList(text);
  if (fields.empty()) {
    *region = SearchRegion{};
    return true;
  }
  if (fields.size() != 4) {
    *error = "search region '" + std::string(text) + "' is not x,y,width,height";
    return false;
  }
  int v[4];
  for (int i = 0; i < 4; ++i) {
    const char* end = fields[i].data() + fields[i].size();
    const std::from_chars_result r = std::from_chars(fields[i].data(), end, v[i]);
    if (r.ec != std::errc() || r.ptr != end || v[i] < 0) {
      *error = "search region field '" + fields[i] + "' is not a non-negative integer";
      return false;
    }
  }
  if (v[2] < 1 || v[3] < 1) {
    *error = "search region '" + std::string(text) + "' has no area (width and height must be at least 1)";
    return false;
  }
  *region = SearchRegion{v[0], v[1], v[2], v[3]};
  return true;
}

std::string joinSearchRegion(const SearchRegion& region) {
  if (region.whole()) return "";
  return std::to_string(region.x) + "," + std::to_string(region.y) + "," + std::to_string(region.width) + "," +
         std::to_string(region.height);
}

SearchRegion placeSearchRegion(const SearchRegion& region, int frameWidth, int frameHeight) {
  if (region.whole()) return SearchRegion{0, 0, frameWidth, frameHeight};
  const int width = std::min(region.width, frameWidth), height = std::min(region.height, frameHeight);
  return SearchRegion{std::min(region.x, frameWidth - width), std::min(region.y, frameHeight - height), width, height};
}

std::string joinScaleList(const std::vector<double>& scales) {
  std::string joined;
  for (std::size_t i = 0; i < scales.size(); ++i) {
    char text[32];
    const std::to_chars_result r = std::to_chars(text, text + sizeof text, scales[i]);
    if (i > 0) joined += ",";
    joined.append(text, r.ptr);
  }
  return joined;
}

}  // namespace nccmatch::plugin
