// Fuzz target (2): the engine API on the CPU backend. Each input describes one call sequence:
// a frame (size 0, 1, small, up to the 16384-pixel limit and past it, negative; stride equal to,
// above or below the width; null data; device memory), a bank of templates (empty, 0x0, pixel
// counts that do not fit the size, larger than the frame, cut from the frame; masks of their size
// (nothing, everything or some pixels compared) or of a wrong size), optionally scale
// factors (scales.hpp, NaN and out-of-range ones included), optionally a search region (a
// FrameView of a part of the frame), a method (0..5 and invalid ones), threshold (NaN, +-inf),
// max-matches and nms-iou (negative, NaN, > 1).
//
// What must hold, else the target aborts (a finding):
// - invalid input gives a Status error, valid input succeeds (checked against the API's stated
//   rules, written out again here rather than calling the library's own validation);
// - every result is well formed: one best per template, present exactly when the template fits,
//   boxes inside the frame, finite scores, matches that pass the threshold, at most max-matches
//   per template, ordered by template;
// - the Direct path's results and score maps equal the Reference path's exactly (what
//   tests/kernels/cpu/test_cpu_numerator_direct.cpp proves on fixed cases); the Fft path's score
//   maps are finite and within the tolerances of test_cpu_numerator_fft.cpp, and its results well
//   formed;
// - a search region matched as a view into the frame gives exactly what the same pixels copied
//   into a tightly packed frame give (the stride never changes a result);
// - matchRegions over that region with each template of the bank (Reference and Direct paths)
//   gives exactly the view's matches and best of that template, in frame coordinates, the same
//   templates prepared as a region template set give exactly the same, a released set and a
//   region reaching outside the frame are refused;
// - scaled banks merge to matches naming an original and one of its scales.
// Sizes are bounded so that one input runs in milliseconds: a frame has at most 2^14 pixels and
// templates at most 24x24 before scaling, a scaled bank at most 2^16 pixels (scaleTemplates'
// refusals are checked past that too). The checks against the Reference path (exact results and
// score maps, views, regions) run on inputs whose work is under a budget, summed over the bank:
// map positions, positions times template pixels, and positions times the matches kept (each
// candidate is compared with those in non-maximum suppression); most inputs are under it. Above
// it (big frames such as 16384x1, or a flat map with max-matches unbounded) the Direct and Fft
// paths must accept what the API's rules accept and give well-formed results, and the Direct
// path the same results through a view and its packed copy, with max-matches at most
// kMaxMatchesOverBudget (a flat map would otherwise give thousands of matches a call).
#include <fuzzer/FuzzedDataProvider.h>

#include <algorithm>
#include <climits>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <memory>
#include <vector>

#include "fuzz_check.hpp"
#include "cpu/cpu_cost_model.hpp"
#include "nccmatch/engine.hpp"
#include "nccmatch/scales.hpp"

