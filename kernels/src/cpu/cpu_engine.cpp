#include "cpu/cpu_engine.hpp"

#include <algorithm>
#include <map>
#include <string>
#include <tuple>

#include "cpu/cpu_cost_model.hpp"
#include "cpu/cpu_direct_scores.hpp"
#include "cpu/cpu_masked_window_sums.hpp"
#include "cpu/cpu_numerator_direct.hpp"
#include "cpu/cpu_peaks.hpp"
#include "cpu/cpu_score_rows.hpp"
#include "cpu/cpu_window_sums.hpp"
#include "nccmatch/sat.hpp"
#include "common/peaks.hpp"
#include "common/validate.hpp"
#include "rules/masked_score_rules.hpp"
#ifdef NCCMATCH_HAVE_FFTW
#include "cpu/cpu_numerator_fft.hpp"
#endif

namespace nccmatch {

CpuEngine::CpuEngine(int threads, CpuPath path) : pool_(threads), path_(path) {}
CpuEngine::~CpuEngine() = default;

Status CpuEngine::setTemplates(std::vector<TemplateImage> bank) {
  NCC_RETURN_IF_ERROR(validateTemplates(bank));
  std::vector<TemplateStats> stats;
  stats.reserve(bank.size());
  for (const TemplateImage& t : bank) stats.push_back(maskedTemplateStats(t));
  packed_.clear();
  numerator_.clear();
  rectangles_.clear();
  for (const TemplateImage& t : bank) {
    packed_.push_back(packDirectTemplate(t));
    numerator_.push_back(numeratorTemplate(t));
    // A mask that ignores nothing is no mask: such a template takes the unmasked window sums.
    rectangles_.push_back(ignoresPixels(t) ? maskRectangles(t) : std::vector<MaskRectangle>{});
  }
  masked_.clear();
  for (const TemplateImage& t : bank) masked_.push_back(ignoresPixels(t));
  // Groups of masked templates with equal size and mask (as compared / ignored).
  std::map<std::tuple<int, int, std::vector<bool>>, int> leaders;
  std::vector<int> members(bank.size(), 0);
  sumsLeader_.assign(bank.size(), -1);
  for (std::size_t i = 0; i < bank.size(); ++i) {
    if (!masked_[i]) continue;
    std::vector<bool> compared(bank[i].mask.size());
    for (std::size_t k = 0; k < compared.size(); ++k) compared[k] = bank[i].mask[k] != 0;
    const int leader = leaders.emplace(std::make_tuple(bank[i].width, bank[i].height, std::move(compared)), int(i))
                           .first->second;
    sumsLeader_[i] = leader;
    ++members[std::size_t(leader)];
  }
  for (std::size_t i = 0; i < bank.size(); ++i)
    if (sumsLeader_[i] >= 0 && members[std::size_t(sumsLeader_[i])] < 2) sumsLeader_[i] = -1;  // alone
  sharedSums_.assign(bank.size(), SharedWindowSums{});
  bank_ = std::move(bank);
  stats_ = std::move(stats);
  ++bankGeneration_;
  return Status();
}

Status CpuEngine::prepareFrame(const FrameView& frame) {
  NCC_RETURN_IF_ERROR(validateFrame(frame));
  if (frame.memory != MemoryKind::Host)
    return Status::error("the CPU backend needs frames in host memory");
  if (path_ == CpuPath::Fft && !cpuFftAvailable())
    return Status::error("CPU path 'fft' needs FFTW3, and this build of nccmatch has none "
                         "(configure with -Dfftw=enabled)");
  resolved_.assign(bank_.size(), CpuPath::Reference);
  for (SharedWindowSums& shared : sharedSums_) shared.valid = false;  // a new frame
  std::vector<bool> useFft(bank_.size(), false);
  bool anyFft = false, anyReference = false, anyMasked = false;
  for (std::size_t i = 0; i < bank_.size(); ++i) {
    const TemplateImage& t = bank_[i];
    if (t.width > frame.width || t.height > frame.height) continue;
    resolved_[i] = resolveCpuPath(path_, frame.width, frame.height, t.width, t.height, pool_.size());
    useFft[i] = resolved_[i] == CpuPath::Fft;
    anyFft = anyFft || useFft[i];
    anyReference = anyReference || resolved_[i] == CpuPath::Reference;
    anyMasked = anyMasked || masked_[i];
  }
  // The Reference path reads the int64 SATs, and so do masked templates on the fast paths (their
  // window sums are boxes of them); unmasked templates on the fast paths sum from the pixels.
  if (anyReference || anyMasked) {
    const std::size_t n = std::size_t(frame.width) * frame.height;
    sat_.resize(n);
    satSq_.resize(n);
    NCC_RETURN_IF_ERROR(
        buildSatCpu(frame.data, frame.stride, frame.width, frame.height, sat_.data(), satSq_.data()));
  }
#ifdef NCCMATCH_HAVE_FFTW
  if (anyFft) {
    if (!fft_) fft_ = std::make_unique<FftNumerator>();
    fft_->prepare(&bank_, bankGeneration_, useFft, frame.width, frame.height, pool_.size());
    fft_->transformFrame(frame, pool_);
  }
#else
  (void)anyFft;
#endif
  return Status();
}

void CpuEngine::computeScores(const FrameView& frame, Method method, uint32_t templateIndex,
                              double* out) {
  if (stats_[templateIndex].n == 0) {  // an empty mask: nothing compared, one value everywhere
    const TemplateImage& t = bank_[templateIndex];
    std::fill(out, out + std::size_t(frame.width - t.width + 1) * (frame.height - t.height + 1),
              emptyMaskScore(method));
    return;
  }
  switch (resolved_[templateIndex]) {
    case CpuPath::Direct: return computeScoresDirect(frame, method, templateIndex, out);
    case CpuPath::Fft: return computeScoresFft(frame, method, templateIndex, out);
    default: return computeScoresReference(frame, method, templateIndex, out);
  }
}

const CpuEngine::SharedWindowSums* CpuEngine::sharedWindowSums(const FrameView& frame, uint32_t templateIndex) {
  const int leader = sumsLeader_[templateIndex];
  if (leader < 0) return nullptr;
  SharedWindowSums& shared = sharedSums_[std::size_t(leader)];
  if (shared.valid) return &shared;
  const TemplateImage& t = bank_[templateIndex];
  const int mapW = frame.width - t.width + 1, mapH = frame.height - t.height + 1;
  shared.s1.resize(std::size_t(mapW) * mapH);
  shared.s2.resize(std::size_t(mapW) * mapH);
  pool_.parallelFor(mapH, [&](int yBegin, int yEnd) {
    for (int y = yBegin; y < yEnd; ++y)
      maskedWindowSumsRow(sat_.data(), satSq_.data(), frame.width, rectangles_[std::size_t(leader)], y, 0, mapW,
                          shared.s1.data() + std::size_t(y) * mapW, shared.s2.data() + std::size_t(y) * mapW);
  });
  shared.valid = true;
  return &shared;
}

void CpuEngine::computeScoresDirect(const FrameView& frame, Method method, uint32_t templateIndex,
                                    double* out) {
  const TemplateImage& t = bank_[templateIndex];
  const int mapW = frame.width - t.width + 1;
  const int mapH = frame.height - t.height + 1;
  // Masked templates: window sums from the SAT boxes of the mask's rectangles, or shared by the
  // group of equal masks; the numerator template has its ignored pixels zeroed.
  const SharedWindowSums* shared = sharedWindowSums(frame, templateIndex);
  RowWindowSums rowSums;
  if (shared) {
    rowSums = [shared, mapW](int y, int64_t*, int64_t*, const int64_t** s1, const int64_t** s2) {
      *s1 = shared->s1.data() + std::size_t(y) * mapW;
      *s2 = shared->s2.data() + std::size_t(y) * mapW;
    };
  } else if (masked_[templateIndex]) {
    rowSums = [this, &frame, templateIndex, mapW](int y, int64_t* a, int64_t* b, const int64_t** s1,
                                                  const int64_t** s2) {
      maskedWindowSumsRow(sat_.data(), satSq_.data(), frame.width, rectangles_[templateIndex], y, 0, mapW, a, b);
      *s1 = a;
      *s2 = b;
    };
  }
  pool_.parallelFor(mapH, [&](int yBegin, int yEnd) {
    scoreRowsDirect(frame, method, numerator_[templateIndex], stats_[templateIndex], packed_[templateIndex], yBegin,
                    yEnd, out, rowSums);
  });
}

void CpuEngine::computeScoresFft(const FrameView& frame, Method method, uint32_t templateIndex,
                                 double* out) {
#ifdef NCCMATCH_HAVE_FFTW
  const TemplateImage& t = bank_[templateIndex];
  const TemplateStats& stats = stats_[templateIndex];
  const int mapW = frame.width - t.width + 1;
  // A normalised score moves by (numerator error) / denominator; where that could exceed this,
  // the window's numerator is recomputed exactly (near-flat windows, seldom many). 1e-5 keeps
  // ten times clear of the 1e-4 agreement the tests ask for.
  constexpr double kMaxScoreError = 1e-5;
  const SharedWindowSums* shared = sharedWindowSums(frame, templateIndex);
  // Each tile is scored as soon as its inverse transform is done, while it is still in cache.
  fft_->centredCrossTiles(templateIndex, pool_, [&](int x0, int y0, int x1, int y1, const float* values,
                                                    int stride, float err) {
    thread_local std::vector<int64_t> s1, s2;
    thread_local WindowSumRows windows;
    const int count = x1 - x0;
    if (int(s1.size()) < count) s1.resize(count), s2.resize(count);
    const double minDenominator = double(err) / kMaxScoreError;
    const bool masked = masked_[templateIndex];
    if (!masked) windows.start(frame.data, frame.stride, t.width, t.height, x0, count, y0);
    for (int y = y0; y < y1; ++y) {
      double* row = out + std::size_t(y) * mapW + x0;
      const float* num = values + std::size_t(y - y0) * stride;
      if (shared) {
        std::copy_n(shared->s1.data() + std::size_t(y) * mapW + x0, count, s1.data());
        std::copy_n(shared->s2.data() + std::size_t(y) * mapW + x0, count, s2.data());
      } else if (masked) {
        maskedWindowSumsRow(sat_.data(), satSq_.data(), frame.width, rectangles_[templateIndex], y, x0, count,
                            s1.data(), s2.data());
      } else {
        if (y > y0) windows.advance();
        windows.sums(s1.data(), s2.data());
      }
      if (!scoreRowCentred(method, stats, s1.data(), s2.data(), num, count, minDenominator, row)) continue;
      for (int i = 0; i < count; ++i) {
        const CentredScore r = scoreFromCentred(method, stats, s1[i], s2[i], num[i]);
        if (r.denominator > 0 && r.denominator < minDenominator) {
          const int64_t c = directCrossAt(frame.data, frame.stride, x0 + i, y, numerator_[templateIndex]);
          row[i] = scoreFromSums(method, stats, s1[i], s2[i], c);
        }
      }
    }
  });
#else
  (void)frame, (void)method, (void)templateIndex, (void)out;
#endif
}

double CpuEngine::exactScoreAt(const FrameView& frame, Method method, uint32_t templateIndex,
                               int x, int y) const {
  const TemplateImage& t = bank_[templateIndex];
  int64_t s1, s2;
  if (masked_[templateIndex])
    maskedWindowSumsAt(frame.data, frame.stride, x, y, t, &s1, &s2);
  else
    windowSumsAt(frame.data, frame.stride, x, y, t.width, t.height, &s1, &s2);
  int64_t c = directCrossAt(frame.data, frame.stride, x, y, numerator_[templateIndex]);
  return maskedScoreFromSums(method, stats_[templateIndex], s1, s2, c);
}

// The FFT path's reported scores are made exact, and ties ordered as on the exact paths. A match
// chosen on its float score whose exact score misses the threshold is dropped: the float score
// can pass a threshold the exact one misses by the rounding bound (an sqdiff of exactly 0 against
// a threshold just below 0 was reported; found by tests/fuzz/fuzz_engine).
void CpuEngine::refineMatches(const FrameView& frame, const MatchParams& params, uint32_t templateIndex,
                              std::size_t firstMatch, FrameResult* result) const {
  const Method method = params.method;
  const TemplateImage& t = bank_[templateIndex];
  const int mapW = frame.width - t.width + 1, mapH = frame.height - t.height + 1;
  const double sign = goodnessSign(method);
  auto refine = [&](Match* m) {
    m->score = exactScoreAt(frame, method, templateIndex, m->x, m->y);
    auto good = [&](int x, int y) {
      return x == m->x && y == m->y ? sign * m->score : sign * exactScoreAt(frame, method, templateIndex, x, y);
    };
    m->subX = subPixelX(good, mapW, m->x, m->y);
    m->subY = subPixelY(good, mapH, m->x, m->y);
  };
  for (std::size_t k = firstMatch; k < result->matches.size(); ++k) refine(&result->matches[k]);
  if (result->best[templateIndex]) refine(&*result->best[templateIndex]);
  orderExactMatches(params, &result->matches, firstMatch, &result->best[templateIndex]);
}

void CpuEngine::computeScoresReference(const FrameView& frame, Method method, uint32_t templateIndex,
                              double* out) {
  const TemplateImage& t = numerator_[templateIndex];  // ignored pixels zeroed: sum I T M
  const TemplateStats& stats = stats_[templateIndex];
  const bool masked = masked_[templateIndex];
  const TemplateImage& withMask = bank_[templateIndex];
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
        int64_t s1, s2;
        if (masked) {  // plain loops over the compared pixels: the oracle of the masked fast paths
          maskedWindowSumsAt(frame.data, frame.stride, x, y, withMask, &s1, &s2);
        } else {
          s1 = satBox(sat_.data(), frame.width, x, y, x + t.width, y + t.height);
          s2 = satBox(satSq_.data(), frame.width, x, y, x + t.width, y + t.height);
        }
        row[x] = maskedScoreFromSums(method, stats, s1, s2, cross[x]);
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
    const std::size_t firstMatch = result->matches.size();
    findPeaksParallel(map_.data(), mapW, mapH, t.width, t.height, i, params, pool_, &result->matches,
                      &result->best[i]);
    if (resolved_[i] == CpuPath::Fft) refineMatches(frame, params, i, firstMatch, result);
  }
  return Status();
}

Status CpuEngine::scoreMap(const FrameView& frame, Method method, uint32_t templateIndex,
                          std::vector<double>* map) {
  NCC_RETURN_IF_ERROR(validateScoreMapRequest(bank_, frame, method, templateIndex, map));
  NCC_RETURN_IF_ERROR(prepareFrame(frame));
  const TemplateImage& t = bank_[templateIndex];
  map->resize(std::size_t(frame.width - t.width + 1) * (frame.height - t.height + 1));
  computeScores(frame, method, templateIndex, map->data());
  return Status();
}

}  // namespace nccmatch
