// Decodes template image files through GStreamer itself (any format the installed plugins decode:
// PNG, JPEG, PGM, ...) into 8-bit grayscale templates for the engine.
#pragma once

#include <string>
#include <vector>

#include "nccmatch/types.hpp"

namespace nccmatch::plugin {

enum class TemplateLoadFailure { None, NotFound, Unreadable, Undecodable };

struct TemplateLoadError {
  TemplateLoadFailure kind = TemplateLoadFailure::None;
  std::string file;     // the file that failed
  std::string message;  // a sentence naming the file and the reason
};

// "dir/star.png" -> "star"; "dir/archive.tar.gz" -> "archive.tar"; "noext" -> "noext".
std::string templateNameFromPath(const std::string& path);

// Decodes the first image of `path` and converts it to GRAY8 (tightly packed). Blocks until the
// file is decoded or fails (at most a few seconds for a file that never produces an image).
bool loadTemplateFile(const std::string& path, nccmatch::TemplateImage* image, TemplateLoadError* error);

// Loads every file in order; stops at the first failure, leaving `bank` untouched.
bool loadTemplateBank(const std::vector<std::string>& paths, std::vector<nccmatch::TemplateImage>* bank,
                      TemplateLoadError* error);

}  // namespace nccmatch::plugin
