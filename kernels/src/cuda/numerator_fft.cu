#include "cuda/numerator_fft.hpp"

#include <cufft.h>

#include <algorithm>
#include <string>

#include "cuda_check.hpp"

namespace nccmatch::cuda {

namespace {

Status cufftStatus(cufftResult result, const char* call) {
  if (result == CUFFT_SUCCESS) return Status();
  return Status::error(std::string(call) + " failed: cufftResult " + std::to_string(int(result)));
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
__global__ void placeTemplateKernel(const uint8_t* __restrict__ pixels, int width, int height,
                                    double mean, double scale, double* __restrict__ real,
                                    int fftWidth) {
  const int x = blockIdx.x * blockDim.x + threadIdx.x;
  const int y = blockIdx.y * blockDim.y + threadIdx.y;
  if (x >= width || y >= height) return;
  real[std::size_t(y) * fftWidth + x] = (double(pixels[std::size_t(y) * width + x]) - mean) * scale;
}

// Frame minus an offset; the padding is zero. The offset is read on the device so no
// synchronisation is needed to learn the frame's mean.
__global__ void placeFrameKernel(const uint8_t* __restrict__ image, std::size_t pitch, int width,
                                 int height, const void* offsetSource, bool total32,
                                 bool totalValid, double* __restrict__ real, int fftWidth,
                                 int fftHeight) {
  const int x = blockIdx.x * blockDim.x + threadIdx.x;
  const int y = blockIdx.y * blockDim.y + threadIdx.y;
  if (x >= fftWidth || y >= fftHeight) return;
  double offset = 128.0;
  if (offsetSource != nullptr && totalValid) {
    double total = total32 ? double(*static_cast<const uint32_t*>(offsetSource))
                           : double(*static_cast<const int64_t*>(offsetSource));
    offset = total / (double(width) * height);
  }
  double v = 0.0;
  if (x < width && y < height) v = double(image[std::size_t(y) * pitch + x]) - offset;
  real[std::size_t(y) * fftWidth + x] = v;
}

// Correlation: frame spectrum times the conjugate template spectrum.
__global__ void conjugateProductKernel(const double2* __restrict__ frame,
                                       const double2* __restrict__ tpl, double2* __restrict__ out,
                                       std::size_t n) {
  for (std::size_t i = blockIdx.x * std::size_t(blockDim.x) + threadIdx.x; i < n;
       i += std::size_t(gridDim.x) * blockDim.x) {
    const double2 f = frame[i], t = tpl[i];
    out[i] = make_double2(f.x * t.x + f.y * t.y, f.y * t.x - f.x * t.y);
  }
}

}  // namespace

int fastFftSize(int n, bool even) {
  int m = n < 1 ? 1 : n;
  while (!onlySmallFactors(m) || (even && m % 2 != 0)) ++m;
  return m;
}

FftCorrelator::~FftCorrelator() { destroyPlans(); }

void FftCorrelator::destroyPlans() {
  if (havePlans_) {
    cufftDestroy(cufftHandle(planForward_));
    cufftDestroy(cufftHandle(planInverse_));
  }
  havePlans_ = false;
}

Status FftCorrelator::configure(int width, int height, cudaStream_t stream) {
  destroyPlans();
  spectra_.clear();
  width_ = height_ = 0;
  stream_ = stream;
  fftWidth_ = fastFftSize(width, true);
  fftHeight_ = fastFftSize(height, false);
  cufftHandle forward = 0, inverse = 0;
  NCC_RETURN_IF_ERROR(cufftStatus(cufftPlan2d(&forward, fftHeight_, fftWidth_, CUFFT_D2Z), "cufftPlan2d(D2Z)"));
  Status s = cufftStatus(cufftPlan2d(&inverse, fftHeight_, fftWidth_, CUFFT_Z2D), "cufftPlan2d(Z2D)");
  if (!s.ok()) {
    cufftDestroy(forward);
    return s;
  }
  planForward_ = int(forward);
  planInverse_ = int(inverse);
  havePlans_ = true;
  NCC_RETURN_IF_ERROR(cufftStatus(cufftSetStream(forward, stream), "cufftSetStream"));
  NCC_RETURN_IF_ERROR(cufftStatus(cufftSetStream(inverse, stream), "cufftSetStream"));
  const std::size_t nReal = std::size_t(fftWidth_) * fftHeight_;
  const std::size_t nComplex = spectrumElements(fftWidth_, fftHeight_);
  NCC_RETURN_IF_ERROR(real_.reserve(nReal * sizeof(double)));
  NCC_RETURN_IF_ERROR(frameSpectrum_.reserve(nComplex * sizeof(double2)));
  NCC_RETURN_IF_ERROR(product_.reserve(nComplex * sizeof(double2)));
  width_ = width;
  height_ = height;
  return Status();
}

Status FftCorrelator::addTemplate(const uint8_t* pixels, int width, int height, double mean,
                                  int* slot) {
  if (!havePlans_) return Status::error("FftCorrelator::addTemplate before configure");
  if (width > width_ || height > height_)
    return Status::error("FftCorrelator::addTemplate: template larger than the frame");
  auto spectrum = std::make_unique<DeviceBuffer>();
  NCC_RETURN_IF_ERROR(
      spectrum->reserve(spectrumElements(fftWidth_, fftHeight_) * sizeof(double2)));
  double* real = real_.as<double>();
  NCC_CUDA_CHECK(cudaMemsetAsync(real, 0, std::size_t(fftWidth_) * fftHeight_ * sizeof(double), stream_));
  const double scale = 1.0 / (double(fftWidth_) * fftHeight_);
  dim3 block(32, 8);
  dim3 grid((width + 31) / 32, (height + 7) / 8);
  placeTemplateKernel<<<grid, block, 0, stream_>>>(pixels, width, height, mean, scale,
                                                   real, fftWidth_);
  NCC_CUDA_CHECK(cudaGetLastError());
  NCC_RETURN_IF_ERROR(cufftStatus(
      cufftExecD2Z(cufftHandle(planForward_), real, spectrum->as<cufftDoubleComplex>()), "cufftExecD2Z(template)"));
  spectra_.push_back(std::move(spectrum));
  *slot = int(spectra_.size()) - 1;
  return Status();
}

Status FftCorrelator::transformFrame(const uint8_t* image, std::size_t pitch,
                                     const void* offsetSource, bool total32, bool totalValid) {
  if (!havePlans_) return Status::error("FftCorrelator::transformFrame before configure");
  dim3 block(32, 8);
  dim3 grid((fftWidth_ + 31) / 32, (fftHeight_ + 7) / 8);
  placeFrameKernel<<<grid, block, 0, stream_>>>(image, pitch, width_, height_, offsetSource,
                                                total32, totalValid, real_.as<double>(), fftWidth_,
                                                fftHeight_);
  NCC_CUDA_CHECK(cudaGetLastError());
  return cufftStatus(cufftExecD2Z(cufftHandle(planForward_), real_.as<double>(),
                                  frameSpectrum_.as<cufftDoubleComplex>()),
                     "cufftExecD2Z(frame)");
}

Status FftCorrelator::correlate(int slot, const double** out) {
  if (slot < 0 || slot >= int(spectra_.size()))
    return Status::error("FftCorrelator::correlate: no template in slot " + std::to_string(slot));
  const std::size_t n = spectrumElements(fftWidth_, fftHeight_);
  const int threads = 256;
  const int blocks = int(std::min<std::size_t>((n + threads - 1) / threads, 132 * 16));
  conjugateProductKernel<<<blocks, threads, 0, stream_>>>(
      frameSpectrum_.as<double2>(), spectra_[slot]->as<double2>(), product_.as<double2>(), n);
  NCC_CUDA_CHECK(cudaGetLastError());
  NCC_RETURN_IF_ERROR(cufftStatus(cufftExecZ2D(cufftHandle(planInverse_),
                                               product_.as<cufftDoubleComplex>(), real_.as<double>()),
                                  "cufftExecZ2D"));
  *out = real_.as<double>();
  return Status();
}

}  // namespace nccmatch::cuda