namespace {

using namespace nccmatch;

constexpr int kMaxSide = 16384;         // the engine's frame and template limit
constexpr long kMaxFramePixels = 1 << 14;  // a frame at the side limit is 16384x1 or 1x16384
constexpr int kMaxTemplateSide = 24;
constexpr long kMaxScaledBankPixels = 1 << 16;
// The Reference oracle's budget, summed over the bank: map positions, positions x template
// pixels (the numerators), positions x matches kept (non-maximum suppression).
constexpr long kOraclePositions = 1 << 12;
constexpr long kOracleWork = 1 << 18;
constexpr long kOracleSuppressions = 1 << 16;
constexpr int kMaxMatchesOverBudget = 16;

struct Engines {
  std::unique_ptr<Engine> reference, direct, fft;
};

std::unique_ptr<Engine> makeEngine(CpuPath path) {
  EngineOptions options;
  options.backend = Backend::Cpu;
  options.threads = 1;
  options.cpuPath = path;
  std::unique_ptr<Engine> engine;
  Status s = Engine::create(options, &engine);
  FUZZ_CHECK(s.ok(), "creating the %s engine: %s", cpuPathName(path), s.message().c_str());
  return engine;
}

Engines& engines() {
  static Engines e{makeEngine(CpuPath::Reference), makeEngine(CpuPath::Direct),
                   cpuFftAvailable() ? makeEngine(CpuPath::Fft) : nullptr};
  return e;
}

// A side length: mostly small, sometimes one of the edge cases.
int pickSide(FuzzedDataProvider& in, int smallMax) {
  static const int kSpecial[] = {0, 1, -1, INT_MIN, kMaxSide, kMaxSide + 1, INT_MAX, 2, 3};
  if (in.ConsumeIntegralInRange<int>(0, 7) != 0) return in.ConsumeIntegralInRange<int>(1, smallMax);
  return kSpecial[in.ConsumeIntegralInRange<std::size_t>(0, sizeof kSpecial / sizeof kSpecial[0] - 1)];
}

double pickDouble(FuzzedDataProvider& in, const std::vector<double>& table) {
  std::size_t k = in.ConsumeIntegralInRange<std::size_t>(0, table.size());
  if (k < table.size()) return table[k];
  double raw = 0;
  std::vector<uint8_t> bytes = in.ConsumeBytes<uint8_t>(sizeof raw);
  bytes.resize(sizeof raw);
  std::memcpy(&raw, bytes.data(), sizeof raw);
  return raw;
}

bool validSide(int v) { return v >= 1 && v <= kMaxSide; }

// Fills n pixels: constant (zero variance: the normalised methods' division by zero), the input's
// bytes, or a cheap hash of the position (many distinct values).
void fill(FuzzedDataProvider& in, uint8_t* pixels, std::size_t n) {
  const int kind = in.ConsumeIntegralInRange<int>(0, 2);
  const uint8_t value = in.ConsumeIntegral<uint8_t>();
  std::vector<uint8_t> bytes = in.ConsumeBytes<uint8_t>(in.ConsumeIntegralInRange<std::size_t>(1, 64));
  for (std::size_t i = 0; i < n; ++i) {
    if (kind == 0 || bytes.empty())
      pixels[i] = value;
    else if (kind == 1)
      pixels[i] = bytes[i % bytes.size()];
    else
      pixels[i] = uint8_t((i * 2654435761u) >> 13) ^ value;
  }
}

bool sameMatch(const Match& a, const Match& b) {
  return a.templateIndex == b.templateIndex && a.x == b.x && a.y == b.y && a.width == b.width &&
         a.height == b.height && a.score == b.score && a.subX == b.subX && a.subY == b.subY && a.scale == b.scale;
}

void expectSameResult(const FrameResult& got, const FrameResult& want, const char* what) {
  FUZZ_CHECK(got.matches.size() == want.matches.size(), "%s: %zu matches, want %zu", what, got.matches.size(),
             want.matches.size());
  for (std::size_t k = 0; k < want.matches.size(); ++k)
    FUZZ_CHECK(sameMatch(got.matches[k], want.matches[k]), "%s: match %zu differs (%d,%d %.17g vs %d,%d %.17g)",
               what, k, got.matches[k].x, got.matches[k].y, got.matches[k].score, want.matches[k].x,
               want.matches[k].y, want.matches[k].score);
  FUZZ_CHECK(got.best.size() == want.best.size(), "%s: %zu bests, want %zu", what, got.best.size(), want.best.size());
  for (std::size_t i = 0; i < want.best.size(); ++i) {
    FUZZ_CHECK(got.best[i].has_value() == want.best[i].has_value(), "%s: best %zu presence differs", what, i);
    if (want.best[i]) FUZZ_CHECK(sameMatch(*got.best[i], *want.best[i]), "%s: best %zu differs", what, i);
  }
}

// The same pixels copied into a tightly packed frame (`packed`, the view's size) give `engine` what
// the view gave (`got`): the stride never changes a result.
void expectPackedCopySame(Engine& engine, const FrameView& view, const std::vector<uint8_t>& packed,
                          const MatchParams& params, const FrameResult& got, const char* what) {
  FrameResult copy;
  const FrameView packedView{packed.data(), view.width, view.height, std::size_t(view.width), MemoryKind::Host};
  FUZZ_CHECK(engine.match(packedView, params, &copy).ok(), "matching the packed copy failed");
  expectSameResult(copy, got, what);
}

bool passes(double score, const MatchParams& p) {
  return lowerIsBetter(p.method) ? score <= p.threshold : score >= p.threshold;
}

// The shape every successful result has (bank: the templates the engine matched).
void expectWellFormed(const FrameResult& r, const std::vector<TemplateImage>& bank, int frameW, int frameH,
                      const MatchParams& p) {
  FUZZ_CHECK(r.best.size() == bank.size(), "%zu bests for %zu templates", r.best.size(), bank.size());
  for (std::size_t i = 0; i < bank.size(); ++i) {
    const bool fits = bank[i].width <= frameW && bank[i].height <= frameH;
    FUZZ_CHECK(r.best[i].has_value() == fits, "best %zu present=%d, template %dx%d, frame %dx%d", i,
               int(r.best[i].has_value()), bank[i].width, bank[i].height, frameW, frameH);
  }
  std::vector<int> perTemplate(bank.size(), 0);
  uint32_t previous = 0;
  auto checkBox = [&](const Match& m, const char* what) {
    FUZZ_CHECK(m.templateIndex < bank.size(), "%s names template %u of %zu", what, m.templateIndex, bank.size());
    const TemplateImage& t = bank[m.templateIndex];
    FUZZ_CHECK(m.width == t.width && m.height == t.height, "%s size %dx%d, template %dx%d", what, m.width, m.height,
               t.width, t.height);
    FUZZ_CHECK(m.x >= 0 && m.y >= 0 && m.x + m.width <= frameW && m.y + m.height <= frameH,
               "%s box %d,%d %dx%d outside the %dx%d frame", what, m.x, m.y, m.width, m.height, frameW, frameH);
    FUZZ_CHECK(std::isfinite(m.score), "%s score %g", what, m.score);
    FUZZ_CHECK(std::isfinite(m.subX) && std::isfinite(m.subY) && std::fabs(m.subX - m.x) <= 1.0 &&
                   std::fabs(m.subY - m.y) <= 1.0,
               "%s sub-pixel %g,%g from %d,%d", what, m.subX, m.subY, m.x, m.y);
  };
  for (std::size_t i = 0; i < bank.size(); ++i)
    if (r.best[i]) {
      checkBox(*r.best[i], "best");
      FUZZ_CHECK(r.best[i]->templateIndex == i, "best %zu names template %u", i, r.best[i]->templateIndex);
    }
  for (const Match& m : r.matches) {
    checkBox(m, "match");
    FUZZ_CHECK(m.templateIndex >= previous, "matches out of template order");
    previous = m.templateIndex;
    FUZZ_CHECK(passes(m.score, p), "match score %.17g does not pass threshold %g", m.score, p.threshold);
    ++perTemplate[m.templateIndex];
    FUZZ_CHECK(perTemplate[m.templateIndex] <= p.maxMatches, "more than %d matches", p.maxMatches);
  }
}

bool validParams(const MatchParams& p) {
  const int m = int(p.method);
  return m >= 0 && m <= 5 && !std::isnan(p.threshold) && p.maxMatches >= 0 && p.nmsIou >= 0.0 && p.nmsIou <= 1.0;
}

bool validBank(const std::vector<TemplateImage>& bank) {
  for (const TemplateImage& t : bank)
    if (!validSide(t.width) || !validSide(t.height) || t.pixels.size() != std::size_t(t.width) * std::size_t(t.height) ||
        (!t.mask.empty() && t.mask.size() != t.pixels.size()))
      return false;
  return true;
}

// The score maps of one template: Direct equal to Reference, Fft finite and within its bound.
void checkScoreMaps(const FrameView& frame, const std::vector<TemplateImage>& bank, Method method,
                    uint32_t index) {
  Engines& e = engines();
  std::vector<double> want, direct;
  Status rs = e.reference->scoreMap(frame, method, index, &want);
  Status ds = e.direct->scoreMap(frame, method, index, &direct);
  FUZZ_CHECK(rs.ok() == ds.ok(), "scoreMap: reference %s, direct %s", rs.message().c_str(), ds.message().c_str());
  const bool fits = index < bank.size() && bank[index].width <= frame.width && bank[index].height <= frame.height;
  FUZZ_CHECK(rs.ok() == (fits && int(method) >= 0 && int(method) <= 5), "scoreMap of template %u: %s", index,
             rs.ok() ? "accepted" : rs.message().c_str());
  if (!rs.ok()) return;
  const TemplateImage& t = bank[index];
  const std::size_t mapSize = std::size_t(frame.width - t.width + 1) * (frame.height - t.height + 1);
  FUZZ_CHECK(want.size() == mapSize, "map of %zu values, want %zu", want.size(), mapSize);
  FUZZ_CHECK(direct == want, "direct map differs from the reference (%s)", methodName(method));
  for (double v : want) FUZZ_CHECK(std::isfinite(v), "reference map value %g", v);
  if (!e.fft) return;
  std::vector<double> fft;
  Status fs = e.fft->scoreMap(frame, method, index, &fft);
  FUZZ_CHECK(fs.ok(), "fft scoreMap: %s", fs.message().c_str());
  FUZZ_CHECK(fft.size() == mapSize, "fft map of %zu values, want %zu", fft.size(), mapSize);
  const bool normalised =
      method == Method::SqDiffNormed || method == Method::CCorrNormed || method == Method::CCoeffNormed;
  const double tol = normalised ? 1e-4 : 1e-5 * double(t.width) * t.height * 255.0 * 255.0;
  for (std::size_t k = 0; k < mapSize; ++k)
    FUZZ_CHECK(std::isfinite(fft[k]) && std::fabs(fft[k] - want[k]) <= tol, "fft map[%zu] = %.17g, reference %.17g (%s)",
               k, fft[k], want[k], methodName(method));
}

// An input over the oracle's budget (a valid view with a bank that fits it somewhere): the
// Direct and Fft paths accept what the API's rules accept and give well-formed results, with at
// most kMaxMatchesOverBudget matches per template; the Direct path's results through the view
// equal those through its packed copy.
void checkOverBudget(const FrameView& view, const std::vector<uint8_t>& packed, bool region,
                     const std::vector<TemplateImage>& bank, MatchParams params, bool frameAccepted) {
  Engines& e = engines();
  params.maxMatches = std::min(params.maxMatches, kMaxMatchesOverBudget);
  Status ds = e.direct->setTemplates(bank);
  FUZZ_CHECK(ds.ok() == validBank(bank), "setTemplates %s a %s bank: %s", ds.ok() ? "accepted" : "refused",
             validBank(bank) ? "valid" : "invalid", ds.message().c_str());
  if (!ds.ok()) return;
  FrameResult got;
  ds = e.direct->match(view, params, &got);
  FUZZ_CHECK(ds.ok() == (frameAccepted && validParams(params)), "match %s: %s", ds.ok() ? "accepted" : "refused",
             ds.message().c_str());
  if (!ds.ok()) return;
  expectWellFormed(got, bank, view.width, view.height, params);
  if (region) expectPackedCopySame(*e.direct, view, packed, params, got, "region view vs packed copy (direct)");
  if (e.fft) {
    FUZZ_CHECK(e.fft->setTemplates(bank).ok(), "fft setTemplates refused a valid bank");
    FrameResult fft;
    Status fs = e.fft->match(view, params, &fft);
    FUZZ_CHECK(fs.ok(), "fft match refused what the direct path accepted: %s", fs.message().c_str());
    expectWellFormed(fft, bank, view.width, view.height, params);
  }
}

}  // namespace

