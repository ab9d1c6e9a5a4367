// The nccmatch engine: normalized cross-correlation of 8-bit frames against a bank of templates.
// No GStreamer inside; usable from any application. Backends (CPU, CUDA) sit behind one API.
#pragma once

#include <deque>
#include <memory>
#include <string>
#include <vector>

#include "nccmatch/regions.hpp"
#include "nccmatch/status.hpp"
#include "nccmatch/types.hpp"

namespace nccmatch {

enum class Backend { Auto, Cpu, Cuda };
const char* backendName(Backend backend);

// True when this build has the CUDA backend and a usable device is present; otherwise false and,
// if `why` is given, the reason.
bool cudaAvailable(std::string* why = nullptr);

// How the CPU backend computes sum(I*T). Reference is the exact, plain integer path that every
// test uses as its oracle; Auto lets a measured cost model pick the fastest path per template.
enum class CpuPath { Auto, Reference, Direct, Fft };
const char* cpuPathName(CpuPath path);

// How the CUDA backend computes sum(I*T): Spatial is the exact direct sum (8-bit integer tensor
// cores or dp4a), Fft correlates with the zero-mean template through cuFFT (float transforms with
// a rounding bound; windows it cannot clear are recomputed exactly, so normalised scores stay
// within 1e-4 of exact), Auto lets the measured cost model pick per template and frame size.
enum class CudaNumerator { Auto, Spatial, Fft };
inline const char* cudaNumeratorName(CudaNumerator n) {
  return n == CudaNumerator::Spatial ? "spatial" : n == CudaNumerator::Fft ? "fft" : "auto";
}
inline bool parseCudaNumerator(const std::string& text, CudaNumerator* n) {
  for (CudaNumerator c : {CudaNumerator::Auto, CudaNumerator::Spatial, CudaNumerator::Fft}) {
    if (text == cudaNumeratorName(c)) {
      *n = c;
      return true;
    }
  }
  return false;
}

// CUDA backend, Engine::matchRegions on a pageable host frame: its windows are packed into the
// engine's pinned work buffer first; then Upload (default) copies them to the device with the
// call's descriptors (one DMA at full bus bandwidth, faster than the kernel's scattered reads over
// the bus) and Mapped has the kernels read them in place from that pinned buffer (no pixel bytes
// in the upload).
enum class CudaPackedWindows { Upload, Mapped };
inline const char* cudaPackedWindowsName(CudaPackedWindows w) {
  return w == CudaPackedWindows::Mapped ? "mapped" : "upload";
}

// CUDA backend, Engine::matchRegions on a host frame in pinned or registered memory the device
// can address (cudaHostAlloc/cudaMallocHost, cudaHostRegister; e.g. the element's buffer pool):
// nothing is packed or copied by the CPU. Gather (default) has one copy kernel read the windows
// over the bus into device memory, every row in flight at once and each byte once, before the
// scoring kernels; InPlace has the scoring kernels' tile loads read them over the bus.
enum class CudaMappedFrames { Gather, InPlace };
inline const char* cudaMappedFramesName(CudaMappedFrames m) {
  return m == CudaMappedFrames::InPlace ? "in-place" : "gather";
}

// CUDA backend, Engine::submit on a pageable host frame: the copy into the engine's pinned
// staging buffer, before the frame's upload, is made by the calling thread inside submit()
// (CallerThread, default) or by a host function on a stream of the frame's slot, its upload
// waiting for it (HostFunction: submit() returns without touching the pixels, the CUDA runtime's
// callback thread copies them while the caller goes on, e.g. a GStreamer producer's thread with
// its next frame, and while the previous frame uploads; the frame must stay valid until
// collected, as submit() requires anyway). match(), scoreMap() and matchRegions() always copy on
// the calling thread (they wait for the result anyway). The element uses HostFunction.
enum class CudaStagingCopy { CallerThread, HostFunction };
inline const char* cudaStagingCopyName(CudaStagingCopy c) {
  return c == CudaStagingCopy::HostFunction ? "host-function" : "caller-thread";
}

// CUDA backend, banks of 16 or more templates of one size up to 64x64 (the GEMM bank on the
// integer tensor cores): how the templates are held for ccoeff-normed. Unsigned: as their u8
// pixels, every (position, template) pair screened against the threshold from its correlation
// and the window's sums. ZeroMean: as s8 T - r (r near each template's mean) too, so that a
// pair's screen is one multiply-add against one bound a template and tile (the other methods use
// the u8 pixels as before). Auto (default): ZeroMean for groups of more than 16 templates, where
// it was measured faster (H200: 12-23% at 64 to 1024 templates), Unsigned for 16 (the same
// speed). The matches and scores are the same either way (exact scores come from the integer
// sums); only the speed differs.
enum class CudaGemmTemplates { Auto, Unsigned, ZeroMean };
inline const char* cudaGemmTemplatesName(CudaGemmTemplates t) {
  return t == CudaGemmTemplates::ZeroMean ? "zero-mean" : t == CudaGemmTemplates::Unsigned ? "unsigned" : "auto";
}

struct EngineOptions {
  Backend backend = Backend::Auto;  // Auto: CUDA when available, else CPU
  int cudaDevice = -1;              // -1: the current/first device
  int threads = 0;                  // CPU worker threads; 0: one per core
  CpuPath cpuPath = CpuPath::Auto;  // CPU backend only
  CudaNumerator cudaNumerator = CudaNumerator::Auto;  // CUDA backend only
  CudaPackedWindows cudaPackedWindows = CudaPackedWindows::Upload;  // CUDA backend only
  CudaMappedFrames cudaMappedFrames = CudaMappedFrames::Gather;     // CUDA backend only
  CudaStagingCopy cudaStagingCopy = CudaStagingCopy::CallerThread;  // CUDA backend only
  CudaGemmTemplates cudaGemmTemplates = CudaGemmTemplates::Auto;  // CUDA backend only
  // CUDA backend only: matching lanes, 1 to Engine::kMaxFramesInFlight (3). Each lane has its own
  // streams and its own copy of everything prepared per frame size (score maps, SAT, the fft
  // path's transforms and template spectra, the GEMM groups' layouts), and consecutive frames in
  // flight (submit) take different lanes: one frame's latency-bound steps (peak selection, exact
  // rescoring) run beside the next frame's transforms and scores instead of after them. match()
  // keeps to one lane. 1: every frame on one stream, the least device memory. 2 (default): with 2
  // in flight on H100s (bench/RESULTS.md, sessions 47 and 48) 1080p frames 10-19% less time a
  // frame, 2160p banks 9-12%. Extra lanes are taken only where they pay (not for fft templates on
  // frames above 4 M pixels, where they cost 8-9%) and only while the device has memory for them
  // (a spare lane that cannot be prepared is freed and its frames keep to the first lane).
  int cudaMatchingLanes = 2;
  // CUDA backend only: run in the CUDA context current on the calling thread when create() is
  // called (e.g. a driver-API context made current by the application or by GStreamer's gstcuda)
  // instead of selecting cudaDevice's primary context. That context must be current on every
  // later call, destruction included; device pointers passed in must belong to it.
  bool useCurrentCudaContext = false;
};

// One engine serves one caller at a time (calls from several threads need the caller's own
// lock); engines are independent, so each stream or thread may have its own.
class Engine {
 public:
  static Status create(const EngineOptions& options, std::unique_ptr<Engine>* engine);
  virtual ~Engine() = default;

