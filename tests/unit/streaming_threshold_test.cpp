// The CPU backend's store-kind threshold as a function of the level-3 cache the host reports
// (cpu/isa.hpp, docs/cpu-performance.md experiments 8 and 9): half of it, within 4 MiB ..
// 32 MiB, and 16 MiB where the host says nothing; and which calls stream their output
// (streams_output, experiment 22): outputs past the threshold, and any output of a call that
// moves the whole cache (twice the threshold).
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

// The cases of experiments 8 and 22 on the AMD VM (threshold 16 MiB), DeepSeek-like rows of
// 14336 bytes: the permute at T = 128 and the unpermute Grad at T = 128 stay cached (their
// destinations stay in the cache, and cached stores measured faster); the sums at T = 512
// and 1024 stream (their reads evict the destinations: streaming measured faster).
TEST(StreamingThreshold, CallsThatMoveTheCacheStream) {
  constexpr int64_t row = 14336, thr = 16 * MiB;
  EXPECT_FALSE(streams_output(1024 * row, (1024 + 128) * row, thr));         // permute T=128
  EXPECT_FALSE(streams_output(1024 * row, (1024 + 128 + 1024) * row, thr));  // its unpermute Grad
  EXPECT_TRUE(streams_output(2048 * row, (2048 + 256) * row, thr));          // permute T=256
  EXPECT_TRUE(streams_output(512 * row, (512 + 4096) * row, thr));           // permute Grad T=512
  EXPECT_TRUE(streams_output(1024 * row, (1024 + 8192) * row, thr));         // unpermute T=1024
  EXPECT_FALSE(streams_output(64 * row, (64 + 512) * row, thr));             // a sum that fits
}

TEST(StreamingThreshold, BoundariesAreInclusive) {
  EXPECT_TRUE(streams_output(100, 100, 100));  // the output reaches the threshold
  EXPECT_FALSE(streams_output(99, 199, 100));  // neither reaches it
  EXPECT_TRUE(streams_output(10, 200, 100));   // the call moves twice the threshold
  EXPECT_TRUE(streams_output(0, 0, 0));        // MOEPERM_CPU_STREAMING_BYTES=0: always
  const int64_t huge = INT64_MAX;              // a huge override: never
  EXPECT_FALSE(streams_output(int64_t{1} << 40, int64_t{1} << 41, huge));
}

}  // namespace
}  // namespace moeperm::detail::cpu
