// Errors about the buffers rather than the descriptors (SPEC §5.2 applied to data, and the
// workspace contract): a null data pointer of a tensor that has elements (161001), a null
// workspace when one is needed (161001), a workspace one byte too small (161002). The C API
// sees data pointers in its first phase and the workspace in its second; the C++ API sees
// both in run(). Nothing is written on any of these failures.
#include <gtest/gtest.h>

#include "acl_support.hpp"
#include "testing.hpp"

namespace moeperm::testing {
namespace {

ProblemSpec spec(bool drop_and_pad) {
  ProblemSpec s;
  s.T = 4, s.H = 5, s.E = 3, s.K = 2, s.capacity = 2;
  s.drop_and_pad = drop_and_pad;
  s.dtype = s.probs_dtype = DType::f32;
  return s;
}

// One tensor of the grad operator whose data pointer is nulled: its CANN name, its element
// count in spec(false) (T=4, E=3, H=5, R=8), and where the pointer lives.
struct GradBuffer {
  const char *name;
  int64_t elements;
  const void *PermuteGradData::*input;
  void *PermuteGradData::*output;
};

const GradBuffer kGradBuffers[] = {
    {"permutedTokenOutputGrad", 40, &PermuteGradData::permuted_token_output_grad, nullptr},
    {"sortedIndices", 8, &PermuteGradData::sorted_indices, nullptr},
    {"routingMapOptional", 12, &PermuteGradData::routing_map, nullptr},
    {"permutedProbsOutputGradOptional", 8, &PermuteGradData::permuted_probs_output_grad, nullptr},
    {"tokensGradOut", 20, nullptr, &PermuteGradData::tokens_grad_out},
    {"probsGradOutOptional", 12, nullptr, &PermuteGradData::probs_grad_out},
};

TEST(NullData, GradCxxApiRejectsEachNullPointerInRun) {
  for (const GradBuffer &b : kGradBuffers) {
    SCOPED_TRACE(b.name);
    Problem p = tools::make_problem(spec(false));
    run_forward(p, Backend::reference);
    const Plan plan = plan_permute_grad(p.grad_desc(), PlanOptions{Backend::cpu});
    PermuteGradData d = p.grad_data();
    if (b.input) d.*b.input = nullptr;
    if (b.output) d.*b.output = nullptr;
    std::vector<std::byte> ws(plan.workspace_bytes());
    const Error e = capture_error([&] { run(plan, d, ws); });
    EXPECT_EQ(e.code(), Code::null_pointer);
    EXPECT_NE(
        std::string(e.what()).find(std::string(b.name) + " has " + std::to_string(b.elements) +
                                   " elements but its data pointer is null"),
        std::string::npos)
        << e.what();
    EXPECT_TRUE(untouched(p.tokens_grad));
    EXPECT_TRUE(untouched(p.dense_probs_grad));
  }
}

TEST(NullData, GradCApiRejectsNullPointerInFirstPhase) {
  Problem p = tools::make_problem(spec(true));
  auto g = make_acl_tensor(p.grad.desc, nullptr);
  auto pg = make_acl_tensor(p.probs_grad), s = make_acl_tensor(p.sorted_indices);
  auto m = make_acl_tensor(p.routing_map), tg = make_acl_tensor(p.tokens_grad);
  auto pgo = make_acl_tensor(p.dense_probs_grad);
  uint64_t ws = 0;
  aclOpExecutor *exec = nullptr;
  const CStatus st = c_status(aclnnMoeTokenPermuteWithRoutingMapGradGetWorkspaceSize(
      g.get(), pg.get(), s.get(), m.get(), 3, 4, true, tg.get(), pgo.get(), &ws, &exec));
  EXPECT_EQ(st.code, 161001);
  EXPECT_NE(st.message.find("aclnnMoeTokenPermuteWithRoutingMapGrad: permutedTokenOutputGrad has "
                            "30 elements but its data pointer is null"),
            std::string::npos)
      << st.message;
  EXPECT_EQ(exec, nullptr);
}

TEST(NullData, ForwardCxxApiRejectsNullTokensAndOutputs) {
  struct Case {
    const char *name;
    void (*null_it)(PermuteData &);
  };
  const Case cases[] = {
      {"tokens has 20 elements", [](PermuteData &d) { d.tokens = nullptr; }},
      {"routingMap has 12 elements", [](PermuteData &d) { d.routing_map = nullptr; }},
      {"probsOptional has 12 elements", [](PermuteData &d) { d.probs = nullptr; }},
      {"permuteTokensOut has 40 elements", [](PermuteData &d) { d.permuted_tokens = nullptr; }},
      {"permuteProbsOutOptional has 8 elements",
       [](PermuteData &d) { d.permuted_probs = nullptr; }},
      {"sortedIndicesOut has 8 elements", [](PermuteData &d) { d.sorted_indices = nullptr; }},
  };
  for (const Case &c : cases) {
    SCOPED_TRACE(c.name);
    Problem p = tools::make_problem(spec(false));
    PermuteData d = p.permute_data();
    c.null_it(d);
    const Error e = capture_error([&] { permute(p.permute_desc(), d); });
    EXPECT_EQ(e.code(), Code::null_pointer);
    EXPECT_NE(std::string(e.what()).find(std::string(c.name) + " but its data pointer is null"),
              std::string::npos)
        << e.what();
    EXPECT_TRUE(untouched(p.permuted_tokens));
    EXPECT_TRUE(untouched(p.sorted_indices));
  }
}

// A plan that needs workspace: the CPU backward in drop-and-pad mode sorts slots by token.
TEST(Workspace, OneByteTooSmallIsRejectedByBothApis) {
  Problem p = tools::make_problem(spec(true));
  run_forward(p, Backend::reference);
  const Plan plan = plan_permute_grad(p.grad_desc(), PlanOptions{Backend::cpu});
  const uint64_t need = plan.workspace_bytes();
  ASSERT_GT(need, 0u);
  std::vector<std::byte> ws(need);
  const Error e =
      capture_error([&] { run(plan, p.grad_data(), std::span<std::byte>(ws.data(), need - 1)); });
  EXPECT_EQ(e.code(), Code::invalid_param);
  EXPECT_NE(std::string(e.what()).find("workspaceSize = " + std::to_string(need - 1) +
                                       " is smaller than the " + std::to_string(need) +
                                       " bytes the first phase asked for"),
            std::string::npos)
      << e.what();
  EXPECT_TRUE(untouched(p.tokens_grad));

  // The C API: same size from the first phase, same refusal from the second.
  auto g = make_acl_tensor(p.grad), pg = make_acl_tensor(p.probs_grad);
  auto s = make_acl_tensor(p.sorted_indices), m = make_acl_tensor(p.routing_map);
  auto tg = make_acl_tensor(p.tokens_grad), pgo = make_acl_tensor(p.dense_probs_grad);
  uint64_t c_need = 0;
  aclOpExecutor *exec = nullptr;
  ASSERT_EQ(
      aclnnMoeTokenPermuteWithRoutingMapGradGetWorkspaceSize(
          g.get(), pg.get(), s.get(), m.get(), 3, 4, true, tg.get(), pgo.get(), &c_need, &exec),
      0);
  EXPECT_EQ(c_need, need);
  const CStatus st =
      c_status(aclnnMoeTokenPermuteWithRoutingMapGrad(ws.data(), c_need - 1, exec, nullptr));
  EXPECT_EQ(st.code, 161002);
  EXPECT_NE(st.message.find("is smaller than the " + std::to_string(need) + " bytes"),
            std::string::npos)
      << st.message;
  EXPECT_TRUE(untouched(p.tokens_grad));
}

TEST(Workspace, NullWithNonzeroSizeIsANullPointer) {
  Problem p = tools::make_problem(spec(false));  // drop-less forward: block ranks
  const Plan plan = plan_permute(p.permute_desc(), PlanOptions{Backend::cpu});
  const uint64_t need = plan.workspace_bytes();
  ASSERT_GT(need, 0u);
  const Error e = capture_error([&] {
    run(plan, p.permute_data(), std::span<std::byte>(static_cast<std::byte *>(nullptr), need));
  });
  EXPECT_EQ(e.code(), Code::null_pointer);
  EXPECT_NE(std::string(e.what()).find("workspace must not be null when workspaceSize is " +
                                       std::to_string(need)),
            std::string::npos)
      << e.what();

  auto x = make_acl_tensor(p.tokens), m = make_acl_tensor(p.routing_map);
  auto pr = make_acl_tensor(p.probs), y = make_acl_tensor(p.permuted_tokens);
  auto yp = make_acl_tensor(p.permuted_probs), s = make_acl_tensor(p.sorted_indices);
  uint64_t c_need = 0;
  aclOpExecutor *exec = nullptr;
  ASSERT_EQ(aclnnMoeTokenPermuteWithRoutingMapGetWorkspaceSize(
                x.get(), m.get(), pr.get(), 8, false, y.get(), yp.get(), s.get(), &c_need, &exec),
            0);
  const CStatus st = c_status(aclnnMoeTokenPermuteWithRoutingMap(nullptr, c_need, exec, nullptr));
  EXPECT_EQ(st.code, 161001);
  EXPECT_NE(st.message.find("workspace must not be null"), std::string::npos) << st.message;
  EXPECT_TRUE(untouched(p.permuted_tokens));
  EXPECT_TRUE(untouched(p.sorted_indices));
}

TEST(PlanKind, RunningAPlanWithTheOtherOperatorsDataIsRejected) {
  Problem p = tools::make_problem(spec(false));
  const Plan fwd = plan_permute(p.permute_desc());
  const Plan bwd = plan_permute_grad(p.grad_desc());
  std::vector<std::byte> ws(std::max(fwd.workspace_bytes(), bwd.workspace_bytes()));
  run(fwd, p.permute_data(), ws);
  const Error e1 = capture_error([&] { run(fwd, p.grad_data(), ws); });
  EXPECT_EQ(e1.code(), Code::invalid_param);
  EXPECT_NE(std::string(e1.what()).find("a MoeTokenPermuteWithRoutingMap plan was given "
                                        "PermuteGradData"),
            std::string::npos);
  const Error e2 = capture_error([&] { run(bwd, p.permute_data(), ws); });
  EXPECT_EQ(e2.code(), Code::invalid_param);
  EXPECT_NE(std::string(e2.what()).find("a MoeTokenPermuteWithRoutingMapGrad plan was given "
                                        "PermuteData"),
            std::string::npos);
  EXPECT_TRUE(untouched(p.tokens_grad));
}

}  // namespace
}  // namespace moeperm::testing
