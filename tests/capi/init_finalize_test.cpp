// aclInit / aclFinalize are process-global. Every test here starts and ends uninitialised,
// so they pass in any order and also when the whole binary runs in one process.
#include <acl/acl.h>
#include <aclnnop/aclnn_moe_token_permute_with_routing_map.h>
#include <gtest/gtest.h>

#include <string>

namespace {

std::string message() { return aclGetRecentErrMsg(); }

// After aclFinalize reported live resources and they were released: back to uninitialised
// whatever state the failed aclFinalize left (the spec does not say).
void reset_after_failed_finalize() {
  const aclError again = aclInit(nullptr);
  EXPECT_TRUE(again == ACL_SUCCESS || again == ACL_ERROR_REPEAT_INITIALIZE) << again;
  EXPECT_EQ(aclFinalize(), ACL_SUCCESS) << message();
}

TEST(Init, SecondInitIsRepeatInitialize) {
  ASSERT_EQ(aclInit(nullptr), ACL_SUCCESS) << message();
  EXPECT_EQ(aclInit(nullptr), ACL_ERROR_REPEAT_INITIALIZE);
  EXPECT_EQ(ACL_ERROR_REPEAT_INITIALIZE, 100002);
  EXPECT_NE(message().find("aclInit"), std::string::npos) << message();
  EXPECT_EQ(aclFinalize(), ACL_SUCCESS) << message();
}

TEST(Init, InitFinalizeCyclesRepeat) {
  for (int i = 0; i < 3; ++i) {
    ASSERT_EQ(aclInit(nullptr), ACL_SUCCESS) << message();
    ASSERT_EQ(aclFinalize(), ACL_SUCCESS) << message();
  }
}

TEST(Finalize, WithoutInitIsRepeatFinalize) {
  EXPECT_EQ(aclFinalize(), ACL_ERROR_REPEAT_FINALIZE);
  EXPECT_NE(message().find("aclFinalize: not initialized"), std::string::npos) << message();
}

TEST(Finalize, LiveTensorIsReported) {
  ASSERT_EQ(aclInit(nullptr), ACL_SUCCESS) << message();
  const int64_t dims[] = {4};
  aclTensor *t = aclCreateTensor(dims, 1, ACL_FLOAT, nullptr, 0, ACL_FORMAT_ND, dims, 1, nullptr);
  ASSERT_NE(t, nullptr);
  EXPECT_EQ(aclFinalize(), ACL_ERROR_RELATIVE_RESOURCE_NOT_CLEARED);
  EXPECT_EQ(ACL_ERROR_RELATIVE_RESOURCE_NOT_CLEARED, 148051);
  EXPECT_NE(message().find("1 tensor(s), 0 stream(s), 0 device allocation(s), 0 executor(s)"),
            std::string::npos)
      << message();
  aclDestroyTensor(t);
  reset_after_failed_finalize();
}

TEST(Finalize, LiveAllocationAndStreamAreReported) {
  ASSERT_EQ(aclInit(nullptr), ACL_SUCCESS) << message();
  void *p = nullptr;
  aclrtStream s = nullptr;
  ASSERT_EQ(aclrtMalloc(&p, 16, ACL_MEM_MALLOC_HUGE_FIRST), ACL_SUCCESS);
  ASSERT_EQ(aclrtCreateStream(&s), ACL_SUCCESS);
  EXPECT_EQ(aclFinalize(), ACL_ERROR_RELATIVE_RESOURCE_NOT_CLEARED);
  EXPECT_NE(message().find("1 stream(s), 1 device allocation(s)"), std::string::npos) << message();
  EXPECT_EQ(aclrtDestroyStream(s), ACL_SUCCESS);
  EXPECT_EQ(aclrtFree(p), ACL_SUCCESS);
  reset_after_failed_finalize();
}

TEST(Finalize, ExecutorNeverExecutedIsReported) {
  ASSERT_EQ(aclInit(nullptr), ACL_SUCCESS) << message();
  const int64_t x_dims[] = {2, 3}, m_dims[] = {2, 2}, y_dims[] = {2, 3}, s_dims[] = {2};
  float x[6] = {}, y[6] = {};
  int8_t m[4] = {1, 0, 0, 1};
  int32_t s[2] = {-5, -5};
  aclTensor *tx = aclCreateTensor(x_dims, 2, ACL_FLOAT, nullptr, 0, ACL_FORMAT_ND, x_dims, 2, x);
  aclTensor *tm = aclCreateTensor(m_dims, 2, ACL_INT8, nullptr, 0, ACL_FORMAT_ND, m_dims, 2, m);
  aclTensor *ty = aclCreateTensor(y_dims, 2, ACL_FLOAT, nullptr, 0, ACL_FORMAT_ND, y_dims, 2, y);
  aclTensor *ts = aclCreateTensor(s_dims, 1, ACL_INT32, nullptr, 0, ACL_FORMAT_ND, s_dims, 1, s);
  uint64_t ws = 0;
  aclOpExecutor *e = nullptr;
  ASSERT_EQ(aclnnMoeTokenPermuteWithRoutingMapGetWorkspaceSize(tx, tm, nullptr, 2, false, ty,
                                                               nullptr, ts, &ws, &e),
            0)
      << message();
  for (aclTensor *t : {tx, tm, ty, ts}) aclDestroyTensor(t);
  EXPECT_EQ(aclFinalize(), ACL_ERROR_RELATIVE_RESOURCE_NOT_CLEARED);
  EXPECT_NE(message().find("1 executor(s) never executed"), std::string::npos) << message();
  std::vector<std::byte> work(ws);
  EXPECT_EQ(aclnnMoeTokenPermuteWithRoutingMap(work.data(), ws, e, nullptr), 0) << message();
  EXPECT_EQ(s[0], 0);  // the routing is the identity: token 0 -> row 0, token 1 -> row 1
  EXPECT_EQ(s[1], 1);
  reset_after_failed_finalize();
}

}  // namespace
