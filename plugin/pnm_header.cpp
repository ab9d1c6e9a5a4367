#include "pnm_header.hpp"

namespace nccmatch::plugin {

namespace {

// Whitespace and comments as pnmdec reads them (GStreamer 1.22, gstpnmutils.c), which is
// narrower than netpbm: only space, tab and newline separate, a comment runs to the next newline
// (a carriage return does not end it), and a number must end at one of the three. A header that
// netpbm reads but pnmdec would read otherwise is refused here: where the two disagreed on a
// comment ended by a carriage return, pnmdec took other numbers than this check had and crashed
// (tests/fuzz/fuzz_template_loader, corpus pnm-comment-ended-by-cr-crashed-pnmdec).
bool isSpace(uint8_t c) { return c == ' ' || c == '\t' || c == '\n'; }

// Skips whitespace and comments from `at`; then reads a decimal number of at most 9 digits.
bool readNumber(const uint8_t* data, std::size_t size, std::size_t* at, long* value) {
  std::size_t i = *at;
  while (i < size && (isSpace(data[i]) || data[i] == '#')) {
    if (data[i] == '#')
      while (i < size && data[i] != '\n') ++i;
    else
      ++i;
  }
  long v = 0;
  int digits = 0;
  for (; i < size && data[i] >= '0' && data[i] <= '9'; ++i, ++digits) {
    if (digits == 9) return false;
    v = 10 * v + (data[i] - '0');
  }
  if (digits == 0) return false;
  *at = i;
  *value = v;
  return true;
}

}  // namespace

bool parsePnmHeader(const uint8_t* data, std::size_t size, std::size_t fileSize, PnmHeader* header,
                    std::string* why) {
  if (size < 2 || data[0] != 'P' || data[1] < '1' || data[1] > '6') {
    *why = "not a PNM file (its magic is not P1..P6)";
    return false;
  }
  PnmHeader h;
  h.kind = data[1] - '0';
  std::size_t at = 2;
  if (at >= size || !(isSpace(data[at]) || data[at] == '#')) {
    *why = "the PNM magic is not followed by whitespace";
    return false;
  }
  const bool bitmap = h.kind == 1 || h.kind == 4;
  if (!readNumber(data, size, &at, &h.width)) {
    *why = "the PNM header has no width";
    return false;
  }
  if (at >= size || !isSpace(data[at])) {
    *why = "the PNM width is not followed by a space, tab or newline";
    return false;
  }
  if (!readNumber(data, size, &at, &h.height)) {
    *why = "the PNM header has no height";
    return false;
  }
  if (!bitmap && (at >= size || !isSpace(data[at]))) {
    *why = "the PNM height is not followed by a space, tab or newline";
    return false;
  }
  if (!bitmap && !readNumber(data, size, &at, &h.maxval)) {
    *why = "the PNM header has no maxval";
    return false;
  }
  if (h.width < 1 || h.height < 1 || h.width > kPnmMaxSide || h.height > kPnmMaxSide) {
    *why = "the PNM image is " + std::to_string(h.width) + "x" + std::to_string(h.height) + " (sides 1.." +
           std::to_string(kPnmMaxSide) + ")";
    return false;
  }
  if (h.maxval < 1 || h.maxval > 65535) {
    *why = "the PNM maxval is " + std::to_string(h.maxval) + " (1..65535)";
    return false;
  }
  if (at >= size || !isSpace(data[at])) {
    *why = "the PNM header ends without the whitespace byte (space, tab or newline) before the pixels";
    return false;
  }
  h.dataOffset = at + 1;
  if (h.kind >= 4) {
    const std::size_t sampleBytes = h.maxval > 255 ? 2 : 1;
    const std::size_t rowBytes = h.kind == 4 ? std::size_t(h.width + 7) / 8
                                             : std::size_t(h.width) * sampleBytes * (h.kind == 6 ? 3 : 1);
    const std::size_t need = rowBytes * std::size_t(h.height);
    const std::size_t have = fileSize > h.dataOffset ? fileSize - h.dataOffset : 0;
    if (have < need) {
      *why = "the PNM data holds " + std::to_string(have) + " bytes but a " + std::to_string(h.width) +
             "x" + std::to_string(h.height) + " P" + std::to_string(h.kind) + " image needs " + std::to_string(need);
      return false;
    }
  }
  *header = h;
  return true;
}

}  // namespace nccmatch::plugin
