// The FFT numerator: sum(I * T') with the zero-mean template T' = T - mean(T) (DESIGN.md), by
// cuFFT over a frame padded to a fast size (factors 2, 3, 5, 7), in double (D2Z/Z2D) or float
// (R2C/C2R, half the bytes). Float rounding follows the transform's whole energy, not a
// window's own, so smooth bright frames can miss 1e-4 on ccoeff-normed: errorScale() and
// frameNormSq() give a per-frame bound (errorScale * ||I - offset|| * ||T'||) with which the
// caller finds the windows to recompute exactly. Plans and template spectra are made once per
// bank and frame size; each frame costs one forward transform, and each template one product
// and one inverse transform.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "cuda/engine/device_buffer.hpp"
#include "nccmatch/status.hpp"

namespace nccmatch::cuda {

// Smallest m >= n whose only prime factors are 2, 3, 5 and 7 (and even when `even`).
int fastFftSize(int n, bool even);
// The size the correlator pads to: the smallest m >= n of the form 2^a * {1, 3, 9} (even when
// `even`) if it has at most 7% more points than fastFftSize(n), else fastFftSize(n). cuFFT runs
// those sizes much faster (H200, bench_ncc: float R2C 2048x1152 26.7 us, 1920x1080 39.8 us).
int preferredFftSize(int n, bool even);

enum class FftPrecision { Float, Double };

// What the forward transform subtracts from the frame: any constant gives the same correlation
// (the template is zero-mean); one near the frame's mean keeps float rounding small.
enum class FrameOffset {
  SampledMean,  // the mean of a 32 x 32 sample grid (rules/fft_offset.hpp), found on the device
  Fixed128,
};

class FftCorrelator {
 public:
  FftCorrelator() = default;
  FftCorrelator(const FftCorrelator&) = delete;
  FftCorrelator& operator=(const FftCorrelator&) = delete;
  ~FftCorrelator();

  // Whether a float correlator's inverse transform forms the conjugate product in its load
  // callback (fft_product_load.hpp) instead of reading what a product kernel wrote: read by the
  // next configure(); on where the build has the callback. A plan cuFFT cannot link the callback
  // into (no nvJitLink, an older cuFFT) falls back to the product kernel: productInLoad() is then
  // false and productInLoadRefusal() says why.
  void setProductInLoad(bool on) { productInLoadAsked_ = on; }
  bool productInLoad() const { return productInLoad_; }
  const std::string& productInLoadRefusal() const { return productInLoadRefusal_; }
  // The next correlate() copies its template's spectrum pointer into the callback's info even
  // when the slot is the one copied last: a captured frame (CUDA graph) then sets it itself,
  // whatever a replay finds there.
  void forgetProductSlot() { productSlot_ = -1; }

  // Plans and work buffers for frames of width x height; drops every template spectrum.
  Status configure(int width, int height, cudaStream_t stream,
                   FftPrecision precision = FftPrecision::Double);
  FftPrecision precision() const { return precision_; }
  bool configuredFor(int width, int height) const { return width == width_ && height == height_; }
  int fftWidth() const { return fftWidth_; }
  int fftHeight() const { return fftHeight_; }

  // Spectrum of one template (device pixels, tightly packed), kept until configure(). *slot
  // names it for correlate().
  Status addTemplate(const uint8_t* pixels, int width, int height, double mean, int* slot);

  // Forward transform of a frame minus an offset. The sampled mean needs no SAT and no pass
  // before the placement, so the transform runs beside the SAT build on another stream.
  Status transformFrame(const uint8_t* image, std::size_t pitch,
                        FrameOffset offset = FrameOffset::SampledMean);
  // Later work (transforms, products) goes to `stream`.
  Status setStream(cudaStream_t stream);
  // Frame transforms (and template spectra) on `frameStream`, products and inverse transforms on
  // `correlateStream`: set once, no per-frame stream switching. The caller orders the two.
  Status setStreams(cudaStream_t frameStream, cudaStream_t correlateStream);
  // Device pointer to sum((I - offset)^2) over the last transformed frame: bit-identical for the
  // same frame on the same device (a fixed summation order), so the same windows are recomputed.
  const double* frameNormSq() const { return frameSums_.as<double>() + kNormSqAt; }
  // An output's rounding error stays below errorScale() * ||I - offset|| * ||T'||: about 16
  // times the RMS of eps * sqrt(log2 P / P) * ||I|| * ||T'|| for P points (as the CPU's FFT path).
  double errorScale() const;

  // Centred numerator of template `slot` at every position: out[y * fftWidth() + x], valid for
  // x <= width - w, y <= height - h. The buffer is reused by the next call.
  Status correlate(int slot, const double** out);  // Double precision
  Status correlate(int slot, const float** out);   // Float precision

 private:
  void destroyPlans();
  Status correlateInto(int slot);
  // The float inverse plan with the product in its load callback, reading productInfo_;
  // *outOfMemory: whether it failed for want of device memory (an error, not a fallback).
  Status makeProductLoadPlan(int* plan, bool* outOfMemory);

  // Blocks of the placement: four per SM, each thread with several loads in flight, and few
  // enough blocks that their partial norms and the sample grid each block reads stay cheap.
  int frameBlocks() const { return 4 * smCount_; }

  int width_ = 0, height_ = 0;
  int smCount_ = 1;  // of the device current at configure()
  int fftWidth_ = 0, fftHeight_ = 0;
  cudaStream_t stream_ = nullptr;         // frame transforms, template spectra
  cudaStream_t correlateStream_ = nullptr; // products, inverse transforms
  FftPrecision precision_ = FftPrecision::Double;
  int planForward_ = 0, planInverse_ = 0;  // cufftHandle
  bool havePlans_ = false;
  DeviceBuffer real_;           // fftHeight x fftWidth reals
  // In 8-byte slots: sum((I - offset)^2) (double), the placement's block-arrival counter
  // (uint32) and its per-block partial norms (doubles).
  static constexpr int kNormSqAt = 0, kArrivedAt = 1, kPartialsAt = 2;
  DeviceBuffer frameSums_;
  DeviceBuffer frameSpectrum_;  // fftHeight x (fftWidth/2+1) complex
  DeviceBuffer product_;        // same
  std::vector<std::unique_ptr<DeviceBuffer>> spectra_;
  // The product in the inverse transform's load (setProductInLoad): what the callback reads
  // (FftProductLoadInfo), each slot's spectrum pointer (device copy of spectrumPointers_), and the
  // slot whose spectrum productInfo_ names now (-1: none).
  bool productInLoadAsked_ = kProductLoadBuilt;
  bool productInLoad_ = false;
  std::string productInLoadRefusal_;
  DeviceBuffer productInfo_;
  DeviceBuffer spectrumTable_;
  std::vector<const void*> spectrumPointers_;
  int productSlot_ = -1;
#ifdef NCC_FFT_PRODUCT_LOAD
  static constexpr bool kProductLoadBuilt = true;
#else
  static constexpr bool kProductLoadBuilt = false;
#endif
};

}  // namespace nccmatch::cuda
