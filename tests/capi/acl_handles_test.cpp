// moeperm/acl_handles.hpp, the shipped RAII over the CANN handles: each owner releases what it
// owns exactly once (the runtime refuses a second release, so a double release shows), release()
// hands ownership over, moves leave the source empty, failures become AclError with the call,
// the status and the runtime's message, and a Runtime declared first finalizes cleanly after
// every other owner is gone. Every test starts and ends uninitialised (aclInit is global).
#include <moeperm/acl_handles.hpp>  // first: the header compiles on its own

#include <acl/acl.h>
#include <gtest/gtest.h>

#include <cstddef>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

namespace {

namespace acl = moeperm::acl;

std::string message() { return aclGetRecentErrMsg(); }

// Whether the runtime is finalized: aclInit succeeds only then (and is undone at once).
bool finalized() {
  if (aclInit(nullptr) != ACL_SUCCESS) return false;
  return aclFinalize() == ACL_SUCCESS;
}

TEST(AclHandles, RuntimeFinalizesAfterEveryOwnerDeclaredAfterIt) {
  {
    acl::Runtime runtime;
    EXPECT_EQ(runtime.device(), 0);
    const acl::StreamPtr stream = acl::create_stream();
    const acl::DeviceMemoryPtr memory = acl::device_malloc(64);
    const acl::TensorPtr tensor = acl::create_tensor(
        moeperm::TensorDesc::contiguous(moeperm::DType::f32, {4, 4}), memory.get());
    const acl::DeviceTensor uploaded(moeperm::TensorDesc::contiguous(moeperm::DType::i8, {8}),
                                     std::vector<std::byte>(8));
    EXPECT_NE(stream.get(), nullptr);
    EXPECT_NE(tensor.get(), nullptr);
    EXPECT_NE(uploaded.get(), nullptr);
  }
  EXPECT_TRUE(finalized()) << message();
}

TEST(AclHandles, DeviceMemoryIsFreedOnceAndReleaseHandsItOver) {
  acl::Runtime runtime;
  void *freed = nullptr;
  {
    acl::DeviceMemoryPtr memory = acl::device_malloc(32);
    ASSERT_NE(memory.get(), nullptr);
    freed = memory.get();
  }
  EXPECT_EQ(aclrtFree(freed), ACL_ERROR_INVALID_PARAM);  // the owner freed it already

  acl::DeviceMemoryPtr memory = acl::device_malloc(32);
  void *raw = memory.release();
  EXPECT_EQ(memory.get(), nullptr);
  EXPECT_EQ(aclrtFree(raw), ACL_SUCCESS) << message();  // now the caller's to free

  EXPECT_EQ(acl::device_malloc(0).get(), nullptr);  // 0 bytes allocate nothing
}

TEST(AclHandles, MovesLeaveTheSourceEmpty) {
  acl::Runtime runtime;
  acl::StreamPtr a = acl::create_stream();
  aclrtStream raw = a.get();
  acl::StreamPtr b = std::move(a);
  EXPECT_EQ(a.get(), nullptr);
  EXPECT_EQ(b.get(), raw);
  b.reset();
  EXPECT_EQ(aclrtDestroyStream(raw), ACL_ERROR_INVALID_PARAM);  // destroyed exactly once

  acl::DeviceBuffer buffer(48);
  void *memory = buffer.get();
  acl::DeviceBuffer moved = std::move(buffer);
  EXPECT_EQ(buffer.get(), nullptr);
  EXPECT_EQ(buffer.bytes(), 0u);
  EXPECT_EQ(moved.get(), memory);
  EXPECT_EQ(moved.bytes(), 48u);
}

TEST(AclHandles, DeviceBufferGrowsAndCopies) {
  acl::Runtime runtime;
  acl::DeviceBuffer buffer;
  EXPECT_EQ(buffer.get(), nullptr);
  buffer.reserve(16);
  void *first = buffer.get();
  ASSERT_NE(first, nullptr);
  buffer.reserve(8);  // fits: kept
  EXPECT_EQ(buffer.get(), first);
  EXPECT_EQ(buffer.bytes(), 16u);
  buffer.reserve(64);  // grows: the old allocation is freed
  EXPECT_EQ(buffer.bytes(), 64u);
  if (buffer.get() != first) {
    EXPECT_EQ(aclrtFree(first), ACL_ERROR_INVALID_PARAM);
  }

  std::vector<std::byte> in(64), out(64);
  for (size_t i = 0; i < in.size(); ++i) in[i] = static_cast<std::byte>(i * 5 + 1);
  buffer.upload(in);
  buffer.download(out);
  EXPECT_EQ(in, out);

  acl::DeviceMemoryPtr taken = buffer.release();
  EXPECT_EQ(buffer.get(), nullptr);
  EXPECT_EQ(buffer.bytes(), 0u);
  EXPECT_EQ(aclrtFree(taken.release()), ACL_SUCCESS) << message();
}

TEST(AclHandles, DeviceTensorUploadsTheWholeStorage) {
  acl::Runtime runtime;
  moeperm::TensorDesc desc = moeperm::TensorDesc::contiguous(moeperm::DType::i8, {2, 3});
  desc.strides = {4, 1};  // a padded row, and a storage offset
  desc.offset = 1;
  desc.storage_elements = 9;
  std::vector<std::byte> host(9);
  for (size_t i = 0; i < host.size(); ++i) host[i] = static_cast<std::byte>(0xA0 + i);
  const acl::DeviceTensor t(desc, host);
  EXPECT_EQ(t.bytes(), 9u);
  std::vector<std::byte> back(9);
  t.download(back);
  EXPECT_EQ(back, host);  // padding and offset bytes too
  std::vector<std::byte> short_host(8);
  EXPECT_THROW(t.download(short_host), std::invalid_argument);
}

TEST(AclHandles, FailuresThrowAclErrorWithTheRuntimeMessage) {
  acl::Runtime runtime;
  try {
    acl::check(aclrtFree(nullptr), "aclrtFree");
    ADD_FAILURE() << "check did not throw";
  } catch (const acl::AclError &e) {
    EXPECT_EQ(e.call(), "aclrtFree");
    EXPECT_EQ(e.status(), ACL_ERROR_INVALID_PARAM);
    EXPECT_NE(std::string(e.what()).find("aclrtFree returned " +
                                         std::to_string(ACL_ERROR_INVALID_PARAM) + ": aclrtFree"),
              std::string::npos)
        << e.what();
  }

  moeperm::TensorDesc bad = moeperm::TensorDesc::contiguous(moeperm::DType::f32, {2, 3});
  bad.storage_elements = -1;  // aclCreateTensor refuses a negative storage dimension
  EXPECT_EQ(acl::try_create_tensor(bad, nullptr).get(), nullptr);
  try {
    (void)acl::create_tensor(bad, nullptr);
    ADD_FAILURE() << "create_tensor did not throw";
  } catch (const acl::AclError &e) {
    EXPECT_EQ(e.call(), "aclCreateTensor");
    EXPECT_NE(std::string(e.what()).find("storageDims[0] = -1 is negative"), std::string::npos)
        << e.what();
  }
}

TEST(AclHandles, IntArraysAreOwnedAndCountedByFinalize) {
  {
    acl::Runtime runtime;
    const std::vector<int64_t> values{7, 11};
    acl::IntArrayPtr a = acl::create_int_array(values);
    ASSERT_NE(a.get(), nullptr);
    EXPECT_NE(acl::create_int_array({}).get(), nullptr);  // empty is an array too
  }  // released before aclFinalize: it succeeds
  EXPECT_TRUE(finalized()) << message();
  try {
    (void)acl::create_int_array(std::span<const int64_t>(static_cast<const int64_t *>(nullptr), 3));
    ADD_FAILURE() << "create_int_array did not throw";
  } catch (const acl::AclError &e) {
    EXPECT_EQ(e.call(), "aclCreateIntArray");
    EXPECT_NE(std::string(e.what()).find("value must not be null when size is > 0, got size 3"),
              std::string::npos)
        << e.what();
  }
  // A live array keeps aclFinalize from finalizing, and says so.
  ASSERT_EQ(aclInit(nullptr), ACL_SUCCESS);
  const int64_t one[] = {1};
  aclIntArray *live = aclCreateIntArray(one, 1);
  EXPECT_EQ(aclFinalize(), ACL_ERROR_RELATIVE_RESOURCE_NOT_CLEARED);
  EXPECT_NE(std::string(aclGetRecentErrMsg()).find("1 int array(s)"), std::string::npos)
      << aclGetRecentErrMsg();
  EXPECT_EQ(aclDestroyIntArray(live), ACLNN_SUCCESS);
}

TEST(AclHandles, RuntimeThatCannotSetTheDeviceFinalizesBeforeThrowing) {
  try {
    acl::Runtime runtime(1 << 20);  // no such device
    ADD_FAILURE() << "aclrtSetDevice accepted device " << runtime.device();
  } catch (const acl::AclError &e) {
    EXPECT_EQ(e.call(), "aclrtSetDevice");
    EXPECT_NE(e.status(), ACL_SUCCESS);
  }
  EXPECT_TRUE(finalized()) << message();
}

}  // namespace