// matchRegions over `region` with every template of the bank, on the Reference and Direct paths:
// each result is the view's matches and best of that template (`want`, matched on the region as
// a frame of its own), moved to frame coordinates. The same region one pixel past the frame's
// right edge is refused.
void checkRegions(const FrameView& frame, std::size_t templates, RegionQuery region, const MatchParams& params,
                  const FrameResult& want) {
  std::vector<RegionQuery> regions;
  for (uint32_t i = 0; i < templates; ++i) {
    region.templateIndex = i;
    regions.push_back(region);
  }
  for (Engine* engine : {engines().reference.get(), engines().direct.get()}) {
    std::vector<RegionResult> got;
    Status s = engine->matchRegions(frame, regions, params, &got);
    FUZZ_CHECK(s.ok() && got.size() == templates, "matchRegions refused a valid region: %s", s.message().c_str());
    for (uint32_t i = 0; i < templates; ++i) {
      FrameResult one, expected;
      one.matches = got[i].matches;
      one.best = {got[i].best};
      expected.best = {want.best[i]};
      for (const Match& m : want.matches)
        if (m.templateIndex == i) expected.matches.push_back(m);
      auto shift = [&](Match& m) {
        m.x += region.x, m.y += region.y, m.subX += region.x, m.subY += region.y;
      };
      for (Match& m : expected.matches) shift(m);
      if (expected.best[0]) shift(*expected.best[0]);
      expectSameResult(one, expected, "matchRegions vs the view's matches");
    }
  }
  // The bank's templates prepared as a region template set: regions naming them give exactly what
  // regions naming the bank give; once the set is released, a region naming it is refused.
  if (templates > 0) {
    for (Engine* engine : {engines().reference.get(), engines().direct.get()}) {
      std::vector<RegionResult> want, got;
      Status s = engine->matchRegions(frame, regions, params, &want);
      FUZZ_CHECK(s.ok(), "matchRegions refused a valid region: %s", s.message().c_str());
      RegionTemplateSet set;
      s = engine->prepareRegionTemplates(engine->templates(), &set);
      FUZZ_CHECK(s.ok() && set.size == templates, "prepareRegionTemplates refused the bank: %s", s.message().c_str());
      std::vector<RegionQuery> prepared;
      for (uint32_t i = 0; i < templates; ++i)
        prepared.emplace_back(region.x, region.y, region.width, region.height, set, i, i);
      s = engine->matchRegions(frame, prepared, params, &got);
      FUZZ_CHECK(s.ok() && got.size() == templates, "matchRegions refused a prepared set: %s", s.message().c_str());
      for (uint32_t i = 0; i < templates; ++i) {
        FrameResult a, b;
        a.matches = got[i].matches;
        a.best = {got[i].best};
        b.matches = want[i].matches;
        b.best = {want[i].best};
        expectSameResult(a, b, "matchRegions on a prepared set vs on the bank");
      }
      const RegionTemplateSet copy = set;
      s = engine->releaseRegionTemplates(&set);
      FUZZ_CHECK(s.ok() && set.empty(), "releaseRegionTemplates failed: %s", s.message().c_str());
      FUZZ_CHECK(!engine->matchRegions(frame, {RegionQuery(region.x, region.y, region.width, region.height, copy, 0)},
                                       params, &got)
                      .ok(),
                 "matchRegions accepted a released set");
    }
    RegionQuery outside = regions[0];
    outside.x = frame.width - outside.width + 1;
    std::vector<RegionResult> got;
    FUZZ_CHECK(!engines().direct->matchRegions(frame, {outside}, params, &got).ok(),
               "matchRegions accepted a region past the frame's edge");
  }
}

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  setenv("NCCMATCH_FFTW_WISDOM", "none", 1);  // no wisdom file written by the fuzzer
  engines();
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, std::size_t size) {
  FuzzedDataProvider in(data, size);
  Engines& e = engines();

  // The frame. Buffers are always as large as the view claims when the view is valid, so a
  // wrong answer, not the fuzzer's own buffer, is what a sanitizer report means.
  int frameW = pickSide(in, 48), frameH = pickSide(in, 48);
  if (validSide(frameW) && validSide(frameH) && long(frameW) * frameH > kMaxFramePixels)
    frameH = std::max(1, int(kMaxFramePixels / frameW));
  const int strideKind = in.ConsumeIntegralInRange<int>(0, 9);
  std::size_t stride = frameW > 0 ? std::size_t(frameW) : 0;
  if (strideKind >= 7) stride += in.ConsumeIntegralInRange<int>(1, 13);
  if (strideKind == 1 && stride > 0) stride -= in.ConsumeIntegralInRange<std::size_t>(1, stride);  // below the width
  if (strideKind == 2 && frameH == 1) stride = std::size_t(1) << 40;  // one row: never stepped over
  std::vector<uint8_t> pixels;
  const bool frameValid = validSide(frameW) && validSide(frameH) && stride >= std::size_t(frameW);
  if (validSide(frameW) && validSide(frameH)) {
    // Rows stride bytes apart (stride is at most width + 13 unless there is one row); 16 spare
    // bytes so that a stride below the width stays inside the buffer too.
    pixels.resize((frameH > 1 ? stride * (frameH - 1) : 0) + frameW + 16);
    fill(in, pixels.data(), pixels.size());
  } else {
    pixels.resize(64);  // sizes the engine must refuse before reading
  }
  FrameView frame{pixels.data(), frameW, frameH, stride, MemoryKind::Host};
  const int frameKind = in.ConsumeIntegralInRange<int>(0, 19);
  if (frameKind == 0) frame.data = nullptr;
  if (frameKind == 1) frame.memory = MemoryKind::Device;  // the CPU backend reads host memory only
  const bool frameAccepted = frameValid && frame.data != nullptr && frame.memory == MemoryKind::Host;

  // The templates.
  std::vector<TemplateImage> originals(in.ConsumeIntegralInRange<int>(0, 3));
  // A mask, sometimes: of the template's size (constant 0: nothing compared; constant nonzero:
  // everything; or bytes of the input, 0 ignored), or of a wrong size the engine must refuse.
  auto maybeMask = [&in](TemplateImage& t) {
    const int maskKind = in.ConsumeIntegralInRange<int>(0, 5);
    if (maskKind < 3 || t.pixels.empty()) return;
    const std::size_t m = t.pixels.size() + (maskKind == 5 ? 1 : 0);
    t.mask.resize(m);
    fill(in, t.mask.data(), m);
  };
  for (std::size_t i = 0; i < originals.size(); ++i) {
    TemplateImage& t = originals[i];
    t.name = "t" + std::to_string(i);
    const int kind = in.ConsumeIntegralInRange<int>(0, 9);
    if (kind == 0 && frameAccepted) {  // a patch of the frame: an exact match exists
      t.width = in.ConsumeIntegralInRange<int>(1, std::min(frameW, kMaxTemplateSide));
      t.height = in.ConsumeIntegralInRange<int>(1, std::min(frameH, kMaxTemplateSide));
      const int x = in.ConsumeIntegralInRange<int>(0, frameW - t.width), y = in.ConsumeIntegralInRange<int>(0, frameH - t.height);
      for (int r = 0; r < t.height; ++r)
        t.pixels.insert(t.pixels.end(), frame.data + std::size_t(y + r) * stride + x,
                        frame.data + std::size_t(y + r) * stride + x + t.width);
      maybeMask(t);
      continue;
    }
    t.width = pickSide(in, kMaxTemplateSide);
    t.height = pickSide(in, kMaxTemplateSide);
    if (kind == 1 && validSide(t.width)) t.height = 1;  // long and thin: up to 16384x1
    std::size_t n = 0;
    if (validSide(t.width) && validSide(t.height) && long(t.width) * t.height <= kMaxSide) n = std::size_t(t.width) * t.height;
    if (kind == 2) n += in.ConsumeIntegralInRange<int>(1, 3);      // a pixel count that does not fit the size
    if (kind == 3 && n > 0) n -= 1;
    t.pixels.resize(n);
    if (n > 0) fill(in, t.pixels.data(), n);
    maybeMask(t);
  }

  // Scale factors, sometimes.
  std::vector<double> scales;
  const bool scaled = in.ConsumeIntegralInRange<int>(0, 3) == 0;
  if (scaled) {
    static const std::vector<double> kScales = {std::nan(""), INFINITY, -1.0, 0.0, 0.005, 0.01, 0.04, 0.5, 0.75,
                                                1.0, 1.25, 1.5, 2.0, 16.0, 16.5};
    scales.resize(in.ConsumeIntegralInRange<int>(0, 3));
    for (double& s : scales) s = pickDouble(in, kScales);
  }

  // The parameters.
  MatchParams params;
  params.method = Method(in.ConsumeIntegralInRange<int>(-1, 7));
  static const std::vector<double> kThresholds = {std::nan(""), INFINITY, -INFINITY, 0.0, 1.0, 0.5, 0.99, -1.0,
                                                  1e-9, -1e300, 1e300};
  params.threshold = pickDouble(in, kThresholds);
  static const int kMaxMatches[] = {0, 1, 2, 5, 50, -1, INT_MAX, INT_MIN};
  params.maxMatches = kMaxMatches[in.ConsumeIntegralInRange<int>(0, 7)];
  static const std::vector<double> kIous = {std::nan(""), -0.1, 0.0, 0.3, 1.0, 1.5, INFINITY, 1e-300};
  params.nmsIou = pickDouble(in, kIous);

  // A search region: the part of the frame matched, as a view with the frame's stride.
  FrameView view = frame;
  std::vector<uint8_t> packed;
  const bool region = frameAccepted && in.ConsumeBool();
  int rx = 0, ry = 0, rw = 0, rh = 0;
  if (region) {
    rw = in.ConsumeIntegralInRange<int>(1, frameW), rh = in.ConsumeIntegralInRange<int>(1, frameH);
    rx = in.ConsumeIntegralInRange<int>(0, frameW - rw), ry = in.ConsumeIntegralInRange<int>(0, frameH - rh);
    view = FrameView{frame.data + std::size_t(ry) * stride + rx, rw, rh, stride, MemoryKind::Host};
    for (int r = 0; r < rh; ++r)
      packed.insert(packed.end(), view.data + std::size_t(r) * stride, view.data + std::size_t(r) * stride + rw);
  }

  // The bank the engine sees: the originals, or their scaled copies.
  std::vector<TemplateImage> bank = originals;
  ScaledBank scaledBank;
  if (scaled) {
    bool scalesValid = !scales.empty();
    for (double f : scales) scalesValid = scalesValid && std::isfinite(f) && f >= kMinTemplateScale && f <= kMaxTemplateScale;
    if (scalesValid && validBank(originals)) {
      // The scaled bank's size (scales.hpp's rounding, repeats of a size counted again): a bank
      // past kMaxScaledBankPixels is not made, unless a side past the limit must be refused.
      long pixels = 0;
      bool tooLarge = false;
      for (const TemplateImage& t : originals)
        for (double f : scales) {
          const long w = std::max(1L, std::lround(t.width * f)), h = std::max(1L, std::lround(t.height * f));
          tooLarge = tooLarge || w > kMaxScaledTemplateSide || h > kMaxScaledTemplateSide;
          pixels += tooLarge ? 0 : w * h;
        }
      if (!tooLarge && pixels > kMaxScaledBankPixels) return 0;
    }
    Status s = scaleTemplates(originals, scales, &scaledBank);
    if (!scalesValid || !validBank(originals)) {
      FUZZ_CHECK(!s.ok(), "scaleTemplates accepted invalid scales or templates");
      return 0;
    }
    if (!s.ok()) return 0;  // a side past kMaxScaledTemplateSide, named in the message
    FUZZ_CHECK(scaledBank.originals == originals.size(), "scaled bank of %zu originals", scaledBank.originals);
    bank = scaledBank.templates;
    for (const TemplateImage& t : bank)  // bounded work: no huge copy that fits the frame
      if (long(t.width) * t.height > 64L * 64L && t.width <= view.width && t.height <= view.height) return 0;
  }

  // The work of one match call on the view: over the budget, the cheaper checks only.
  long positions = 0, work = 0, suppressions = 0;
  for (const TemplateImage& t : bank)
    if (frameAccepted && t.width >= 1 && t.height >= 1 && t.width <= view.width && t.height <= view.height) {
      const long p = long(view.width - t.width + 1) * (view.height - t.height + 1);
      positions += p;
      work += p * t.width * t.height;
      suppressions += p * std::clamp(long(params.maxMatches), 0L, p);
    }
  if (positions > kOraclePositions || work > kOracleWork || suppressions > kOracleSuppressions) {
    checkOverBudget(view, packed, region, bank, params, frameAccepted);
    return 0;
  }

  Status rs = e.reference->setTemplates(bank);
  Status ds = e.direct->setTemplates(bank);
  FUZZ_CHECK(rs.ok() == validBank(bank), "setTemplates %s a %s bank: %s", rs.ok() ? "accepted" : "refused",
             validBank(bank) ? "valid" : "invalid", rs.message().c_str());
  FUZZ_CHECK(ds.ok() == rs.ok(), "direct setTemplates disagrees: %s", ds.message().c_str());
  if (!rs.ok()) return 0;
  if (e.fft) FUZZ_CHECK(e.fft->setTemplates(bank).ok(), "fft setTemplates refused a valid bank");

  FrameResult want, got;
  rs = e.reference->match(view, params, &want);
  const bool shouldMatch = frameAccepted && validParams(params);
  FUZZ_CHECK(rs.ok() == shouldMatch, "match %s: %s", rs.ok() ? "accepted" : "refused", rs.message().c_str());
  ds = e.direct->match(view, params, &got);
  FUZZ_CHECK(ds.ok() == rs.ok(), "direct match disagrees: %s", ds.message().c_str());
  if (!rs.ok()) return 0;
  expectWellFormed(want, bank, view.width, view.height, params);
  expectSameResult(got, want, "direct vs reference");

  if (e.fft) {
    // Fft scores differ from exact ones by rounding, so near-ties may rank differently: its
    // matches are checked for their shape, not against the Reference's.
    FrameResult fft;
    Status fs = e.fft->match(view, params, &fft);
    FUZZ_CHECK(fs.ok(), "fft match refused what the reference accepted: %s", fs.message().c_str());
    expectWellFormed(fft, bank, view.width, view.height, params);
  }
  if (region) {
    expectPackedCopySame(*e.reference, view, packed, params, want, "region view vs packed copy");
    checkRegions(frame, bank.size(), RegionQuery{rx, ry, rw, rh, 0, nullptr}, params, want);
  }
  if (scaled) {
    FrameResult merged = mergeScaledResult(scaledBank, want, params);
    FUZZ_CHECK(merged.best.size() == originals.size(), "merged %zu bests for %zu originals", merged.best.size(),
               originals.size());
    for (const Match& m : merged.matches) {
      FUZZ_CHECK(m.templateIndex < originals.size() && std::isfinite(m.score) && passes(m.score, params),
                 "merged match of template %u score %g", m.templateIndex, m.score);
      bool known = false;
      for (std::size_t k = 0; k < bank.size(); ++k)
        known = known || (scaledBank.original[k] == m.templateIndex && scaledBank.scale[k] == m.scale &&
                          bank[k].width == m.width && bank[k].height == m.height);
      FUZZ_CHECK(known, "merged match with scale %g and size %dx%d is no copy of template %u", m.scale, m.width,
                 m.height, m.templateIndex);
    }
  }
  if (!bank.empty()) {
    const uint32_t index = in.ConsumeIntegralInRange<uint32_t>(0, uint32_t(bank.size()));  // one past: refused
    checkScoreMaps(view, bank, params.method, index);
  }
  return 0;
}
