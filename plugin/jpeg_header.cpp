#include "jpeg_header.hpp"

namespace nccmatch::plugin {

namespace {

std::string hex(unsigned code) {
  const char* digits = "0123456789ABCDEF";
  return std::string("FF") + digits[(code >> 4) & 15] + digits[code & 15];
}

// Start-of-frame codes: C0..CF but DHT (C4), JPG (C8) and DAC (CC).
bool isStartOfFrame(unsigned code) { return code >= 0xC0 && code <= 0xCF && code != 0xC4 && code != 0xC8 && code != 0xCC; }

}  // namespace

bool looksLikeJpeg(const uint8_t* data, std::size_t size) { return size >= 2 && data[0] == 0xFF && data[1] == 0xD8; }

bool checkJpegHeader(const uint8_t* data, std::size_t size, std::size_t fileSize, std::string* why) {
  if (!looksLikeJpeg(data, size)) {
    *why = "not a JPEG file (it does not start with FFD8)";
    return false;
  }
  bool frame = false;
  std::size_t at = 2;
  for (;;) {
    if (at >= size) {
      if (fileSize > size) return true;  // segments beyond the bytes read: left to the decoder
      *why = "the JPEG file ends before its first scan";
      return false;
    }
    if (data[at] != 0xFF) {
      *why = "the JPEG header has a byte where a marker should be (offset " + std::to_string(at) + ")";
      return false;
    }
    while (at < size && data[at] == 0xFF) ++at;  // fill bytes
    if (at >= size) continue;  // handled above
    const unsigned code = data[at++];
    if (code == 0xD8) {
      *why = "the JPEG file has a second start-of-image marker (FFD8) before its first scan";
      return false;
    }
    if (code == 0xD9) {
      *why = "the JPEG file ends (FFD9) before its first scan";
      return false;
    }
    if (code == 0x00 || code == 0x01 || (code >= 0xD0 && code <= 0xD7)) {
      if (code == 0x00) {
        *why = "the JPEG header has a stuffed byte (FF00) where a marker should be";
        return false;
      }
      continue;  // TEM and RSTn stand alone
    }
    if (at + 2 > size) {
      if (fileSize > size) return true;
      *why = "the JPEG file ends inside the length of its " + hex(code) + " segment";
      return false;
    }
    const std::size_t length = std::size_t(data[at]) << 8 | data[at + 1];
    if (length < 2 || at + length > fileSize) {
      *why = "the JPEG " + hex(code) + " segment's length " + std::to_string(length) + " does not fit the file";
      return false;
    }
    if (isStartOfFrame(code)) frame = true;
    if (code == 0xDA) {
      if (!frame) {
        *why = "the JPEG file has a scan (FFDA) before any start-of-frame";
        return false;
      }
      return true;
    }
    at += length;
  }
}

}  // namespace nccmatch::plugin
