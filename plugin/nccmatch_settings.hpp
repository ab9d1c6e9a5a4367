// The element's settings: written by property setters under the object lock, copied out once per
// frame by the streaming thread so that a frame is processed with one consistent set of values.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "nccmatch/coarse_to_fine.hpp"
#include "nccmatch/engine.hpp"
#include "nccmatch/tracker.hpp"
#include "nccmatch/rotations.hpp"
#include "nccmatch/types.hpp"

namespace nccmatch::plugin {

inline constexpr nccmatch::Method kDefaultMethod = nccmatch::Method::CCoeffNormed;
inline constexpr bool kDefaultDisplay = true;
inline constexpr double kDefaultThreshold = 0.8;
inline constexpr int kDefaultMaxMatches = 1;
inline constexpr double kDefaultNmsIou = 0.3;
inline constexpr bool kDefaultPostMessages = true;
// Off until measured on a GPU host (upstream_registration.hpp).
inline constexpr bool kDefaultRegisterUpstream = false;
inline constexpr bool kDefaultWorkerThread = true;
inline constexpr nccmatch::Backend kDefaultDevice = nccmatch::Backend::Auto;
inline constexpr int kDefaultCudaDeviceId = -1;  // the first device, or the incoming CUDA memory's
inline constexpr int kDefaultFramesInFlight = 0;  // auto
inline constexpr int kDefaultCpuThreads = 0;      // one per core
inline constexpr int kDefaultCudaLanes = nccmatch::EngineOptions{}.cudaMatchingLanes;
inline constexpr int kMaxCpuThreads = 1024;

// `mode`: detect (each frame searched on its own, as templatematch) or track (matches followed
// from frame to frame with ids that last; nccmatch::Tracker).
enum class Mode { Detect = 0, Track = 1 };
inline constexpr Mode kDefaultMode = Mode::Detect;
// The tracker's properties, with nccmatch::TrackerOptions' defaults and ranges.
inline constexpr int kDefaultSearchMargin = 32;
inline constexpr int kMaxSearchMargin = 16384;
inline constexpr int kDefaultLostFrames = 15;
inline constexpr int kDefaultAcquireInterval = 10;
inline constexpr int kMaxTrackFrames = 1000000;  // lost-frames and acquire-interval
inline constexpr double kDefaultTemplateUpdate = 0.0;
// `pyramid-levels`: 0 searches every variant at full size; 1..nccmatch::kMaxPyramidLevels halvings
// for the coarse-to-fine search (nccmatch::CoarseToFineSearch).
inline constexpr int kDefaultPyramidLevels = 0;

// The part of each frame searched (`search-region`): x, y, width, height in frame pixels; width
// 0 means the whole frame.
struct SearchRegion {
  int x = 0, y = 0, width = 0, height = 0;
  bool whole() const { return width == 0; }
  bool operator==(const SearchRegion& o) const {
    return x == o.x && y == o.y && width == o.width && height == o.height;
  }
};

// A template to cut from the next frame's luma plane (the `grab-template` action signal).
struct GrabRequest {
  std::string name;
  int x = 0, y = 0, width = 0, height = 0;
};

struct Settings {
  // Bumped by every property set and every grab-template request (under the object lock, as every
  // field): a frame's copy names the values it was matched with, and its `nccmatch` message says
  // which (`settings-generation`), so an application knows when a change took effect.
  uint64_t generation = 0;
  // Template image files, in bank order (template index = position here).
  std::vector<std::string> templateFiles;
  // Mask image files parallel to templateFiles (`masks`): entry i is template i's mask; an empty
  // entry, or none, leaves that template to its own alpha channel (if any).
  std::vector<std::string> maskFiles;
  // Set by `grab-template` (and cleared by `template`/`templates`): the bank is this one patch of
  // the first frame after the request, instead of files.
  std::optional<GrabRequest> grab;
  // Bumped by every set of `template`/`templates`; the streaming thread reloads the bank when the
  // generation it loaded differs, so setting the same file again also reloads it (as templatematch).
  uint64_t templatesGeneration = 0;
  nccmatch::Method method = kDefaultMethod;
  bool display = kDefaultDisplay;
  double threshold = kDefaultThreshold;
  int maxMatches = kDefaultMaxMatches;
  double nmsIou = kDefaultNmsIou;
  bool postMessages = kDefaultPostMessages;
  // `register-upstream`: page-lock upstream's recycled system memory for the CUDA engine.
  bool registerUpstream = kDefaultRegisterUpstream;
  // `worker-thread`: frames matched and pushed on the element's own thread (read at start).
  bool workerThread = kDefaultWorkerThread;
  nccmatch::Backend device = kDefaultDevice;
  int cudaDeviceId = kDefaultCudaDeviceId;
  int framesInFlight = kDefaultFramesInFlight;
  int cpuThreads = kDefaultCpuThreads;
  int cudaLanes = kDefaultCudaLanes;  // `cuda-lanes`: EngineOptions::cudaMatchingLanes (read at start)
  // Scale factors each template is matched at (`scales`); {1}: as loaded.
  std::vector<double> scales{1.0};
  // Angles in degrees each template is matched at (`angles`), ranges expanded; {0}: as loaded.
  std::vector<double> angles{0.0};
  // What rotated variants compare (`rotation-support`): the whole rotated template, or the disc.
  nccmatch::RotationSupport rotationSupport = nccmatch::RotationSupport::Rectangle;
  // Halvings of the coarse-to-fine search (`pyramid-levels`); 0: every variant at full size.
  int pyramidLevels = kDefaultPyramidLevels;
  SearchRegion searchRegion;
  Mode mode = kDefaultMode;
  int searchMargin = kDefaultSearchMargin;
  int lostFrames = kDefaultLostFrames;
  int acquireInterval = kDefaultAcquireInterval;
  double templateUpdate = kDefaultTemplateUpdate;

