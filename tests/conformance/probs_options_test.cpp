// The optional probability tensors (SPEC §2-§3): an output without its input is filled with
// zeros; an input without its output is accepted and ignored (its data pointer, even if
// given, is never used); in drop-and-pad mode the backward does not read the routing map.
// In every variant the token outputs equal those of the full run.
#include <gtest/gtest.h>

#include "acl_support.hpp"
#include "testing.hpp"

namespace moeperm::testing {
namespace {

struct Variant {
  Backend backend;
  bool dp;
};

ProblemSpec spec(bool dp) {
  ProblemSpec s;
  s.T = 37, s.H = 20, s.E = 9, s.K = 3, s.capacity = 5, s.drop_and_pad = dp;
  s.dtype = DType::bf16, s.probs_dtype = DType::f32;
  s.seed = 11;
  return s;
}

class ProbsOptions : public ::testing::TestWithParam<Variant> {
 protected:
  void SetUp() override {
    full_ = tools::make_problem(spec(GetParam().dp));
    run_both(full_, GetParam().backend);
  }
  PlanOptions options() const { return {GetParam().backend}; }
  Problem full_;  // the run with every probs tensor
};

TEST_P(ProbsOptions, ForwardOutputWithoutInputIsZeroFilled) {
  Problem p = tools::make_problem(spec(GetParam().dp));
  PermuteDesc d = p.permute_desc();
  d.probs.reset();
  PermuteData data = p.permute_data();
  data.probs = nullptr;
  permute(d, data, options());
  EXPECT_TRUE(AllZero(p.permuted_probs));
  EXPECT_TRUE(BitwiseEqual(p.permuted_tokens, full_.permuted_tokens));
  EXPECT_TRUE(BitwiseEqual(p.sorted_indices, full_.sorted_indices));
}

TEST_P(ProbsOptions, ForwardInputWithoutOutputIsIgnored) {
  Problem p = tools::make_problem(spec(GetParam().dp));
  PermuteDesc d = p.permute_desc();
  d.permuted_probs.reset();  // the pointer stays in the data: it must not be written
  permute(d, p.permute_data(), options());
  EXPECT_TRUE(untouched(p.permuted_probs));
  EXPECT_TRUE(BitwiseEqual(p.permuted_tokens, full_.permuted_tokens));
  EXPECT_TRUE(BitwiseEqual(p.sorted_indices, full_.sorted_indices));
}

TEST_P(ProbsOptions, GradOutputWithoutInputIsZeroFilled) {
  Problem p = full_;
  p.tokens_grad = poisoned_like(full_.tokens_grad);
  p.dense_probs_grad = poisoned_like(full_.dense_probs_grad);
  PermuteGradDesc d = p.grad_desc();
  d.permuted_probs_output_grad.reset();
  d.routing_map.reset();  // not required without P
  PermuteGradData data = p.grad_data();
  data.routing_map = nullptr;
  permute_grad(d, data, options());
  EXPECT_TRUE(AllZero(p.dense_probs_grad));
  EXPECT_TRUE(BitwiseEqual(p.tokens_grad, full_.tokens_grad));
}

TEST_P(ProbsOptions, GradInputWithoutOutputIsIgnored) {
  Problem p = full_;
  p.tokens_grad = poisoned_like(full_.tokens_grad);
  p.dense_probs_grad = poisoned_like(full_.dense_probs_grad);
  PermuteGradDesc d = p.grad_desc();
  d.probs_grad_out.reset();  // the pointer stays in the data: it must not be written
  permute_grad(d, p.grad_data(), options());
  EXPECT_TRUE(untouched(p.dense_probs_grad));
  EXPECT_TRUE(BitwiseEqual(p.tokens_grad, full_.tokens_grad));
}

TEST_P(ProbsOptions, GradWithoutAnyProbsTensors) {
  Problem p = full_;
  p.tokens_grad = poisoned_like(full_.tokens_grad);
  PermuteGradDesc d = p.grad_desc();
  d.permuted_probs_output_grad.reset();
  d.probs_grad_out.reset();
  d.routing_map.reset();
  permute_grad(d, p.grad_data(), options());
  EXPECT_TRUE(BitwiseEqual(p.tokens_grad, full_.tokens_grad));
}

// The same zero fills through the C API (optional tensors passed as null handles).
TEST_P(ProbsOptions, CApiZeroFillsOutputsWithoutInputs) {
  Problem p = tools::make_problem(spec(GetParam().dp));
  auto x = make_acl_tensor(p.tokens), m = make_acl_tensor(p.routing_map);
  auto y = make_acl_tensor(p.permuted_tokens), yp = make_acl_tensor(p.permuted_probs);
  auto s = make_acl_tensor(p.sorted_indices);
  uint64_t ws = 0;
  aclOpExecutor *exec = nullptr;
  ASSERT_EQ(aclnnMoeTokenPermuteWithRoutingMapGetWorkspaceSize(
                x.get(), m.get(), nullptr, p.spec.num_out_tokens(), p.spec.drop_and_pad, y.get(),
                yp.get(), s.get(), &ws, &exec),
            0)
      << aclGetRecentErrMsg();
  std::vector<std::byte> work(ws);
  ASSERT_EQ(aclnnMoeTokenPermuteWithRoutingMap(work.data(), ws, exec, nullptr), 0);
  EXPECT_TRUE(AllZero(p.permuted_probs));

  auto g = make_acl_tensor(p.grad), tg = make_acl_tensor(p.tokens_grad);
  auto pg = make_acl_tensor(p.dense_probs_grad);
  ASSERT_EQ(aclnnMoeTokenPermuteWithRoutingMapGradGetWorkspaceSize(
                g.get(), nullptr, s.get(), nullptr, p.spec.E, p.spec.T, p.spec.drop_and_pad,
                tg.get(), pg.get(), &ws, &exec),
            0)
      << aclGetRecentErrMsg();
  work.assign(ws, std::byte{0});
  ASSERT_EQ(aclnnMoeTokenPermuteWithRoutingMapGrad(work.data(), ws, exec, nullptr), 0);
  EXPECT_TRUE(AllZero(p.dense_probs_grad));
  EXPECT_TRUE(BitwiseEqual(p.tokens_grad, full_.tokens_grad));
}

INSTANTIATE_TEST_SUITE_P(
    Variants, ProbsOptions,
    ::testing::Values(Variant{Backend::cpu, false}, Variant{Backend::cpu, true},
                      Variant{Backend::reference, false}, Variant{Backend::reference, true}),
    [](const ::testing::TestParamInfo<Variant> &param_info) {
      return std::string(param_info.param.backend == Backend::cpu ? "cpu" : "reference") +
             (param_info.param.dp ? "_droppad" : "_dropless");
    });

// SPEC §3: "M is not read in this mode" (drop-and-pad). Garbage in M changes nothing.
TEST(ProbsDropAndPad, GradDoesNotReadTheRoutingMap) {
  for (Backend backend : {Backend::cpu, Backend::reference}) {
    Problem full = tools::make_problem(spec(true));
    run_both(full, backend);
    Problem p = full;
    p.tokens_grad = poisoned_like(full.tokens_grad);
    p.dense_probs_grad = poisoned_like(full.dense_probs_grad);
    for (std::byte &b : p.routing_map.storage) b = std::byte{0x5A};
    run_backward(p, backend);
    EXPECT_TRUE(BitwiseEqual(p.tokens_grad, full.tokens_grad));
    EXPECT_TRUE(BitwiseEqual(p.dense_probs_grad, full.dense_probs_grad));
  }
}

}  // namespace
}  // namespace moeperm::testing
