// The CPU backend's store-kind threshold as a function of the level-3 cache the host reports
// (cpu/isa.hpp, docs/cpu-performance.md experiments 8 and 9): half of it, within 4 MiB ..
// 32 MiB, and 16 MiB where the host says nothing.
#include <gtest/gtest.h>

#include <cstdint>

#include "cpu/isa.hpp"

namespace moeperm::detail::cpu {
namespace {

constexpr int64_t MiB = int64_t{1} << 20;

TEST(StreamingThreshold, HalfTheLevel3CacheWithinBounds) {
  EXPECT_EQ(streaming_threshold_for_cache(32 * MiB), 16 * MiB);  // the AMD EPYC VM
  EXPECT_EQ(streaming_threshold_for_cache(50 * MiB), 25 * MiB);
  EXPECT_EQ(streaming_threshold_for_cache(64 * MiB), 32 * MiB);
  EXPECT_EQ(streaming_threshold_for_cache(300 * MiB), 32 * MiB);  // the Intel Xeon VM: capped
  EXPECT_EQ(streaming_threshold_for_cache(6 * MiB), 4 * MiB);     // floor
  EXPECT_EQ(streaming_threshold_for_cache(9 * MiB + 3), (9 * MiB + 3) / 2);
}

TEST(StreamingThreshold, UnknownCacheGivesSixteenMiB) {
  EXPECT_EQ(streaming_threshold_for_cache(0), 16 * MiB);
  EXPECT_EQ(streaming_threshold_for_cache(-1), 16 * MiB);
}

}  // namespace
}  // namespace moeperm::detail::cpu
