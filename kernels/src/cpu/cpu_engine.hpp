// The CPU backend: exact integer window sums and double scores, with three ways to compute the
// numerator sum(I*T): Reference (plain loops and int64 SATs, the oracle for every test), Direct
// (exact, AVX-512 VNNI or auto-vectorised rows) and Fft (tiled FFTW correlation with the
// zero-mean template). Direct and Fft sum windows from the pixels in cache (cpu_window_sums.hpp)
// and find peaks on all threads (cpu_peaks.hpp). Auto picks Direct or Fft per template with a
// measured cost model.
#pragma once

#include <memory>
#include <vector>

#include "common/region_template_sets.hpp"
#include "cpu/cpu_masked_window_sums.hpp"
#include "cpu/cpu_numerator_direct.hpp"
#include "nccmatch/engine.hpp"
#include "rules/score_rules.hpp"
#include "cpu/thread_pool.hpp"

namespace nccmatch {

class FftNumerator;

class CpuEngine final : public Engine {
 public:
  CpuEngine(int threads, CpuPath path);
  ~CpuEngine() override;

  Backend backend() const override { return Backend::Cpu; }
  int workerThreads() const override { return pool_.size(); }
  Status setTemplates(std::vector<TemplateImage> bank) override;
  const std::vector<TemplateImage>& templates() const override { return bank_; }
  Status match(const FrameView& frame, const MatchParams& params, FrameResult* result) override;
  Status scoreMap(const FrameView& frame, Method method, uint32_t templateIndex,
                  std::vector<double>* map) override;
  // Each region scored on one thread (regions spread over the pool) by the Direct numerator, or
  // by plain per-window sums on the Reference path; peaks by the reference findPeaks
  // (cpu_regions.cpp).
  Status matchRegions(const FrameView& frame, const std::vector<RegionQuery>& regions,
                      const MatchParams& params, std::vector<RegionResult>* results) override;
  // A set keeps its images, their statistics, the Direct layouts of the unmasked ones and the
  // numerator templates of the masked ones (cpu_regions.cpp).
  Status prepareRegionTemplates(std::vector<TemplateImage> templates, RegionTemplateSet* set) override;
  Status releaseRegionTemplates(RegionTemplateSet* set) override { return regionSets_.release(set); }
  bool holdsRegionTemplates(const RegionTemplateSet& set) const override { return regionSets_.holds(set); }

  // The numerator path used for each template on the last frame (Auto resolved).
  const std::vector<CpuPath>& resolvedPaths() const { return resolved_; }

 private:
  Status prepareFrame(const FrameView& frame);
  void computeScores(const FrameView& frame, Method method, uint32_t templateIndex, double* out);
  void computeScoresReference(const FrameView& frame, Method method, uint32_t templateIndex, double* out);
  void computeScoresDirect(const FrameView& frame, Method method, uint32_t templateIndex, double* out);
  void computeScoresFft(const FrameView& frame, Method method, uint32_t templateIndex, double* out);
  double exactScoreAt(const FrameView& frame, Method method, uint32_t templateIndex, int x, int y) const;
  void refineMatches(const FrameView& frame, const MatchParams& params, uint32_t templateIndex,
                     std::size_t firstMatch, FrameResult* result) const;

  // One prepared region template set: per template, what matchRegions would otherwise make for an
  // own image each call.
  struct RegionSet {
    std::vector<TemplateImage> images;
    std::vector<TemplateStats> stats;            // maskedTemplateStats
    std::vector<DirectTemplate> packed;          // unmasked: packDirectTemplate; masked: empty
    std::vector<TemplateImage> numerator;        // masked: numeratorTemplate; unmasked: empty
  };

  ThreadPool pool_;
  CpuPath path_;
  RegionTemplateSets<RegionSet> regionSets_;
  std::vector<TemplateImage> bank_;
  std::vector<TemplateStats> stats_;  // over each template's compared pixels
  // Per template: the template with its ignored pixels zeroed (what the numerators correlate),
  // whether its mask ignores any pixel, and the mask's rectangles (masked window sums).
  std::vector<TemplateImage> numerator_;
  std::vector<bool> masked_;
  std::vector<std::vector<MaskRectangle>> rectangles_;
  // Masked templates of one size with one mask (e.g. every angle of a scale on the disc,
  // rotations.hpp) share their window sums: per template the first template of its group, or -1
  // when it shares with none; the group's sums for the current frame, made on first use.
  struct SharedWindowSums {
    std::vector<int64_t> s1, s2;  // map-sized, row-major
    bool valid = false;
  };
  std::vector<int> sumsLeader_;
  std::vector<SharedWindowSums> sharedSums_;  // indexed by leader
  // The sums template i reads (its group's, computed now if not yet this frame), or null.
  const SharedWindowSums* sharedWindowSums(const FrameView& frame, uint32_t templateIndex);
  std::vector<DirectTemplate> packed_;  // the bank laid out for the VNNI direct kernel
  uint64_t bankGeneration_ = 0;
  std::vector<CpuPath> resolved_;
  // The Reference path's tables of the current frame; sized once per frame size.
  std::vector<int64_t> sat_;
  std::vector<int64_t> satSq_;
  std::vector<double> map_;
#ifdef NCCMATCH_HAVE_FFTW  // defined for the library and everything using it (kernels/meson.build)
  std::unique_ptr<FftNumerator> fft_;
#endif
};

}  // namespace nccmatch
