#include "cuda/engine/frame_upload.hpp"

#include <algorithm>
#include <cstring>

#include "cuda/cuda_check.hpp"
#include "cuda/engine/host_memory.hpp"
#include "cuda/numerator/spatial_scores.hpp"
#include "common/integer_math.hpp"

namespace nccmatch::cuda {

namespace {

int bandRowsFor(int height) {
  const int bands = std::max(1, std::min(kMaxBands, height / 256));
  const int rows = (height + bands - 1) / bands;
  return int(roundUp(std::size_t(rows), std::size_t(kFusedTileHeight)));
}

// Copies a StagingJob's rows (a host function on the staging stream: no CUDA call in here).
void CUDART_CB copyStagingRows(void* data) {
  const StagingJob& job = *static_cast<const StagingJob*>(data);
  const std::size_t width = std::size_t(job.width);
  if (job.sourceStride == width) {  // rows back to back: one copy
    std::memcpy(job.target, job.source, width * std::size_t(job.rows));
    return;
  }
  for (int y = 0; y < job.rows; ++y)
    std::memcpy(job.target + std::size_t(y) * width, job.source + std::size_t(y) * job.sourceStride, width);
}

}  // namespace

Status UploadBuffers::create() {
  for (Event& event : bandEvents) NCC_RETURN_IF_ERROR(createEvent(&event));
  for (Event& event : stagedEvents) NCC_RETURN_IF_ERROR(createEvent(&event));
  return createStream(&stagingStream);
}

void UploadBuffers::finishStaging() const {
  if (stagingStream) cudaStreamSynchronize(stagingStream.get());
}

Status UploadedFrame::waitForRows(int rows, cudaStream_t stream) {
  if (bands == 0 || rows <= 0) return Status();
  const int last = std::min(bands, (rows + bandRows - 1) / bandRows) - 1;
  if (last < bandsWaited) return Status();
  NCC_CUDA_CHECK(cudaStreamWaitEvent(stream, bandEvents[last].get(), 0));
  bandsWaited = last + 1;
  return Status();
}

Status UploadedFrame::forEachBand(int mapHeight, int templateHeight, cudaStream_t stream,
                                  const std::function<Status(int, int)>& launch) {
  if (bandsWaited >= bands) return launch(0, mapHeight);
  // Band b of output rows ends where its windows still lie inside frame bands 0..b (on a
  // tile-row boundary), so it starts as soon as frame band b has arrived.
  int y0 = 0;
  for (int b = 0; b < bands && y0 < mapHeight; ++b) {
    const int frameRows = std::min(height, (b + 1) * bandRows);
    const int y1 = b + 1 == bands ? mapHeight
                                  : std::min(mapHeight, (frameRows - templateHeight + 1) /
                                                            kFusedTileHeight * kFusedTileHeight);
    if (y1 <= y0) continue;
    NCC_RETURN_IF_ERROR(waitForRows(frameRows, stream));
    NCC_RETURN_IF_ERROR(launch(y0, y1));
    y0 = y1;
  }
  return Status();
}

Status uploadFrame(const FrameView& frame, bool banded, CudaStagingCopy staging, UploadBuffers& buffers,
                   cudaStream_t copyStream, UploadedFrame* uploaded) {
  UploadedFrame& out = *uploaded;
  out = UploadedFrame();
  out.width = frame.width;
  out.height = frame.height;
  out.bandEvents = buffers.bandEvents.data();
  if (frame.memory == MemoryKind::Device) {
    out.image = frame.data;
    out.pitch = frame.stride;
    return Status();
  }
  const int W = frame.width, H = frame.height;
  const std::size_t pitch = roundUp(std::size_t(W), 128);
  NCC_RETURN_IF_ERROR(buffers.frame.reserve(pitch * H));
  out.image = buffers.frame.as<uint8_t>();
  out.pitch = pitch;
  // Anything but pinned memory goes through the staging buffer first, since an async copy from
  // pageable memory is neither async nor fast.
  const bool pinned = hostRange(frame.data, (std::size_t(H) - 1) * frame.stride + std::size_t(W)).pinned;
  const uint8_t* source = frame.data;
  std::size_t sourcePitch = frame.stride;
  if (!pinned) {
    NCC_RETURN_IF_ERROR(buffers.staging.reserve(std::size_t(W) * H));
    source = buffers.staging.as<uint8_t>();
    sourcePitch = W;
  }
  // The slot is free, so the copies need not wait for the compute stream.
  const int bandRows = banded ? bandRowsFor(H) : H;
  for (int y0 = 0, band = 0; y0 < H; y0 += bandRows, ++band) {
    const int rows = std::min(bandRows, H - y0);
    if (!pinned) {
      StagingJob& job = buffers.stagingJobs[std::size_t(band)];
      job = StagingJob{buffers.staging.as<uint8_t>() + std::size_t(y0) * W, frame.data + std::size_t(y0) * frame.stride,
                       frame.stride, W, rows};
      if (staging == CudaStagingCopy::HostFunction) {
        NCC_CUDA_CHECK(cudaLaunchHostFunc(buffers.stagingStream.get(), copyStagingRows, &job));
        NCC_CUDA_CHECK(cudaEventRecord(buffers.stagedEvents[band].get(), buffers.stagingStream.get()));
        NCC_CUDA_CHECK(cudaStreamWaitEvent(copyStream, buffers.stagedEvents[band].get(), 0));
      } else {
        copyStagingRows(&job);
      }
    }
    NCC_CUDA_CHECK(cudaMemcpy2DAsync(buffers.frame.as<uint8_t>() + std::size_t(y0) * pitch, pitch,
                                     source + std::size_t(y0) * sourcePitch, sourcePitch, W, rows,
                                     cudaMemcpyHostToDevice, copyStream));
    NCC_CUDA_CHECK(cudaEventRecord(buffers.bandEvents[band].get(), copyStream));
  }
  out.bandRows = bandRows;
  out.bands = (H + bandRows - 1) / bandRows;
  return Status();
}

}  // namespace nccmatch::cuda
