// The CUDA backend's cap on a launch's blocks (cuda/grid_cap.hpp): the default, and the
// smaller cap MOEPERM_CUDA_MAX_BLOCKS asks for, which the gpu.<binary>.small_grids tests use
// to make every grid-stride loop take many steps. Host code: runs without a GPU. CTest runs
// this binary with MOEPERM_CUDA_MAX_BLOCKS=3 (tests/CMakeLists.txt).
#include <gtest/gtest.h>

#include "cuda/grid_cap.hpp"

namespace moeperm::cuda {
namespace {

TEST(GridCap, DefaultWithoutAValidNumber) {
  EXPECT_EQ(kDefaultMaxGridBlocks, int64_t{1} << 20);
  for (const char *env : {static_cast<const char *>(nullptr), "", "0", "-4", "3x", "x", "1048576",
                          "99999999999999999999"})
    EXPECT_EQ(grid_cap_from(env), kDefaultMaxGridBlocks) << (env ? env : "(unset)");
}

TEST(GridCap, SmallerCapsAreTaken) {
  EXPECT_EQ(grid_cap_from("1"), 1);
  EXPECT_EQ(grid_cap_from("3"), 3);
  EXPECT_EQ(grid_cap_from("1048575"), 1048575);
  EXPECT_EQ(grid_cap_from(" 3"), 3);  // strtoll's leading blanks, as the other MOEPERM_ numbers
}

TEST(GridCap, TheBackendReadsTheEnvironment) { EXPECT_EQ(max_grid_blocks(), 3); }

}  // namespace
}  // namespace moeperm::cuda
