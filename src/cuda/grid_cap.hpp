// The cap on a launch's blocks (host code only; no CUDA headers, so that unit tests can
// include it). Every kernel of this backend that gets its grid from grid_of (launch.hpp)
// covers its items with a grid-stride loop, so the cap bounds launch size and drops no work.
#pragma once

#include <cstdint>
#include <cstdlib>

namespace moeperm::cuda {

inline constexpr int64_t kDefaultMaxGridBlocks = int64_t{1} << 20;

// The cap MOEPERM_CUDA_MAX_BLOCKS asks for: a whole positive number below the default, else
// the default. Tests set a small cap so that every grid-stride loop takes many steps
// (tests/CMakeLists.txt: gpu.<binary>.small_grids).
inline int64_t grid_cap_from(const char *env) {
  if (env == nullptr || *env == '\0') return kDefaultMaxGridBlocks;
  char *end = nullptr;
  const long long v = std::strtoll(env, &end, 10);
  return *end == '\0' && v > 0 && v < kDefaultMaxGridBlocks ? static_cast<int64_t>(v)
                                                            : kDefaultMaxGridBlocks;
}

// grid_cap_from(MOEPERM_CUDA_MAX_BLOCKS), read once (fill.cu).
int64_t max_grid_blocks();

}  // namespace moeperm::cuda
