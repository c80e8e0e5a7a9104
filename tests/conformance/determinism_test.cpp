// SPEC §4 determinism: every fast backend gives the same bits run after run (Matrix::one), the
// CPU backend for every thread count (set through the API and through MOEPERM_NUM_THREADS) in
// each of its variants (the threads x variants product lives here: these problems span
// several 256-token blocks, so threads really split the work), and the same bits as the
// reference. Also: a plan is reusable across data (it holds no data pointers; host backends,
// whose plans run on the test's host buffers).
#include <gtest/gtest.h>

#include "backend_matrix.hpp"
#include "testing.hpp"

namespace moeperm::testing {
namespace {

ProblemSpec spec(bool dp, DType dtype, uint64_t seed = 5) {
  ProblemSpec s;
  s.T = 600, s.H = 257, s.E = 16, s.K = 4, s.capacity = 64, s.drop_and_pad = dp;
  s.dtype = dtype, s.probs_dtype = dtype == DType::bf16 ? DType::f32 : dtype;
  s.seed = seed;
  return s;
}

using Param = std::tuple<bool, DType, BackendConfig>;

class Determinism : public BackendCase<Param> {
 protected:
  void SetUp() override {
    BackendCase::SetUp();
    if (IsSkipped()) return;
    fresh_ = tools::make_problem(spec(std::get<0>(GetParam()), std::get<1>(GetParam())));
    ref_ = fresh_;
    run_both(ref_, Backend::reference);
  }
  Problem fresh_, ref_;
};

TEST_P(Determinism, RepeatedRunsAreBitwiseIdentical) {
  for (int run = 0; run < 3; ++run) {
    SCOPED_TRACE(run);
    Problem p = fresh_;
    run_both(p, backend());
    EXPECT_TRUE(SameOutputs(p, ref_));
  }
}

// The thread-count suites: the CPU backend per variant.
class ThreadCounts : public Determinism {};

TEST_P(ThreadCounts, SetThroughTheApi) {
  ScopedEnv env("MOEPERM_NUM_THREADS", nullptr);
  for (int threads : {1, 2, 3, 7}) {
    SCOPED_TRACE(threads);
    ScopedThreads scoped(threads);
    ASSERT_EQ(get_num_threads(), threads);
    Problem p = fresh_;
    run_both(p, backend());
    EXPECT_TRUE(SameOutputs(p, ref_));
  }
}

TEST_P(ThreadCounts, SetThroughTheEnvironment) {
  ScopedThreads api_value(2);  // the environment must win over it
  for (const char *threads : {"1", "3", "7"}) {
    SCOPED_TRACE(threads);
    ScopedEnv env("MOEPERM_NUM_THREADS", threads);
    ASSERT_EQ(get_num_threads(), std::atoi(threads));
    Problem p = fresh_;
    run_both(p, backend());
    EXPECT_TRUE(SameOutputs(p, ref_));
  }
}

std::string param_name(const ::testing::TestParamInfo<Param> &param_info) {
  return std::string(std::get<0>(param_info.param) ? "droppad_" : "dropless_") +
         to_string(std::get<1>(param_info.param)) + "_" +
         config_name(std::get<2>(param_info.param));
}

INSTANTIATE_TEST_SUITE_P(Spec4, Determinism,
                         ::testing::Combine(::testing::Bool(),
                                            ::testing::Values(DType::bf16, DType::f16, DType::f32),
                                            ::testing::ValuesIn(backend_configs(Matrix::one))),
                         param_name);
INSTANTIATE_TEST_SUITE_P(Spec4, ThreadCounts,
                         ::testing::Combine(::testing::Bool(),
                                            ::testing::Values(DType::bf16, DType::f16, DType::f32),
                                            ::testing::ValuesIn(threaded_configs(Matrix::isas))),
                         param_name);

// One plan per operator, run over two different data sets of the same shapes.
class PlanReuse : public BackendCase<> {};

TEST_P(PlanReuse, OnePlanServesManyDataSets) {
  for (bool dp : {false, true}) {
    Problem a = tools::make_problem(spec(dp, DType::bf16, 1));
    Problem b = tools::make_problem(spec(dp, DType::bf16, 2));
    const Plan fwd = plan_permute(a.permute_desc(), {backend()});
    const Plan bwd = plan_permute_grad(a.grad_desc(), {backend()});
    std::vector<std::byte> ws(std::max(fwd.workspace_bytes(), bwd.workspace_bytes()));
    Problem a_ref = a, b_ref = b;
    for (Problem *p : {&a, &b}) {
      run(fwd, p->permute_data(), ws);
      run(bwd, p->grad_data(), ws);
    }
    run_both(a_ref, Backend::reference);
    run_both(b_ref, Backend::reference);
    EXPECT_TRUE(SameOutputs(a, a_ref));
    EXPECT_TRUE(SameOutputs(b, b_ref));
    EXPECT_FALSE(BitwiseEqual(a.tokens_grad, b.tokens_grad));  // the data sets really differ
  }
}

INSTANTIATE_TEST_SUITE_P(Hosts, PlanReuse,
                         ::testing::ValuesIn(backend_configs(Matrix::one, {.devices = false})),
                         ConfigName);

}  // namespace
}  // namespace moeperm::testing
