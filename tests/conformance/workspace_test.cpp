// The workspace contract (architecture §6.6/6.8.7): the size the first phase reports is
// enough at any base address (the plan includes slack to realign), a larger one is fine, and
// the C API reports the same size as the C++ plan. Results equal the reference each time.
// The fast host backends, once each (Matrix::one): the workspaces here are host buffers at
// chosen addresses.
#include <gtest/gtest.h>

#include "acl_support.hpp"
#include "backend_matrix.hpp"
#include "testing.hpp"

namespace moeperm::testing {
namespace {

ProblemSpec spec(bool dp) {
  ProblemSpec s;
  s.T = 300, s.H = 9, s.E = 7, s.K = 3, s.capacity = 40, s.drop_and_pad = dp;
  s.dtype = DType::f16, s.probs_dtype = DType::f16;
  return s;
}

class Workspace : public BackendCase<> {};

TEST_P(Workspace, ExactSizeWorksAtAnyBaseAlignment) {
  for (bool dp : {false, true}) {
    SCOPED_TRACE(dp ? "drop-and-pad" : "drop-less");
    Problem ref = tools::make_problem(spec(dp));
    run_both(ref, Backend::reference);
    Problem p = tools::make_problem(spec(dp));
    const Plan fwd = plan_permute(p.permute_desc(), {backend()});
    const Plan bwd = plan_permute_grad(p.grad_desc(), {backend()});
    const uint64_t need = std::max(fwd.workspace_bytes(), bwd.workspace_bytes());
    ASSERT_GT(need, 0u);
    std::vector<std::byte> buffer(need + 256);
    for (size_t misalign : {0, 1, 7, 8, 64, 129, 255}) {
      Problem q = tools::make_problem(spec(dp));
      run(fwd, q.permute_data(), std::span(buffer.data() + misalign, fwd.workspace_bytes()));
      run(bwd, q.grad_data(), std::span(buffer.data() + misalign, bwd.workspace_bytes()));
      ASSERT_TRUE(SameOutputs(q, ref)) << "workspace misaligned by " << misalign;
    }
  }
}

TEST_P(Workspace, LargerThanNeededIsFine) {
  Problem ref = tools::make_problem(spec(true));
  run_both(ref, Backend::reference);
  Problem p = tools::make_problem(spec(true));
  const Plan bwd = plan_permute_grad(p.grad_desc(), {backend()});
  run_forward(p, backend());
  std::vector<std::byte> big(bwd.workspace_bytes() * 3 + 1, std::byte{0xEE});
  run(bwd, p.grad_data(), big);
  EXPECT_TRUE(SameOutputs(p, ref));
}

INSTANTIATE_TEST_SUITE_P(Hosts, Workspace,
                         ::testing::ValuesIn(backend_configs(Matrix::one, {.devices = false})),
                         ConfigName);

TEST(WorkspaceCApi, ReportsTheSizeOfTheCxxPlan) {
  for (bool dp : {false, true}) {
    for (bool probs : {false, true}) {
      ProblemSpec s = spec(dp);
      s.with_probs = probs;
      Problem p = tools::make_problem(s);
      auto x = make_acl_tensor(p.tokens), m = make_acl_tensor(p.routing_map);
      auto y = make_acl_tensor(p.permuted_tokens), si = make_acl_tensor(p.sorted_indices);
      AclTensorPtr pr = probs ? make_acl_tensor(p.probs) : nullptr;
      AclTensorPtr yp = probs ? make_acl_tensor(p.permuted_probs) : nullptr;
      uint64_t c_size = 1;
      aclOpExecutor *exec = nullptr;
      ASSERT_EQ(aclnnMoeTokenPermuteWithRoutingMapGetWorkspaceSize(
                    x.get(), m.get(), pr.get(), s.num_out_tokens(), dp, y.get(), yp.get(), si.get(),
                    &c_size, &exec),
                0);
      EXPECT_EQ(c_size, plan_permute(p.permute_desc()).workspace_bytes());
      discard_executor(exec, false);

      auto g = make_acl_tensor(p.grad), tg = make_acl_tensor(p.tokens_grad);
      AclTensorPtr pg = probs ? make_acl_tensor(p.probs_grad) : nullptr;
      AclTensorPtr pgo = probs ? make_acl_tensor(p.dense_probs_grad) : nullptr;
      ASSERT_EQ(aclnnMoeTokenPermuteWithRoutingMapGradGetWorkspaceSize(
                    g.get(), pg.get(), si.get(), m.get(), s.E, s.T, dp, tg.get(), pgo.get(),
                    &c_size, &exec),
                0);
      EXPECT_EQ(c_size, plan_permute_grad(p.grad_desc()).workspace_bytes());
      discard_executor(exec, true);
    }
  }
}

}  // namespace
}  // namespace moeperm::testing
