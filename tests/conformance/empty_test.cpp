// SPEC §5: empty inputs (R = 0 or H = 0) succeed with a workspace of 0, and outputs that
// have elements are written (zeros for the sums; indices and probs where they still exist).
// Tensors without elements may have null data pointers. Every backend over the full matrix
// (backend_matrix.hpp): the problems are tiny.
#include <gtest/gtest.h>

#include "acl_support.hpp"
#include "backend_matrix.hpp"
#include "naive.hpp"
#include "operand_args.hpp"
#include "testing.hpp"

namespace moeperm::testing {
namespace {

ProblemSpec spec(int64_t T, int64_t H, int64_t K, int64_t C, bool dp) {
  ProblemSpec s;
  s.T = T, s.H = H, s.E = 3, s.K = K, s.capacity = C, s.drop_and_pad = dp;
  s.dtype = DType::bf16, s.probs_dtype = DType::f32;
  return s;
}

// Forward then backward with exactly plan.workspace_bytes() (asserted 0) and null data
// pointers for every tensor without elements.
void run_empty(Problem &p, Backend backend) {
  const Plan fwd = plan_permute(p.permute_desc(), {backend});
  const Plan bwd = plan_permute_grad(p.grad_desc(), {backend});
  ASSERT_EQ(fwd.workspace_bytes(), 0u);
  ASSERT_EQ(bwd.workspace_bytes(), 0u);
  PermuteData f = p.permute_data();
  PermuteGradData g = p.grad_data();
  if (p.permuted_tokens.numel() == 0)
    f.permuted_tokens = nullptr, g.permuted_token_output_grad = nullptr;
  if (p.sorted_indices.numel() == 0) f.sorted_indices = nullptr, g.sorted_indices = nullptr;
  if (p.permuted_probs.numel() == 0)
    f.permuted_probs = nullptr, g.permuted_probs_output_grad = nullptr;
  if (p.tokens.numel() == 0) f.tokens = nullptr, g.tokens_grad_out = nullptr;
  run_with(p, backend, p.permute_desc(), f);  // a workspace of exactly 0 bytes
  run_with(p, backend, p.grad_desc(), g);
}

class Empty : public BackendCase<> {};

// numOutTokens = 0 in drop-less mode: K = 0, R = 0. The sums are empty: zeros.
TEST_P(Empty, DroplessWithoutOutputRows) {
  Problem p = tools::make_problem(spec(5, 4, 0, 0, false));
  ASSERT_EQ(p.spec.rows(), 0);
  run_empty(p, backend());
  EXPECT_TRUE(AllZero(p.tokens_grad));
  EXPECT_TRUE(AllZero(p.dense_probs_grad));
}

// numOutTokens < E in drop-and-pad mode: C = 0, R = 0.
TEST_P(Empty, DropAndPadWithZeroCapacity) {
  Problem p = tools::make_problem(spec(5, 4, 2, 0, true));
  ASSERT_EQ(p.spec.rows(), 0);
  run_empty(p, backend());
  EXPECT_TRUE(AllZero(p.tokens_grad));
  EXPECT_TRUE(AllZero(p.dense_probs_grad));
}

// H = 0: no token data, but indices and probabilities still move.
TEST_P(Empty, ZeroHiddenStillPermutesIndicesAndProbs) {
  for (bool dp : {false, true}) {
    SCOPED_TRACE(dp ? "drop-and-pad" : "drop-less");
    Problem p = tools::make_problem(spec(7, 0, 2, 4, dp));
    run_empty(p, backend());
    EXPECT_TRUE(ForwardMatchesSpec(p));
    EXPECT_TRUE(BackwardMatchesSpec(p));
  }
}

// T = 0 (forward only: the backward requires tokensNum > 0): K = 0 whatever numOutTokens is.
TEST_P(Empty, ForwardWithoutTokens) {
  for (int64_t num_out : {0, 100}) {
    PermuteDesc d;
    d.tokens = dense(DType::f32, {0, 4});
    d.routing_map = dense(DType::boolean, {0, 3});
    d.num_out_tokens = num_out;
    d.permuted_tokens = dense(DType::f32, {0, 4});
    d.sorted_indices = dense(DType::i32, {0});
    const Plan plan = plan_permute(d, {backend()});
    EXPECT_EQ(plan.sizes().rows, 0);
    EXPECT_EQ(plan.workspace_bytes(), 0u);
    run(plan, PermuteData{}, {}, nullptr);  // the stream form: valid for every backend
  }
}

// E = 0 in the drop-less forward (the backward requires numExperts > 0): no token has an
// expert, so every slot is -1 and every permuted row and prob is zero.
TEST_P(Empty, DroplessForwardWithoutExperts) {
  ProblemSpec s = spec(5, 3, 2, 0, false);
  s.E = 0;
  Problem p = tools::make_problem(s);
  run_forward(p, backend());
  EXPECT_EQ(read_indices(p.sorted_indices), std::vector<int32_t>(10, -1));
  EXPECT_TRUE(AllZero(p.permuted_tokens));
  EXPECT_TRUE(AllZero(p.permuted_probs));
}

INSTANTIATE_TEST_SUITE_P(Backends, Empty,
                         ::testing::ValuesIn(backend_configs(Matrix::full, {.reference = true})),
                         ConfigName);

// The C API: the first phase reports 0 bytes and the second runs without a workspace.
TEST(EmptyCApi, ZeroWorkspaceAndNullPointers) {
  Problem p = tools::make_problem(spec(5, 4, 0, 0, false));
  auto x = make_acl_tensor(p.tokens), m = make_acl_tensor(p.routing_map);
  auto pr = make_acl_tensor(p.probs);
  auto y = make_acl_tensor(p.permuted_tokens.desc, nullptr);
  auto yp = make_acl_tensor(p.permuted_probs.desc, nullptr);
  auto s = make_acl_tensor(p.sorted_indices.desc, nullptr);
  uint64_t ws = 1;
  aclOpExecutor *exec = nullptr;
  ASSERT_EQ(aclnnMoeTokenPermuteWithRoutingMapGetWorkspaceSize(
                x.get(), m.get(), pr.get(), 0, false, y.get(), yp.get(), s.get(), &ws, &exec),
            0)
      << aclGetRecentErrMsg();
  EXPECT_EQ(ws, 0u);
  ASSERT_EQ(aclnnMoeTokenPermuteWithRoutingMap(nullptr, 0, exec, nullptr), 0)
      << aclGetRecentErrMsg();

  auto tg = make_acl_tensor(p.tokens_grad), pgo = make_acl_tensor(p.dense_probs_grad);
  ws = 1;
  ASSERT_EQ(aclnnMoeTokenPermuteWithRoutingMapGradGetWorkspaceSize(
                y.get(), yp.get(), s.get(), m.get(), 3, 5, false, tg.get(), pgo.get(), &ws, &exec),
            0)
      << aclGetRecentErrMsg();
  EXPECT_EQ(ws, 0u);
  ASSERT_EQ(aclnnMoeTokenPermuteWithRoutingMapGrad(nullptr, 0, exec, nullptr), 0)
      << aclGetRecentErrMsg();
  EXPECT_TRUE(AllZero(p.tokens_grad));
  EXPECT_TRUE(AllZero(p.dense_probs_grad));
}

}  // namespace
}  // namespace moeperm::testing
