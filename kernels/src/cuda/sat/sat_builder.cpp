// SatBuilder's factory and the names of the builds; argument checks shared by all builds.
#include <string>

#include "cuda/sat/sat_builders.hpp"
#include "nccmatch/sat_cuda.hpp"

namespace nccmatch::cuda {

const char* satBuildName(SatBuild build) {
  switch (build) {
    case SatBuild::Naive: return "naive";
    case SatBuild::Cub: return "cub";
    case SatBuild::Dlb: return "dlb";
    case SatBuild::Fused: return "fused";
    case SatBuild::Fused32: return "fused32";
  }
  return "unknown";
}

bool parseSatBuild(const std::string& text, SatBuild* build) {
  for (SatBuild b : {SatBuild::Naive, SatBuild::Cub, SatBuild::Dlb, SatBuild::Fused, SatBuild::Fused32}) {
    if (text == satBuildName(b)) {
      if (build) *build = b;
      return true;
    }
  }
  return false;
}

std::size_t satEntryBytes(SatBuild build) { return build == SatBuild::Fused32 ? 4 : 8; }

Status validateSatBuildArgs(const char* who, const uint8_t* image, std::size_t pitch, int width,
                            int height, const void* sum, const void* sumSq, int maxWidth,
                            int maxHeight) {
  const std::string name(who);
  if (image == nullptr || sum == nullptr || sumSq == nullptr)
    return Status::error(name + ": null image or table pointer");
  if (width < 1 || height < 1)
    return Status::error(name + ": image size " + std::to_string(width) + "x" +
                         std::to_string(height) + " must be at least 1x1");
  if (width > maxWidth || height > maxHeight)
    return Status::error(name + ": image size " + std::to_string(width) + "x" +
                         std::to_string(height) + " exceeds the builder's maximum " +
                         std::to_string(maxWidth) + "x" + std::to_string(maxHeight));
  if (pitch < std::size_t(width))
    return Status::error(name + ": pitch " + std::to_string(pitch) + " is less than width " +
                         std::to_string(width));
  return Status();
}

Status SatBuilder::create(SatBuild build, int maxWidth, int maxHeight,
                          std::unique_ptr<SatBuilder>* out) {
  if (out == nullptr) return Status::error("SatBuilder::create: null output pointer");
  out->reset();
  if (maxWidth < 1 || maxHeight < 1 || maxWidth > kSatMaxSide || maxHeight > kSatMaxSide)
    return Status::error("SatBuilder::create: maximum size " + std::to_string(maxWidth) + "x" +
                         std::to_string(maxHeight) + " must lie within 1x1 .. " +
                         std::to_string(kSatMaxSide) + "x" + std::to_string(kSatMaxSide));
  switch (build) {
    case SatBuild::Naive: return createNaiveSatBuilder(maxWidth, maxHeight, out);
    case SatBuild::Cub: return createCubSatBuilder(maxWidth, maxHeight, out);
    case SatBuild::Dlb: return createDlbSatBuilder(maxWidth, maxHeight, out);
    case SatBuild::Fused:
    case SatBuild::Fused32: return createFusedSatBuilder(build, maxWidth, maxHeight, out);
  }
  return Status::error("SatBuilder::create: unknown build " + std::to_string(int(build)));
}

}  // namespace nccmatch::cuda