  virtual Backend backend() const = 0;
  // Host threads the engine matches on: the CPU backend's workers (EngineOptions::threads, or
  // one per core), 1 for the CUDA backend (its host side is the caller's thread).
  virtual int workerThreads() const { return 1; }

  // Replaces the template bank. Every template needs width, height >= 1 and width*height pixels.
  // Per-bank preparation (statistics, layouts) happens here or on the next frame of a new size.
  virtual Status setTemplates(std::vector<TemplateImage> bank) = 0;
  virtual const std::vector<TemplateImage>& templates() const = 0;

  // Matches one frame against the bank. Templates larger than the frame are skipped (best[i]
  // empty). The frame's size may change from call to call.
  virtual Status match(const FrameView& frame, const MatchParams& params, FrameResult* result) = 0;

  // Searches each region of one frame for its template in one call (regions.hpp): results[k] is
  // what match() gives for region k's template (the bank's, its own image, or one of a prepared
  // set) on a view of that region alone, in frame coordinates, bit for bit the CPU Reference's.
  // The CUDA backend scores every region on the GPU: those whose template is at most 64x64 and
  // ignores no pixel in one launch of the fused region kernel, masked and larger ones in one
  // launch of the masked region kernel; only the regions' peak candidates come back. Fails
  // (naming the region) for a region outside the frame, a template index outside the bank or its
  // set, a set this engine does not hold, or a region naming both an image and a set; the CUDA
  // backend refuses while frames are in flight. Frames may be in host or (CUDA backend) device
  // memory. *results is replaced, whatever it held (a caller may pass the same vector every frame).
  virtual Status matchRegions(const FrameView& frame, const std::vector<RegionQuery>& regions,
                              const MatchParams& params, std::vector<RegionResult>* results) = 0;

