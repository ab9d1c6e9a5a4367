// Decodes template image files through GStreamer itself (any format the installed plugins decode:
// PNG, JPEG, PGM, ...) into 8-bit grayscale templates for the engine.
#pragma once

#include <string>
#include <vector>

#include "nccmatch/types.hpp"

namespace nccmatch::plugin {

// BadMask: a mask file decodes but does not fit its template, or `masks` lists more files than
// there are templates.
enum class TemplateLoadFailure { None, NotFound, Unreadable, Undecodable, BadMask };

// A template file's alpha channel, or a mask file's gray level, below this marks a pixel ignored
// (more than half transparent, or darker than mid-gray); at or above it, compared.
inline constexpr int kMaskThreshold = 128;

struct TemplateLoadError {
  TemplateLoadFailure kind = TemplateLoadFailure::None;
  std::string file;     // the file that failed
  std::string message;  // a sentence naming the file and the reason
};

// "dir/star.png" -> "star"; "dir/archive.tar.gz" -> "archive.tar"; "noext" -> "noext".
std::string templateNameFromPath(const std::string& path);

// Decodes the first image of `path` and converts it to GRAY8 (tightly packed). An image with an
// alpha channel (PNG with transparency, gray + alpha, ...) gives the template's mask: alpha below
// kMaskThreshold is ignored; no mask when no pixel is. Blocks until the file is decoded or fails
// (at most 11 s for a file whose decoder never produces an image or never returns).
bool loadTemplateFile(const std::string& path, nccmatch::TemplateImage* image, TemplateLoadError* error);

// Decodes a mask file for `t` (its gray level: below kMaskThreshold ignored) into t->mask,
// replacing an alpha channel's. Fails naming the file, the entry and the template when it does
// not decode or its size differs from the template's.
bool loadTemplateMask(const std::string& path, std::size_t entry, nccmatch::TemplateImage* t,
                      TemplateLoadError* error);

// Loads every file in order, then the mask files (parallel to paths; an empty entry: none); stops
// at the first failure, leaving `bank` untouched.
bool loadTemplateBank(const std::vector<std::string>& paths, const std::vector<std::string>& maskPaths,
                      std::vector<nccmatch::TemplateImage>* bank, TemplateLoadError* error);

}  // namespace nccmatch::plugin
