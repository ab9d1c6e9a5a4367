// The CUDA cost model (no device needed): fused templates up to 64x64 go spatial at 1080p and
// 2160p (the fused kernel measured faster than the float FFT there), larger ones to the FFT,
// explicit choices are never Auto, the predictions grow with the work they price, and the float
// fft hands its peaks over on large maps only.
#include <gtest/gtest.h>

#include "cuda/engine/cost_model.hpp"
#include "cuda/numerator/spatial_scores.hpp"

namespace nccmatch::test {
namespace {

constexpr int kH200Sms = 132;

struct PickCase {
  int frameW, frameH, side;
  CudaNumerator want;
};

std::ostream& operator<<(std::ostream& os, const PickCase& c) {
  return os << c.frameW << "x" << c.frameH << " template " << c.side;
}

class CudaCostModelPicks : public ::testing::TestWithParam<PickCase> {};

TEST_P(CudaCostModelPicks, AsMeasuredOnTheH200) {
  const PickCase c = GetParam();
  EXPECT_EQ(cuda::chooseNumerator(c.side, c.side, c.frameW, c.frameH, kH200Sms), c.want) << c;
}

INSTANTIATE_TEST_SUITE_P(Sizes, CudaCostModelPicks, ::testing::Values(
    PickCase{1920, 1080, 1, CudaNumerator::Spatial},
    PickCase{1920, 1080, 8, CudaNumerator::Spatial},
    PickCase{1920, 1080, 16, CudaNumerator::Spatial},
    PickCase{1920, 1080, 32, CudaNumerator::Spatial},
    PickCase{1920, 1080, 64, CudaNumerator::Spatial},   // fused: below the FFT since 4 rows a warp
    PickCase{1920, 1080, 128, CudaNumerator::Fft},
    PickCase{1920, 1080, 256, CudaNumerator::Fft},
    PickCase{3840, 2160, 8, CudaNumerator::Spatial},
    PickCase{3840, 2160, 32, CudaNumerator::Spatial},
    PickCase{3840, 2160, 64, CudaNumerator::Spatial},
    PickCase{3840, 2160, 65, CudaNumerator::Fft},       // one past the fused kernel
    PickCase{3840, 2160, 256, CudaNumerator::Fft},
    PickCase{64, 64, 64, CudaNumerator::Spatial}));     // one position

TEST(CudaCostModel, PredictionsGrowWithTheirWork) {
  // Fused: more template rows and K steps cost more; a larger frame costs more.
  double last = 0.0;
  for (int side : {1, 8, 16, 17, 32, 48, 64}) {
    ASSERT_TRUE(cuda::fusedSpatialFits(side, side));
    const double t = cuda::predictNumeratorCosts(side, side, 1920, 1080, kH200Sms).spatialMicros;
    EXPECT_GT(t, 0.0);
    if (side > 1) {
      EXPECT_GE(t, last * 0.97) << side;  // fewer outputs may offset a little
    }
    last = t;
  }
  EXPECT_GT(cuda::predictNumeratorCosts(32, 32, 3840, 2160, kH200Sms).spatialMicros,
            cuda::predictNumeratorCosts(32, 32, 1920, 1080, kH200Sms).spatialMicros);
  // The FFT's cost depends on the padded frame, not on the template.
  EXPECT_EQ(cuda::predictNumeratorCosts(64, 64, 1920, 1080, kH200Sms).fftMicros,
            cuda::predictNumeratorCosts(256, 256, 1920, 1080, kH200Sms).fftMicros);
  EXPECT_GT(cuda::predictNumeratorCosts(64, 64, 3840, 2160, kH200Sms).fftMicros,
            cuda::predictNumeratorCosts(64, 64, 1920, 1080, kH200Sms).fftMicros);
  // Past the fused kernel the spatial path needs the SAT and a dp4a numerator: dearer.
  EXPECT_GT(cuda::predictNumeratorCosts(65, 65, 1920, 1080, kH200Sms).spatialMicros,
            cuda::predictNumeratorCosts(64, 64, 1920, 1080, kH200Sms).spatialMicros);
}

TEST(CudaCostModel, NeverAnswersAuto) {
  for (int side : {1, 3, 64, 65, 300})
    for (int sms : {0, 1, 132}) {
      const CudaNumerator n = cuda::chooseNumerator(side, side, 1000, 700, sms);
      EXPECT_TRUE(n == CudaNumerator::Spatial || n == CudaNumerator::Fft) << side << " " << sms;
    }
}

// The float-fft peaks come from the score kernels' hand-off on large maps only: 1080p maps scan
// (the hand-off measured slower there), 2160p maps hand over (faster), the boundary at
// kFftHandoffMinPositions exactly, and empty or negative maps never hand over.
TEST(CudaCostModel, FftPeakHandoffOnLargeMapsOnly) {
  for (int side : {128, 256}) {
    EXPECT_FALSE(cuda::fftPeakHandoffPays(1921 - side, 1081 - side)) << "1080p, template " << side;
    EXPECT_TRUE(cuda::fftPeakHandoffPays(3841 - side, 2161 - side)) << "2160p, template " << side;
  }
  const int width = 1000, rows = int(cuda::kFftHandoffMinPositions / width);
  ASSERT_EQ(std::size_t(width) * rows, cuda::kFftHandoffMinPositions);
  EXPECT_TRUE(cuda::fftPeakHandoffPays(width, rows));
  EXPECT_FALSE(cuda::fftPeakHandoffPays(width - 1, rows));
  EXPECT_FALSE(cuda::fftPeakHandoffPays(0, 1 << 30));
  EXPECT_FALSE(cuda::fftPeakHandoffPays(-5000, -5000));
  EXPECT_TRUE(cuda::fftPeakHandoffPays(1 << 16, 1 << 16));  // no int overflow
}

TEST(CudaCostModel, ExtraLanesPayExceptFftOnLargeFrames) {
  EXPECT_TRUE(cuda::extraLanesPay(1920, 1080, true));
  EXPECT_TRUE(cuda::extraLanesPay(2560, 1440, true));
  EXPECT_FALSE(cuda::extraLanesPay(3840, 2160, true));
  EXPECT_TRUE(cuda::extraLanesPay(3840, 2160, false));  // banks at 2160p gained (two engines, H200)
  EXPECT_TRUE(cuda::extraLanesPay(2000, int(cuda::kExtraLanesMaxFftPixels / 2000), true));
  EXPECT_FALSE(cuda::extraLanesPay(2001, int(cuda::kExtraLanesMaxFftPixels / 2000), true));
  EXPECT_FALSE(cuda::extraLanesPay(1 << 16, 1 << 16, true));  // no int overflow
}

}  // namespace
}  // namespace nccmatch::test
