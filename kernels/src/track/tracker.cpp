// The Tracker: per frame, a full-frame search or one matchRegions call over the live tracks'
// windows, greedy assignment of the matches to the tracks' predictions, then the tracks' states,
// velocities and (template-update) own templates. The pure parts live beside it: motion,
// assignment, schedule, template blending, the windows' results combined.
#include "nccmatch/tracker.hpp"

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <string>

#include "rules/peak_rules.hpp"
#include "track/region_detections.hpp"
#include "track/template_blend.hpp"
#include "track/track.hpp"
#include "track/track_assignment.hpp"
#include "track/track_motion.hpp"
#include "track/track_schedule.hpp"

namespace nccmatch {

// A frame's working memory: every per-frame list, cleared and refilled each frame, so that once
// the vectors have grown a frame allocates nothing (the tracker's host time is part of every
// tracked frame's latency).
struct Tracker::Scratch {
  std::vector<track::Prediction> predictions;  // per track
  std::vector<RegionQuery> regions;            // the windows searched, then the whole frame's
  std::vector<RegionResult> results;           // per region
  FrameResult found;                           // the frame's matches, the regions' combined
  std::vector<uint32_t> entryOf;               // per match: the bank entry it was found at
  std::vector<track::Candidate> candidates;    // per match
  std::vector<int> assigned;                   // per track: its match, or -1
  std::vector<bool> taken;                     // per match: a track took it
  std::vector<std::vector<uint8_t>> patches;   // template-update: in the order the tracks take them
  track::CombineScratch combine;
  track::AssignScratch assign;
};

namespace {

using Track = Tracker::Track;

constexpr int kMaxSearchMargin = 16384;
constexpr int kMaxFrameCount = 1000000;

track::Point cornerOf(const Match& m) { return track::Point{m.subX, m.subY}; }

// Which originals the engine entries are of: the scaled bank's, or each entry its own.
struct EntryMap {
  const ScaledBank* scaled = nullptr;
  std::size_t entries = 0;
  uint32_t original(uint32_t entry) const { return scaled != nullptr ? scaled->original[entry] : entry; }
};

// A matched track takes match m (this frame, `now`): its velocity from the last match, then m.
void continueTrack(const Match& m, int64_t now, Track* t) {
  const track::Point v = track::velocityBetween(cornerOf(t->last), cornerOf(m), now - t->lastFrame);
  t->vx = v.x;
  t->vy = v.y;
  t->last = m;
  t->lastFrame = now;
  t->missed = 0;
}

// template-update: whether a track matched at bank entry `entry` starts its own copy anew from
// that entry's image (a match at another scale, or no copy yet).
bool restartsOwnCopy(const Track& t, uint32_t entry) { return t.entry != entry || t.own.pixels.empty(); }

// Lets a track's own copy go (template-update off); nothing to do when it has none (a copy is only
// ever made by startBlend, from a bank image, which has pixels).
void dropOwnCopy(Track* t) {
  if (t->blend.empty() && t->own.pixels.empty()) return;
  t->blend.clear();
  t->own = TemplateImage();
}

// One reported match, filled in place (no temporary to copy).
void report(const Match& m, uint64_t id, TrackState state, std::vector<TrackedMatch>* matches) {
  TrackedMatch& r = matches->emplace_back();
  r.match = m;
  r.trackId = id;
  r.state = state;
}

// template-update: the patch each matched track's own copy drifts towards (at its match, the size
// of that copy), in the order the tracks take them: matched tracks in the tracks' order, then the
// new tracks in the matches' order. Copied before any track changes: copyPatch may fail.
Status copyPatches(Engine& engine, const FrameView& frame, const std::vector<TemplateImage>& bank,
                   const std::vector<Track>& tracks, Tracker::Scratch* s) {
  std::size_t n = 0;
  const auto copy = [&](const Match& m, const TemplateImage& own) {
    if (own.pixels.empty()) return Status();  // nothing to blend
    if (n == s->patches.size()) s->patches.emplace_back();
    std::vector<uint8_t>& patch = s->patches[n++];
    patch.clear();
    return engine.copyPatch(frame, m.x, m.y, own.width, own.height, &patch);
  };
  for (std::size_t k = 0; k < tracks.size(); ++k) {
    const int c = s->assigned[k];
    if (c < 0) continue;
    const uint32_t entry = s->entryOf[c];
    NCC_RETURN_IF_ERROR(copy(s->found.matches[c], restartsOwnCopy(tracks[k], entry) ? bank[entry] : tracks[k].own));
  }
  for (std::size_t c = 0; c < s->found.matches.size(); ++c)
    if (!s->taken[c]) NCC_RETURN_IF_ERROR(copy(s->found.matches[c], bank[s->entryOf[c]]));
  return Status();
}

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
  if (!scratch_) scratch_ = std::make_unique<Scratch>();
  Scratch& s = *scratch_;
  const std::vector<TemplateImage>& bank = engine.templates();
  const EntryMap entries{scaled, bank.size()};
  const int64_t now = frame_;
  *out = TrackerFrame();

