// FFTW's planner state for the CPU FFT numerator: the one lock every plan is made under (FFTW's
// planner is not thread-safe) and a wisdom file on disk, so that tile sizes planned by
// measurement (FFTW_MEASURE, up to a second each) are measured once per machine, not once per
// process. The file: $NCCMATCH_FFTW_WISDOM if set ("" or "none": no file), else
// $XDG_CACHE_HOME/nccmatch/fftwf-wisdom, else $HOME/.cache/nccmatch/fftwf-wisdom. It is a cache:
// a missing, unreadable or unwritable file only costs planning time.
#pragma once

#include <mutex>
#include <string>

namespace nccmatch {

std::mutex& fftwPlannerMutex();

// The wisdom file's path ("" when disabled), read from the environment at each call.
std::string fftwWisdomPath();

// With fftwPlannerMutex() held: imports the wisdom file into FFTW the first time in this process
// (true when it was read).
bool importFftwWisdomOnce();
// With fftwPlannerMutex() held: writes FFTW's wisdom to the file (whole, through a temporary file
// and a rename, folders created); true when written.
bool exportFftwWisdom();

}  // namespace nccmatch
