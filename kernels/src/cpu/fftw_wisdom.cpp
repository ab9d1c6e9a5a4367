#include "cpu/fftw_wisdom.hpp"

#include <fftw3.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>

namespace nccmatch {

std::mutex& fftwPlannerMutex() {
  static std::mutex m;
  return m;
}

std::string fftwWisdomPath() {
  if (const char* explicitPath = std::getenv("NCCMATCH_FFTW_WISDOM")) {
    const std::string p = explicitPath;
    return p == "none" ? std::string() : p;
  }
  const char* cache = std::getenv("XDG_CACHE_HOME");
  if (cache != nullptr && cache[0] == '/') return std::string(cache) + "/nccmatch/fftwf-wisdom";
  const char* home = std::getenv("HOME");
  if (home != nullptr && home[0] == '/') return std::string(home) + "/.cache/nccmatch/fftwf-wisdom";
  return std::string();
}

namespace {

// mkdir -p of the folder holding `file`.
bool makeParentFolders(const std::string& file) {
  for (std::size_t slash = file.find('/', 1); slash != std::string::npos; slash = file.find('/', slash + 1)) {
    const std::string folder = file.substr(0, slash);
    if (mkdir(folder.c_str(), 0755) != 0 && errno != EEXIST) return false;
  }
  return true;
}

}  // namespace

bool importFftwWisdomOnce() {
  static bool tried = false;
  if (tried) return false;
  tried = true;
  const std::string path = fftwWisdomPath();
  return !path.empty() && fftwf_import_wisdom_from_filename(path.c_str()) != 0;
}

bool exportFftwWisdom() {
  const std::string path = fftwWisdomPath();
  if (path.empty() || !makeParentFolders(path)) return false;
  // Another process may write the same file: each writes its own temporary, the rename is atomic.
  const std::string temporary = path + ".tmp." + std::to_string(getpid());
  if (fftwf_export_wisdom_to_filename(temporary.c_str()) == 0) {
    std::remove(temporary.c_str());
    return false;
  }
  if (std::rename(temporary.c_str(), path.c_str()) != 0) {
    std::remove(temporary.c_str());
    return false;
  }
  return true;
}

}  // namespace nccmatch
