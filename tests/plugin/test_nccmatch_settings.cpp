// Settings: the `templates` list syntax and the mapping to the engine's MatchParams.
#include <cmath>
#include <gtest/gtest.h>

#include "nccmatch_settings.hpp"

namespace nccmatch::plugin {
namespace {

struct ListCase {
  const char* text;                // property value (nullptr: unset)
  std::vector<std::string> files;  // expected list
};

TEST(TemplateList, ParsesCommaSeparatedFiles) {
  const ListCase cases[] = {
      {nullptr, {}},
      {"", {}},
      {"a.png", {"a.png"}},
      {"a.png,b.pgm", {"a.png", "b.pgm"}},
      {" a.png , b.pgm ,c.jpg ", {"a.png", "b.pgm", "c.jpg"}},
      {",,a.png,,", {"a.png"}},
      {" , \t,", {}},
      {"/tmp/dir with space/x y.png", {"/tmp/dir with space/x y.png"}},
      {"a.png,a.png", {"a.png", "a.png"}},  // the same file twice is two templates
  };
  for (const ListCase& c : cases) {
    SCOPED_TRACE(c.text ? c.text : "(null)");
    EXPECT_EQ(parseTemplateList(c.text), c.files);
  }
}

TEST(TemplateList, JoinIsTheInverseOfParse) {
  const std::vector<std::vector<std::string>> lists = {{}, {"a.png"}, {"a.png", "dir/b.pgm", "c d.jpg"}};
  for (const auto& files : lists) {
    std::string joined = joinTemplateList(files);
    EXPECT_EQ(parseTemplateList(joined.c_str()), files) << joined;
  }
  EXPECT_EQ(joinTemplateList({"a", "b"}), "a,b");
}

struct ScaleCase {
  const char* text;             // property value (nullptr: unset)
  bool ok;
  std::vector<double> scales;   // expected when ok
  const char* errorNames;       // expected in the error otherwise
};

TEST(ScaleList, ParsesFactorsAndRefusesBadOnesNamingThem) {
  const ScaleCase cases[] = {
      {nullptr, true, {1.0}, ""},
      {"", true, {1.0}, ""},
      {" , ,", true, {1.0}, ""},
      {"1.5", true, {1.5}, ""},
      {" 0.8, 1 ,,1.25 ", true, {0.8, 1.0, 1.25}, ""},
      {"0.01,16", true, {0.01, 16.0}, ""},
      {"2e-1,1E1", true, {0.2, 10.0}, ""},
      {"abc", false, {}, "'abc'"},
      {"1,0.5x", false, {}, "'0.5x'"},
      {"1,0,5", false, {}, "scale factor 0 "},
      {"-1", false, {}, "-1"},
      {"16.5", false, {}, "16.5"},
      {"0.005", false, {}, "0.005"},
      {"nan", false, {}, "nan"},
      {"inf", false, {}, "inf"},
      {"1,1e999", false, {}, "'1e999'"},
      {"0,5", false, {}, "scale factor 0 "},  // a decimal comma is two entries
  };
  for (const ScaleCase& c : cases) {
    SCOPED_TRACE(c.text ? c.text : "(null)");
    std::vector<double> scales = {7.0};
    std::string error;
    EXPECT_EQ(parseScaleList(c.text, &scales, &error), c.ok) << error;
    if (c.ok) {
      EXPECT_EQ(scales, c.scales);
    } else {
      EXPECT_EQ(scales, std::vector<double>{7.0}) << "a refused list changes nothing";
      EXPECT_NE(error.find(c.errorNames), std::string::npos) << error;
    }
  }
}

TEST(ScaleList, JoinReadsBackTheSameFactors) {
  const std::vector<std::vector<double>> lists = {{1.0}, {0.8, 0.9, 1.0, 1.1, 1.25}, {0.1, 1.0 / 3.0, 12.5}};
  for (const auto& scales : lists) {
    std::string joined = joinScaleList(scales), error;
    std::vector<double> back;
    ASSERT_TRUE(parseScaleList(joined.c_str(), &back, &error)) << joined << ": " << error;
    EXPECT_EQ(back, scales) << joined;
  }
  EXPECT_EQ(joinScaleList({1.0, 1.5, 0.75}), "1,1.5,0.75");
}

TEST(AngleList, ParsesAnglesAndRangesAndRefusesBadOnesNamingThem) {
  std::vector<double> full;
  for (int a = 0; a < 360; a += 5) full.push_back(a);
  const ScaleCase cases[] = {
      {nullptr, true, {0.0}, ""},
      {"", true, {0.0}, ""},
      {" , ", true, {0.0}, ""},
      {"-10,0,10", true, {-10, 0, 10}, ""},
      {" 12.5 ", true, {12.5}, ""},
      {"0:360:5", true, full, ""},
      {" -10 : 10 : 5 ", true, {-10, -5, 0, 5, 10}, ""},
      {"0,90:180:45,360,-270", true, {0, 90, 135, 180}, ""},  // 360 and -270 repeat 0 and 90
      {"abc", false, {}, "'abc'"},
      {"1,2x", false, {}, "'2x'"},
      {"0:10", false, {}, "'0:10'"},
      {"0:10:1:2", false, {}, "'0:10:1:2'"},
      {"0:a:1", false, {}, "'0:a:1'"},
      {"0:10:0", false, {}, "'0:10:0'"},
      {"10:0:1", false, {}, "'10:0:1'"},
      {"0:360:0.01", false, {}, "'0:360:0.01'"},
      {"nan", false, {}, "nan"},
      {"inf", false, {}, "inf"},
      {"4000", false, {}, "4000"},
  };
  for (const ScaleCase& c : cases) {
    SCOPED_TRACE(c.text ? c.text : "(null)");
    std::vector<double> angles = {7.0};
    std::string error;
    EXPECT_EQ(parseAngleList(c.text, &angles, &error), c.ok) << error;
    if (c.ok) {
      EXPECT_EQ(angles, c.scales);
    } else {
      EXPECT_EQ(angles, std::vector<double>{7.0}) << "a refused list changes nothing";
      EXPECT_NE(error.find(c.errorNames), std::string::npos) << error;
    }
  }
}

// "-0" is the angle 0: parsed as +0, so it reads back as "0" (found by fuzz_properties: the
// element kept an equal list and read back "0" where the text said "-0").
TEST(AngleList, MinusZeroIsTheAngleZero) {
  std::vector<double> angles;
  std::string error;
  ASSERT_TRUE(parseAngleList("-0,10", &angles, &error)) << error;
  ASSERT_EQ(angles.size(), 2u);
  EXPECT_FALSE(std::signbit(angles[0]));
  EXPECT_EQ(joinAngleList(angles), joinAngleList({0.0, 10.0}));
}

TEST(AngleList, JoinReadsBackTheSameAngles) {
  const std::vector<std::vector<double>> lists = {{0.0}, {-10, 0, 10}, {0.1, 1.0 / 3.0, 359.5}};
  for (const auto& angles : lists) {
    std::string joined = joinAngleList(angles), error;
    std::vector<double> back;
    ASSERT_TRUE(parseAngleList(joined.c_str(), &back, &error)) << joined << ": " << error;
    EXPECT_EQ(back, angles) << joined;
  }
}

TEST(MaskList, KeepsEmptyEntriesSoEntriesStayParallel) {
  EXPECT_TRUE(parseMaskList(nullptr).empty());
  EXPECT_TRUE(parseMaskList("").empty());
  EXPECT_TRUE(parseMaskList(" , ,").empty());
  EXPECT_EQ(parseMaskList("a.png"), (std::vector<std::string>{"a.png"}));
  EXPECT_EQ(parseMaskList(" a.png ,, c.png"), (std::vector<std::string>{"a.png", "", "c.png"}));
  EXPECT_EQ(parseMaskList(",b.png"), (std::vector<std::string>{"", "b.png"}));
}

struct RegionCase {
  const char* text;
  bool ok;
  SearchRegion region;
  const char* errorNames;
};

TEST(SearchRegionText, ParsesXYWidthHeightAndRefusesTheRest) {
  const RegionCase cases[] = {
      {nullptr, true, {}, ""},
      {"", true, {}, ""},
      {" ", true, {}, ""},
      {"0,0,1,1", true, {0, 0, 1, 1}, ""},
      {" 10, 20 ,300,200 ", true, {10, 20, 300, 200}, ""},
      {"1,2,3", false, {}, "x,y,width,height"},
      {"1,2,3,4,5", false, {}, "x,y,width,height"},
      {"1,2,0,4", false, {}, "no area"},
      {"1,2,4,0", false, {}, "no area"},
      {"-1,2,3,4", false, {}, "'-1'"},
      {"1,2,3,4.5", false, {}, "'4.5'"},
      {"a,2,3,4", false, {}, "'a'"},
      {"1,2,3,99999999999", false, {}, "'99999999999'"},
  };
  for (const RegionCase& c : cases) {
    SCOPED_TRACE(c.text ? c.text : "(null)");
    SearchRegion region{7, 7, 7, 7};
    std::string error;
    EXPECT_EQ(parseSearchRegion(c.text, &region, &error), c.ok) << error;
    if (c.ok) {
      EXPECT_TRUE(region == c.region);
    } else {
      EXPECT_TRUE(region == (SearchRegion{7, 7, 7, 7})) << "a refused value changes nothing";
      EXPECT_NE(error.find(c.errorNames), std::string::npos) << error;
    }
  }
  for (const SearchRegion& r : {SearchRegion{}, SearchRegion{3, 4, 5, 6}}) {
    SearchRegion back{1, 1, 1, 1};
    std::string error;
    ASSERT_TRUE(parseSearchRegion(joinSearchRegion(r).c_str(), &back, &error)) << error;
    EXPECT_TRUE(back == r);
  }
  EXPECT_EQ(joinSearchRegion({3, 4, 5, 6}), "3,4,5,6");
}

TEST(SearchRegionText, MovedInsideTheFrameWithItsSizeKept) {
  struct Clip {
    SearchRegion region, want;
  };
  const Clip cases[] = {
      {{}, {0, 0, 640, 360}},                              // unset: the whole frame
      {{10, 20, 100, 50}, {10, 20, 100, 50}},              // inside
      {{540, 310, 100, 50}, {540, 310, 100, 50}},          // touching the corner
      {{600, 300, 100, 100}, {540, 260, 100, 100}},        // over the right and bottom edges: moved
      {{0, 0, 5000, 5000}, {0, 0, 640, 360}},              // larger than the frame: the frame
      {{100, 20, 5000, 30}, {0, 20, 640, 30}},             // one side longer than the frame's
      {{700, 400, 10, 10}, {630, 350, 10, 10}},            // wholly outside: moved to the corner
      {{2147483000, 0, 2147483000, 5}, {0, 0, 640, 5}},    // ends past INT_MAX
      {{3, 4, 1, 1}, {3, 4, 1, 1}},
  };
  for (const Clip& c : cases) {
    const SearchRegion got = placeSearchRegion(c.region, 640, 360);
    EXPECT_TRUE(got == c.want) << joinSearchRegion(c.region) << " -> " << got.x << "," << got.y << "," << got.width
                               << "," << got.height;
  }
}

TEST(Settings, DefaultsAreTheDocumentedOnes) {
  Settings s;
  EXPECT_TRUE(s.templateFiles.empty());
  EXPECT_EQ(s.method, Method::CCoeffNormed);
  EXPECT_TRUE(s.display);
  EXPECT_DOUBLE_EQ(s.threshold, 0.8);
  EXPECT_EQ(s.maxMatches, 1);
  EXPECT_DOUBLE_EQ(s.nmsIou, 0.3);
  EXPECT_TRUE(s.postMessages);
  EXPECT_EQ(s.device, Backend::Auto);
  EXPECT_EQ(s.scales, std::vector<double>{1.0});
  EXPECT_EQ(s.angles, std::vector<double>{0.0});
  EXPECT_EQ(s.rotationSupport, nccmatch::RotationSupport::Rectangle);
  EXPECT_TRUE(s.maskFiles.empty());
  EXPECT_TRUE(s.searchRegion.whole());
  EXPECT_EQ(s.cpuThreads, 0);
}

TEST(Settings, MatchParamsCarryEveryMatchingSetting) {
  const Method methods[] = {Method::SqDiff, Method::SqDiffNormed, Method::CCorr,
                            Method::CCorrNormed, Method::CCoeff, Method::CCoeffNormed};
  for (Method method : methods) {
    Settings s;
    s.method = method;
    s.threshold = -12345.5;
    s.maxMatches = 7;
    s.nmsIou = 0.55;
    MatchParams p = s.matchParams();
    EXPECT_EQ(p.method, method);
    EXPECT_DOUBLE_EQ(p.threshold, -12345.5);
    EXPECT_EQ(p.maxMatches, 7);
    EXPECT_DOUBLE_EQ(p.nmsIou, 0.55);
  }
}

TEST(Settings, FramesInFlightResolveAutoAndStayWithinTheEngine) {
  struct Case {
    int setting;
    bool cuda, live;
    int engineMax, expected;
  };
  const Case cases[] = {
      {0, true, false, 3, 2},  // auto: overlap two frames on the GPU
      {0, true, true, 3, 1},   // ... but never behind a live source
      {0, false, false, 3, 1}, // ... nor on the CPU
      {1, true, false, 3, 1},  {3, false, true, 3, 3},  {3, true, false, 3, 3},
      {5, true, false, 3, 3},  // bounded by the engine
      {2, true, false, 0, 1},  {0, true, false, 1, 1},
  };
  for (const Case& c : cases)
    EXPECT_EQ(framesInFlightFor(c.setting, c.cuda, c.live, c.engineMax), c.expected)
        << c.setting << " " << c.cuda << " " << c.live << " " << c.engineMax;
  EXPECT_EQ(Settings().framesInFlight, 0);
  // Track mode holds none: each frame's windows come from the frame before.
  for (const Case& c : cases) {
    EXPECT_EQ(framesInFlightFor(Mode::Track, c.setting, c.cuda, c.live, c.engineMax), 1);
    EXPECT_EQ(framesInFlightFor(Mode::Detect, c.setting, c.cuda, c.live, c.engineMax), c.expected);
  }
}

TEST(Settings, TrackerOptionsCarryTheTrackingProperties) {
  Settings s;
  EXPECT_EQ(s.mode, Mode::Detect);
  const nccmatch::TrackerOptions defaults = s.trackerOptions();
  const nccmatch::TrackerOptions library;
  EXPECT_EQ(defaults.searchMargin, library.searchMargin);
  EXPECT_EQ(defaults.lostFrames, library.lostFrames);
  EXPECT_EQ(defaults.acquireInterval, library.acquireInterval);
  EXPECT_EQ(defaults.templateUpdate, library.templateUpdate);
  s.searchMargin = 5;
  s.lostFrames = 0;
  s.acquireInterval = 3;
  s.templateUpdate = 0.75;
  const nccmatch::TrackerOptions o = s.trackerOptions();
  EXPECT_EQ(o.searchMargin, 5);
  EXPECT_EQ(o.lostFrames, 0);
  EXPECT_EQ(o.acquireInterval, 3);
  EXPECT_EQ(o.templateUpdate, 0.75);
  EXPECT_TRUE(nccmatch::validateTrackerOptions(o).ok());
  // The properties' ranges are the library's.
  s.searchMargin = kMaxSearchMargin;
  s.lostFrames = s.acquireInterval = kMaxTrackFrames;
  s.templateUpdate = 1.0;
  EXPECT_TRUE(nccmatch::validateTrackerOptions(s.trackerOptions()).ok());
}

}  // namespace
}  // namespace nccmatch::plugin
