// The Tracker: per frame, a full-frame search or one matchRegions call over the live tracks'
// windows, greedy assignment of the matches to the tracks' predictions, then the tracks' states,
// velocities and (template-update) own templates. The pure parts live beside it: motion,
// assignment, schedule, template blending, the windows' results combined.
#include "nccmatch/tracker.hpp"

#include <algorithm>
#include <cmath>
#include <string>

#include "rules/peak_rules.hpp"
#include "track/region_detections.hpp"
#include "track/template_blend.hpp"
#include "track/track.hpp"
#include "track/track_assignment.hpp"
#include "track/track_motion.hpp"
#include "track/track_schedule.hpp"

namespace nccmatch {

namespace {

constexpr int kMaxSearchMargin = 16384;
constexpr int kMaxFrameCount = 1000000;

track::Point cornerOf(const Match& m) { return track::Point{m.subX, m.subY}; }

// Which originals the engine entries are of: the scaled bank's, or each entry its own.
struct EntryMap {
  const ScaledBank* scaled = nullptr;
  std::size_t entries = 0;
  uint32_t original(uint32_t entry) const { return scaled != nullptr ? scaled->original[entry] : entry; }
};

}  // namespace

Status validateTrackerOptions(const TrackerOptions& o) {
  if (o.searchMargin < 0 || o.searchMargin > kMaxSearchMargin)
    return Status::error("search-margin " + std::to_string(o.searchMargin) + " is outside 0.." +
                         std::to_string(kMaxSearchMargin));
  if (o.lostFrames < 0 || o.lostFrames > kMaxFrameCount)
    return Status::error("lost-frames " + std::to_string(o.lostFrames) + " is outside 0.." +
                         std::to_string(kMaxFrameCount));
  if (o.acquireInterval < 0 || o.acquireInterval > kMaxFrameCount)
    return Status::error("acquire-interval " + std::to_string(o.acquireInterval) + " is outside 0.." +
                         std::to_string(kMaxFrameCount));
  if (!(o.templateUpdate >= 0.0 && o.templateUpdate <= 1.0))
    return Status::error("template-update " + std::to_string(o.templateUpdate) + " is outside 0..1");
  return Status();
}

const char* trackStateName(TrackState state) {
  switch (state) {
    case TrackState::New: return "new";
    case TrackState::Tracked: return "tracked";
    case TrackState::Reacquired: return "reacquired";
  }
  return "invalid";
}

Tracker::Tracker(const TrackerOptions& options) : options_(options) {}
Tracker::~Tracker() = default;
Tracker::Tracker(Tracker&&) noexcept = default;
Tracker& Tracker::operator=(Tracker&&) noexcept = default;

Status Tracker::setOptions(const TrackerOptions& options) {
  NCC_RETURN_IF_ERROR(validateTrackerOptions(options));
  options_ = options;
  return Status();
}

void Tracker::endAll() {
  for (const Track& t : tracks_) endedPending_.push_back(t.id);
  tracks_.clear();
  anyMatchedLastFrame_ = false;
}

std::size_t Tracker::liveTracks() const { return tracks_.size(); }

Status Tracker::track(Engine& engine, const FrameView& frame, const MatchParams& params, TrackerFrame* out) {
  return trackFrame(engine, frame, params, nullptr, out);
}

Status Tracker::track(Engine& engine, const FrameView& frame, const MatchParams& params, const ScaledBank& scaled,
                      TrackerFrame* out) {
  // The engine holds the images; the scaled bank's own copies may have been let go.
  if (scaled.original.size() != engine.templates().size() || scaled.scale.size() != scaled.original.size())
    return Status::error("Tracker::track: the scaled bank has " + std::to_string(scaled.original.size()) +
                         " entries, the engine's bank " + std::to_string(engine.templates().size()));
  return trackFrame(engine, frame, params, &scaled, out);
}

Status Tracker::trackFrame(Engine& engine, const FrameView& frame, const MatchParams& params, const ScaledBank* scaled,
                           TrackerFrame* out) {
  if (out == nullptr) return Status::error("Tracker::track: output pointer is null");
  NCC_RETURN_IF_ERROR(validateTrackerOptions(options_));
  const std::vector<TemplateImage>& bank = engine.templates();
  const EntryMap entries{scaled, bank.size()};
  const int64_t now = frame_;
  *out = TrackerFrame();

  // Predictions: each live track's corner and margin in this frame.
  std::vector<track::Prediction> predictions;
  predictions.reserve(tracks_.size());
  for (const Track& t : tracks_) {
    const int64_t since = now - t.lastFrame;
    predictions.push_back(track::Prediction{t.original, track::predictCorner(cornerOf(t.last), t.vx, t.vy, since),
                                            track::marginAfterMissed(options_.searchMargin, t.missed)});
  }

  // The search: the whole frame, or every live track's window at every scale of its template.
  // With template-update the windows are searched in full-frame frames too: a track's own copy
  // may have drifted from the loaded template that the full-frame search uses.
  out->fullFrameSearch = track::fullSearchDue(now, lastFullSearch_, options_.acquireInterval, anyMatchedLastFrame_);
  const bool update = options_.templateUpdate > 0.0;
  std::vector<RegionQuery> regions;
  std::vector<RegionResult> results;
  regions.reserve(tracks_.size());
  if (!out->fullFrameSearch || update) {
    for (std::size_t k = 0; k < tracks_.size(); ++k) {
      const Track& t = tracks_[k];
      for (uint32_t e = 0; e < entries.entries; ++e) {
        if (entries.original(e) != t.original) continue;
        const bool own = update && e == t.entry && !t.own.pixels.empty();
        const TemplateImage& image = own ? t.own : bank[e];
        const track::Window w = track::searchWindow(predictions[k].corner, image.width, image.height,
                                                    predictions[k].margin, frame.width, frame.height);
        if (w.width < image.width || w.height < image.height) continue;  // nothing of it fits
        regions.push_back(RegionQuery{w.x, w.y, w.width, w.height, e, own ? &t.own : nullptr});
      }
    }
    if (!regions.empty()) NCC_RETURN_IF_ERROR(engine.matchRegions(frame, regions, params, &results));
    out->regionsSearched = regions.size();
  }
  if (out->fullFrameSearch) {
    // The whole frame's matches join the windows' as one more region per template.
    FrameResult whole;
    NCC_RETURN_IF_ERROR(engine.match(frame, params, &whole));
    for (uint32_t e = 0; e < entries.entries; ++e) {
      RegionResult r;
      for (const Match& m : whole.matches)
        if (m.templateIndex == e) r.matches.push_back(m);
      if (e < whole.best.size()) r.best = whole.best[e];
      regions.push_back(RegionQuery{0, 0, frame.width, frame.height, e, nullptr});
      results.push_back(std::move(r));
    }
  }
  FrameResult found = track::combineRegionResults(regions, results, entries.entries, params);
  // Matches of the originals, each carrying the entry it was found at in `entryOf`.
  std::vector<uint32_t> entryOf;
  entryOf.reserve(found.matches.size());
  if (scaled != nullptr) {
    // mergeScaledResult names originals; the entry is the one of that original at that scale
    // (scaleTemplates gives each original one entry per distinct scale).
    FrameResult merged = mergeScaledResult(*scaled, found, params);
    for (const Match& m : merged.matches) {
      uint32_t entry = 0;
      for (uint32_t e = 0; e < scaled->original.size(); ++e)
        if (scaled->original[e] == m.templateIndex && scaled->scale[e] == m.scale) entry = e;
      entryOf.push_back(entry);
    }
    found = std::move(merged);
  } else {
    for (const Match& m : found.matches) entryOf.push_back(m.templateIndex);
  }

  // Assignment, closest first; then every track's state. The tracks are copied, and the tracker
  // itself changes only once nothing can fail any more: a frame whose engine call fails (a GPU
  // fault, after which the caller may track the frame again on another engine) leaves the tracker
  // as it was before the frame.
  uint64_t nextId = nextId_;
  std::vector<track::Candidate> candidates;
  candidates.reserve(found.matches.size());
  for (const Match& m : found.matches) candidates.push_back(track::Candidate{m.templateIndex, cornerOf(m)});
  const std::vector<int> assigned = track::assignGreedy(predictions, candidates);
  std::vector<bool> taken(found.matches.size(), false);
  std::vector<Track> live;
  std::vector<TrackedMatch> reported;
  live.reserve(tracks_.size() + found.matches.size());
  reported.reserve(tracks_.size() + found.matches.size());
  for (std::size_t k = 0; k < tracks_.size(); ++k) {
    Track t = tracks_[k];
    const int c = assigned[k];
    if (c < 0) {
      ++t.missed;
      if (t.missed > options_.lostFrames) out->endedTracks.push_back(t.id);
      else {
        out->lostTracks.push_back(t.id);
        live.push_back(std::move(t));
      }
      continue;
    }
    taken[c] = true;
    const Match& m = found.matches[c];
    const int64_t since = now - t.lastFrame;
    const track::Point v = track::velocityBetween(cornerOf(t.last), cornerOf(m), since);
    t.vx = v.x;
    t.vy = v.y;
    reported.push_back(TrackedMatch{m, t.id, t.missed > 0 ? TrackState::Reacquired : TrackState::Tracked});
    t.last = m;
    t.lastFrame = now;
    t.missed = 0;
    if (t.entry != entryOf[c] || (options_.templateUpdate > 0.0 && t.own.pixels.empty()))
      track::startBlend(bank[entryOf[c]], &t.blend, &t.own);
    t.entry = entryOf[c];
    live.push_back(std::move(t));
  }
  for (std::size_t c = 0; c < found.matches.size(); ++c) {
    if (taken[c]) continue;
    Track t;
    t.id = nextId++;
    t.original = found.matches[c].templateIndex;
    t.entry = entryOf[c];
    t.last = found.matches[c];
    t.lastFrame = now;
    if (options_.templateUpdate > 0.0) track::startBlend(bank[t.entry], &t.blend, &t.own);
    reported.push_back(TrackedMatch{found.matches[c], t.id, TrackState::New});
    live.push_back(std::move(t));
  }

  // template-update: each matched track's copy drifts towards the patch it matched.
  if (options_.templateUpdate > 0.0) {
    for (Track& t : live) {
      if (t.lastFrame != now || t.own.pixels.empty()) continue;
      std::vector<uint8_t> patch;
      NCC_RETURN_IF_ERROR(engine.copyPatch(frame, t.last.x, t.last.y, t.own.width, t.own.height, &patch));
      track::blendTemplate(patch, options_.templateUpdate, &t.blend, &t.own);
    }
  } else {
    for (Track& t : live) t.blend.clear(), t.own = TemplateImage();
  }

  std::sort(live.begin(), live.end(), [](const Track& a, const Track& b) { return a.id < b.id; });
  // Nothing fails from here: the frame is committed.
  tracks_ = std::move(live);
  nextId_ = nextId;
  if (out->fullFrameSearch) lastFullSearch_ = now;
  const double sign = goodnessSign(params.method);
  std::stable_sort(reported.begin(), reported.end(), [&](const TrackedMatch& a, const TrackedMatch& b) {
    if (a.match.templateIndex != b.match.templateIndex) return a.match.templateIndex < b.match.templateIndex;
    return sign * a.match.score > sign * b.match.score;
  });
  out->matches = std::move(reported);
  out->endedTracks.insert(out->endedTracks.end(), endedPending_.begin(), endedPending_.end());
  endedPending_.clear();
  std::sort(out->endedTracks.begin(), out->endedTracks.end());
  anyMatchedLastFrame_ = !out->matches.empty();
  ++frame_;
  return Status();
}

}  // namespace nccmatch
