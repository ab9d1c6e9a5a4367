// The FFTW wisdom file of the CPU FFT numerator: where it lives, that measured tile sizes are
// saved to it (folders created), that a fresh planner plans them from the file alone, and that an
// unwritable place only loses the cache.
#include <gtest/gtest.h>

#include <cstdlib>
#include <string>

#ifdef NCCMATCH_HAVE_FFTW
#include <fftw3.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cpu/cpu_numerator_fft.hpp"
#include "cpu/fftw_wisdom.hpp"
#include "test_support.hpp"
#endif

namespace nccmatch::test {
namespace {

#ifdef NCCMATCH_HAVE_FFTW

// Sets or unsets environment variables for a scope, restoring them after.
class ScopedEnv {
 public:
  void set(const char* name, const char* value) {
    remember(name);
    if (value) setenv(name, value, 1);
    else unsetenv(name);
  }
  ~ScopedEnv() {
    for (auto& [name, old] : saved_) {
      if (old.first) setenv(name.c_str(), old.second.c_str(), 1);
      else unsetenv(name.c_str());
    }
  }

 private:
  void remember(const char* name) {
    for (auto& s : saved_)
      if (s.first == name) return;
    const char* v = std::getenv(name);
    saved_.push_back({name, {v != nullptr, v ? v : ""}});
  }
  std::vector<std::pair<std::string, std::pair<bool, std::string>>> saved_;
};

class TempFolder {
 public:
  TempFolder() {
    char pattern[] = "/tmp/nccmatch-wisdom-XXXXXX";
    path_ = mkdtemp(pattern) ? pattern : "";
  }
  ~TempFolder() {
    if (!path_.empty()) std::system(("rm -rf '" + path_ + "'").c_str());
  }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

TEST(FftwWisdom, PathFollowsTheEnvironment) {
  ScopedEnv env;
  env.set("NCCMATCH_FFTW_WISDOM", "/somewhere/wisdom");
  EXPECT_EQ(fftwWisdomPath(), "/somewhere/wisdom");
  env.set("NCCMATCH_FFTW_WISDOM", "none");
  EXPECT_EQ(fftwWisdomPath(), "");
  env.set("NCCMATCH_FFTW_WISDOM", "");
  EXPECT_EQ(fftwWisdomPath(), "");
  env.set("NCCMATCH_FFTW_WISDOM", nullptr);
  env.set("XDG_CACHE_HOME", "/cache");
  EXPECT_EQ(fftwWisdomPath(), "/cache/nccmatch/fftwf-wisdom");
  env.set("XDG_CACHE_HOME", nullptr);
  env.set("HOME", "/home/someone");
  EXPECT_EQ(fftwWisdomPath(), "/home/someone/.cache/nccmatch/fftwf-wisdom");
  env.set("HOME", nullptr);
  EXPECT_EQ(fftwWisdomPath(), "");
}

TEST(FftwWisdom, MeasuredTilesAreSavedAndPlanFromTheFileAlone) {
  TempFolder dir;
  ASSERT_FALSE(dir.path().empty());
  const std::string path = dir.path() + "/new/folder/fftwf-wisdom";
  ScopedEnv env;
  env.set("NCCMATCH_FFTW_WISDOM", path.c_str());
  {
    std::lock_guard<std::mutex> lock(fftwPlannerMutex());
    fftwf_forget_wisdom();  // this process may have planned these sizes in another test
  }
  const int W = 1920, H = 1080, T = 128;
  const FftTiling tiling = chooseFftTiling(W, H, T, T, 1);
  ASSERT_GE(tiling.tileWidth * tiling.tileHeight, 1 << 16) << "a tile size planned by measurement";
  std::vector<TemplateImage> bank = {makeTemplate(T, T, Fill::Random)};
  FftNumerator fft;
  fft.prepare(&bank, 1, {true}, W, H, 1);

  struct stat info {};
  ASSERT_EQ(stat(path.c_str(), &info), 0) << "no wisdom file at " << path;
  EXPECT_GT(info.st_size, 0);

  std::lock_guard<std::mutex> lock(fftwPlannerMutex());
  fftwf_forget_wisdom();
  ASSERT_EQ(fftwf_import_wisdom_from_filename(path.c_str()), 1);
  const std::size_t points = std::size_t(tiling.tileWidth) * tiling.tileHeight;
  float* real = fftwf_alloc_real(points);
  fftwf_complex* spectrum = fftwf_alloc_complex(std::size_t(tiling.tileHeight) * (tiling.tileWidth / 2 + 1));
  fftwf_plan forward = fftwf_plan_dft_r2c_2d(tiling.tileHeight, tiling.tileWidth, real, spectrum,
                                             FFTW_WISDOM_ONLY | FFTW_MEASURE);
  fftwf_plan inverse = fftwf_plan_dft_c2r_2d(tiling.tileHeight, tiling.tileWidth, spectrum, real,
                                             FFTW_WISDOM_ONLY | FFTW_MEASURE | FFTW_DESTROY_INPUT);
  EXPECT_NE(forward, nullptr) << "the forward plan is not in the file";
  EXPECT_NE(inverse, nullptr) << "the inverse plan is not in the file";
  if (forward) fftwf_destroy_plan(forward);
  if (inverse) fftwf_destroy_plan(inverse);
  fftwf_free(real);
  fftwf_free(spectrum);
}

TEST(FftwWisdom, AnUnwritablePlaceOnlyLosesTheCache) {
  ScopedEnv env;
  env.set("NCCMATCH_FFTW_WISDOM", "/proc/nccmatch-cannot-be-here/fftwf-wisdom");
  std::lock_guard<std::mutex> lock(fftwPlannerMutex());
  EXPECT_FALSE(exportFftwWisdom());
  env.set("NCCMATCH_FFTW_WISDOM", "none");
  EXPECT_FALSE(exportFftwWisdom());
}

#else

TEST(FftwWisdom, NeedsFftw) { GTEST_SKIP() << "this build has no FFTW3 (-Dfftw=disabled or not found)"; }

#endif

}  // namespace
}  // namespace nccmatch::test
