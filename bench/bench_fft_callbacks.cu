// cuFFT LTO load callbacks on the fft path's two memory passes (issue 12: at 1080p the conjugate
// product and the frame's placement are ~10 µs each of a single large template's ~145 µs chain,
// bench/RESULTS.md session 45). For each transform size, GPU time between events, medians of
// --reps after warm-up, the same run:
// - inverse: conjugate-product kernel + C2R (the library's way) against C2R whose load callback
//   forms the product (fft_callbacks_lto.cu);
// - forward: placement kernel (8-bit frame minus an offset, zero padding) + R2C against R2C whose
//   load callback reads the 8-bit frame;
// - each callback plan's making (host ms: cuFFT links the callback in then, through nvJitLink);
// - the largest difference between the two ways' outputs, relative to the largest output.
// Usage: bench_fft_callbacks [--reps R]
#include <cuda_runtime.h>
#include <cufftXt.h>
#include <nvJitLink.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <random>
#include <string>
#include <vector>

#include "bench_check.hpp"
#include "cuda/numerator/conjugate_product.cuh"
#include "cuda/numerator/fft_product_load.hpp"
#include "fft_callbacks_fatbin.h"
#include "fft_callbacks_info.hpp"
#include "median.hpp"

namespace {

using nccmatch::bench::median;
using nccmatch::bench::PlaceCallbackInfo;
using nccmatch::cuda::FftProductLoadInfo;

void checkFft(cufftResult r, const char* call) {
  if (r == CUFFT_SUCCESS) return;
  std::fprintf(stderr, "%s failed: cufftResult %d\n", call, int(r));
  std::exit(1);
}

__global__ void conjugateProduct(const float2* __restrict__ frame, const float2* __restrict__ tpl,
                                 float2* __restrict__ out, std::size_t n) {
  for (std::size_t i = blockIdx.x * std::size_t(blockDim.x) + threadIdx.x; i < n;
       i += std::size_t(gridDim.x) * blockDim.x) {
    out[i] = nccmatch::cuda::conjugateProduct(frame[i], tpl[i]);
  }
}

__global__ void placeFrame(const uint8_t* __restrict__ image, std::size_t pitch, int width, int height,
                           const float* offset, float* __restrict__ real, int fftWidth, int fftHeight) {
  const float o = *offset;
  const int x = blockIdx.x * blockDim.x + threadIdx.x, y = blockIdx.y;
  if (x >= fftWidth || y >= fftHeight) return;
  real[std::size_t(y) * fftWidth + x] = (x < width && y < height) ? float(image[std::size_t(y) * pitch + x]) - o : 0.f;
}

// GPU µs of `enqueue` on `stream`, median of `reps` after 10 warm-up runs.
double medianMicros(cudaStream_t stream, int reps, const std::function<void()>& enqueue) {
  cudaEvent_t a, b;
  BENCH_CUDA_CHECK(cudaEventCreate(&a));
  BENCH_CUDA_CHECK(cudaEventCreate(&b));
  for (int i = 0; i < 10; ++i) enqueue();
  std::vector<double> samples;
  for (int i = 0; i < reps; ++i) {
    BENCH_CUDA_CHECK(cudaEventRecord(a, stream));
    enqueue();
    BENCH_CUDA_CHECK(cudaEventRecord(b, stream));
    BENCH_CUDA_CHECK(cudaEventSynchronize(b));
    float ms = 0;
    BENCH_CUDA_CHECK(cudaEventElapsedTime(&ms, a, b));
    samples.push_back(1000.0 * ms);
  }
  BENCH_CUDA_CHECK(cudaEventDestroy(a));
  BENCH_CUDA_CHECK(cudaEventDestroy(b));
  return median(samples);
}

// The callbacks' fatbin in 8-byte aligned storage (bin2c's byte array has no alignment).
const void* callbackFatbin() {
  static const std::vector<unsigned long long> words = [] {
    std::vector<unsigned long long> w((sizeof(nccFftCallbacksFatbin) + 7) / 8);
    std::memcpy(w.data(), nccFftCallbacksFatbin, sizeof(nccFftCallbacksFatbin));
    return w;
  }();
  return words.data();
}

// A 2-D plan of fftHeight x fftWidth on `stream`, with the load callback `symbol` (nullptr: none)
// reading `info`; *makeMs: host ms to make it. 0 (and the failure printed) when cuFFT refuses it.
cufftHandle makePlan(int fftWidth, int fftHeight, cufftType type, const char* symbol, void* info,
                     cudaStream_t stream, double* makeMs) {
  const auto begin = std::chrono::steady_clock::now();
  cufftHandle plan = 0;
  checkFft(cufftCreate(&plan), "cufftCreate");
  const auto refused = [&](const char* call, cufftResult r) {
    std::printf("%s for %s (%dx%d) refused: cufftResult %d\n", call, symbol ? symbol : "no callback", fftWidth,
                fftHeight, int(r));
    cufftDestroy(plan);
    return cufftHandle(0);
  };
  if (symbol != nullptr) {
    void* infos[1] = {info};
    const cufftResult r = cufftXtSetJITCallback(plan, symbol, callbackFatbin(), sizeof(nccFftCallbacksFatbin),
                                                type == CUFFT_C2R ? CUFFT_CB_LD_COMPLEX : CUFFT_CB_LD_REAL, infos);
    if (r != CUFFT_SUCCESS) return refused("cufftXtSetJITCallback", r);
  }
  std::size_t work = 0;
  const cufftResult r = cufftMakePlan2d(plan, fftHeight, fftWidth, type, &work);
  if (r != CUFFT_SUCCESS) return refused("cufftMakePlan2d", r);
  checkFft(cufftSetStream(plan, stream), "cufftSetStream");
  *makeMs = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - begin).count();
  return plan;
}

