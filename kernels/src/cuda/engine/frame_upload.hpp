// A frame's way onto the device. A device frame is read in place. A host frame is copied on the
// copy stream into the slot's device buffer, from pinned memory directly or through a pinned
// staging buffer; banded, it goes in bands of rows, each announced by its own event, so that
// scores of the first rows start while the last rows are still on their way.
#pragma once

#include <cuda_runtime_api.h>

#include <array>
#include <cstddef>
#include <cstdint>
#include <functional>

#include "cuda/engine/cuda_handles.hpp"
#include "cuda/engine/device_buffer.hpp"
#include "nccmatch/engine.hpp"
#include "nccmatch/status.hpp"
#include "nccmatch/types.hpp"

namespace nccmatch::cuda {

// Banded uploads: about 256 rows a band (a 1080p frame in 4, 2160p in 8), each a multiple of
// the fused kernel's tile height; fewer bands would start the scores later, more would cost
// more API calls than the overlap saves.
constexpr int kMaxBands = 8;

// Rows of a pageable frame to copy into the staging buffer: band b's, read by a host function on
// the slot's staging stream (CudaStagingCopy::HostFunction) after uploadFrame returned.
struct StagingJob {
  uint8_t* target = nullptr;  // rows `width` bytes apart
  const uint8_t* source = nullptr;
  std::size_t sourceStride = 0;
  int width = 0, rows = 0;
};

// What one frame slot's uploads write to and announce with. CudaStagingCopy::HostFunction copies
// a pageable frame into `staging` by host functions on the slot's own stagingStream, each band's
// upload on the copy stream waiting for its stagedEvents: this slot's copy then runs while the
// copy stream still uploads the previous frame (another slot's staging buffer).
struct UploadBuffers {
  PinnedBuffer staging;  // a pageable frame is copied here first
  DeviceBuffer frame;    // the uploaded frame
  std::array<Event, kMaxBands> bandEvents;  // on the copy stream: rows of band b are on the device
  std::array<StagingJob, kMaxBands> stagingJobs;  // read by CudaStagingCopy::HostFunction's host functions
  Stream stagingStream;
  std::array<Event, kMaxBands> stagedEvents;  // on stagingStream: rows of band b are in `staging`

  Status create();
  // Waits for the host functions still pending on stagingStream (they read the caller's frame).
  void finishStaging() const;
};

// A frame on the device as the steps after the upload read it. `bands` bands of `bandRows` rows
// (none for a device frame, one for an upload in one piece), the first `bandsWaited` of which the
// compute stream has waited for.
struct UploadedFrame {
  const uint8_t* image = nullptr;
  std::size_t pitch = 0;
  int width = 0, height = 0;
  int bands = 0, bandRows = 0;
  const Event* bandEvents = nullptr;
  int bandsWaited = 0;

  // Makes `stream` wait until frame rows [0, rows) are on the device.
  Status waitForRows(int rows, cudaStream_t stream);
  // Launches output rows [0, mapHeight) of a template (or bank) whose tallest template is
  // templateHeight: all at once when every band has been waited for (a device frame too), else
  // band by band, each after the frame rows it reads have arrived.
  Status forEachBand(int mapHeight, int templateHeight, cudaStream_t stream,
                     const std::function<Status(int, int)>& launch);
};

// Uploads a host frame on copyStream into `buffers` (the slot must be free: its last frame was
// collected), in several bands when `banded`, a pageable one through the staging buffer copied by
// `staging` (the calling thread, or a host function before each band's upload: the frame must
// stay valid until the upload is done); a device frame is used in place.
Status uploadFrame(const FrameView& frame, bool banded, CudaStagingCopy staging, UploadBuffers& buffers,
                   cudaStream_t copyStream, UploadedFrame* uploaded);

}  // namespace nccmatch::cuda
