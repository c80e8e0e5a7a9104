// The bench's ceilings: the copies they time must copy (a copy that skipped bytes would make
// a fast, false yardstick), whatever the alignment and length.
#include <gtest/gtest.h>

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <random>
#include <vector>

#include "ceilings.hpp"

namespace moeperm::bench {
namespace {

constexpr std::byte kPoison{0xA5};
constexpr size_t kGuard = 64;  // poisoned bytes before and after the destination

TEST(BenchCeilings, BothCopyKindsCopyEveryByteAndNothingElse) {
  std::mt19937 rng(20261207);
  const size_t lengths[] = {0, 1, 15, 16, 17, 63, 64, 65, 127, 128, 129, 4095, 4113, 100003};
  const size_t offsets[] = {0, 1, 13, 48, 61};
  for (CopyKind kind : {CopyKind::libc, CopyKind::stream})
    for (size_t n : lengths)
      for (size_t dst_off : offsets)
        for (size_t src_off : {size_t{0}, size_t{7}}) {
          SCOPED_TRACE(testing::Message()
                       << "kind " << static_cast<int>(kind) << " n " << n << " dst offset "
                       << dst_off << " src offset " << src_off);
          // 64-byte-aligned storage, so the offsets are offsets within a cache line.
          std::vector<uint64_t> src_store(n / 8 + 16), dst_store((n + 2 * kGuard) / 8 + 16);
          auto *src = reinterpret_cast<std::byte *>(src_store.data()) + src_off;
          auto *base = reinterpret_cast<std::byte *>(dst_store.data());
          base += (64 - reinterpret_cast<uintptr_t>(base) % 64) % 64;
          std::byte *dst = base + kGuard + dst_off;
          for (size_t i = 0; i < n; ++i) src[i] = static_cast<std::byte>(rng());
          for (std::byte *p = dst - kGuard; p < dst + n + kGuard; ++p) *p = kPoison;
          copy_bytes(kind, dst, src, n);
          for (size_t i = 0; i < n; ++i) ASSERT_EQ(dst[i], src[i]) << "byte " << i;
          for (size_t i = 1; i <= kGuard; ++i) {
            ASSERT_EQ(dst[-static_cast<ptrdiff_t>(i)], kPoison) << "byte " << i << " before";
            ASSERT_EQ(dst[n + i - 1], kPoison) << "byte " << i - 1 << " after";
          }
        }
}

TEST(BenchCeilings, TimesArePositive) {
  Ceilings c(1 << 22);
  const double copy = c.memcpy_ms(1 << 22, 2);
  EXPECT_TRUE(std::isfinite(copy) && copy > 0) << copy;
  problem_model::Traffic t;
  t.reads = 1 << 19;
  t.writes = 3 << 19;
  const double traffic = c.traffic_ms(t, 2);
  EXPECT_TRUE(std::isfinite(traffic) && traffic > 0) << traffic;
}

}  // namespace
}  // namespace moeperm::bench
