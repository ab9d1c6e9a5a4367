#include "cpu_engine.hpp"

#include <string>

#include "nccmatch/sat.hpp"
#include "peaks.hpp"
#include "validate.hpp"

namespace nccmatch {

CpuEngine::CpuEngine(int threads, CpuPath path) : pool_(threads), path_(path) {}

Status CpuEngine::setTemplates(std::vector<TemplateImage> bank) {
  NCC_RETURN_IF_ERROR(validateTemplates(bank));
  std::vector<TemplateStats> stats;
  stats.reserve(bank.size());
  for (const TemplateImage& t : bank) {
    TemplateStats s;
    s.n = int64_t(t.width) * t.height;
    for (uint8_t v : t.pixels) {
      s.sum += v;
      s.sumSq += int64_t(v) * v;
    }
    stats.push_back(s);
  }
  bank_ = std::move(bank);
  stats_ = std::move(stats);
  return Status();
}

Status CpuEngine::prepareFrame(const FrameView& frame) {
  NCC_RETURN_IF_ERROR(validateFrame(frame));
  if (frame.memory != MemoryKind::Host)
    return Status::error("the CPU backend needs frames in host memory");
  const std::size_t n = std::size_t(frame.width) * frame.height;
  sat_.resize(n);
  satSq_.resize(n);
  return buildSatCpu(frame.data, frame.stride, frame.width, frame.height, sat_.data(), satSq_.data());
}

void CpuEngine::computeScores(const FrameView& frame, Method method, uint32_t templateIndex,
                              double* out) {
  const TemplateImage& t = bank_[templateIndex];
  const TemplateStats& stats = stats_[templateIndex];
  const int mapW = frame.width - t.width + 1;
  const int mapH = frame.height - t.height + 1;
  // A template row's dot product fits int32 while width * 255^2 < 2^31.
  const bool rowFitsInt32 = t.width < 33025;
  pool_.parallelFor(mapH, [&](int yBegin, int yEnd) {
    std::vector<int64_t> cross(mapW);
    for (int y = yBegin; y < yEnd; ++y) {
      std::fill(cross.begin(), cross.end(), 0);
      for (int ty = 0; ty < t.height; ++ty) {
        const uint8_t* img = frame.data + std::size_t(y + ty) * frame.stride;
        const uint8_t* tpl = t.pixels.data() + std::size_t(ty) * t.width;
        for (int x = 0; x < mapW; ++x) {
          if (rowFitsInt32) {
            int32_t dot = 0;
            for (int tx = 0; tx < t.width; ++tx) dot += int32_t(img[x + tx]) * int32_t(tpl[tx]);
            cross[x] += dot;
          } else {
            int64_t dot = 0;
            for (int tx = 0; tx < t.width; ++tx) dot += int64_t(img[x + tx]) * int64_t(tpl[tx]);
            cross[x] += dot;
          }
        }
      }
      double* row = out + std::size_t(y) * mapW;
      for (int x = 0; x < mapW; ++x) {
        int64_t s1 = satBox(sat_.data(), frame.width, x, y, x + t.width, y + t.height);
        int64_t s2 = satBox(satSq_.data(), frame.width, x, y, x + t.width, y + t.height);
        row[x] = scoreFromSums(method, stats, s1, s2, cross[x]);
      }
    }
  });
}

Status CpuEngine::match(const FrameView& frame, const MatchParams& params, FrameResult* result) {
  if (result == nullptr) return Status::error("match: result pointer is null");
  NCC_RETURN_IF_ERROR(validateParams(params));
  NCC_RETURN_IF_ERROR(prepareFrame(frame));
  result->matches.clear();
  result->best.assign(bank_.size(), std::nullopt);
  for (uint32_t i = 0; i < bank_.size(); ++i) {
    const TemplateImage& t = bank_[i];
    if (t.width > frame.width || t.height > frame.height) continue;
    const int mapW = frame.width - t.width + 1;
    const int mapH = frame.height - t.height + 1;
    map_.resize(std::size_t(mapW) * mapH);
    computeScores(frame, params.method, i, map_.data());
    findPeaks(map_.data(), mapW, mapH, t.width, t.height, i, params, &result->matches,
              &result->best[i]);
  }
  return Status();
}

Status CpuEngine::scoreMap(const FrameView& frame, Method method, uint32_t templateIndex,
                          std::vector<double>* map) {
  if (map == nullptr) return Status::error("scoreMap: map pointer is null");
  if (templateIndex >= bank_.size())
    return Status::error("scoreMap: template index " + std::to_string(templateIndex) +
                         " is outside the bank of " + std::to_string(bank_.size()));
  MatchParams params;
  params.method = method;
  NCC_RETURN_IF_ERROR(validateParams(params));
  NCC_RETURN_IF_ERROR(prepareFrame(frame));
  const TemplateImage& t = bank_[templateIndex];
  if (t.width > frame.width || t.height > frame.height)
    return Status::error("scoreMap: template '" + t.name + "' is larger than the frame");
  map->resize(std::size_t(frame.width - t.width + 1) * (frame.height - t.height + 1));
  computeScores(frame, method, templateIndex, map->data());
  return Status();
}

}  // namespace nccmatch
