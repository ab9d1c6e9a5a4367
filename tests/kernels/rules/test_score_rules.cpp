// scoreFromSums on hand-made sums: the flat-window and flat-template rules, and no NaN/Inf.
#include <gtest/gtest.h>

#include <cmath>

#include "rules/score_rules.hpp"

namespace nccmatch {
namespace {

TemplateStats statsOf(std::initializer_list<int> px) {
  TemplateStats s;
  for (int v : px) { s.n++; s.sum += v; s.sumSq += v * v; }
  return s;
}

TEST(ScoreRules, FlatWindowGivesZeroForCorrelationAndOneForSqdiffNormed) {
  TemplateStats t = statsOf({10, 20, 30, 40});
  // Window of four 50s: sum 200, sum of squares 10000, sum I*T = 50*100.
  EXPECT_EQ(scoreFromSums(Method::CCoeffNormed, t, 200, 10000, 5000), 0.0);
  // All-black window: sum of squares 0.
  EXPECT_EQ(scoreFromSums(Method::CCorrNormed, t, 0, 0, 0), 0.0);
  EXPECT_EQ(scoreFromSums(Method::SqDiffNormed, t, 0, 0, 0), 1.0);
}

TEST(ScoreRules, FlatTemplateGivesOneForCCoeffNormed) {
  TemplateStats flat = statsOf({9, 9, 9, 9});
  EXPECT_EQ(scoreFromSums(Method::CCoeffNormed, flat, 10, 50, 90), 1.0);
  TemplateStats zero = statsOf({0, 0, 0, 0});
  EXPECT_EQ(scoreFromSums(Method::CCorrNormed, zero, 10, 50, 0), 0.0);
  EXPECT_EQ(scoreFromSums(Method::SqDiffNormed, zero, 10, 50, 0), 1.0);
}

TEST(ScoreRules, PerfectMatchScoresOne) {
  TemplateStats t = statsOf({1, 5, 200, 7});
  int64_t s1 = 213, s2 = 1 + 25 + 40000 + 49;
  EXPECT_DOUBLE_EQ(scoreFromSums(Method::CCoeffNormed, t, s1, s2, s2), 1.0);
  EXPECT_DOUBLE_EQ(scoreFromSums(Method::CCorrNormed, t, s1, s2, s2), 1.0);
  EXPECT_DOUBLE_EQ(scoreFromSums(Method::SqDiff, t, s1, s2, s2), 0.0);
  EXPECT_DOUBLE_EQ(scoreFromSums(Method::SqDiffNormed, t, s1, s2, s2), 0.0);
}

TEST(ScoreRules, UnnormalisedMethodsAreExact) {
  TemplateStats t = statsOf({1, 2, 3});
  // Window 4, 5, 6: sum 15, squares 77, cross 4+10+18 = 32.
  EXPECT_EQ(scoreFromSums(Method::SqDiff, t, 15, 77, 32), 27.0);  // 9+9+9
  EXPECT_EQ(scoreFromSums(Method::CCorr, t, 15, 77, 32), 32.0);
  EXPECT_EQ(scoreFromSums(Method::CCoeff, t, 15, 77, 32), 2.0);  // (-1)(-1)+0+1*1
}

TEST(ScoreRules, NeverNaNOrInfOnExtremeSums) {
  TemplateStats big;
  big.n = 16384LL * 16384LL;
  big.sum = big.n * 255;
  big.sumSq = big.n * 255 * 255;
  for (int m = 0; m <= 5; ++m) {
    double v = scoreFromSums(static_cast<Method>(m), big, big.sum, big.sumSq, big.sumSq);
    EXPECT_TRUE(std::isfinite(v)) << m;
  }
}

}  // namespace
}  // namespace nccmatch
