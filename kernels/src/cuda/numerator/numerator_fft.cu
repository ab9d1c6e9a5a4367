#include "cuda/numerator/numerator_fft.hpp"

#include <cufft.h>
#include <cufftXt.h>

#include <algorithm>
#include <cfloat>
#include <cmath>
#include <string>

#include "cuda/block_arrival.cuh"
#include "cuda/cuda_check.hpp"
#include "cuda/device_info.hpp"
#include "cuda/numerator/conjugate_product.cuh"
#include "cuda/numerator/fft_product_load.hpp"
#include "rules/fft_offset.hpp"
#ifdef NCC_FFT_PRODUCT_LOAD
#include "cuda/fft_product_load_fatbin.h"  // nccFftProductLoadFatbin (generated, kernels/src/cuda/meson.build)
#endif

namespace nccmatch::cuda {

namespace {

Status cufftStatus(cufftResult result, const char* call) {
  if (result == CUFFT_SUCCESS) return Status();
  const char* what = result == CUFFT_ALLOC_FAILED ? " (CUFFT_ALLOC_FAILED: out of device memory)" : "";
  return Status::error(std::string(call) + " failed: cufftResult " + std::to_string(int(result)) + what);
}

// A 2-D plan. cuFFT allocates its work area itself, so the fault-injection hook can only refuse
// the plan, as cuFFT does when the device is out of memory.
cufftResult makePlan(cufftHandle* plan, int height, int width, cufftType type) {
  if (faults::deviceAllocationAllowed() != cudaSuccess) return CUFFT_ALLOC_FAILED;
  return cufftPlan2d(plan, height, width, type);
}

bool onlySmallFactors(int n) {
  for (int p : {2, 3, 5, 7})
    while (n % p == 0) n /= p;
  return n == 1;
}

std::size_t spectrumElements(int fftWidth, int fftHeight) {
  return std::size_t(fftHeight) * (fftWidth / 2 + 1);
}

// Zero-mean template, pre-scaled by 1/(fftWidth*fftHeight) so the inverse needs no scaling.
template <typename Real>
__global__ void placeTemplateKernel(const uint8_t* __restrict__ pixels, int width, int height,
                                    double mean, double scale, Real* __restrict__ real,
                                    int fftWidth) {
  const int x = blockIdx.x * blockDim.x + threadIdx.x;
  const int y = blockIdx.y * blockDim.y + threadIdx.y;
  if (x >= width || y >= height) return;
  real[std::size_t(y) * fftWidth + x] = Real((double(pixels[std::size_t(y) * width + x]) - mean) * scale);
}

// The frame passes below walk the frame in runs of kWarpRun pixels, one run per warp: lane l
// takes pixels l, l+32, ... so every load and store instruction is coalesced, and each thread has
// kPerLane independent loads in flight. (A row per block with one byte load per step was
// latency-bound: 93 us beside an 86 us R2C at 3840x2160 on the H200.)
constexpr int kPerLane = 8;
constexpr int kWarpRun = 32 * kPerLane;

// The walk every frame pass shares: the runs of kRun pixels covering `rows` rows of `width`
// pixels, one run per warp of the grid at a time; body(y, x) gets the row and the run's first x.
template <int kRun, typename Body>
__device__ __forceinline__ void forEachWarpRun(int width, int rows, Body body) {
  const std::size_t runsPerRow = (std::size_t(width) + kRun - 1) / kRun;
  const std::size_t runs = runsPerRow * rows;
  const std::size_t warps = std::size_t(gridDim.x) * (blockDim.x / 32);
  for (std::size_t r = (std::size_t(blockIdx.x) * blockDim.x + threadIdx.x) / 32; r < runs; r += warps)
    body(int(r / runsPerRow), int(r % runsPerRow) * kRun);
}

// The block's per-thread values summed in a fixed order (shuffle tree, then the warps in order);
// the total is valid in thread 0. Ends with a barrier, so it may be called again in a block.
template <typename T>
__device__ T blockSum(T value) {
  for (int d = 16; d > 0; d >>= 1) value += __shfl_down_sync(0xffffffffu, value, d);
  __shared__ T perWarp[8];
  if ((threadIdx.x & 31) == 0) perWarp[threadIdx.x >> 5] = value;
  __syncthreads();
  T total = 0;
  if (threadIdx.x == 0)
    for (int w = 0; w < int(blockDim.x) / 32; ++w) total += perWarp[w];
  __syncthreads();
  return total;
}

// The grid's sum of per-thread doubles into *target in an order fixed by the launch shape: each
// block stores its total in partials[blockIdx.x] and the last block to arrive adds them in index
// order, then resets *arrived to 0 for the next launch. (A double atomicAdd per block rounds in
// arrival order: its last bits varied run to run, and with them the rounding bound, i.e. which
// windows the score kernel recomputes exactly; see FftCorrelator::frameNormSq.)
__device__ void sumBlocksInOrder(double value, double* partials, unsigned* arrived, double* target) {
  const double total = blockSum(value);
  __shared__ bool lastBlock;
  if (threadIdx.x == 0) {
    partials[blockIdx.x] = total;
    lastBlock = countBlockDone(arrived, gridDim.x);
  }
  __syncthreads();
  if (!lastBlock) return;
  double mine = 0;
  for (unsigned b = threadIdx.x; b < gridDim.x; b += blockDim.x) mine += __ldcg(&partials[b]);
  const double sum = blockSum(mine);
  if (threadIdx.x == 0) {
    *target = sum;
    *arrived = 0;
  }
}

// The placement's offset: the mean of the frame's sample grid (rules/fft_offset.hpp), which each
// block finds itself (1 024 loads and a block sum, the same integer in every block), or 128.
__device__ inline double placementOffset(const uint8_t* image, std::size_t pitch, int width, int height,
                                        bool sampledMean) {
  if (!sampledMean) return 128.0;
  uint32_t mine = 0;
  for (int k = threadIdx.x; k < kFftOffsetSamples; k += blockDim.x)
    mine += fftOffsetSample(image, pitch, width, height, k);
  __shared__ uint32_t sampleSum;
  const uint32_t sum = blockSum(mine);
  if (threadIdx.x == 0) sampleSum = sum;
  __syncthreads();
  return fftOffsetFromSampleSum(sampleSum);
}

// Frame minus an offset (placementOffset); the padding is zero. The offset is found on the
// device, so nothing waits to learn the frame's mean. Writes sum((I - offset)^2) to *normSq,
// summed in a fixed order (sumBlocksInOrder; partials: one double per block, arrived: 0).
template <typename Real>
__global__ void __launch_bounds__(256)
    placeFrameKernel(const uint8_t* __restrict__ image, std::size_t pitch, int width, int height,
                     bool sampledMean, Real* __restrict__ real, int fftWidth, int fftHeight, double* partials,
                     unsigned* arrived, double* normSq) {
  // The offset as the transform sees it (rounded to Real), so the norm is that of its input.
  const Real o = Real(placementOffset(image, pitch, width, height, sampledMean));
  const int lane = threadIdx.x & 31;
  double sq = 0;
  forEachWarpRun<kWarpRun>(fftWidth, fftHeight, [&](int y, int run) {
    const int x0 = run + lane;
    const uint8_t* in = image + std::size_t(y) * pitch;
    Real* out = real + std::size_t(y) * fftWidth;
    Real v[kPerLane];
#pragma unroll
    for (int k = 0; k < kPerLane; ++k) {
      const int x = x0 + 32 * k;
      v[k] = (y < height && x < width) ? Real(in[x]) - o : Real(0);
    }
#pragma unroll
    for (int k = 0; k < kPerLane; ++k) {
      const int x = x0 + 32 * k;
      if (x < fftWidth) {
        out[x] = v[k];
        sq += double(v[k]) * double(v[k]);
      }
    }
  });
  sumBlocksInOrder(sq, partials, arrived, normSq);
}

// The frame passes again with 4-pixel words, where the frame's rows are 4-byte aligned (and, for
// the placement, the plane's rows 16-byte aligned): a lane loads 32 bits and stores a float4, a
// quarter of the byte passes' instructions. Measured on an H100 (session 45): the placement 10.8
// -> 9.7 µs at 1080p (a frame-total pass, since replaced by the sampled offset, unchanged at 5.3:
// both waited on latency, not instructions), and
// bench_stream --large 7-8 µs a frame faster at 2160p, the same at 1080p. Lane l of a warp's run
// takes the words at 4l, 4l + 128, ...
constexpr int kWordsPerLane = 4;
constexpr int kWordRun = 32 * 4 * kWordsPerLane;

// The 4 pixels of `row` from x on (x a multiple of 4), 0 for those at or past `width`.
__device__ __forceinline__ uint32_t loadPixelWord(const uint8_t* row, int x, int width) {
  if (x + 3 < width) return *reinterpret_cast<const uint32_t*>(row + x);
  uint32_t word = 0;
  for (int b = 0; b < 4 && x + b < width; ++b) word |= uint32_t(row[x + b]) << (8 * b);
  return word;
}

// placeFrameKernel<float>'s result (the plane, the norm in the same fixed block order) by words.
__global__ void __launch_bounds__(256)
    placeFrameWordsKernel(const uint8_t* __restrict__ image, std::size_t pitch, int width, int height,
                          bool sampledMean, float* __restrict__ real,
                          int fftWidth, int fftHeight, double* partials, unsigned* arrived, double* normSq) {
  const float o = float(placementOffset(image, pitch, width, height, sampledMean));
  const int lane = threadIdx.x & 31;
  double sq = 0;
  forEachWarpRun<kWordRun>(fftWidth, fftHeight, [&](int y, int run) {
    const int x0 = run + 4 * lane;
    const uint8_t* in = image + std::size_t(y) * pitch;
    float* out = real + std::size_t(y) * fftWidth;
    uint32_t words[kWordsPerLane];
#pragma unroll
    for (int k = 0; k < kWordsPerLane; ++k) {
      const int x = x0 + 128 * k;
      words[k] = (y < height && x < width) ? loadPixelWord(in, x, width) : 0u;
    }
#pragma unroll
    for (int k = 0; k < kWordsPerLane; ++k) {
      const int x = x0 + 128 * k;
      if (x >= fftWidth) continue;
      float v[4];
#pragma unroll
      for (int b = 0; b < 4; ++b) {
        v[b] = (y < height && x + b < width) ? float((words[k] >> (8 * b)) & 0xffu) - o : 0.f;
        sq += double(v[b]) * double(v[b]);
      }
      *reinterpret_cast<float4*>(out + x) = make_float4(v[0], v[1], v[2], v[3]);
    }
  });
  sumBlocksInOrder(sq, partials, arrived, normSq);
}

// Whether the frame passes may take words: rows of `image` 4-byte aligned.
bool frameRowsWordAligned(const uint8_t* image, std::size_t pitch) {
  return reinterpret_cast<std::uintptr_t>(image) % 4 == 0 && pitch % 4 == 0;
}

// Correlation: frame spectrum times the conjugate template spectrum.
template <typename Complex>
__global__ void conjugateProductKernel(const Complex* __restrict__ frame,
                                       const Complex* __restrict__ tpl, Complex* __restrict__ out,
                                       std::size_t n) {
  for (std::size_t i = blockIdx.x * std::size_t(blockDim.x) + threadIdx.x; i < n;
       i += std::size_t(gridDim.x) * blockDim.x) {
    out[i] = conjugateProduct(frame[i], tpl[i]);
  }
}

template <typename Real>
void launchPlaceTemplate(const uint8_t* pixels, int width, int height, double mean, double scale,
                         void* real, int fftWidth, cudaStream_t stream) {
  dim3 block(32, 8);
  dim3 grid((width + 31) / 32, (height + 7) / 8);
  placeTemplateKernel<Real><<<grid, block, 0, stream>>>(pixels, width, height, mean, scale,
                                                        static_cast<Real*>(real), fftWidth);
}

}  // namespace

int fastFftSize(int n, bool even) {
  int m = n < 1 ? 1 : n;
  while (!onlySmallFactors(m) || (even && m % 2 != 0)) ++m;
  return m;
}

int preferredFftSize(int n, bool even) {
  const int fast = fastFftSize(n, even);
  const long long limit = (long long)fast * 107 / 100;
  for (long long m = n < 1 ? 1 : n; m <= limit; ++m) {
    long long r = m;
    while (r % 2 == 0) r /= 2;
    if ((r == 1 || r == 3 || r == 9) && (!even || m % 2 == 0)) return int(m);
  }
  return fast;
}

FftCorrelator::~FftCorrelator() { destroyPlans(); }

void FftCorrelator::destroyPlans() {
  if (havePlans_) {
    cufftDestroy(cufftHandle(planForward_));
    cufftDestroy(cufftHandle(planInverse_));
  }
  havePlans_ = false;
}

double FftCorrelator::errorScale() const {
  const double points = double(fftWidth_) * fftHeight_;
  const double eps = precision_ == FftPrecision::Float ? double(FLT_EPSILON) : DBL_EPSILON;
  return 16.0 * eps * std::sqrt(std::log2(std::max(2.0, points)) / points);
}

Status FftCorrelator::configure(int width, int height, cudaStream_t stream, FftPrecision precision) {
  destroyPlans();
  spectra_.clear();
  width_ = height_ = 0;
  stream_ = correlateStream_ = stream;
  precision_ = precision;
  NCC_RETURN_IF_ERROR(currentDeviceMultiprocessors(&smCount_));
  const bool single = precision == FftPrecision::Float;
  fftWidth_ = preferredFftSize(width, true);
  fftHeight_ = preferredFftSize(height, false);
  const std::size_t nComplex = spectrumElements(fftWidth_, fftHeight_);
  const std::size_t realBytes = single ? sizeof(float) : sizeof(double);
  NCC_RETURN_IF_ERROR(frameSpectrum_.reserve(nComplex * 2 * realBytes));
  productInLoad_ = false;
  productInLoadRefusal_.clear();
  productSlot_ = -1;
  spectrumPointers_.clear();
  cufftHandle forward = 0, inverse = 0;
  NCC_RETURN_IF_ERROR(cufftStatus(makePlan(&forward, fftHeight_, fftWidth_, single ? CUFFT_R2C : CUFFT_D2Z), "cufftPlan2d(forward)"));
  Status s;
  if (single && productInLoadAsked_) {
    int plan = 0;
    bool outOfMemory = false;
    s = makeProductLoadPlan(&plan, &outOfMemory);
    productInLoad_ = s.ok();
    inverse = cufftHandle(plan);
    // Out of memory stays an error; anything else cuFFT refuses falls back to the product kernel.
    if (!s.ok() && !outOfMemory) {
      productInLoadRefusal_ = s.message();
      s = Status();
    }
  }
  if (s.ok() && !productInLoad_)
    s = cufftStatus(makePlan(&inverse, fftHeight_, fftWidth_, single ? CUFFT_C2R : CUFFT_Z2D), "cufftPlan2d(inverse)");
  if (!s.ok()) {
    cufftDestroy(forward);
    productInLoad_ = false;
    return s;
  }
  planForward_ = int(forward);
  planInverse_ = int(inverse);
  havePlans_ = true;
  NCC_RETURN_IF_ERROR(cufftStatus(cufftSetStream(forward, stream), "cufftSetStream"));
  NCC_RETURN_IF_ERROR(cufftStatus(cufftSetStream(inverse, stream), "cufftSetStream"));
  const std::size_t nReal = std::size_t(fftWidth_) * fftHeight_;
  NCC_RETURN_IF_ERROR(real_.reserve(nReal * realBytes));
  // With the product in the load, product_ is the inverse plan's input buffer all the same: a C2R
  // plan may overwrite its input, which must then not be the frame's spectrum.
  NCC_RETURN_IF_ERROR(product_.reserve(nComplex * 2 * realBytes));
  NCC_RETURN_IF_ERROR(frameSums_.reserve(std::size_t(kPartialsAt + frameBlocks()) * sizeof(double)));
  // The arrival counter starts at 0; each placement's last block sets it back to 0.
  NCC_CUDA_CHECK(cudaMemsetAsync(frameSums_.as<double>() + kArrivedAt, 0, sizeof(double), stream));
  width_ = width;
  height_ = height;
  return Status();
}

Status FftCorrelator::makeProductLoadPlan(int* plan, bool* outOfMemory) {
  *outOfMemory = false;
#ifdef NCC_FFT_PRODUCT_LOAD
  if (faults::deviceAllocationAllowed() != cudaSuccess) {
    *outOfMemory = true;
    return cufftStatus(CUFFT_ALLOC_FAILED, "cufftMakePlan2d(inverse)");
  }
  // What the callback reads: the frame's spectrum, and the template's (set by correlateInto).
  NCC_RETURN_IF_ERROR(productInfo_.reserve(sizeof(FftProductLoadInfo)));
  const FftProductLoadInfo info{frameSpectrum_.as<float2>(), nullptr};
  // On stream_, the stream that later correlates (prepareFft): ordered before any inverse transform.
  NCC_CUDA_CHECK(cudaMemcpyAsync(productInfo_.as<void>(), &info, sizeof info, cudaMemcpyHostToDevice, stream_));
  cufftHandle handle = 0;
  NCC_RETURN_IF_ERROR(cufftStatus(cufftCreate(&handle), "cufftCreate(inverse)"));
  void* callerInfo = productInfo_.as<void>();
  cufftResult r = cufftXtSetJITCallback(handle, kFftProductLoadSymbol, nccFftProductLoadFatbin,
                                        sizeof(nccFftProductLoadFatbin), CUFFT_CB_LD_COMPLEX, &callerInfo);
  std::size_t workBytes = 0;
  if (r == CUFFT_SUCCESS) r = cufftMakePlan2d(handle, fftHeight_, fftWidth_, CUFFT_C2R, &workBytes);
  if (r != CUFFT_SUCCESS) {
    cufftDestroy(handle);
    *outOfMemory = r == CUFFT_ALLOC_FAILED;
    return cufftStatus(r, r == CUFFT_ALLOC_FAILED ? "cufftMakePlan2d(inverse, product in its load)"
                                                  : "cufftXtSetJITCallback / cufftMakePlan2d(inverse, product in its load)");
  }
  *plan = int(handle);
  return Status();
#else
  *plan = 0;
  return Status::error("the product in the inverse transform's load is not built (no bin2c)");
#endif
}

Status FftCorrelator::addTemplate(const uint8_t* pixels, int width, int height, double mean,
                                  int* slot) {
  if (!havePlans_) return Status::error("FftCorrelator::addTemplate before configure");
  if (width > width_ || height > height_)
    return Status::error("FftCorrelator::addTemplate: template larger than the frame");
  const bool single = precision_ == FftPrecision::Float;
  const std::size_t realBytes = single ? sizeof(float) : sizeof(double);
  auto spectrum = std::make_unique<DeviceBuffer>();
  NCC_RETURN_IF_ERROR(spectrum->reserve(spectrumElements(fftWidth_, fftHeight_) * 2 * realBytes));
  void* real = real_.as<void>();
  NCC_CUDA_CHECK(cudaMemsetAsync(real, 0, std::size_t(fftWidth_) * fftHeight_ * realBytes, stream_));
  const double scale = 1.0 / (double(fftWidth_) * fftHeight_);
  if (single) launchPlaceTemplate<float>(pixels, width, height, mean, scale, real, fftWidth_, stream_);
  else launchPlaceTemplate<double>(pixels, width, height, mean, scale, real, fftWidth_, stream_);
  NCC_CUDA_CHECK(cudaGetLastError());
  if (single) {
    NCC_RETURN_IF_ERROR(cufftStatus(cufftExecR2C(cufftHandle(planForward_), static_cast<cufftReal*>(real),
                                                 spectrum->as<cufftComplex>()), "cufftExecR2C(template)"));
  } else {
    NCC_RETURN_IF_ERROR(cufftStatus(cufftExecD2Z(cufftHandle(planForward_), static_cast<cufftDoubleReal*>(real),
                                                 spectrum->as<cufftDoubleComplex>()), "cufftExecD2Z(template)"));
  }
  spectra_.push_back(std::move(spectrum));
  *slot = int(spectra_.size()) - 1;
  if (productInLoad_) {  // the slots' spectra where correlateInto copies the callback's from
    spectrumPointers_.push_back(spectra_.back()->as<void>());
    NCC_RETURN_IF_ERROR(spectrumTable_.reserve(spectrumPointers_.size() * sizeof(void*)));
    NCC_CUDA_CHECK(cudaMemcpyAsync(spectrumTable_.as<void>(), spectrumPointers_.data(),
                                   spectrumPointers_.size() * sizeof(void*), cudaMemcpyHostToDevice, stream_));
  }
  return Status();
}

Status FftCorrelator::transformFrame(const uint8_t* image, std::size_t pitch, FrameOffset offset) {
  if (!havePlans_) return Status::error("FftCorrelator::transformFrame before configure");
  double* sums = frameSums_.as<double>();
  double* normSq = sums + kNormSqAt;  // written by the placement's last block: no zeroing
  double* partials = sums + kPartialsAt;
  unsigned* arrived = reinterpret_cast<unsigned*>(sums + kArrivedAt);
  const bool sampledMean = offset == FrameOffset::SampledMean;
  const int block = 256, grid = frameBlocks();
  if (precision_ == FftPrecision::Float) {
    // The plane's rows (fftWidth floats, from a 256-byte aligned allocation) are 16-byte aligned
    // when fftWidth is a multiple of 4.
    if (frameRowsWordAligned(image, pitch) && fftWidth_ % 4 == 0)
      placeFrameWordsKernel<<<grid, block, 0, stream_>>>(image, pitch, width_, height_, sampledMean,
                                                         real_.as<float>(), fftWidth_, fftHeight_, partials,
                                                         arrived, normSq);
    else
      placeFrameKernel<float><<<grid, block, 0, stream_>>>(image, pitch, width_, height_, sampledMean,
                                                           real_.as<float>(), fftWidth_, fftHeight_, partials,
                                                           arrived, normSq);
    NCC_CUDA_CHECK(cudaGetLastError());
    return cufftStatus(cufftExecR2C(cufftHandle(planForward_), real_.as<cufftReal>(),
                                    frameSpectrum_.as<cufftComplex>()),
                       "cufftExecR2C(frame)");
  }
  placeFrameKernel<double><<<grid, block, 0, stream_>>>(image, pitch, width_, height_, sampledMean,
                                                        real_.as<double>(), fftWidth_, fftHeight_, partials,
                                                        arrived, normSq);
  NCC_CUDA_CHECK(cudaGetLastError());
  return cufftStatus(cufftExecD2Z(cufftHandle(planForward_), real_.as<double>(),
                                  frameSpectrum_.as<cufftDoubleComplex>()),
                     "cufftExecD2Z(frame)");
}

Status FftCorrelator::setStream(cudaStream_t stream) { return setStreams(stream, stream); }

Status FftCorrelator::setStreams(cudaStream_t frameStream, cudaStream_t correlateStream) {
  if (havePlans_ && frameStream != stream_)
    NCC_RETURN_IF_ERROR(cufftStatus(cufftSetStream(cufftHandle(planForward_), frameStream), "cufftSetStream"));
  if (havePlans_ && correlateStream != correlateStream_)
    NCC_RETURN_IF_ERROR(cufftStatus(cufftSetStream(cufftHandle(planInverse_), correlateStream), "cufftSetStream"));
  stream_ = frameStream;
  correlateStream_ = correlateStream;
  return Status();
}

Status FftCorrelator::correlateInto(int slot) {
  if (slot < 0 || slot >= int(spectra_.size()))
    return Status::error("FftCorrelator::correlate: no template in slot " + std::to_string(slot));
  const std::size_t n = spectrumElements(fftWidth_, fftHeight_);
  const int threads = 256;
  const int blocks = int(std::min<std::size_t>((n + threads - 1) / threads, 132 * 16));
  if (precision_ == FftPrecision::Float && productInLoad_) {
    // The callback's template spectrum, copied on the correlating stream when the slot changes.
    if (productSlot_ != slot) {
      NCC_CUDA_CHECK(cudaMemcpyAsync(&productInfo_.as<FftProductLoadInfo>()->tpl,
                                     spectrumTable_.as<const float2*>() + slot, sizeof(const float2*),
                                     cudaMemcpyDeviceToDevice, correlateStream_));
      productSlot_ = slot;
    }
    return cufftStatus(cufftExecC2R(cufftHandle(planInverse_), product_.as<cufftComplex>(), real_.as<cufftReal>()),
                       "cufftExecC2R");
  }
  if (precision_ == FftPrecision::Float) {
    conjugateProductKernel<<<blocks, threads, 0, correlateStream_>>>(
        frameSpectrum_.as<float2>(), spectra_[slot]->as<float2>(), product_.as<float2>(), n);
    NCC_CUDA_CHECK(cudaGetLastError());
    return cufftStatus(cufftExecC2R(cufftHandle(planInverse_), product_.as<cufftComplex>(), real_.as<cufftReal>()),
                       "cufftExecC2R");
  }
  conjugateProductKernel<<<blocks, threads, 0, correlateStream_>>>(
      frameSpectrum_.as<double2>(), spectra_[slot]->as<double2>(), product_.as<double2>(), n);
  NCC_CUDA_CHECK(cudaGetLastError());
  return cufftStatus(cufftExecZ2D(cufftHandle(planInverse_), product_.as<cufftDoubleComplex>(), real_.as<double>()),
                     "cufftExecZ2D");
}

Status FftCorrelator::correlate(int slot, const double** out) {
  if (precision_ != FftPrecision::Double)
    return Status::error("FftCorrelator::correlate: double output asked of a float correlator");
  NCC_RETURN_IF_ERROR(correlateInto(slot));
  *out = real_.as<double>();
  return Status();
}

Status FftCorrelator::correlate(int slot, const float** out) {
  if (precision_ != FftPrecision::Float)
    return Status::error("FftCorrelator::correlate: float output asked of a double correlator");
  NCC_RETURN_IF_ERROR(correlateInto(slot));
  *out = real_.as<float>();
  return Status();
}

}  // namespace nccmatch::cuda
