// Following objects from frame to frame with ids that last: a Tracker keeps tracks of the
// matches an Engine finds and searches, in each frame, only a window around each track's
// predicted box (all windows in one Engine::matchRegions call), with a full-frame search every
// few frames to acquire new objects. No GStreamer inside.
//
//   nccmatch::Tracker tracker;                      // TrackerOptions: margins, lost frames, ...
//   for each frame:
//     nccmatch::TrackerFrame out;
//     st = tracker.track(*engine, frame, params, &out);
//     for (const nccmatch::TrackedMatch& m : out.matches) use(m.trackId, m.state, m.match);
//
// A match that passes the threshold, NMS and max-matches starts or continues a track; several
// objects of one template are several tracks. Matches are assigned to tracks greedily by the
// distance to each track's predicted position (constant velocity from its last two matches). A
// track not matched in a frame is lost: it is predicted on and searched in a window that grows
// with each frame it stays lost, and by the full-frame searches; matched again within lostFrames
// frames it keeps its id, after that it ends and the object gets a new id when found again. Ids
// start at 1, are unique for the Tracker's life and never reused (endAll() does not reset them).
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "nccmatch/engine.hpp"
#include "nccmatch/scales.hpp"
#include "nccmatch/status.hpp"
#include "nccmatch/types.hpp"

namespace nccmatch {

struct TrackerOptions {
  // Pixels searched around the predicted box on each side (the window of a track), 0..16384. A
  // lost track's margin grows by this much for each frame it has been lost.
  int searchMargin = 32;
  // Frames a track may go unmatched and still keep its id, 0..1000000.
  int lostFrames = 15;
  // Frames between full-frame searches for new objects, 0..1000000; 0: only while no track was
  // matched in the previous frame. The whole frame is also searched while no track was matched.
  int acquireInterval = 10;
  // 0..1: after each match the track's own copy of its template becomes (1 - a) * copy + a *
  // matched patch (appearance drift); 0 keeps the template as loaded.
  double templateUpdate = 0.0;
};

// Each field within its range; the error names the field and the range.
Status validateTrackerOptions(const TrackerOptions& options);

enum class TrackState {
  New,         // the track starts with this match
  Tracked,     // matched in the previous frame too
  Reacquired,  // matched again after 1..lostFrames frames lost
};
// "new", "tracked", "reacquired".
const char* trackStateName(TrackState state);

struct TrackedMatch {
  Match match;  // in frame coordinates; templateIndex names the original template
  uint64_t trackId = 0;
  TrackState state = TrackState::New;
};

struct TrackerFrame {
  // This frame's matches, each in one track: by template index, then best first.
  std::vector<TrackedMatch> matches;
  // Tracks not matched in this frame that still keep their ids (ascending).
  std::vector<uint64_t> lostTracks;
  // Tracks that ended with this frame: lost for more than lostFrames frames, or ended by
  // endAll() since the previous frame (ascending).
  std::vector<uint64_t> endedTracks;
  bool fullFrameSearch = false;  // the whole frame was searched (acquisition)
  std::size_t regionsSearched = 0;  // windows searched in the one matchRegions call
};

class Tracker {
 public:
  explicit Tracker(const TrackerOptions& options = TrackerOptions());
  ~Tracker();
  Tracker(Tracker&&) noexcept;
  Tracker& operator=(Tracker&&) noexcept;
  // Takes effect with the next frame; a bad value is refused and the old options stay.
  Status setOptions(const TrackerOptions& options);
  const TrackerOptions& options() const { return options_; }

  // Tracks one frame: a full-frame Engine::match when one is due, else one Engine::matchRegions
  // call over every live track's window (with templateUpdate > 0 the windows, searched with the
  // tracks' own copies, also in full-frame frames). The engine's bank is the templates tracked (template
  // index = bank index). The frame size may change only after endAll().
  Status track(Engine& engine, const FrameView& frame, const MatchParams& params, TrackerFrame* out);
  // The same with a scaled bank (scales.hpp): the engine holds scaled.templates (the bank's own
  // copies of the images are not needed once the engine has them); tracks, matches
  // and templateIndex are of the originals, each track searched at every scale of its template.
  Status track(Engine& engine, const FrameView& frame, const MatchParams& params, const ScaledBank& scaled,
               TrackerFrame* out);

  // Ends every track (a flush, a seek, new caps, a new bank): their ids go into the next frame's
  // endedTracks; the next frame is searched whole. Ids keep counting.
  void endAll();
  // Tracks that have not ended (matched in the last frame or lost).
  std::size_t liveTracks() const;
  // The id the next new track will get.
  uint64_t nextId() const { return nextId_; }

  struct Track;    // the tracker's own record of one track (track/track.hpp)
  struct Scratch;  // a frame's working memory, kept from frame to frame (tracker.cpp)

 private:
  Status trackFrame(Engine& engine, const FrameView& frame, const MatchParams& params, const ScaledBank* scaled,
                    TrackerFrame* out);

  TrackerOptions options_;
  std::vector<Track> tracks_;  // live tracks, in order of their ids
  std::vector<uint64_t> endedPending_;
  uint64_t nextId_ = 1;
  int64_t frame_ = 0;               // frames tracked so far
  int64_t lastFullSearch_ = -1;     // the frame of the last full-frame search, -1: none yet
  bool anyMatchedLastFrame_ = false;
  std::unique_ptr<Scratch> scratch_;  // made by the first frame (none in a moved-from tracker)
};

}  // namespace nccmatch
