// A JPEG file's marker structure up to its first scan, checked before decodebin reads the file:
// GStreamer 1.22's jpegdec spins forever on some malformed streams (two start-of-image markers and
// a few bytes: tests/fuzz/fuzz_template_loader), inside the loading pipeline's state change, so a
// JPEG whose segments do not add up is refused at once, naming why, instead of costing the loader
// its time bound and a thread left spinning.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

namespace nccmatch::plugin {

// True when `data` starts like a JPEG file (FF D8).
bool looksLikeJpeg(const uint8_t* data, std::size_t size);

// From the start-of-image marker: markers (FF, fill bytes FF, a code) and, but for the standalone
// ones, segments whose 2-byte length fits in the file (`fileSize` bytes; `data` its first `size`),
// up to the first start-of-scan, which needs a start-of-frame before it. A second start-of-image or
// an end-of-image before the scan is refused. Segments beyond the `size` bytes given (a file with
// large metadata) are left unchecked, to the decoder. False with `why` otherwise.
bool checkJpegHeader(const uint8_t* data, std::size_t size, std::size_t fileSize, std::string* why);

}  // namespace nccmatch::plugin
