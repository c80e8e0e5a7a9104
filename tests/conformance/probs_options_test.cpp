// The optional probability tensors (SPEC §2-§3, §5): an output without its input is filled
// with zeros; the backward's input without its output is accepted and ignored (its data
// pointer, even if given, is never used), the forward's is refused (161001, CANN's rule); in
// drop-and-pad mode the backward does not read the routing map.
// In every variant the token outputs equal those of the full run. Every backend, per CPU
// variant (Matrix::isas: the zero fills are in the row kernels; one token block, so threads
// would not change the work split).
#include <gtest/gtest.h>

#include "acl_support.hpp"
#include "backend_matrix.hpp"
#include "testing.hpp"

namespace moeperm::testing {
namespace {

ProblemSpec spec(bool dp) {
  ProblemSpec s;
  s.T = 37, s.H = 20, s.E = 9, s.K = 3, s.capacity = 5, s.drop_and_pad = dp;
  s.dtype = DType::bf16, s.probs_dtype = DType::f32;
  s.seed = 11;
  return s;
}

using Param = std::tuple<bool, BackendConfig>;  // dropAndPad, backend

class ProbsOptions : public BackendCase<Param> {
 protected:
  void SetUp() override {
    BackendCase::SetUp();
    if (IsSkipped()) return;
    full_ = tools::make_problem(spec(dp()));
    run_both(full_, backend());
  }
  bool dp() const { return std::get<0>(GetParam()); }
  Problem full_;  // the run with every probs tensor
};

TEST_P(ProbsOptions, ForwardOutputWithoutInputIsZeroFilled) {
  Problem p = tools::make_problem(spec(dp()));
  PermuteDesc d = p.permute_desc();
  d.probs.reset();
  PermuteData data = p.permute_data();
  data.probs = nullptr;
  run_with(p, backend(), d, data);
  EXPECT_TRUE(AllZero(p.permuted_probs));
  EXPECT_TRUE(BitwiseEqual(p.permuted_tokens, full_.permuted_tokens));
  EXPECT_TRUE(BitwiseEqual(p.sorted_indices, full_.sorted_indices));
}

TEST_P(ProbsOptions, ForwardInputWithoutOutputIsRefusedWritingNothing) {
  // SPEC §5, forward: CANN's 161001, from the first phase, before anything is written.
  Problem p = tools::make_problem(spec(dp()));
  PermuteDesc d = p.permute_desc();
  d.permuted_probs.reset();
  try {
    run_with(p, backend(), d, p.permute_data());
    ADD_FAILURE() << "probs without permuteProbsOut was accepted";
  } catch (const Error &e) {
    EXPECT_EQ(e.code(), Code::null_pointer);
    EXPECT_NE(std::string(e.what()).find("permuteProbsOutOptional must not be null when "
                                         "probsOptional is given"),
              std::string::npos)
        << e.what();
  }
  EXPECT_TRUE(untouched(p.permuted_probs));
  EXPECT_TRUE(untouched(p.permuted_tokens));
  EXPECT_TRUE(untouched(p.sorted_indices));
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
  run_with(p, backend(), d, data);
  EXPECT_TRUE(AllZero(p.dense_probs_grad));
  EXPECT_TRUE(BitwiseEqual(p.tokens_grad, full_.tokens_grad));
}

TEST_P(ProbsOptions, GradInputWithoutOutputIsIgnored) {
  Problem p = full_;
  p.tokens_grad = poisoned_like(full_.tokens_grad);
  p.dense_probs_grad = poisoned_like(full_.dense_probs_grad);
  PermuteGradDesc d = p.grad_desc();
  d.probs_grad_out.reset();  // the pointer stays in the data: it must not be written
  run_with(p, backend(), d, p.grad_data());
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
  run_with(p, backend(), d, p.grad_data());
  EXPECT_TRUE(BitwiseEqual(p.tokens_grad, full_.tokens_grad));
}

// The same zero fills through the C API (optional tensors passed as null handles).
TEST_P(ProbsOptions, CApiZeroFillsOutputsWithoutInputs) {
  Problem p = tools::make_problem(spec(dp()));
  PermuteDesc f = p.permute_desc();
  f.probs.reset();
  const CStatus forward = c_run_with(p, memory(), f);
  ASSERT_EQ(forward.code, 0) << forward.message;
  EXPECT_TRUE(AllZero(p.permuted_probs));

  PermuteGradDesc g = p.grad_desc();  // S as the forward above left it
  g.permuted_probs_output_grad.reset();
  g.routing_map.reset();
  const CStatus backward = c_run_with(p, memory(), g);
  ASSERT_EQ(backward.code, 0) << backward.message;
  EXPECT_TRUE(AllZero(p.dense_probs_grad));
  EXPECT_TRUE(BitwiseEqual(p.tokens_grad, full_.tokens_grad));
}

INSTANTIATE_TEST_SUITE_P(
    Variants, ProbsOptions,
    ::testing::Combine(::testing::Bool(),
                       ::testing::ValuesIn(backend_configs(Matrix::isas, {.reference = true}))),
    [](const ::testing::TestParamInfo<Param> &param_info) {
      return std::string(std::get<0>(param_info.param) ? "droppad_" : "dropless_") +
             config_name(std::get<1>(param_info.param));
    });

// SPEC §3: "M is not read in this mode" (drop-and-pad). Garbage in M changes nothing.
class ProbsDropAndPad : public BackendCase<> {};

TEST_P(ProbsDropAndPad, GradDoesNotReadTheRoutingMap) {
  Problem full = tools::make_problem(spec(true));
  run_both(full, backend());
  Problem p = full;
  p.tokens_grad = poisoned_like(full.tokens_grad);
  p.dense_probs_grad = poisoned_like(full.dense_probs_grad);
  for (std::byte &b : p.routing_map.storage) b = std::byte{0x5A};
  run_backward(p, backend());
  EXPECT_TRUE(BitwiseEqual(p.tokens_grad, full.tokens_grad));
  EXPECT_TRUE(BitwiseEqual(p.dense_probs_grad, full.dense_probs_grad));
}

INSTANTIATE_TEST_SUITE_P(Backends, ProbsDropAndPad,
                         ::testing::ValuesIn(backend_configs(Matrix::isas, {.reference = true})),
                         ConfigName);

}  // namespace
}  // namespace moeperm::testing