  nccmatch::MatchParams matchParams() const;
  // The pyramid levels the bank is made for: pyramidLevels in detect mode, 0 in track mode (the
  // tracker searches every variant of its windows at full size).
  int bankPyramidLevels() const { return mode == Mode::Detect ? pyramidLevels : 0; }
  nccmatch::TrackerOptions trackerOptions() const;
};

// Frames the element holds in flight for the `frames-in-flight` setting (0: auto), at most
// engineMax. Auto overlaps two frames on the CUDA backend; it holds none on the CPU (nothing to
// overlap) or behind a live source, where a held frame would add a frame of latency at camera
// rates that the GPU does not need.
int framesInFlightFor(int setting, bool cudaBackend, bool upstreamLive, int engineMax);
// The same for a mode: track mode holds none (each frame's windows come from the frame before).
int framesInFlightFor(Mode mode, int setting, bool cudaBackend, bool upstreamLive, int engineMax);

// Splits the `templates` property value at commas; surrounding blanks and empty entries are dropped.
// A null or empty text gives an empty list.
std::vector<std::string> parseTemplateList(const char* text);
// The inverse, for reading the property back: entries joined by ",".
std::string joinTemplateList(const std::vector<std::string>& files);

// The `scales` property value: comma-separated factors (blanks and empty entries ignored; a null
// or blank text means {1}), each a decimal number in the C locale within
// nccmatch::kMinTemplateScale..kMaxTemplateScale. False, with *error naming the bad entry,
// otherwise (*scales is then untouched).
bool parseScaleList(const char* text, std::vector<double>* scales, std::string* error);
// The inverse: factors joined by "," in the shortest form that reads back the same.
std::string joinScaleList(const std::vector<double>& scales);

// The `masks` property value: comma-separated files, parallel to `templates`. Surrounding blanks
// are dropped but empty entries are kept (they say "no mask file for this template": "a.png,,c.png"
// gives masks for templates 0 and 2); a null or blank text gives an empty list.
std::vector<std::string> parseMaskList(const char* text);

// The `angles` property value: comma-separated entries, each an angle in degrees or a range
// "start:stop:step" (stop included; nccmatch::angleRange), decimal numbers in the C locale; an
// angle equal modulo 360 to an earlier one is dropped (0:360:5 gives 72 angles). A null or blank
// text means {0}. False, with *error naming the bad entry, otherwise (*angles is then untouched).
bool parseAngleList(const char* text, std::vector<double>* angles, std::string* error);
// The inverse: the angles joined by "," in the shortest form that reads back the same.
std::string joinAngleList(const std::vector<double>& angles);

// The `search-region` property value: "x,y,width,height" (non-negative integers, width and height
// at least 1; blanks allowed), or a null/blank text for the whole frame. False, with *error
// saying what is wrong, otherwise (*region is then untouched).
bool parseSearchRegion(const char* text, SearchRegion* region, std::string* error);
// The inverse: "x,y,width,height", or "" for the whole frame.
std::string joinSearchRegion(const SearchRegion& region);
// The region searched in a frameWidth x frameHeight frame: the whole frame when unset; else the
// region moved inside the frame with its size kept (a side longer than the frame's is cut to it).
// Keeping the size matters: a tracker's region reaching past an edge would otherwise change size
// from frame to frame, and every new size makes the matcher plan again (FFT plans, scratch).
SearchRegion placeSearchRegion(const SearchRegion& region, int frameWidth, int frameHeight);

}  // namespace nccmatch::plugin
