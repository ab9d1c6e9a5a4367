// NPP for the benchmarks' baselines, loaded at run time: the build machine has no NPP, the GPU
// host does. Declares the few NPP types the benches pass (layouts as in nppdefs.h).
#pragma once

#include <cuda_runtime_api.h>
#include <dlfcn.h>
#include <glob.h>

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

struct NppiSize {
  int width, height;
};

struct NppStreamContext {
  cudaStream_t hStream;
  int nCudaDeviceId;
  int nMultiProcessorCount;
  int nMaxThreadsPerMultiProcessor;
  int nMaxThreadsPerBlock;
  std::size_t nSharedMemPerBlock;
  int nCudaDevAttrComputeCapabilityMajor;
  int nCudaDevAttrComputeCapabilityMinor;
  unsigned int nStreamFlags;
  int nReserved0;
};

// Opens the first libnppist (image statistics: integrals, cross-correlation) found in the usual
// places for which `usable` accepts the handle; nullptr when none. *from names the file.
inline void* openNppist(const std::function<bool(void*)>& usable, std::string* from) {
  std::vector<std::string> candidates = {"libnppist.so.13", "libnppist.so.12", "libnppist.so"};
  for (const char* pattern : {"/usr/local/cuda*/lib64/libnppist.so*", "/usr/lib/x86_64-linux-gnu/libnppist.so*",
                              "/opt/*/.venv/lib/python3*/site-packages/nvidia/*/lib/libnppist.so*",
                              "/usr/local/lib/python3*/dist-packages/nvidia/*/lib/libnppist.so*",
                              "/usr/lib/python3*/site-packages/nvidia/*/lib/libnppist.so*"}) {
    glob_t g{};
    if (glob(pattern, 0, nullptr, &g) == 0)
      for (std::size_t i = 0; i < g.gl_pathc; ++i) candidates.push_back(g.gl_pathv[i]);
    globfree(&g);
  }
  for (const std::string& name : candidates) {
    void* lib = dlopen(name.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (!lib) continue;
    if (usable(lib)) {
      *from = name;
      return lib;
    }
    dlclose(lib);
  }
  return nullptr;
}

// The stream context NPP's _Ctx functions take, for `stream` on the device described by `prop`.
inline NppStreamContext makeNppContext(cudaStream_t stream, int device, const cudaDeviceProp& prop) {
  NppStreamContext ctx{};
  ctx.hStream = stream;
  ctx.nCudaDeviceId = device;
  ctx.nMultiProcessorCount = prop.multiProcessorCount;
  ctx.nMaxThreadsPerMultiProcessor = prop.maxThreadsPerMultiProcessor;
  ctx.nMaxThreadsPerBlock = prop.maxThreadsPerBlock;
  ctx.nSharedMemPerBlock = prop.sharedMemPerBlock;
  ctx.nCudaDevAttrComputeCapabilityMajor = prop.major;
  ctx.nCudaDevAttrComputeCapabilityMinor = prop.minor;
  if (cudaStreamGetFlags(stream, &ctx.nStreamFlags) != cudaSuccess) ctx.nStreamFlags = 0;
  return ctx;
}

// nppiCrossCorrValid_NormLevel_8u32f_C1R_Ctx (TM_CCOEFF_NORMED's counterpart, valid region) and
// its scratch size, from the first usable libnppist; corr null when none was found.
using NppCrossCorrFn = int (*)(const uint8_t*, int, NppiSize, const uint8_t*, int, NppiSize, float*, int,
                                   uint8_t*, NppStreamContext);
using NppCrossCorrBufferSizeFn = int (*)(NppiSize, std::size_t*, NppStreamContext);

struct NppCrossCorr {
  NppCrossCorrFn corr = nullptr;
  NppCrossCorrBufferSizeFn bufferSize = nullptr;
  std::string from;
};

inline NppCrossCorr loadNppCrossCorr() {
  NppCrossCorr npp;
  openNppist(
      [&](void* lib) {
        npp.corr = reinterpret_cast<NppCrossCorrFn>(dlsym(lib, "nppiCrossCorrValid_NormLevel_8u32f_C1R_Ctx"));
        npp.bufferSize = reinterpret_cast<NppCrossCorrBufferSizeFn>(dlsym(lib, "nppiValidNormLevelGetBufferHostSize_8u32f_C1R_Ctx"));
        return npp.corr && npp.bufferSize;
      },
      &npp.from);
  return npp.from.empty() ? NppCrossCorr{} : npp;
}
