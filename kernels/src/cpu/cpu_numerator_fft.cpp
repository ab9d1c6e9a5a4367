#include "cpu/cpu_numerator_fft.hpp"
#include "cpu/fftw_wisdom.hpp"
#include "cpu/simd_clones.hpp"
#include "common/integer_math.hpp"

#include <fftw3.h>

#include <algorithm>
#include <cfloat>
#include <cmath>
#include <mutex>

namespace nccmatch {

namespace {

// Sizes with no prime factor above 7, which FFTW transforms fastest, up to `limit`.
const std::vector<int>& smoothSizes() {
  static const std::vector<int> sizes = [] {
    std::vector<int> s;
    // Up to 16384, the largest template side: a template wider than the largest size had no tile
    // (tile width 0, a division by zero planning it; found by tests/fuzz/fuzz_engine).
    for (int n = 1; n <= 16384; ++n) {
      int m = n;
      for (int p : {2, 3, 5, 7})
        while (m % p == 0) m /= p;
      if (m == 1) s.push_back(n);
    }
    return s;
  }();
  return sizes;
}

// Tile sizes worth trying along one axis: smooth sizes from the template size up to the first
// one that covers the whole frame.
std::vector<int> tileCandidates(int frameSize, int templateSize) {
  std::vector<int> out;
  for (int n : smoothSizes()) {
    if (n < templateSize) continue;
    out.push_back(n);
    if (n >= frameSize) break;
  }
  return out;
}

// Complex values per tile spectrum, rounded up so that every slot stays 64-byte aligned.
std::size_t spectrumSlot(int tileWidth, int tileHeight) {
  std::size_t n = std::size_t(tileHeight) * (tileWidth / 2 + 1);
  return (n + 7) / 8 * 8;
}

struct FftwFree {
  void operator()(void* p) const { fftwf_free(p); }
};
template <typename T>
using FftwBuffer = std::unique_ptr<T[], FftwFree>;
template <typename T>
FftwBuffer<T> fftwAlloc(std::size_t n) {
  return FftwBuffer<T>(static_cast<T*>(fftwf_malloc(sizeof(T) * std::max<std::size_t>(n, 1))));
}

// Per-thread work buffers that persist across frames (the pool's threads live as long as the
// engine): large fftwf_malloc blocks are fresh mmaps, and their page faults cost more than a
// small tile's transform.
template <typename T>
T* threadBuffer(std::size_t n, int which) {
  thread_local FftwBuffer<float> buffers[2];
  thread_local std::size_t sizes[2] = {0, 0};
  const std::size_t bytes = sizeof(T) * n;
  if (sizes[which] < bytes) {
    buffers[which] = fftwAlloc<float>((bytes + sizeof(float) - 1) / sizeof(float));
    sizes[which] = bytes;
  }
  return reinterpret_cast<T*>(buffers[which].get());
}

NCCMATCH_SIMD_CLONES
int64_t rowSum(const uint8_t* __restrict src, int n) {
  uint32_t sum = 0;  // n * 255 < 2^32 for any row
  for (int x = 0; x < n; ++x) sum += src[x];
  return sum;
}

// dst[x] = src[x] - offset for an integer offset; returns the sum of their squares (exact: a row
// has at most 16384 * 255^2 < 2^31).
NCCMATCH_SIMD_CLONES
int64_t centreRow(const uint8_t* __restrict src, int n, int offset, float* __restrict dst) {
  int32_t sumSq = 0;
  for (int x = 0; x < n; ++x) {
    const int32_t v = int32_t(src[x]) - offset;
    dst[x] = float(v);
    sumSq += v * v;
  }
  return sumSq;
}

}  // namespace

FftTiling chooseFftTiling(int frameWidth, int frameHeight, int templateWidth, int templateHeight,
                          int threads) {
  // Fixed cost of one tile (planner dispatch, the tile's copies, scoring set-up) in work units;
  // measured: tiles under ~100x100 take about twice their butterfly count.
  constexpr double kTileOverheadWork = 2e5;
  threads = std::max(1, threads);
  const int mapW = frameWidth - templateWidth + 1, mapH = frameHeight - templateHeight + 1;
  FftTiling best;
  double bestMakespan = HUGE_VAL;
  for (int tw : tileCandidates(frameWidth, templateWidth)) {
    const int tilesX = ceilDiv(mapW, tw - templateWidth + 1);
    for (int th : tileCandidates(frameHeight, templateHeight)) {
      const int tilesY = ceilDiv(mapH, th - templateHeight + 1);
      const int tiles = tilesX * tilesY;
      const double points = double(tw) * th;
      // log2 for the butterflies, +2 for loading the tile and the spectrum product.
      const double work = tiles * (points * (std::log2(points) + 2.0) + kTileOverheadWork);
      // Tiles are the unit of parallel work: one tile keeps one thread busy, however large.
      const double makespan = work / tiles * ceilDiv(tiles, threads);
      if (makespan < bestMakespan) {
        bestMakespan = makespan;
        best.tileWidth = tw;
        best.tileHeight = th;
        best.forwardWork = work;
        best.inverseWork = work;
        best.makespanWork = 2 * makespan;
      }
    }
  }
  return best;
}

// Templates that share one tile size share the frame's forward transforms.
struct FftNumerator::Group {
  int tileWidth = 0, tileHeight = 0;
  int stepX = 0, stepY = 0;      // output positions per tile: tile size - largest template + 1
  int tilesX = 0, tilesY = 0;    // enough tiles for the smallest template's map
  std::size_t slot = 0;
  fftwf_plan forward = nullptr;
  fftwf_plan inverse = nullptr;
  FftwBuffer<fftwf_complex> spectra;  // tilesX * tilesY slots, filled per frame
  std::vector<float> offset;          // per tile: the mean subtracted before the transform
  std::vector<double> norm;           // per tile: || I - offset ||_2
  bool used = false;

