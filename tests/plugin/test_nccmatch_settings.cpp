// Settings: the `templates` list syntax and the mapping to the engine's MatchParams.
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
}

}  // namespace
}  // namespace nccmatch::plugin
