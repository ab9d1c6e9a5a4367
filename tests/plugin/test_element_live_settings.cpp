// Properties changed while PLAYING: a setter thread changes templates, method,
// threshold, max-matches, scales, search-region and display while thousands of frames flow through
// the element (CPU backend, small GRAY8 frames). Every frame must come out as ONE snapshot of the
// settings gives it: its `nccmatch` message names the settings generation it was matched with, the
// setter records the values it had set at each generation, and the frame's matches (template
// names, boxes, scales, scores) and drawn boxes must equal what the library computes with exactly
// those values. A frame that mixed two snapshots (say generation g's method with g+1's threshold)
// would claim one generation and show another's output; the test counts the frames whose output
// differs between neighbouring generations to show that such a mix would be seen. Run it under
// scripts/tsan-test.sh to have ThreadSanitizer watch the setter and the streaming thread.
#include <gst/check/gstharness.h>
#include <gst/video/video.h>
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <map>
#include <memory>
#include <mutex>
#include <random>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "element_fixture.hpp"
#include "nccmatch/engine.hpp"
#include "nccmatch/scales.hpp"
#include "plugin_test_support.hpp"

namespace nccmatch::test {
namespace {

constexpr int kFrameWidth = 96, kFrameHeight = 64;
constexpr int kFrames = 3000;
constexpr int kScenes = 4;  // frames cycle through these

// The values the setter draws from (indices into these tables are the model's state).
const std::vector<std::vector<std::string>> kTemplateSets = {{"a"}, {"a", "b"}, {"b", "a"}};
const Method kMethods[] = {Method::CCoeffNormed, Method::CCorrNormed, Method::SqDiffNormed};
const double kThresholds[] = {0.1, 0.5, 0.9};  // loose and strict for either direction of score
const guint kMaxMatches[] = {0, 1, 3};
const std::vector<std::vector<double>> kScaleSets = {{1.0}, {0.5, 1.0}};
const char* const kScaleTexts[] = {"1", "0.5,1"};
struct Region {
  const char* text;
  int x, y, width, height;
};
const Region kRegions[] = {{"", 0, 0, kFrameWidth, kFrameHeight}, {"0,0,60,40", 0, 0, 60, 40},
                           {"30,20,66,44", 30, 20, 66, 44}};

// One snapshot of what the setter has set (its model of the element's settings).
struct Snapshot {
  int templateSet = 1, method = 0, threshold = 1, maxMatches = 2, scaleSet = 0, region = 0;
  bool display = true;

  std::string describe() const {
    std::ostringstream os;
    os << "templates=" << templateSet << " method=" << int(kMethods[method]) << " threshold="
       << kThresholds[threshold] << " max-matches=" << kMaxMatches[maxMatches] << " scales=" << kScaleTexts[scaleSet]
       << " region='" << kRegions[region].text << "' display=" << display;
    return os.str();
  }
};

// A match as the message reports it.
struct Seen {
  guint templateIndex;
  std::string name;
  guint x, y, width, height;
  double score, scale;
};

// One frame that came out: which scene went in, the generation its message names, its matches and
// whether its pixels changed (boxes drawn).
struct Output {
  int scene = 0;
  guint64 generation = 0;
  std::vector<Seen> matches;
  bool pixelsChanged = false;
};

class LiveSettings : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { initGstreamer(); }

  void SetUp() override {
    templates_ = {makeTemplate(12, 12, Fill::Random, "a"), makeTemplate(16, 10, Fill::Random, "b")};
    for (const TemplateImage& t : templates_) writePgm(dir_.path(t.name + ".pgm"), t);
    std::uniform_int_distribution<int> x(0, kFrameWidth - 16), y(0, kFrameHeight - 12);
    for (int i = 0; i < kScenes; ++i) {
      Image img = makeImage(kFrameWidth, kFrameHeight, Fill::Random);
      for (const TemplateImage& t : templates_) paste(&img, t, x(rng()), y(rng()));
      scenes_.push_back(img);
    }
  }

  std::string templatesText(int set) const {
    std::string text;
    for (const std::string& name : kTemplateSets[set]) text += (text.empty() ? "" : ",") + dir_.path(name + ".pgm");
    return text;
  }

  // Sets one property of the snapshot on the element (`which`: 0 templates ... 6 display).
  void apply(GstElement* e, const Snapshot& s, int which) {
    switch (which) {
      case 0: g_object_set(e, "templates", templatesText(s.templateSet).c_str(), nullptr); break;
      case 1: g_object_set(e, "method", int(kMethods[s.method]), nullptr); break;
      case 2: g_object_set(e, "threshold", kThresholds[s.threshold], nullptr); break;
      case 3: g_object_set(e, "max-matches", kMaxMatches[s.maxMatches], nullptr); break;
      case 4: g_object_set(e, "scales", kScaleTexts[s.scaleSet], nullptr); break;
      case 5: g_object_set(e, "search-region", kRegions[s.region].text, nullptr); break;
      case 6: g_object_set(e, "display", gboolean(s.display), nullptr); break;
    }
  }