  // Prepares templates for matchRegions once: the statistics and layouts an own image
  // (RegionQuery::image) gets anew every call are made here, and (CUDA backend) uploaded to the
  // device; regions then name template i as RegionQuery{..., .set = *set, .setIndex = i} in any
  // number of calls, with the results an own image gives. Every template needs width, height in
  // 1..16384 and width*height pixels (and a mask of that size or none); at least one template.
  // Independent of the bank (setTemplates keeps the sets). *set receives the new handle; when it
  // named a set of this engine, that set is replaced (released, its handles refused from then
  // on). On failure nothing changes.
  virtual Status prepareRegionTemplates(std::vector<TemplateImage> templates, RegionTemplateSet* set) = 0;
  // Releases a set of this engine (its memory freed, its handles refused from then on) and
  // empties *set. Fails, changing nothing, for a handle this engine does not hold.
  virtual Status releaseRegionTemplates(RegionTemplateSet* set) = 0;
  // Whether `set` names a set this engine holds (prepared here, not released or replaced).
  virtual bool holdsRegionTemplates(const RegionTemplateSet& set) const = 0;

  // Copies the width x height patch at (x, y) of a frame (host memory here; the CUDA backend
  // also reads device frames) into *pixels, tightly packed. The box must lie inside the frame.
  virtual Status copyPatch(const FrameView& frame, int x, int y, int width, int height,
                           std::vector<uint8_t>* pixels);

  // The full score map of one template (width-w+1 by height-h+1, row-major), copied to the host.
  // For tests and tools; match() never copies the map. Fails while frames are in flight.
  virtual Status scoreMap(const FrameView& frame, Method method, uint32_t templateIndex,
                          std::vector<double>* map) = 0;

  // Matching a stream without waiting for each frame: submit() starts a frame and returns;
  // collect() waits for the oldest submitted frame and gives its result (first in, first out),
  // the same result match() gives for that frame. Up to maxFramesInFlight() frames may be
  // submitted before one is collected. A submitted frame's memory must stay valid and unchanged
  // until its result is collected. CUDA: frame n+1's upload overlaps frame n's matching, and the
  // caller's own work overlaps both. The CPU backend matches inside submit(). Change the bank
  // (setTemplates) only with no frame in flight: the CUDA backend refuses, as it refuses match()
  // and scoreMap() then.
  virtual Status submit(const FrameView& frame, const MatchParams& params);
  virtual Status collect(FrameResult* result);
  virtual int maxFramesInFlight() const { return kMaxFramesInFlight; }
  virtual int framesInFlight() const { return int(done_.size()); }
  static constexpr int kMaxFramesInFlight = 3;

 private:
  // submit()/collect() of backends that match synchronously: results wait here.
  std::deque<FrameResult> done_;
};

}  // namespace nccmatch
