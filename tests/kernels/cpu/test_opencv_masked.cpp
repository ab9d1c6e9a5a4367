// Masked scores against OpenCV's own matchTemplate with a binary (CV_8U) mask, where this machine
// has OpenCV: every method, every CPU path, random and ring masks. OpenCV computes in float, so
// the comparison allows float rounding, and skips windows where nccmatch's own rules apply
// instead (README's score table): those OpenCV leaves non-finite (flat masked windows), and, for
// the normalised methods, ratios OpenCV gives beyond +-1 (its masked path does not clamp; its
// unmasked path and nccmatch clamp them, sqdiff-normed to 1). Results of only flat windows cannot
// hide a wrong formula: most windows of each map must be compared.
#include <gtest/gtest.h>

#include <opencv2/imgproc.hpp>

#include <cmath>

#include "cpu/cpu_cost_model.hpp"
#include "nccmatch/engine.hpp"
#include "test_support.hpp"

namespace nccmatch::test {
namespace {

int openCvMethod(Method m) {
  switch (m) {
    case Method::SqDiff: return cv::TM_SQDIFF;
    case Method::SqDiffNormed: return cv::TM_SQDIFF_NORMED;
    case Method::CCorr: return cv::TM_CCORR;
    case Method::CCorrNormed: return cv::TM_CCORR_NORMED;
    case Method::CCoeff: return cv::TM_CCOEFF;
    case Method::CCoeffNormed: return cv::TM_CCOEFF_NORMED;
  }
  return cv::TM_CCOEFF_NORMED;
}

TEST(OpenCvMasked, EveryMethodAgreesWithMatchTemplateWithAMask) {
  struct Case {
    int frameW, frameH, tplW, tplH;
    MaskShape mask;
  };
  const Case cases[] = {{64, 48, 9, 7, MaskShape::Random}, {80, 60, 17, 17, MaskShape::Ring},
                        {50, 40, 12, 10, MaskShape::Disc}, {33, 21, 5, 5, MaskShape::OnePixel}};
  std::vector<CpuPath> paths{CpuPath::Reference, CpuPath::Direct};
  if (cpuFftAvailable()) paths.push_back(CpuPath::Fft);
  for (const Case& c : cases) {
    Image img = makeImage(c.frameW, c.frameH, Fill::Random, 0);
    TemplateImage t = makeTemplate(c.tplW, c.tplH, Fill::Random);
    t.mask = makeMask(c.tplW, c.tplH, c.mask);
    // One compared pixel T: sqdiff-normed is (I - T)^2 / (I T), within 1 for most I when T is
    // mid-gray (a dark T would leave few windows to compare).
    if (c.mask == MaskShape::OnePixel) t.pixels[std::size_t(c.tplH / 2) * c.tplW + c.tplW / 2] = 128;
    const cv::Mat frame(c.frameH, c.frameW, CV_8U, img.bytes.data(), img.stride);
    const cv::Mat templ(c.tplH, c.tplW, CV_8U, t.pixels.data());
    const cv::Mat mask(c.tplH, c.tplW, CV_8U, t.mask.data());
    int compared = 0;
    for (uint8_t m : t.mask) compared += m != 0;
    for (CpuPath path : paths) {
      auto engine = makeCpuEngine(path, 2);
      ASSERT_TRUE(engine->setTemplates({t}).ok());
      for (int m = 0; m <= 5; ++m) {
        const Method method = Method(m);
        cv::Mat want;
        cv::matchTemplate(frame, templ, want, openCvMethod(method), mask);
        std::vector<double> got;
        ASSERT_TRUE(engine->scoreMap(img.view(), method, 0, &got).ok());
        const int mapW = c.frameW - c.tplW + 1, mapH = c.frameH - c.tplH + 1;
        ASSERT_EQ(want.rows, mapH);
        ASSERT_EQ(want.cols, mapW);
        const bool normed = method == Method::SqDiffNormed || method == Method::CCorrNormed ||
                            method == Method::CCoeffNormed;
        int checked = 0;
        for (int y = 0; y < mapH; ++y) {
          for (int x = 0; x < mapW; ++x) {
            const double ref = want.at<float>(y, x), value = got[std::size_t(y) * mapW + x];
            if (!std::isfinite(ref)) continue;  // OpenCV's flat masked windows
            if (normed && std::fabs(ref) > 1.0) continue;  // clamped by the rules here
            // Float sums of up to `compared` products of 255^2: relative rounding about 1e-6.
            const double tol = normed ? 2e-4 : 1e-5 * compared * 65025.0;
            ASSERT_NEAR(value, ref, tol) << cpuPathName(path) << " " << methodName(method) << " at " << x << ","
                                         << y << " mask " << maskShapeName(c.mask);
            ++checked;
          }
        }
        // One compared pixel is a flat template: OpenCV's ccoeff-normed is NaN everywhere (here 1).
        if (c.mask == MaskShape::OnePixel && method == Method::CCoeffNormed) continue;
        EXPECT_GT(checked, mapW * mapH / 2) << "most windows compared: " << cpuPathName(path) << " "
                                            << methodName(method) << " mask " << maskShapeName(c.mask);
      }
    }
  }
}

}  // namespace
}  // namespace nccmatch::test