  // What the library finds in scene `scene` with the snapshot's values: the element's own steps
  // (each template at each scale, merged; the region's view; frame coordinates), cached per
  // (snapshot, scene).
  const std::vector<Seen>& expected(const Snapshot& s, int scene) {
    const std::string key = s.describe() + " scene=" + std::to_string(scene);
    auto cached = expectedCache_.find(key);
    if (cached != expectedCache_.end()) return cached->second;
    std::vector<TemplateImage> bank;
    for (const std::string& name : kTemplateSets[s.templateSet])
      bank.push_back(templates_[name == "a" ? 0 : 1]);
    ScaledBank scaled;
    EXPECT_TRUE(scaleTemplates(bank, kScaleSets[s.scaleSet], &scaled).ok());
    std::unique_ptr<Engine> engine;
    EngineOptions options;
    options.backend = Backend::Cpu;
    options.threads = 1;
    EXPECT_TRUE(Engine::create(options, &engine).ok());
    EXPECT_TRUE(engine->setTemplates(scaled.templates).ok());
    MatchParams params;
    params.method = kMethods[s.method];
    params.threshold = kThresholds[s.threshold];
    params.maxMatches = int(kMaxMatches[s.maxMatches]);
    const Region& r = kRegions[s.region];
    const Image& img = scenes_[scene];
    FrameView view{img.bytes.data() + std::size_t(r.y) * img.stride + std::size_t(r.x), r.width, r.height, img.stride,
                   MemoryKind::Host};
    FrameResult raw;
    EXPECT_TRUE(engine->match(view, params, &raw).ok());
    FrameResult merged = mergeScaledResult(scaled, raw, params);
    std::vector<Seen> out;
    for (const Match& m : merged.matches)
      out.push_back({m.templateIndex, bank[m.templateIndex].name, guint(m.x + r.x), guint(m.y + r.y), guint(m.width),
                     guint(m.height), m.score, m.scale});
    return expectedCache_.emplace(key, std::move(out)).first->second;
  }

  static bool same(const std::vector<Seen>& a, const std::vector<Seen>& b) {
    if (a.size() != b.size()) return false;
    for (std::size_t i = 0; i < a.size(); ++i)
      if (a[i].templateIndex != b[i].templateIndex || a[i].name != b[i].name || a[i].x != b[i].x ||
          a[i].y != b[i].y || a[i].width != b[i].width || a[i].height != b[i].height ||
          std::abs(a[i].score - b[i].score) > 1e-9 || a[i].scale != b[i].scale)
        return false;
    return true;
  }

  static std::string show(const std::vector<Seen>& matches) {
    std::ostringstream os;
    for (const Seen& m : matches)
      os << " [" << m.name << " " << m.x << "," << m.y << " " << m.width << "x" << m.height << " s=" << m.score
         << " scale=" << m.scale << "]";
    return matches.empty() ? " (none)" : os.str();
  }