  ~Group() {
    std::lock_guard<std::mutex> lock(fftwPlannerMutex());
    if (forward) fftwf_destroy_plan(forward);
    if (inverse) fftwf_destroy_plan(inverse);
  }
};

struct FftNumerator::TemplateSpectrum {
  int group = -1;
  FftwBuffer<fftwf_complex> spectrum;  // conj(FFT(T - mean T)) / (tile points)
  double norm = 0;                     // || T - mean T ||_2
};

FftNumerator::FftNumerator() = default;
FftNumerator::~FftNumerator() = default;

void FftNumerator::prepare(const std::vector<TemplateImage>* bank, uint64_t bankGeneration,
                           const std::vector<bool>& useFft, int frameWidth, int frameHeight,
                           int threads) {
  if (bank == bank_ && bankGeneration == bankGeneration_ && useFft == useFft_ &&
      frameWidth == frameWidth_ && frameHeight == frameHeight_ && threads == threads_)
    return;
  threads_ = threads;
  bank_ = bank;
  bankGeneration_ = bankGeneration;
  useFft_ = useFft;
  frameWidth_ = frameWidth;
  frameHeight_ = frameHeight;
  groups_.clear();
  templates_.clear();
  templates_.resize(bank->size());

  // Group templates by tile size; each group's step fits its largest template.
  std::vector<int> minW, minH, maxW, maxH;
  for (std::size_t i = 0; i < bank->size(); ++i) {
    const TemplateImage& t = (*bank)[i];
    if (!useFft[i] || t.width > frameWidth || t.height > frameHeight) continue;
    FftTiling tiling = chooseFftTiling(frameWidth, frameHeight, t.width, t.height, threads);
    // A group's step follows its largest template, so a template joins a group of its tile size
    // only where the step stays at least half what the group's smallest template would have: a
    // 21-pixel and a 16384-pixel template on one 16384-wide tile would step one column at a time
    // (16364 tiles, gigabytes of spectra; found by tests/fuzz/fuzz_engine).
    int g = 0;
    for (; g < int(groups_.size()); ++g) {
      if (groups_[g]->tileWidth != tiling.tileWidth || groups_[g]->tileHeight != tiling.tileHeight) continue;
      const int stepX = tiling.tileWidth - std::max(maxW[g], t.width) + 1;
      const int stepY = tiling.tileHeight - std::max(maxH[g], t.height) + 1;
      const int widestX = tiling.tileWidth - std::min(minW[g], t.width) + 1;
      const int widestY = tiling.tileHeight - std::min(minH[g], t.height) + 1;
      if (2 * stepX >= widestX && 2 * stepY >= widestY) break;
    }
    if (g == int(groups_.size())) {
      groups_.push_back(std::make_unique<Group>());
      groups_[g]->tileWidth = tiling.tileWidth;
      groups_[g]->tileHeight = tiling.tileHeight;
      minW.push_back(t.width); maxW.push_back(t.width);
      minH.push_back(t.height); maxH.push_back(t.height);
    }
    minW[g] = std::min(minW[g], t.width); maxW[g] = std::max(maxW[g], t.width);
    minH[g] = std::min(minH[g], t.height); maxH[g] = std::max(maxH[g], t.height);
    templates_[i] = std::make_unique<TemplateSpectrum>();
    templates_[i]->group = g;
  }

  for (std::size_t g = 0; g < groups_.size(); ++g) {
    Group& G = *groups_[g];
    G.stepX = G.tileWidth - maxW[g] + 1;
    G.stepY = G.tileHeight - maxH[g] + 1;
    G.tilesX = ceilDiv(frameWidth - minW[g] + 1, G.stepX);
    G.tilesY = ceilDiv(frameHeight - minH[g] + 1, G.stepY);
    G.slot = spectrumSlot(G.tileWidth, G.tileHeight);
    G.spectra = fftwAlloc<fftwf_complex>(G.slot * G.tilesX * G.tilesY);
    G.offset.assign(std::size_t(G.tilesX) * G.tilesY, 0.f);
    G.norm.assign(std::size_t(G.tilesX) * G.tilesY, 0.0);
    auto real = fftwAlloc<float>(std::size_t(G.tileWidth) * G.tileHeight);
    auto spectrum = fftwAlloc<fftwf_complex>(G.slot);
    std::lock_guard<std::mutex> lock(fftwPlannerMutex());
    // Large tiles are planned by measurement (FFTW_MEASURE: 1.2-1.8x faster transforms at 1080p
    // on the development machine), once per tile size and machine: FFTW's wisdom is kept in the
    // wisdom file between processes. No time limit: a plan cut short by one is not reusable from
    // wisdom, so it would be measured again in every process; the full measurement (about 1-2.5 s
    // a plan at 1080p tiles) is paid once, on the first frame of a new tile size. Small tiles keep
    // FFTW_ESTIMATE (planning in microseconds).
    constexpr std::size_t kMeasuredTilePoints = 1 << 16;
    const bool measure = std::size_t(G.tileWidth) * G.tileHeight >= kMeasuredTilePoints;
    const unsigned flags = measure ? FFTW_MEASURE : FFTW_ESTIMATE;
    fftwf_set_timelimit(FFTW_NO_TIMELIMIT);
    if (measure) importFftwWisdomOnce();
    // Known sizes plan from wisdom in microseconds; anything new is measured and saved.
    const unsigned known = FFTW_WISDOM_ONLY | FFTW_MEASURE;
    G.forward = measure ? fftwf_plan_dft_r2c_2d(G.tileHeight, G.tileWidth, real.get(), spectrum.get(), known) : nullptr;
    G.inverse = measure ? fftwf_plan_dft_c2r_2d(G.tileHeight, G.tileWidth, spectrum.get(), real.get(),
                                                known | FFTW_DESTROY_INPUT)
                        : nullptr;
    const bool learnt = measure && (G.forward == nullptr || G.inverse == nullptr);
    if (G.forward == nullptr)
      G.forward = fftwf_plan_dft_r2c_2d(G.tileHeight, G.tileWidth, real.get(), spectrum.get(), flags);
    if (G.inverse == nullptr)
      G.inverse = fftwf_plan_dft_c2r_2d(G.tileHeight, G.tileWidth, spectrum.get(), real.get(),
                                        flags | FFTW_DESTROY_INPUT);
    if (learnt) exportFftwWisdom();
  }

  // Template spectra: zero-mean template, so the correlation is the centred numerator directly
  // (no cancellation of N*sum(IT) - sum(I)*sum(T) in float).
  for (std::size_t i = 0; i < bank->size(); ++i) {
    if (!templates_[i]) continue;
    const TemplateImage& t = (*bank)[i];
    TemplateSpectrum& S = *templates_[i];
    const Group& G = *groups_[S.group];
    const std::size_t points = std::size_t(G.tileWidth) * G.tileHeight;
    // Under a mask: M (T - mean_M T), zero where ignored (the masked centred numerator).
    double sum = 0, compared = 0;
    for (std::size_t k = 0; k < t.pixels.size(); ++k)
      if (t.mask.empty() || t.mask[k] != 0) sum += t.pixels[k], compared += 1;
    const double mean = compared > 0 ? sum / compared : 0.0;
    auto real = fftwAlloc<float>(points);
    std::fill(real.get(), real.get() + points, 0.f);
    double normSq = 0;
    for (int ty = 0; ty < t.height; ++ty) {
      for (int tx = 0; tx < t.width; ++tx) {
        const std::size_t k = std::size_t(ty) * t.width + tx;
        if (!t.mask.empty() && t.mask[k] == 0) continue;
        double v = t.pixels[k] - mean;
        real[std::size_t(ty) * G.tileWidth + tx] = float(v);
        normSq += v * v;
      }
    }
    S.norm = std::sqrt(normSq);
    S.spectrum = fftwAlloc<fftwf_complex>(G.slot);
    fftwf_execute_dft_r2c(G.forward, real.get(), S.spectrum.get());
    const float scale = float(1.0 / double(points));
    for (std::size_t k = 0; k < G.slot; ++k) {
      S.spectrum[k][0] *= scale;
      S.spectrum[k][1] *= -scale;  // conjugate: correlation, not convolution
    }
  }
}

void FftNumerator::transformFrame(const FrameView& frame, ThreadPool& pool) {
  for (auto& gp : groups_) {
    Group& G = *gp;
    const int tiles = G.tilesX * G.tilesY;
    pool.parallelFor(tiles, [&](int begin, int end) {
      float* const realBuffer = threadBuffer<float>(std::size_t(G.tileWidth) * G.tileHeight, 0);
      for (int tile = begin; tile < end; ++tile) {
        const int x0 = (tile % G.tilesX) * G.stepX, y0 = (tile / G.tilesX) * G.stepY;
        const int x1 = std::min(frame.width, x0 + G.tileWidth);
        const int y1 = std::min(frame.height, y0 + G.tileHeight);
        // Subtracting the tile mean costs nothing (the template sums to zero) and shrinks the
        // values the transform carries, hence its rounding error.
        int64_t s1 = 0;
        for (int y = y0; y < y1; ++y) s1 += rowSum(frame.data + std::size_t(y) * frame.stride + x0, x1 - x0);
        const double n = double(x1 - x0) * (y1 - y0);
        const int offset = int(std::round(double(s1) / n));
        G.offset[tile] = float(offset);
        // || I - offset ||^2 over the tile, exact.
        int64_t normSq = 0;
        float* dst = realBuffer;
        for (int y = y0; y < y0 + G.tileHeight; ++y, dst += G.tileWidth) {
          if (y >= y1) {
            std::fill(dst, dst + G.tileWidth, 0.f);
            continue;
          }
          normSq += centreRow(frame.data + std::size_t(y) * frame.stride + x0, x1 - x0, offset, dst);
          std::fill(dst + (x1 - x0), dst + G.tileWidth, 0.f);
        }
        G.norm[tile] = std::sqrt(double(normSq));
        fftwf_execute_dft_r2c(G.forward, realBuffer, G.spectra.get() + G.slot * tile);
      }
    });
  }
}

void FftNumerator::centredCross(uint32_t templateIndex, ThreadPool& pool, float* out, float* bound) {
  const TemplateImage& t = (*bank_)[templateIndex];
  const int mapW = frameWidth_ - t.width + 1;
  centredCrossTiles(templateIndex, pool, [&](int x0, int y0, int x1, int y1, const float* values,
                                             int stride, float err) {
    for (int y = y0; y < y1; ++y) {
      const float* src = values + std::size_t(y - y0) * stride - x0;
      float* dst = out + std::size_t(y) * mapW;
      float* dstBound = bound + std::size_t(y) * mapW;
      for (int x = x0; x < x1; ++x) {
        dst[x] = src[x];
        dstBound[x] = err;
      }
    }
  });
}

void FftNumerator::centredCrossTiles(uint32_t templateIndex, ThreadPool& pool, const TileVisitor& visit) {
  const TemplateImage& t = (*bank_)[templateIndex];
  const TemplateSpectrum& S = *templates_[templateIndex];
  const Group& G = *groups_[S.group];
  const int mapW = frameWidth_ - t.width + 1, mapH = frameHeight_ - t.height + 1;
  const int tilesX = ceilDiv(mapW, G.stepX), tilesY = ceilDiv(mapH, G.stepY);
  // Rounding errors of the transforms spread over all frequencies, so an output's error has an
  // RMS of about eps * sqrt(log2 P) * ||I|| * ||T'|| / sqrt(P) for P points per tile; 16 times
  // that covers the largest of the P outputs (tests/kernels/test_cpu_numerator_fft.cpp checks
  // both that it holds and that it is not vacuous).
  const double points = double(G.tileWidth) * G.tileHeight;
  const double errorScale = 16.0 * FLT_EPSILON * std::sqrt(std::log2(std::max(2.0, points)) / points) * S.norm;
  pool.parallelFor(tilesX * tilesY, [&](int begin, int end) {
    fftwf_complex* const product = threadBuffer<fftwf_complex>(G.slot, 0);
    float* const real = threadBuffer<float>(std::size_t(G.tileWidth) * G.tileHeight, 1);
    for (int k = begin; k < end; ++k) {
      const int tx = k % tilesX, ty = k / tilesX;
      const int tile = ty * G.tilesX + tx;
      const fftwf_complex* a = G.spectra.get() + G.slot * tile;
      const fftwf_complex* b = S.spectrum.get();
      const std::size_t n = std::size_t(G.tileHeight) * (G.tileWidth / 2 + 1);
      for (std::size_t i = 0; i < n; ++i) {
        product[i][0] = a[i][0] * b[i][0] - a[i][1] * b[i][1];
        product[i][1] = a[i][0] * b[i][1] + a[i][1] * b[i][0];
      }
      fftwf_execute_dft_c2r(G.inverse, product, real);
      const int x0 = tx * G.stepX, y0 = ty * G.stepY;
      visit(x0, y0, std::min(mapW, x0 + G.stepX), std::min(mapH, y0 + G.stepY), real, G.tileWidth,
            float(errorScale * G.norm[tile]));
    }
  });
}

}  // namespace nccmatch