// The versions that decide whether cuFFT can link LTO callbacks: cuFFT's, the runtime's, the
// driver's, and nvJitLink's (the library the process loads, if any).
void printVersions() {
  int cufft = 0, runtime = 0, driver = 0;
  cufftGetVersion(&cufft);
  cudaRuntimeGetVersion(&runtime);
  cudaDriverGetVersion(&driver);
  unsigned major = 0, minor = 0;
  const bool jitLink = nvJitLinkVersion(&major, &minor) == NVJITLINK_SUCCESS;
  std::printf("cuFFT %d, CUDA runtime %d, driver %d, nvJitLink %s%u.%u\n", cufft, runtime, driver,
              jitLink ? "" : "(no answer) ", major, minor);
}

// max |a - b| / max |a| over n floats (device).
double relativeDifference(const float* a, const float* b, std::size_t n) {
  std::vector<float> ha(n), hb(n);
  BENCH_CUDA_CHECK(cudaMemcpy(ha.data(), a, n * sizeof(float), cudaMemcpyDeviceToHost));
  BENCH_CUDA_CHECK(cudaMemcpy(hb.data(), b, n * sizeof(float), cudaMemcpyDeviceToHost));
  double diff = 0, scale = 0;
  for (std::size_t i = 0; i < n; ++i) {
    diff = std::max(diff, double(std::fabs(ha[i] - hb[i])));
    scale = std::max(scale, double(std::fabs(ha[i])));
  }
  return scale > 0 ? diff / scale : diff;
}

}  // namespace