  // Predictions: each live track's corner and margin in this frame. (Written field by field into
  // the list, as the candidates below: a temporary struct copied in costs more than the fields.)
  s.predictions.resize(tracks_.size());
  for (std::size_t k = 0; k < tracks_.size(); ++k) {
    const Track& t = tracks_[k];
    track::Prediction& p = s.predictions[k];
    p.templateIndex = t.original;
    p.corner = track::predictCorner(cornerOf(t.last), t.vx, t.vy, now - t.lastFrame);
    p.margin = track::marginAfterMissed(options_.searchMargin, t.missed);
  }

  // The search: the whole frame, or every live track's window at every scale of its template.
  // With template-update the windows are searched in full-frame frames too: a track's own copy
  // may have drifted from the loaded template that the full-frame search uses.
  out->fullFrameSearch = track::fullSearchDue(now, lastFullSearch_, options_.acquireInterval, anyMatchedLastFrame_);
  const bool update = options_.templateUpdate > 0.0;
  s.regions.clear();
  if (!out->fullFrameSearch || update) {
    for (std::size_t k = 0; k < tracks_.size(); ++k) {
      const Track& t = tracks_[k];
      const auto addWindow = [&](uint32_t e) {
        const bool own = update && e == t.entry && !t.own.pixels.empty();
        const TemplateImage& image = own ? t.own : bank[e];
        const track::Window w = track::searchWindow(s.predictions[k].corner, image.width, image.height,
                                                    s.predictions[k].margin, frame.width, frame.height);
        if (w.width < image.width || w.height < image.height) return;  // nothing of it fits
        s.regions.emplace_back(w.x, w.y, w.width, w.height, e, own ? &t.own : nullptr);
      };
      // Every entry of the track's template: itself in a plain bank, each scale in a scaled one.
      if (scaled == nullptr) {
        if (t.original < entries.entries) addWindow(t.original);
      } else {
        for (uint32_t e = 0; e < entries.entries; ++e)
          if (entries.original(e) == t.original) addWindow(e);
      }
    }
    if (!s.regions.empty()) NCC_RETURN_IF_ERROR(engine.matchRegions(frame, s.regions, params, &s.results));
    out->regionsSearched = s.regions.size();
  }
  // The engine replaces s.results (keeping its vectors' memory); without a call there are none.
  if (s.regions.empty()) s.results.clear();
  if (out->fullFrameSearch) {
    // The whole frame's matches join the windows' as one more region per template.
    FrameResult whole;
    NCC_RETURN_IF_ERROR(engine.match(frame, params, &whole));
    for (uint32_t e = 0; e < entries.entries; ++e) {
      RegionResult r;
      for (const Match& m : whole.matches)
        if (m.templateIndex == e) r.matches.push_back(m);
      if (e < whole.best.size()) r.best = whole.best[e];
      s.regions.push_back(RegionQuery{0, 0, frame.width, frame.height, e, nullptr});
      s.results.push_back(std::move(r));
    }
  }
  track::combineRegionResults(s.regions, s.results, entries.entries, params, &s.combine, &s.found);
  FrameResult& found = s.found;
  // Matches of the originals, each carrying the entry it was found at in `entryOf`.
  std::vector<uint32_t>& entryOf = s.entryOf;
  entryOf.clear();
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

