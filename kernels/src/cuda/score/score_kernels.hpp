// Score maps on the GPU: the six methods at every valid position from the SAT box sums and a
// numerator, with the CPU backend's rules (rules/score_rules.hpp: scoreFromSums, scoreFromCentred).
// The exact path gives the CPU's doubles bit for bit.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>

#include "cuda/peaks/peaks_kernels.hpp"
#include "nccmatch/status.hpp"
#include "rules/score_rules.hpp"

namespace nccmatch::cuda {

struct ScoreInputs {
  const void* sum = nullptr;    // SAT of I: frameWidth x frameHeight, int64 or uint32 (sat32)
  const void* sumSq = nullptr;  // SAT of I^2, same type
  bool sat32 = false;           // uint32 tables in wrap-around arithmetic (box sums < 2^32)
  int frameWidth = 0, frameHeight = 0;
  int templateWidth = 0, templateHeight = 0;
  TemplateStats stats;
  Method method = Method::CCoeffNormed;
  int smCount = 0;  // the device's SMs (the recompute kernel's grid); asked once by the caller
};

// numerator: sum(I*T), dense (width-w+1) x (height-h+1). map: same shape, doubles.
Status scoreFromExactNumerator(const ScoreInputs& in, const int64_t* numerator, double* map,
                               cudaStream_t stream);
// centred: sum(I*T'), row pitch `pitch` elements.
Status scoreFromCentredNumerator(const ScoreInputs& in, const double* centred, std::size_t pitch,
                                 double* map, cudaStream_t stream);

// A float centred numerator whose rounding error is below errorScale * sqrt(*frameNormSq) *
// templateNorm everywhere (FftCorrelator's bound): approximate scores into map, and the
// positions where that error could move a normalised score by more than kMaxScoreError into
// recompute[] (count in *recomputeCount, zeroed by the caller).
// handoff (optional): the peaks handed over as well, so that PeakFinder::findFromHandoff replaces
// the scan of the map: each block's best of the positions not listed for recomputing into
// handoff->blockBest[0 ..), those of them reaching the threshold into handoff->above (count zeroed
// by the caller); recomputeExactScores with the same handoff adds the listed ones. The two
// together fill floatScoreHandoffSlots(...) block bests.
constexpr double kMaxScoreError = 1e-5;  // ten times clear of the 1e-4 the fft path promises
Status scoreFromFloatCentredNumerator(const ScoreInputs& in, const float* centred,
                                      std::size_t pitch, double errorScale,
                                      const double* frameNormSq, double templateNorm, double* map,
                                      int* recompute, int* recomputeCount, cudaStream_t stream,
                                      const PeakHandoff* handoff = nullptr);

// Exact scores (bit-identical to the CPU's) at the listed positions: sum(I*T) from the frame and
// the template's pixels (device, tightly packed), window sums from the SAT. handoff: as above,
// for the listed positions (block bests after the float score kernel's).
Status recomputeExactScores(const ScoreInputs& in, const uint8_t* image, std::size_t pitch,
                            const uint8_t* templatePixels, const int* recompute,
                            const int* recomputeCount, double* map, cudaStream_t stream,
                            const PeakHandoff* handoff = nullptr);

// The block bests the float score kernel and the recompute kernel hand over for a map of
// mapWidth x mapHeight on a device of smCount SMs (ScoreInputs::smCount): findFromHandoff's
// `partials`.
int floatScoreHandoffSlots(int mapWidth, int mapHeight, int smCount);

}  // namespace nccmatch::cuda