  TempDir dir_;
  std::vector<TemplateImage> templates_;
  std::vector<Image> scenes_;
  std::map<std::string, std::vector<Seen>> expectedCache_;
};

// The frame's nccmatch message (popped from the bus): its generation and matches.
bool readMessage(GstBus* bus, Output* out) {
  std::vector<GstMessage*> messages = popMessages(bus, GST_MESSAGE_ELEMENT);
  std::vector<const GstStructure*> ncc = structuresNamed(messages, "nccmatch");
  const bool one = ncc.size() == 1;
  if (one) {
    EXPECT_TRUE(gst_structure_get_uint64(ncc[0], "settings-generation", &out->generation));
    for (const GstStructure* m : matchList(ncc[0]))
      out->matches.push_back({uintField(m, "template"), gst_structure_get_string(m, "name"), uintField(m, "x"),
                              uintField(m, "y"), uintField(m, "width"), uintField(m, "height"),
                              doubleField(m, "score"), doubleField(m, "scale")});
  }
  unrefMessages(&messages);
  return one;
}

TEST_F(LiveSettings, EveryFrameShowsOneSnapshotOfSettingsChangedByAnotherThread) {
  const uint64_t seed = testSeed();
  GstBus* bus = gst_bus_new();
  GstElement* element = gst_element_factory_make("nccmatch", nullptr);
  ASSERT_NE(element, nullptr);
  gst_object_ref_sink(element);
  gst_element_set_bus(element, bus);
  g_object_set(element, "device", int(Backend::Cpu), "cpu-threads", 1u, nullptr);
  Snapshot model;
  for (int which = 0; which < 7; ++which) apply(element, model, which);

  std::mutex snapshotsLock;
  std::map<guint64, Snapshot> snapshots;  // generation -> what the setter had set by then
  guint64 generation = 0;
  g_object_get(element, "settings-generation", &generation, nullptr);
  snapshots[generation] = model;

  GstHarness* harness = gst_harness_new_with_element(element, "sink", "src");
  const FrameLayout layout = makeLayout(GST_VIDEO_FORMAT_GRAY8, kFrameWidth, kFrameHeight, 0);
  gst_harness_set_src_caps(harness, capsFor(layout));

  // The setter: one property at a time, a random pause between sets; templates change rarely
  // (each change loads files through a decoding pipeline).
  std::atomic<bool> done{false};
  std::atomic<int> sets{0};
  std::thread setter([&] {
    std::mt19937_64 r(seed ^ 0x5e77e5);
    Snapshot s = model;
    while (!done.load()) {
      const int draw = int(r() % 61);
      const int which = draw == 60 ? 0 : 1 + draw % 6;
      switch (which) {
        case 0: s.templateSet = int(r() % kTemplateSets.size()); break;
        case 1: s.method = int(r() % 3); break;
        case 2: s.threshold = int(r() % 3); break;
        case 3: s.maxMatches = int(r() % 3); break;
        case 4: s.scaleSet = int(r() % kScaleSets.size()); break;
        case 5: s.region = int(r() % 3); break;
        case 6: s.display = !s.display; break;
      }
      apply(element, s, which);
      guint64 g = 0;
      g_object_get(element, "settings-generation", &g, nullptr);
      {
        std::lock_guard<std::mutex> lock(snapshotsLock);
        snapshots[g] = s;
      }
      sets.fetch_add(1);
      std::this_thread::sleep_for(std::chrono::microseconds(r() % 100));
    }
  });

  const auto begin = std::chrono::steady_clock::now();
  std::vector<Output> outputs;
  for (int i = 0; i < kFrames; ++i) {
    Output out;
    out.scene = i % kScenes;
    GstBuffer* in = makeFrame(layout, scenes_[out.scene]);
    ASSERT_EQ(gst_harness_push(harness, in), GST_FLOW_OK) << "frame " << i;
    GstBuffer* b = gst_harness_pull(harness);
    ASSERT_NE(b, nullptr) << "frame " << i;
    out.pixelsChanged = readLuma(b, layout).bytes != scenes_[out.scene].bytes;
    gst_buffer_unref(b);
    ASSERT_TRUE(readMessage(bus, &out)) << "one nccmatch message for frame " << i;
    outputs.push_back(std::move(out));
  }
  done = true;
  setter.join();
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - begin).count();
  gst_harness_teardown(harness);
  gst_object_unref(element);
  std::vector<GstMessage*> rest = popMessages(bus, GST_MESSAGE_ANY);
  for (GstMessage* m : rest)
    EXPECT_NE(GST_MESSAGE_TYPE(m), GST_MESSAGE_WARNING) << messageText(m);  // every value set was valid
  unrefMessages(&rest);
  gst_object_unref(bus);

  // Every frame against the snapshot its message names.
  int generationsSeen = 0, sensitive = 0, failures = 0;
  guint64 lastGeneration = 0;
  for (std::size_t i = 0; i < outputs.size() && failures < 10; ++i) {
    const Output& out = outputs[i];
    ASSERT_EQ(snapshots.count(out.generation), 1u) << "frame " << i << ": no set made generation " << out.generation;
    ASSERT_GE(out.generation, lastGeneration) << "frame " << i << ": settings went back in time";
    if (i == 0 || out.generation != lastGeneration) ++generationsSeen;
    lastGeneration = out.generation;
    const Snapshot& s = snapshots[out.generation];
    const std::vector<Seen>& want = expected(s, out.scene);
    const bool matchesAgree = same(out.matches, want);
    const bool drawingAgrees = out.pixelsChanged == (s.display && !want.empty());
    if (!matchesAgree || !drawingAgrees) {
      ++failures;
      ADD_FAILURE() << "frame " << i << " (scene " << out.scene << ", generation " << out.generation << ": "
                    << s.describe() << ")\n  got     " << show(out.matches) << " pixels changed "
                    << out.pixelsChanged << "\n  expected" << show(want);
    }
    // Would a mix of this generation with a neighbouring one have shown? (Its output differs.)
    auto next = snapshots.find(out.generation + 1), prev = snapshots.find(out.generation - 1);
    if ((next != snapshots.end() && !same(expected(next->second, out.scene), want)) ||
        (prev != snapshots.end() && !same(expected(prev->second, out.scene), want)))
      ++sensitive;
  }
  std::printf("[ live     ] %d frames, %d property sets, %d generations seen by frames, %d frames whose output "
              "differs from a neighbouring generation's, %zu distinct (settings, scene) results, %.2f s\n",
              kFrames, sets.load(), generationsSeen, sensitive, expectedCache_.size(), seconds);
  EXPECT_GE(generationsSeen, kFrames / 20) << "the settings must change while frames flow";
  EXPECT_GE(sensitive, kFrames / 10) << "too few frames could tell neighbouring snapshots apart";
}

}  // namespace
}  // namespace nccmatch::test
