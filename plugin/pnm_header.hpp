// A PNM file's header as netpbm defines it, checked before pnmdec reads the file: GStreamer's
// pnmdec (1.22) reads past what a malformed header gave it and crashes the process (a P6 header
// without its maxval, a P4 header without its height: tests/fuzz/fuzz_template_loader found both),
// so a template file whose header or pixel data does not add up is refused, naming why.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

namespace nccmatch::plugin {

struct PnmHeader {
  int kind = 0;  // 1..6 (P1..P6)
  long width = 0, height = 0, maxval = 1;
  std::size_t dataOffset = 0;  // where the pixels start
};

// The magic "P1".."P6", then width, height and (but for P1 and P4) maxval, decimal numbers
// separated by whitespace (space, tab, newline: pnmdec's, narrower than netpbm's) and '#' comments
// (to the next newline), each number followed by whitespace, the last by one whitespace byte.
// Also checks width and height in 1..kPnmMaxSide, maxval in 1..65535 and, for the binary kinds
// (P4, P5, P6), that the file's `fileSize` bytes hold every pixel. `data`: the file's first `size`
// bytes (at least the whole header). False with `why` otherwise.
bool parsePnmHeader(const uint8_t* data, std::size_t size, std::size_t fileSize, PnmHeader* header, std::string* why);

constexpr long kPnmMaxSide = 1 << 16;

}  // namespace nccmatch::plugin