int main(int argc, char** argv) {
  int reps = 200;
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--reps") == 0 && i + 1 < argc) {
      reps = std::atoi(argv[++i]);
    } else {
      std::fprintf(stderr, "usage: bench_fft_callbacks [--reps R]\n");
      return 2;
    }
  }
  if (reps < 1) {
    std::fprintf(stderr, "--reps must be at least 1\n");
    return 2;
  }
  int devices = 0;
  if (cudaGetDeviceCount(&devices) != cudaSuccess || devices == 0) {
    std::printf("no GPU\n");
    return 0;
  }
  cudaDeviceProp prop{};
  BENCH_CUDA_CHECK(cudaGetDeviceProperties(&prop, 0));
  std::printf("GPU: %s; GPU µs, medians of %d; rel. diff: max |plain - callback| / max |plain|\n", prop.name, reps);
  printVersions();
  std::printf("\n");
  std::printf("| frame | plane | product + C2R | C2R, product in its load | rel. diff | place + R2C | R2C, frame in its load "
              "| rel. diff | callback plans made (ms) |\n|---|---|---:|---:|---:|---:|---:|---:|---:|\n");
  std::mt19937 gen(2026);
  cudaStream_t stream;
  BENCH_CUDA_CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  struct Size {
    int width, height, fftWidth, fftHeight;
  };
  for (const Size s : {Size{1920, 1080, 2048, 1152}, Size{3840, 2160, 4096, 2304}}) {
    const std::size_t plane = std::size_t(s.fftWidth) * s.fftHeight;
    const std::size_t spectrum = std::size_t(s.fftWidth / 2 + 1) * s.fftHeight;
    std::vector<uint8_t> hostImage(std::size_t(s.width) * s.height);
    for (auto& v : hostImage) v = uint8_t(gen());
    uint8_t* image;
    float *offset, *real, *real2, *outPlain, *outCallback;
    float2 *frameSpectrum, *frameSpectrum2, *tplSpectrum, *product;
    BENCH_CUDA_CHECK(cudaMalloc(&image, hostImage.size()));
    BENCH_CUDA_CHECK(cudaMemcpy(image, hostImage.data(), hostImage.size(), cudaMemcpyHostToDevice));
    BENCH_CUDA_CHECK(cudaMalloc(&offset, sizeof(float)));
    const float offsetValue = 127.25f;
    BENCH_CUDA_CHECK(cudaMemcpy(offset, &offsetValue, sizeof(float), cudaMemcpyHostToDevice));
    for (float** p : {&real, &real2, &outPlain, &outCallback}) BENCH_CUDA_CHECK(cudaMalloc(p, plane * sizeof(float)));
    for (float2** p : {&frameSpectrum, &frameSpectrum2, &tplSpectrum, &product})
      BENCH_CUDA_CHECK(cudaMalloc(p, spectrum * sizeof(float2)));
    FftProductLoadInfo productInfo{frameSpectrum, tplSpectrum};
    PlaceCallbackInfo placeInfo{image, std::size_t(s.width), s.width, s.height, s.fftWidth, offset};
    FftProductLoadInfo* productInfoDevice;
    PlaceCallbackInfo* placeInfoDevice;
    BENCH_CUDA_CHECK(cudaMalloc(&productInfoDevice, sizeof productInfo));
    BENCH_CUDA_CHECK(cudaMalloc(&placeInfoDevice, sizeof placeInfo));
    BENCH_CUDA_CHECK(cudaMemcpy(productInfoDevice, &productInfo, sizeof productInfo, cudaMemcpyHostToDevice));
    BENCH_CUDA_CHECK(cudaMemcpy(placeInfoDevice, &placeInfo, sizeof placeInfo, cudaMemcpyHostToDevice));

    double ms = 0, callbackMs = 0;
    const cufftHandle forward = makePlan(s.fftWidth, s.fftHeight, CUFFT_R2C, nullptr, nullptr, stream, &ms);
    const cufftHandle inverse = makePlan(s.fftWidth, s.fftHeight, CUFFT_C2R, nullptr, nullptr, stream, &ms);
    if (forward == 0 || inverse == 0) return 1;
    const cufftHandle identity =
        makePlan(s.fftWidth, s.fftHeight, CUFFT_C2R, "nccIdentityLoad", productInfoDevice, stream, &ms);
    if (identity != 0) std::printf("identity load callback plan made in %.0f ms\n", ms);
    const cufftHandle inverseCb =
        makePlan(s.fftWidth, s.fftHeight, CUFFT_C2R, "nccConjugateProductLoad", productInfoDevice, stream, &ms);
    callbackMs += ms;
    const cufftHandle forwardCb =
        makePlan(s.fftWidth, s.fftHeight, CUFFT_R2C, "nccPlaceFrameLoad", placeInfoDevice, stream, &ms);
    callbackMs += ms;
    if (inverseCb == 0 || forwardCb == 0) {
      for (cufftHandle p : {forward, inverse, identity, forwardCb, inverseCb})
        if (p != 0) cufftDestroy(p);
      continue;
    }

    // A template spectrum: the transform of random values in the plane.
    std::vector<float> hostPlane(plane);
    std::uniform_real_distribution<float> uniform(-1.f, 1.f);
    for (auto& v : hostPlane) v = uniform(gen);
    BENCH_CUDA_CHECK(cudaMemcpy(real2, hostPlane.data(), plane * sizeof(float), cudaMemcpyHostToDevice));
    checkFft(cufftExecR2C(forward, real2, tplSpectrum), "cufftExecR2C(template)");

    const dim3 placeGrid((s.fftWidth + 255) / 256, s.fftHeight);
    const auto forwardPlain = [&] {
      placeFrame<<<placeGrid, 256, 0, stream>>>(image, s.width, s.width, s.height, offset, real, s.fftWidth, s.fftHeight);
      BENCH_CUDA_CHECK(cudaGetLastError());
      checkFft(cufftExecR2C(forward, real, frameSpectrum), "cufftExecR2C");
    };
    const auto forwardCallback = [&] {
      checkFft(cufftExecR2C(forwardCb, real2, frameSpectrum2), "cufftExecR2C(callback)");
    };
    const int productBlocks = int(std::min<std::size_t>((spectrum + 255) / 256, std::size_t(prop.multiProcessorCount) * 16));
    const auto inversePlain = [&] {
      conjugateProduct<<<productBlocks, 256, 0, stream>>>(frameSpectrum, tplSpectrum, product, spectrum);
      BENCH_CUDA_CHECK(cudaGetLastError());
      checkFft(cufftExecC2R(inverse, product, outPlain), "cufftExecC2R");
    };
    const auto inverseCallback = [&] {
      checkFft(cufftExecC2R(inverseCb, product, outCallback), "cufftExecC2R(callback)");
    };
    const double fPlain = medianMicros(stream, reps, forwardPlain);
    const double fCallback = medianMicros(stream, reps, forwardCallback);
    const double iPlain = medianMicros(stream, reps, inversePlain);
    const double iCallback = medianMicros(stream, reps, inverseCallback);
    BENCH_CUDA_CHECK(cudaStreamSynchronize(stream));
    const double fDiff = relativeDifference(reinterpret_cast<const float*>(frameSpectrum),
                                            reinterpret_cast<const float*>(frameSpectrum2), 2 * spectrum);
    const double iDiff = relativeDifference(outPlain, outCallback, plane);
    std::printf("| %dx%d | %dx%d | %.1f | %.1f | %.1e | %.1f | %.1f | %.1e | %.0f |\n", s.width, s.height, s.fftWidth,
                s.fftHeight, iPlain, iCallback, iDiff, fPlain, fCallback, fDiff, callbackMs);
    std::fflush(stdout);
    for (cufftHandle p : {forward, inverse, identity, forwardCb, inverseCb})
      if (p != 0) cufftDestroy(p);
    for (void* p : std::initializer_list<void*>{image, offset, real, real2, outPlain, outCallback, frameSpectrum,
                                                frameSpectrum2, tplSpectrum, product, productInfoDevice, placeInfoDevice})
      BENCH_CUDA_CHECK(cudaFree(p));
  }
  BENCH_CUDA_CHECK(cudaStreamDestroy(stream));
  return 0;
}
