// The CPU backend: exact integer sums (int64 SATs, direct sum of I*T), double scores.
// The oracle for every GPU test and the fallback when there is no GPU.
#pragma once

#include <memory>
#include <vector>

#include "nccmatch/engine.hpp"
#include "score_rules.hpp"
#include "thread_pool.hpp"

namespace nccmatch {

class CpuEngine final : public Engine {
 public:
  CpuEngine(int threads, CpuPath path);

  Backend backend() const override { return Backend::Cpu; }
  Status setTemplates(std::vector<TemplateImage> bank) override;
  const std::vector<TemplateImage>& templates() const override { return bank_; }
  Status match(const FrameView& frame, const MatchParams& params, FrameResult* result) override;
  Status scoreMap(const FrameView& frame, Method method, uint32_t templateIndex,
                  std::vector<double>* map) override;

 private:
  Status prepareFrame(const FrameView& frame);
  void computeScores(const FrameView& frame, Method method, uint32_t templateIndex, double* out);

  ThreadPool pool_;
  CpuPath path_;  // only Reference exists so far; Auto resolves to it
  std::vector<TemplateImage> bank_;
  std::vector<TemplateStats> stats_;
  // Tables of the current frame; sized once per frame size.
  std::vector<int64_t> sat_;
  std::vector<int64_t> satSq_;
  std::vector<double> map_;
};

}  // namespace nccmatch
