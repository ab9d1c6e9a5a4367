// nccmatch-library-stream: the matching library in an application of its own, no GStreamer.
//
// A camera-style loop: frames come from a producer (here: a generated 1280x720 scene with two
// textured objects moving on known paths and sensor noise), go to the engine with submit(), and
// results come back with collect() two frames later, in order, while the engine works on the next
// frames (on a GPU, frame n+1 uploads while frame n is matched). Frame buffers are recycled only
// after their result is collected, as the API asks. Each line printed: frame, every match
// (template, position, score) and its error against the true position; the program fails (exit 1)
// unless every object is found within one pixel in at least 95% of the frames.
//
// Usage: nccmatch-library-stream [--frames=N] [--device=auto|cpu|cuda] [--in-flight=1..3] [--quiet]
#include <nccmatch/engine.hpp>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <random>
#include <string>
#include <vector>

namespace {

constexpr int kWidth = 1280, kHeight = 720, kSide = 40;

struct Path {
  // x(t) = cx + ax * sin(wx t), y(t) = cy + ay * cos(wy t): stays inside the frame.
  double cx, cy, ax, ay, wx, wy;
  int x(int t) const { return int(std::lround(cx + ax * std::sin(wx * t))); }
  int y(int t) const { return int(std::lround(cy + ay * std::cos(wy * t))); }
};

const Path kPaths[2] = {{300, 250, 200, 150, 0.05, 0.07}, {900, 420, 250, 200, 0.04, 0.03}};

// A textured object: a disc of stripes on a darker square, the same every frame.
std::vector<uint8_t> makeObject(int kind) {
  std::vector<uint8_t> px(std::size_t(kSide) * kSide);
  for (int y = 0; y < kSide; ++y)
    for (int x = 0; x < kSide; ++x) {
      const double dx = x - kSide / 2.0 + 0.5, dy = y - kSide / 2.0 + 0.5;
      const bool inside = dx * dx + dy * dy < (kSide / 2.0) * (kSide / 2.0);
      const int stripes = kind == 0 ? ((x / 4) % 2) : (((x + y) / 5) % 2);
      px[std::size_t(y) * kSide + x] = uint8_t(inside ? (stripes ? 230 : 60) : 20 + 10 * kind);
    }
  return px;
}

// Frame t: a smooth background, the objects at their places, noise.
void renderFrame(int t, const std::vector<uint8_t> objects[2], std::mt19937& noise, uint8_t* frame) {
  std::normal_distribution<double> n(0.0, 3.0);
  for (int y = 0; y < kHeight; ++y)
    for (int x = 0; x < kWidth; ++x)
      frame[std::size_t(y) * kWidth + x] = uint8_t(110 + 40 * std::sin(x * 0.01) * std::cos(y * 0.013));
  for (int k = 0; k < 2; ++k) {
    const int ox = kPaths[k].x(t), oy = kPaths[k].y(t);
    for (int y = 0; y < kSide; ++y)
      std::memcpy(frame + std::size_t(oy + y) * kWidth + ox, objects[k].data() + std::size_t(y) * kSide, kSide);
  }
  for (std::size_t i = 0; i < std::size_t(kWidth) * kHeight; ++i)
    frame[i] = uint8_t(std::clamp(int(frame[i] + n(noise)), 0, 255));
}

}  // namespace

int main(int argc, char** argv) {
  int frames = 120, inFlight = 2;
  bool quiet = false;
  nccmatch::Backend backend = nccmatch::Backend::Auto;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a.rfind("--frames=", 0) == 0) frames = std::atoi(a.c_str() + 9);
    else if (a.rfind("--in-flight=", 0) == 0) inFlight = std::atoi(a.c_str() + 12);
    else if (a == "--device=cpu") backend = nccmatch::Backend::Cpu;
    else if (a == "--device=cuda") backend = nccmatch::Backend::Cuda;
    else if (a == "--device=auto") backend = nccmatch::Backend::Auto;
    else if (a == "--quiet") quiet = true;
    else {
      std::fprintf(stderr, "unknown argument '%s'\nusage: %s [--frames=N] [--device=auto|cpu|cuda] "
                           "[--in-flight=1..3] [--quiet]\n", a.c_str(), argv[0]);
      return 2;
    }
  }
  if (frames < 1 || inFlight < 1 || inFlight > nccmatch::Engine::kMaxFramesInFlight) {
    std::fprintf(stderr, "--frames must be >= 1 and --in-flight 1..%d\n", nccmatch::Engine::kMaxFramesInFlight);
    return 2;
  }

  nccmatch::EngineOptions options;
  options.backend = backend;
  std::unique_ptr<nccmatch::Engine> engine;
  nccmatch::Status status = nccmatch::Engine::create(options, &engine);
  if (!status.ok()) {
    std::fprintf(stderr, "engine: %s\n", status.message().c_str());
    return 1;
  }
  const std::vector<uint8_t> objects[2] = {makeObject(0), makeObject(1)};
  status = engine->setTemplates({{"stripes", kSide, kSide, objects[0], {}}, {"diagonal", kSide, kSide, objects[1], {}}});
  if (!status.ok()) {
    std::fprintf(stderr, "templates: %s\n", status.message().c_str());
    return 1;
  }
  std::printf("backend %s, %d frame(s) in flight\n", nccmatch::backendName(engine->backend()), inFlight);

  nccmatch::MatchParams params;  // ccoeff-normed, threshold 0.8, best match per template
  // One buffer per frame in flight: a buffer is written again only after its result came back.
  std::vector<std::vector<uint8_t>> buffers(inFlight, std::vector<uint8_t>(std::size_t(kWidth) * kHeight));
  std::deque<int> submitted;  // frame numbers in flight, oldest first
  std::mt19937 noise(7);
  int found[2] = {0, 0};
  auto report = [&](int t, const nccmatch::FrameResult& r) {
    std::string line = "frame " + std::to_string(t) + ":";
    for (const nccmatch::Match& m : r.matches) {
      const int k = int(m.templateIndex);
      const int ex = m.x - kPaths[k].x(t), ey = m.y - kPaths[k].y(t);
      if (std::abs(ex) <= 1 && std::abs(ey) <= 1) ++found[k];
      char text[128];
      std::snprintf(text, sizeof text, "  template %d at (%d,%d) score %.3f error (%d,%d)", k, m.x, m.y, m.score, ex, ey);
      line += text;
    }
    if (!quiet) std::printf("%s\n", line.c_str());
  };
  nccmatch::FrameResult result;
  for (int t = 0; t < frames; ++t) {
    if (engine->framesInFlight() == inFlight) {  // the oldest result frees its buffer
      if (!(status = engine->collect(&result)).ok()) break;
      report(submitted.front(), result);
      submitted.pop_front();
    }
    uint8_t* frame = buffers[t % inFlight].data();
    renderFrame(t, objects, noise, frame);
    if (!(status = engine->submit({frame, kWidth, kHeight, std::size_t(kWidth)}, params)).ok()) break;
    submitted.push_back(t);
  }
  while (status.ok() && engine->framesInFlight() > 0) {
    if (!(status = engine->collect(&result)).ok()) break;
    report(submitted.front(), result);
    submitted.pop_front();
  }
  if (!status.ok()) {
    std::fprintf(stderr, "matching failed: %s\n", status.message().c_str());
    return 1;
  }
  std::printf("found within 1 px: template 0 in %d/%d frames, template 1 in %d/%d\n", found[0], frames,
              found[1], frames);
  return found[0] >= frames * 95 / 100 && found[1] >= frames * 95 / 100 ? 0 : 1;
}
