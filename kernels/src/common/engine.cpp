#include "nccmatch/engine.hpp"

#include <cstring>
#include <string>

#include "common/validate.hpp"
#include "cpu/cpu_engine.hpp"

namespace nccmatch {

#ifdef NCCMATCH_HAVE_CUDA
// The CUDA backend's entry points (cuda/cuda_probe.cpp, cuda/engine/cuda_engine.cpp), built only
// when CUDA is enabled.
bool cudaDevicePresent(std::string* why);
Status createCudaEngine(const EngineOptions& options, std::unique_ptr<Engine>* engine);
#endif

namespace {
const char* const kMethodNames[] = {"sqdiff", "sqdiff-normed", "ccorr",
                                    "ccorr-normed", "ccoeff", "ccoeff-normed"};
}

const char* methodName(Method method) {
  int m = static_cast<int>(method);
  return (m >= 0 && m <= 5) ? kMethodNames[m] : "invalid";
}

bool parseMethod(const std::string& text, Method* method) {
  for (int m = 0; m <= 5; ++m) {
    if (text == kMethodNames[m] || text == std::to_string(m)) {
      *method = static_cast<Method>(m);
      return true;
    }
  }
  return false;
}

const char* backendName(Backend backend) {
  switch (backend) {
    case Backend::Auto: return "auto";
    case Backend::Cpu: return "cpu";
    case Backend::Cuda: return "cuda";
  }
  return "invalid";
}

const char* cpuPathName(CpuPath path) {
  switch (path) {
    case CpuPath::Auto: return "auto";
    case CpuPath::Reference: return "reference";
    case CpuPath::Direct: return "direct";
    case CpuPath::Fft: return "fft";
  }
  return "invalid";
}

bool cudaAvailable(std::string* why) {
#ifdef NCCMATCH_HAVE_CUDA
  return cudaDevicePresent(why);
#else
  if (why) *why = "this build of nccmatch has no CUDA backend";
  return false;
#endif
}

Status Engine::submit(const FrameView& frame, const MatchParams& params) {
  if (framesInFlight() >= maxFramesInFlight())
    return Status::error("submit: " + std::to_string(framesInFlight()) +
                         " frames already in flight; collect one first");
  FrameResult result;
  NCC_RETURN_IF_ERROR(match(frame, params, &result));  // a failed frame is not in flight
  done_.push_back(std::move(result));
  return Status();
}

Status Engine::collect(FrameResult* result) {
  if (result == nullptr) return Status::error("collect: result pointer is null");
  if (done_.empty()) return Status::error("collect: no frame in flight");
  *result = std::move(done_.front());
  done_.pop_front();
  return Status();
}

Status Engine::copyPatch(const FrameView& frame, int x, int y, int width, int height,
                         std::vector<uint8_t>* pixels) {
  if (pixels == nullptr) return Status::error("copyPatch: pixels pointer is null");
  NCC_RETURN_IF_ERROR(validatePatchBox(frame, x, y, width, height));
  if (frame.memory != MemoryKind::Host)
    return Status::error("copyPatch: the " + std::string(backendName(backend())) +
                         " backend reads patches of host frames only");
  pixels->resize(std::size_t(width) * height);
  for (int r = 0; r < height; ++r)
    std::memcpy(pixels->data() + std::size_t(r) * width, frame.data + std::size_t(y + r) * frame.stride + x,
                std::size_t(width));
  return Status();
}

Status Engine::create(const EngineOptions& options, std::unique_ptr<Engine>* engine) {
  if (engine == nullptr) return Status::error("Engine::create: engine pointer is null");
  if (options.threads < 0) return Status::error("Engine::create: threads must be >= 0");
  std::string why;
  bool haveCuda = options.backend != Backend::Cpu && cudaAvailable(&why);
  if (options.backend == Backend::Cuda && !haveCuda)
    return Status::error("CUDA backend requested but unavailable: " + why);
#ifdef NCCMATCH_HAVE_CUDA
  if (haveCuda) return createCudaEngine(options, engine);
#endif
  engine->reset(new CpuEngine(options.threads, options.cpuPath));
  return Status();
}

}  // namespace nccmatch
