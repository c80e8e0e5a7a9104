// The process-global runtime state of the capi test binaries that need it: aclInit and
// aclrtSetDevice once before any test, aclrtResetDevice and aclFinalize once after all of
// them. aclFinalize must then succeed, which also proves that the tests released every
// tensor, device allocation, stream and executor they created (it returns 148051 otherwise).
#include <acl/acl.h>
#include <gtest/gtest.h>

namespace {

class AclEnvironment : public ::testing::Environment {
 public:
  void SetUp() override {
    ASSERT_EQ(aclInit(nullptr), ACL_SUCCESS) << aclGetRecentErrMsg();
    ASSERT_EQ(aclrtSetDevice(0), ACL_SUCCESS) << aclGetRecentErrMsg();
  }
  void TearDown() override {
    EXPECT_EQ(aclrtResetDevice(0), ACL_SUCCESS) << aclGetRecentErrMsg();
    EXPECT_EQ(aclFinalize(), ACL_SUCCESS) << aclGetRecentErrMsg();
  }
};

[[maybe_unused]] ::testing::Environment *const kAclEnvironment =
    ::testing::AddGlobalTestEnvironment(new AclEnvironment);

}  // namespace
