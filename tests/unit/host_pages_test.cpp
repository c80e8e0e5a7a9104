// Transparent huge pages for the host device's large allocations (Note [Huge pages]): the
// policy as a function of what the host says, and aclrtMalloc following it.
#include <gtest/gtest.h>

#include <acl/acl.h>

#include <cstdint>
#include <cstring>

#include "device/device.hpp"
#include "device/host_pages.hpp"

namespace moeperm::detail {
namespace {

constexpr size_t MiB = size_t{1} << 20;

TEST(HugePages, FollowTheKernelsMode) {
  EXPECT_EQ(huge_page_bytes_for(nullptr, "always [madvise] never\n", "2097152\n"), 2 * MiB);
  EXPECT_EQ(huge_page_bytes_for(nullptr, "[always] madvise never\n", "2097152\n"), 2 * MiB);
  EXPECT_EQ(huge_page_bytes_for(nullptr, "always madvise [never]\n", "2097152\n"), 0u);
  EXPECT_EQ(huge_page_bytes_for(nullptr, "", ""), 0u);  // no THP in this kernel
}

TEST(HugePages, TheEnvironmentTurnsThemOff) {
  EXPECT_EQ(huge_page_bytes_for("0", "always [madvise] never\n", "2097152\n"), 0u);
  EXPECT_EQ(huge_page_bytes_for("1", "always [madvise] never\n", "2097152\n"), 2 * MiB);
}

TEST(HugePages, OnlyAPlausibleSizeIsUsed) {
  EXPECT_EQ(huge_page_bytes_for(nullptr, "[always]", "524288"), 512 * (size_t{1} << 10));
  EXPECT_EQ(huge_page_bytes_for(nullptr, "[always]", "3000000"), 0u);  // not a power of two
  EXPECT_EQ(huge_page_bytes_for(nullptr, "[always]", "4096"), 0u);     // a small page
  EXPECT_EQ(huge_page_bytes_for(nullptr, "[always]", "x"), 0u);
  EXPECT_EQ(huge_page_bytes_for(nullptr, "[always]", ""), 0u);
}

// Large blocks start on a huge page where this host has them, and every byte is usable.
TEST(HugePages, LargeDeviceAllocationsAreHugePageAligned) {
  ASSERT_EQ(aclInit(nullptr), ACL_SUCCESS);
  ASSERT_EQ(aclrtSetDevice(0), ACL_SUCCESS);
  const size_t huge = huge_page_bytes();
  for (const size_t bytes : {kHugePageMinBytes, kHugePageMinBytes + 4097, 3 * MiB}) {
    void *p = nullptr;
    ASSERT_EQ(aclrtMalloc(&p, bytes, ACL_MEM_MALLOC_HUGE_FIRST), ACL_SUCCESS);
    const auto address = reinterpret_cast<uintptr_t>(p);
    if (huge != 0 && bytes >= kHugePageMinBytes)
      EXPECT_EQ(address % huge, 0u) << bytes;
    else
      EXPECT_EQ(address % kDeviceAlignment, 0u) << bytes;
    std::memset(p, 0x5a, bytes);  // the whole block is ours (ASan checks the bounds)
    EXPECT_EQ(aclrtFree(p), ACL_SUCCESS);
  }
  EXPECT_EQ(aclrtResetDevice(0), ACL_SUCCESS);
  EXPECT_EQ(aclFinalize(), ACL_SUCCESS);
}

// ACL_MEM_MALLOC_NORMAL_ONLY asks for normal pages: no huge-page alignment (and no advice),
// so of a few large blocks at least one does not start on a huge page.
TEST(HugePages, NormalOnlyGetsNormalPages) {
  const size_t huge = huge_page_bytes();
  if (huge == 0) GTEST_SKIP() << "this host has no transparent huge pages";
  ASSERT_EQ(aclInit(nullptr), ACL_SUCCESS);
  ASSERT_EQ(aclrtSetDevice(0), ACL_SUCCESS);
  void *blocks[4] = {};
  bool all_huge_aligned = true;
  for (void *&p : blocks) {
    ASSERT_EQ(aclrtMalloc(&p, 2 * kHugePageMinBytes, ACL_MEM_MALLOC_NORMAL_ONLY), ACL_SUCCESS);
    EXPECT_EQ(reinterpret_cast<uintptr_t>(p) % kDeviceAlignment, 0u);
    all_huge_aligned = all_huge_aligned && reinterpret_cast<uintptr_t>(p) % huge == 0;
  }
  EXPECT_FALSE(all_huge_aligned);
  for (void *p : blocks) EXPECT_EQ(aclrtFree(p), ACL_SUCCESS);
  EXPECT_EQ(aclrtResetDevice(0), ACL_SUCCESS);
  EXPECT_EQ(aclFinalize(), ACL_SUCCESS);
}

}  // namespace
}  // namespace moeperm::detail
