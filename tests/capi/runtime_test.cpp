// The CANN runtime subset (SPEC §6) on the CPU device: device memory that is checked
// (Note [Device memory]), copies and sets that refuse to run past an allocation or to treat
// host memory as device memory, device selection, tensors, and per-thread error messages.
#include <acl/acl.h>
#include <aclnn/acl_meta.h>
#include <gtest/gtest.h>
#include <moeperm/acl_handles.hpp>

#include <cstring>
#include <thread>

namespace {

std::string message() { return aclGetRecentErrMsg(); }

// One device allocation for the duration of a test (the shipped owner; the free is checked).
struct DeviceAlloc {
  moeperm::acl::DeviceMemoryPtr memory;
  void *ptr = nullptr;
  explicit DeviceAlloc(size_t bytes)
      : memory(moeperm::acl::device_malloc(bytes)), ptr(memory.get()) {}
  ~DeviceAlloc() { EXPECT_EQ(aclrtFree(memory.release()), ACL_SUCCESS) << message(); }
  std::byte *bytes() const { return static_cast<std::byte *>(ptr); }
};

TEST(Memcpy, RoundTripThroughDeviceMemory) {
  DeviceAlloc a(100), b(100);
  unsigned char in[100], out[100] = {};
  for (int i = 0; i < 100; ++i) in[i] = static_cast<unsigned char>(i * 7);
  ASSERT_EQ(aclrtMemcpy(a.ptr, 100, in, 100, ACL_MEMCPY_HOST_TO_DEVICE), ACL_SUCCESS);
  ASSERT_EQ(aclrtMemcpy(b.ptr, 100, a.ptr, 100, ACL_MEMCPY_DEVICE_TO_DEVICE), ACL_SUCCESS);
  ASSERT_EQ(aclrtMemset(b.ptr, 100, 0xAB, 10), ACL_SUCCESS);
  ASSERT_EQ(aclrtMemcpy(out, 100, b.ptr, 100, ACL_MEMCPY_DEVICE_TO_HOST), ACL_SUCCESS);
  for (int i = 0; i < 100; ++i) EXPECT_EQ(out[i], i < 10 ? 0xAB : in[i]) << i;
  unsigned char host_copy[100];
  ASSERT_EQ(aclrtMemcpy(host_copy, 100, in, 100, ACL_MEMCPY_HOST_TO_HOST), ACL_SUCCESS);
  EXPECT_EQ(std::memcmp(host_copy, in, 100), 0);
}

TEST(Memcpy, CountLargerThanDestMax) {
  DeviceAlloc a(64);
  char host[64] = {};
  EXPECT_EQ(aclrtMemcpy(a.ptr, 8, host, 9, ACL_MEMCPY_HOST_TO_DEVICE), ACL_ERROR_INVALID_PARAM);
  EXPECT_NE(message().find("aclrtMemcpy: count = 9 exceeds destMax = 8"), std::string::npos)
      << message();
}

TEST(Memcpy, HostToDeviceIntoHostMemory) {
  char host_dst[16] = {}, host_src[16] = {};
  EXPECT_EQ(aclrtMemcpy(host_dst, 16, host_src, 16, ACL_MEMCPY_HOST_TO_DEVICE),
            ACL_ERROR_INVALID_PARAM);
  EXPECT_NE(message().find("dst is not device memory from aclrtMalloc, as "
                           "ACL_MEMCPY_HOST_TO_DEVICE requires"),
            std::string::npos)
      << message();
}

TEST(Memcpy, DeviceToHostIntoDeviceMemory) {
  DeviceAlloc a(16), b(16);
  EXPECT_EQ(aclrtMemcpy(a.ptr, 16, b.ptr, 16, ACL_MEMCPY_DEVICE_TO_HOST), ACL_ERROR_INVALID_PARAM);
  EXPECT_NE(message().find("dst is device memory, but ACL_MEMCPY_DEVICE_TO_HOST says it is host "
                           "memory"),
            std::string::npos)
      << message();
  char host[16] = {};
  EXPECT_EQ(aclrtMemcpy(host, 16, host, 16, ACL_MEMCPY_DEVICE_TO_HOST), ACL_ERROR_INVALID_PARAM);
  EXPECT_NE(message().find("src is not device memory"), std::string::npos) << message();
}

TEST(Memcpy, InvalidKindValue) {
  char a[4] = {}, b[4] = {};
  EXPECT_EQ(aclrtMemcpy(a, 4, b, 4, static_cast<aclrtMemcpyKind>(7)), ACL_ERROR_INVALID_PARAM);
  EXPECT_NE(message().find("kind must be an aclrtMemcpyKind (0..3), got 7"), std::string::npos)
      << message();
  EXPECT_EQ(aclrtMemcpy(a, 4, b, 4, static_cast<aclrtMemcpyKind>(-1)), ACL_ERROR_INVALID_PARAM);
}

TEST(Memcpy, RunningPastTheEndOfAnAllocation) {
  DeviceAlloc a(100);
  std::vector<char> host(256);
  EXPECT_EQ(aclrtMemcpy(a.ptr, 200, host.data(), 101, ACL_MEMCPY_HOST_TO_DEVICE),
            ACL_ERROR_INVALID_PARAM);
  EXPECT_NE(message().find("101 bytes at dst run past the end of its device allocation (100 "
                           "bytes left)"),
            std::string::npos)
      << message();
  // From an interior pointer: 40 bytes are left after offset 60.
  EXPECT_EQ(aclrtMemcpy(host.data(), 256, a.bytes() + 60, 41, ACL_MEMCPY_DEVICE_TO_HOST),
            ACL_ERROR_INVALID_PARAM);
  EXPECT_NE(message().find("(40 bytes left)"), std::string::npos) << message();
  EXPECT_EQ(aclrtMemcpy(host.data(), 256, a.bytes() + 60, 40, ACL_MEMCPY_DEVICE_TO_HOST),
            ACL_SUCCESS);
  EXPECT_EQ(aclrtMemset(a.bytes() + 90, 20, 0, 11), ACL_ERROR_INVALID_PARAM);
}

TEST(MallocHost, IsHostMemory) {
  void *h = nullptr;
  ASSERT_EQ(aclrtMallocHost(&h, 64), ACL_SUCCESS);
  DeviceAlloc d(64);
  std::memset(h, 0x3C, 64);
  EXPECT_EQ(aclrtMemcpy(d.ptr, 64, h, 64, ACL_MEMCPY_HOST_TO_DEVICE), ACL_SUCCESS) << message();
  EXPECT_EQ(aclrtMemcpy(h, 64, d.ptr, 64, ACL_MEMCPY_DEVICE_TO_DEVICE), ACL_ERROR_INVALID_PARAM);
  EXPECT_EQ(aclrtFreeHost(h), ACL_SUCCESS);
}

TEST(Malloc, SizeZeroIsAnError) {
  void *p = reinterpret_cast<void *>(uintptr_t{1});
  EXPECT_EQ(aclrtMalloc(&p, 0, ACL_MEM_MALLOC_HUGE_FIRST), ACL_ERROR_INVALID_PARAM);
  EXPECT_EQ(p, nullptr);
  EXPECT_NE(message().find("aclrtMalloc: size must be > 0, got 0"), std::string::npos) << message();
}

TEST(Malloc, EveryPolicyIsAcceptedAndOthersRejected) {
  for (int policy = ACL_MEM_MALLOC_HUGE_FIRST; policy <= ACL_MEM_MALLOC_NORMAL_ONLY_P2P; ++policy) {
    void *p = nullptr;
    ASSERT_EQ(aclrtMalloc(&p, 33, static_cast<aclrtMemMallocPolicy>(policy)), ACL_SUCCESS);
    EXPECT_EQ(aclrtFree(p), ACL_SUCCESS);
  }
  void *p = nullptr;
  EXPECT_EQ(aclrtMalloc(&p, 33, static_cast<aclrtMemMallocPolicy>(6)), ACL_ERROR_INVALID_PARAM);
  EXPECT_EQ(aclrtMalloc(nullptr, 33, ACL_MEM_MALLOC_HUGE_FIRST), ACL_ERROR_INVALID_PARAM);
}

TEST(Free, OnlyLiveAllocationStartsCanBeFreed) {
  int on_stack = 0;
  EXPECT_EQ(aclrtFree(&on_stack), ACL_ERROR_INVALID_PARAM);
  EXPECT_NE(message().find("aclrtFree: devPtr is not the start of a live aclrtMalloc "
                           "allocation"),
            std::string::npos)
      << message();
  EXPECT_EQ(aclrtFree(nullptr), ACL_ERROR_INVALID_PARAM);
  void *p = nullptr;
  ASSERT_EQ(aclrtMalloc(&p, 64, ACL_MEM_MALLOC_HUGE_FIRST), ACL_SUCCESS);
  EXPECT_EQ(aclrtFree(static_cast<char *>(p) + 8), ACL_ERROR_INVALID_PARAM);  // interior
  EXPECT_EQ(aclrtFree(p), ACL_SUCCESS);
  EXPECT_EQ(aclrtFree(p), ACL_ERROR_INVALID_PARAM);  // double free is refused
}

TEST(Device, OnlyDeviceZeroExists) {
  uint32_t count = 0;
  EXPECT_EQ(aclrtGetDeviceCount(&count), ACL_SUCCESS);
  EXPECT_EQ(count, 1u);
  EXPECT_EQ(aclrtSetDevice(1), ACL_ERROR_INVALID_DEVICE);
  EXPECT_NE(message().find("deviceId must be 0"), std::string::npos) << message();
  EXPECT_EQ(aclrtSetDevice(0), ACL_SUCCESS);
}

TEST(Tensor, CreateRefusesUnrepresentableArguments) {
  const int64_t dims[] = {2, 3};
  EXPECT_EQ(aclCreateTensor(nullptr, 2, ACL_FLOAT, nullptr, 0, ACL_FORMAT_ND, dims, 2, nullptr),
            nullptr);
  EXPECT_NE(message().find("aclCreateTensor: viewDims and storageDims must not be null"),
            std::string::npos)
      << message();
  const int64_t bad_storage[] = {-1};
  EXPECT_EQ(aclCreateTensor(dims, 2, ACL_FLOAT, nullptr, 0, ACL_FORMAT_ND, bad_storage, 1, nullptr),
            nullptr);
  EXPECT_NE(message().find("storageDims[0] = -1 is negative"), std::string::npos) << message();
  aclTensor *t = aclCreateTensor(dims, 2, ACL_BF16, nullptr, 0, ACL_FORMAT_ND, dims, 2, nullptr);
  ASSERT_NE(t, nullptr);
  EXPECT_EQ(aclDestroyTensor(t), ACLNN_SUCCESS);
  EXPECT_EQ(aclDestroyTensor(nullptr), ACLNN_SUCCESS);
}

TEST(Types, DataTypeSizes) {
  EXPECT_EQ(aclDataTypeSize(ACL_FLOAT), 4u);
  EXPECT_EQ(aclDataTypeSize(ACL_FLOAT16), 2u);
  EXPECT_EQ(aclDataTypeSize(ACL_BF16), 2u);
  EXPECT_EQ(aclDataTypeSize(ACL_INT8), 1u);
  EXPECT_EQ(aclDataTypeSize(ACL_BOOL), 1u);
  EXPECT_EQ(aclDataTypeSize(ACL_INT32), 4u);
  EXPECT_EQ(aclDataTypeSize(ACL_INT64), 8u);
  EXPECT_EQ(aclDataTypeSize(ACL_DOUBLE), 8u);
}

TEST(ErrorMessages, ArePerThread) {
  void *p = nullptr;
  ASSERT_EQ(aclrtMalloc(&p, 0, ACL_MEM_MALLOC_HUGE_FIRST), ACL_ERROR_INVALID_PARAM);
  std::string other;
  std::thread t([&] {
    other = aclGetRecentErrMsg();  // nothing failed on this thread yet
    EXPECT_EQ(aclrtSetDevice(3), ACL_ERROR_INVALID_DEVICE);
  });
  t.join();
  EXPECT_EQ(other, "");
  EXPECT_NE(message().find("aclrtMalloc"), std::string::npos) << message();
}

}  // namespace