  // Assignment, closest first; then every track's state. The tracker itself changes only once
  // nothing can fail any more: a frame whose engine call fails (a GPU fault, after which the caller
  // may track the frame again on another engine) leaves the tracker as it was before the frame.
  // So the patches of template-update (copyPatch, the one engine call left) are copied first, and
  // only then are the tracks updated, in place.
  s.candidates.resize(found.matches.size());
  for (std::size_t c = 0; c < found.matches.size(); ++c) {
    s.candidates[c].templateIndex = found.matches[c].templateIndex;
    s.candidates[c].corner = cornerOf(found.matches[c]);
  }
  track::assignGreedy(s.predictions, s.candidates, &s.assign, &s.assigned);
  const std::vector<int>& assigned = s.assigned;
  // An unmatched track is lost for one more frame: past lostFrames it ends.
  const auto endsUnmatched = [&](const Track& t) { return t.missed + 1 > options_.lostFrames; };
  s.taken.assign(found.matches.size(), false);
  for (std::size_t k = 0; k < tracks_.size(); ++k) {
    if (assigned[k] >= 0) s.taken[assigned[k]] = true;
    else (endsUnmatched(tracks_[k]) ? out->endedTracks : out->lostTracks).push_back(tracks_[k].id);
  }
  if (update) NCC_RETURN_IF_ERROR(copyPatches(engine, frame, bank, tracks_, &s));

  // Nothing fails from here: the frame is committed. Matched tracks take their matches, lost ones
  // count the frame, ended ones leave (the others keep their order: ids ascending); then a new
  // track for each match left over, with ids above every live one, so tracks_ stays in id order.
  out->matches.reserve(found.matches.size());  // each match reported once
  tracks_.reserve(tracks_.size() + found.matches.size());  // room for the new tracks beforehand
  std::size_t kept = 0, patch = 0;
  for (std::size_t k = 0; k < tracks_.size(); ++k) {
    Track& t = tracks_[k];
    const int c = assigned[k];
    if (c < 0) {
      if (endsUnmatched(t)) continue;
      ++t.missed;
    } else {
      const Match& m = found.matches[c];
      report(m, t.id, t.missed > 0 ? TrackState::Reacquired : TrackState::Tracked, &out->matches);
      continueTrack(m, now, &t);
      if (update) {
        if (restartsOwnCopy(t, entryOf[c])) track::startBlend(bank[entryOf[c]], &t.blend, &t.own);
        if (!t.own.pixels.empty()) track::blendTemplate(s.patches[patch++], options_.templateUpdate, &t.blend, &t.own);
      }
      t.entry = entryOf[c];
    }
    if (kept != k) tracks_[kept] = std::move(t);
    ++kept;
  }
  tracks_.erase(tracks_.begin() + std::ptrdiff_t(kept), tracks_.end());
  for (std::size_t c = 0; c < found.matches.size(); ++c) {
    if (s.taken[c]) continue;
    Track& t = tracks_.emplace_back();
    t.id = nextId_++;
    t.original = found.matches[c].templateIndex;
    t.entry = entryOf[c];
    t.last = found.matches[c];
    t.lastFrame = now;
    if (update) {
      track::startBlend(bank[t.entry], &t.blend, &t.own);
      if (!t.own.pixels.empty()) track::blendTemplate(s.patches[patch++], options_.templateUpdate, &t.blend, &t.own);
    }
    report(found.matches[c], t.id, TrackState::New, &out->matches);
  }
  // Without template-update no track keeps an own copy (one made while it was on is let go).
  if (!update)
    for (Track& t : tracks_) dropOwnCopy(&t);
  if (out->fullFrameSearch) lastFullSearch_ = now;

  // The matches by template, best first (stable: a track's order before a new one's). Usually so
  // already: then the sort, and its buffer, are skipped.
  const double sign = goodnessSign(params.method);
  const auto reportedBefore = [&](const TrackedMatch& a, const TrackedMatch& b) {
    if (a.match.templateIndex != b.match.templateIndex) return a.match.templateIndex < b.match.templateIndex;
    return sign * a.match.score > sign * b.match.score;
  };
  if (!std::is_sorted(out->matches.begin(), out->matches.end(), reportedBefore))
    std::stable_sort(out->matches.begin(), out->matches.end(), reportedBefore);
  out->endedTracks.insert(out->endedTracks.end(), endedPending_.begin(), endedPending_.end());
  endedPending_.clear();
  std::sort(out->endedTracks.begin(), out->endedTracks.end());
  anyMatchedLastFrame_ = !out->matches.empty();
  ++frame_;
  return Status();
}

}  // namespace nccmatch
