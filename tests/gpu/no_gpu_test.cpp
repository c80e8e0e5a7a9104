// Without a GPU (every CI machine): the CUDA paths fail with a status and a message, never a
// crash, and the runtime keeps the CPU device. Skipped where a GPU is present (the `gpu`
// tests cover that machine).
#include <acl/acl.h>
#include <gtest/gtest.h>

#include <string>

#include "testing.hpp"

namespace moeperm::testing {
namespace {

class NoGpu : public ::testing::Test {
 protected:
  void SetUp() override {
    if (cuda_device_count() > 0) GTEST_SKIP() << "a CUDA GPU is present";
  }
};

ProblemSpec small(bool drop_and_pad) {
  ProblemSpec s;
  s.T = 7, s.H = 5, s.E = 3, s.K = 2, s.capacity = 4;
  s.drop_and_pad = drop_and_pad;
  s.dtype = s.probs_dtype = DType::f32;
  return s;
}

TEST_F(NoGpu, CudaPlansFailWithAStatus) {
  for (bool dp : {false, true}) {
    Problem p = tools::make_problem(small(dp));
    const Error e = capture_error([&] {
      const Plan plan = plan_permute(p.permute_desc(), {Backend::cuda});
      std::vector<std::byte> ws(plan.workspace_bytes());
      run(plan, p.permute_data(), ws, nullptr);
    });
    if (cuda_built()) {
      EXPECT_EQ(e.code(), Code::runtime_error) << e.what();  // no device to launch on
    } else {
      EXPECT_EQ(e.code(), Code::invalid_param);
      EXPECT_NE(std::string(e.what()).find("built without"), std::string::npos) << e.what();
    }
    EXPECT_TRUE(untouched(p.permuted_tokens));
  }
  Problem p = tools::make_problem(small(true));
  run_forward(p, Backend::reference);
  const Error e = capture_error([&] { (void)plan_permute_grad(p.grad_desc(), {Backend::cuda}); });
  EXPECT_EQ(e.code(), cuda_built() ? Code::runtime_error : Code::invalid_param) << e.what();
}

TEST_F(NoGpu, AskingForTheGpuDeviceIsAnError) {
  {
    ScopedEnv env("MOEPERM_DEVICE", "cuda");
    EXPECT_EQ(aclrtSetDevice(0), ACL_ERROR_INVALID_DEVICE);
    EXPECT_NE(std::string(aclGetRecentErrMsg()).find("MOEPERM_DEVICE=cuda"), std::string::npos)
        << aclGetRecentErrMsg();
  }
  {
    ScopedEnv env("MOEPERM_DEVICE", "tpu");
    EXPECT_EQ(aclrtSetDevice(0), ACL_ERROR_INVALID_DEVICE);
    EXPECT_NE(std::string(aclGetRecentErrMsg()).find("got 'tpu'"), std::string::npos)
        << aclGetRecentErrMsg();
  }
  ScopedEnv env("MOEPERM_DEVICE", "auto");
  EXPECT_EQ(aclrtSetDevice(0), ACL_SUCCESS) << "auto without a GPU keeps the CPU device";
  EXPECT_EQ(aclrtSetDevice(1), ACL_ERROR_INVALID_DEVICE);
  EXPECT_EQ(aclrtResetDevice(0), ACL_SUCCESS);
}

}  // namespace
}  // namespace moeperm::testing
