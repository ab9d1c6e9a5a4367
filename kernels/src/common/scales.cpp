// Scaled template banks: resampling on the host, and the merge of the scaled copies' matches.
#include "nccmatch/scales.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <string>

#include "common/angle_neighbours.hpp"
#include "common/peaks.hpp"
#include "common/validate.hpp"
#include "rules/peak_rules.hpp"

namespace nccmatch {

namespace {

// One output sample of a 1-D resampling: weights over consecutive source samples.
struct Taps {
  int first = 0;
  std::vector<double> weights;
};

// Area averaging when shrinking (each source sample weighted by its overlap with the output
// sample's footprint), linear interpolation between centres when growing, a copy when equal.
std::vector<Taps> resamplingTaps(int from, int to) {
  std::vector<Taps> taps(static_cast<std::size_t>(to));
  const double ratio = double(from) / to;
  for (int i = 0; i < to; ++i) {
    Taps& t = taps[std::size_t(i)];
    if (from == to) {
      t.first = i;
      t.weights = {1.0};
    } else if (from > to) {
      const double begin = i * ratio, end = (i + 1) * ratio;
      t.first = int(std::floor(begin));
      const int last = std::min(from - 1, int(std::ceil(end)) - 1);
      for (int j = t.first; j <= last; ++j)
        t.weights.push_back((std::min(end, j + 1.0) - std::max(begin, double(j))) / ratio);
    } else {
      const double centre = std::clamp((i + 0.5) * ratio - 0.5, 0.0, double(from - 1));
      t.first = int(std::floor(centre));
      const double f = centre - t.first;
      t.weights = {1.0 - f};
      if (t.first + 1 < from) t.weights.push_back(f);
    }
  }
  return taps;
}

std::string formatScale(double s) {
  char text[32];
  std::snprintf(text, sizeof text, "%g", s);
  return text;
}

// Values of a w x h image resampled to width x height by the taps of each axis, rows first, in
// doubles (no rounding between the passes).
std::vector<double> resampleValues(const std::vector<double>& in, int w, int h, int width, int height) {
  const std::vector<Taps> across = resamplingTaps(w, width);
  const std::vector<Taps> down = resamplingTaps(h, height);
  std::vector<double> rows(std::size_t(h) * width);
  for (int y = 0; y < h; ++y) {
    const double* src = in.data() + std::size_t(y) * w;
    for (int x = 0; x < width; ++x) {
      const Taps& t = across[std::size_t(x)];
      double sum = 0.0;
      for (std::size_t k = 0; k < t.weights.size(); ++k) sum += t.weights[k] * src[t.first + int(k)];
      rows[std::size_t(y) * width + x] = sum;
    }
  }
  std::vector<double> out(std::size_t(width) * height);
  for (int y = 0; y < height; ++y) {
    const Taps& t = down[std::size_t(y)];
    for (int x = 0; x < width; ++x) {
      double sum = 0.0;
      for (std::size_t k = 0; k < t.weights.size(); ++k)
        sum += t.weights[k] * rows[std::size_t(t.first + int(k)) * width + x];
      out[std::size_t(y) * width + x] = sum;
    }
  }
  return out;
}

uint8_t roundPixel(double v) { return uint8_t(std::clamp(std::lround(v), 0L, 255L)); }

}  // namespace

TemplateImage resizeTemplate(const TemplateImage& source, int width, int height) {
  TemplateImage out;
  out.name = source.name;
  out.width = width;
  out.height = height;
  if (width == source.width && height == source.height) {
    out.pixels = source.pixels;
    out.mask = source.mask;
    return out;
  }
  const std::size_t n = source.pixels.size();
  out.pixels.resize(std::size_t(width) * height);
  if (source.mask.empty()) {
    const std::vector<double> v =
        resampleValues(std::vector<double>(source.pixels.begin(), source.pixels.end()), source.width,
                       source.height, width, height);
    for (std::size_t k = 0; k < v.size(); ++k) out.pixels[k] = roundPixel(v[k]);
    return out;
  }
  // Under a mask, ignored pixels must not bleed into compared ones: resample T * M and M, a pixel
  // is T*M / M where M covers it, and compared when compared pixels cover at least half of it.
  std::vector<double> weight(n), weighted(n);
  for (std::size_t k = 0; k < n; ++k) {
    weight[k] = source.mask[k] != 0 ? 1.0 : 0.0;
    weighted[k] = weight[k] * source.pixels[k];
  }
  const std::vector<double> cover = resampleValues(weight, source.width, source.height, width, height);
  const std::vector<double> sum = resampleValues(weighted, source.width, source.height, width, height);
  out.mask.resize(out.pixels.size());
  for (std::size_t k = 0; k < out.pixels.size(); ++k) {
    out.pixels[k] = cover[k] > 0 ? roundPixel(sum[k] / cover[k]) : 0;
    out.mask[k] = cover[k] >= 0.5 ? 255 : 0;
  }
  return out;
}

Status validateTemplateScales(const std::vector<double>& scales) {
  if (scales.empty()) return Status::error("no scale factor given (1 matches the templates as they are)");
  for (double s : scales)
    if (!std::isfinite(s) || s < kMinTemplateScale || s > kMaxTemplateScale)
      return Status::error("scale factor " + formatScale(s) + " is outside " + formatScale(kMinTemplateScale) +
                           ".." + formatScale(kMaxTemplateScale));
  return Status();
}

Status scaleTemplates(const std::vector<TemplateImage>& originals, const std::vector<double>& scales,
                      ScaledBank* out) {
  NCC_RETURN_IF_ERROR(validateTemplateScales(scales));
  // The engine's own rules for a template: resampling a 0x0 template or one whose pixels do not
  // fill its size would read past them (found by tests/fuzz/fuzz_engine).
  NCC_RETURN_IF_ERROR(validateTemplates(originals));
  ScaledBank bank;
  bank.originals = originals.size();
  for (std::size_t i = 0; i < originals.size(); ++i) {
    const TemplateImage& t = originals[i];
    std::vector<std::pair<int, int>> sizes;
    for (double s : scales) {
      const long w = std::max(1L, std::lround(t.width * s)), h = std::max(1L, std::lround(t.height * s));
      if (w > kMaxScaledTemplateSide || h > kMaxScaledTemplateSide)
        return Status::error("template " + std::to_string(i) + " ('" + t.name + "', " + std::to_string(t.width) +
                             "x" + std::to_string(t.height) + ") at scale " + formatScale(s) + " would be " +
                             std::to_string(w) + "x" + std::to_string(h) + ", larger than " +
                             std::to_string(kMaxScaledTemplateSide) + " pixels a side");
      if (std::find(sizes.begin(), sizes.end(), std::make_pair(int(w), int(h))) != sizes.end()) continue;
      sizes.emplace_back(int(w), int(h));
      bank.templates.push_back(resizeTemplate(t, int(w), int(h)));
      bank.original.push_back(uint32_t(i));
      bank.scale.push_back(s);
      bank.angle.push_back(0.0);
    }
  }
  *out = std::move(bank);
  return Status();
}

namespace {

// The best goodness entry e reported with its box centre within 2 pixels of m's (false if none).
bool goodnessNear(const std::vector<std::vector<const Match*>>& byEntry, const FrameResult& scaled, std::size_t e,
                  const Match& m, double sign, double* goodness) {
  constexpr double kNear = 2.0;
  const double cx = m.subX + m.width / 2.0, cy = m.subY + m.height / 2.0;
  bool found = false;
  auto consider = [&](const Match& c) {
    if (std::fabs(c.subX + c.width / 2.0 - cx) > kNear || std::fabs(c.subY + c.height / 2.0 - cy) > kNear) return;
    if (!found || sign * c.score > *goodness) *goodness = sign * c.score;
    found = true;
  };
  for (const Match* c : byEntry[e]) consider(*c);
  if (e < scaled.best.size() && scaled.best[e]) consider(*scaled.best[e]);
  return found;
}

}  // namespace

FrameResult mergeScaledResult(const ScaledBank& bank, const FrameResult& scaled, const MatchParams& params) {
  const double sign = goodnessSign(params.method);
  struct Ranked {
    double goodness;
    std::size_t entry;
    Match match;
  };
  auto better = [](const Ranked& a, const Ranked& b) {
    if (a.goodness != b.goodness) return a.goodness > b.goodness;
    if (a.entry != b.entry) return a.entry < b.entry;
    if (a.match.y != b.match.y) return a.match.y < b.match.y;
    return a.match.x < b.match.x;
  };
  // Matches of each entry, for the angle refinement.
  std::vector<std::vector<const Match*>> byEntry(bank.original.size());
  for (const Match& m : scaled.matches)
    if (m.templateIndex < byEntry.size()) byEntry[m.templateIndex].push_back(&m);
  const AngleNeighbours neighbours = angleNeighbours(bank);
  auto refinedAngle = [&](const Match& m, std::size_t e) {
    double angle = entryAngle(bank, e);
    double left = 0, right = 0;
    if (neighbours.left[e] < 0 || neighbours.right[e] < 0 ||
        !goodnessNear(byEntry, scaled, std::size_t(neighbours.left[e]), m, sign, &left) ||
        !goodnessNear(byEntry, scaled, std::size_t(neighbours.right[e]), m, sign, &right))
      return angle;
    angle += parabolaVertex(neighbours.leftStep[e], left, sign * m.score, neighbours.rightStep[e], right);
    if (neighbours.wraps[e]) {
      if (angle < neighbours.first[e]) angle += 360.0;
      if (angle >= neighbours.first[e] + 360.0) angle -= 360.0;
    }
    return angle;
  };
  auto relabel = [&](const Match& m, std::size_t entry) {
    Match r = m;
    r.templateIndex = bank.original[entry];
    r.scale = bank.scale[entry];
    r.angle = refinedAngle(m, entry);
    return r;
  };

  FrameResult merged;
  merged.best.resize(bank.originals);
  std::vector<double> bestGoodness(bank.originals);
  for (std::size_t e = 0; e < scaled.best.size() && e < bank.original.size(); ++e) {
    if (!scaled.best[e]) continue;
    const uint32_t o = bank.original[e];
    const double g = sign * scaled.best[e]->score;
    if (!merged.best[o] || g > bestGoodness[o]) {  // strict: the earlier entry wins a tie
      merged.best[o] = relabel(*scaled.best[e], e);
      bestGoodness[o] = g;
    }
  }

  std::vector<std::vector<Ranked>> candidates(bank.originals);
  for (const Match& m : scaled.matches) {
    const std::size_t e = m.templateIndex;
    if (e >= bank.original.size()) continue;
    candidates[bank.original[e]].push_back({sign * m.score, e, relabel(m, e)});
  }
  for (std::vector<Ranked>& list : candidates) {
    if (list.empty()) continue;
    std::sort(list.begin(), list.end(), better);
    // KeptBoxes files boxes by their corner in cells as large as the largest box: boxes of any
    // smaller size that overlap still lie in neighbouring cells.
    int right = 1, bottom = 1, boxWidth = 1, boxHeight = 1;
    for (const Ranked& r : list) {
      right = std::max(right, r.match.x + 1);
      bottom = std::max(bottom, r.match.y + 1);
      boxWidth = std::max(boxWidth, r.match.width);
      boxHeight = std::max(boxHeight, r.match.height);
    }
    KeptBoxes kept(right, bottom, boxWidth, boxHeight, params.nmsIou);
    for (const Ranked& r : list) {
      if (int(kept.boxes().size()) >= params.maxMatches) break;
      if (!kept.suppresses(r.match)) kept.add(r.match);
    }
    merged.matches.insert(merged.matches.end(), kept.boxes().begin(), kept.boxes().end());
  }
  return merged;
}

}  // namespace nccmatch
