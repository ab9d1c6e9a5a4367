// Plain data types shared by every backend of the nccmatch engine.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace nccmatch {

// The six methods of OpenCV's matchTemplate, with templatematch's numeric values 0-5.
enum class Method : int {
  SqDiff = 0,
  SqDiffNormed = 1,
  CCorr = 2,
  CCorrNormed = 3,
  CCoeff = 4,
  CCoeffNormed = 5,
};

// "sqdiff", "sqdiff-normed", "ccorr", "ccorr-normed", "ccoeff", "ccoeff-normed".
const char* methodName(Method method);
// Accepts the names above and the numbers "0".."5"; false for anything else.
bool parseMethod(const std::string& text, Method* method);
// The sqdiff methods measure a distance: lower scores are better matches.
inline bool lowerIsBetter(Method method) {
  return method == Method::SqDiff || method == Method::SqDiffNormed;
}

// One 8-bit grayscale template, tightly packed (row pitch == width).
struct TemplateImage {
  std::string name;
  int width = 0;
  int height = 0;
  std::vector<uint8_t> pixels;
  // Optional mask of the same size and layout: 0 = pixel ignored ("don't care"), anything else =
  // pixel compared. Empty: every pixel is compared. Scores under a mask are OpenCV's matchTemplate
  // with a binary mask: every sum, mean and norm runs over the compared pixels only
  // (rules/masked_score_rules.hpp).
  std::vector<uint8_t> mask;
};

// Where frame pixels live. Device: CUDA device memory of the engine's device, its pixels written
// when the call is made (the work writing them complete: the engine's stream does not wait for
// other streams, and a pageable cudaMemcpy may return before its copy has landed).
enum class MemoryKind { Host, Device };

// A view of one 8-bit grayscale frame (e.g. the luma plane of I420/NV12). stride is in bytes.
struct FrameView {
  const uint8_t* data = nullptr;
  int width = 0;
  int height = 0;
  std::size_t stride = 0;
  MemoryKind memory = MemoryKind::Host;
};

struct MatchParams {
  Method method = Method::CCoeffNormed;
  // A match must score >= threshold (<= threshold for the sqdiff methods).
  double threshold = 0.8;
  // At most this many matches per template (0 = none reported; best[] is still filled).
  int maxMatches = 1;
  // A box overlapping a better box of the same template by more than this IoU is dropped.
  double nmsIou = 0.3;
};

struct Match {
  uint32_t templateIndex = 0;
  // Top-left corner of the matched box (OpenCV's matchTemplate location) and the template size.
  int x = 0;
  int y = 0;
  int width = 0;
  int height = 0;
  double score = 0.0;
  // Top-left corner refined to sub-pixel precision by a parabola through the peak's neighbours.
  double subX = 0.0;
  double subY = 0.0;
  // The factor the template was resized by for this match: 1 unless it comes from a scaled bank
  // (scales.hpp), where width and height are the scaled size.
  double scale = 1.0;
  // The angle in degrees (counter-clockwise on screen) the template was rotated by for this
  // match: 0 unless it comes from a rotated bank (rotations.hpp); refined between the bank's
  // neighbouring angles by a parabola through their scores, as subX/subY are between pixels.
  double angle = 0.0;
};

struct FrameResult {
  // Matches that pass the threshold, after NMS and max-matches: ordered by template index, then
  // best first.
  std::vector<Match> matches;
  // Per template: the best position in the whole frame regardless of threshold (what
  // templatematch reports). Empty for a template larger than the frame.
  std::vector<std::optional<Match>> best;
};

}  // namespace nccmatch
