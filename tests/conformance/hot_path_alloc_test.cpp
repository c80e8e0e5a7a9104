// The second phase allocates nothing (issue: "no heap allocation on the hot path"): with a
// plan built and its workspace allocated, moeperm::run() of the CPU backend performs no
// operator new, in either mode, for any of the four operators of the token path. Counted by
// replacing the global operator new of this test binary (the library's calls resolve to it as
// well). The fast host backends over the full matrix (every CPU variant at 1 and all threads: the
// thread pool is part of the hot path; 2 token blocks, so threads split the work).
#include <gtest/gtest.h>
#include <moeperm/moeperm.hpp>

#include <atomic>
#include <cstdlib>
#include <new>
#include <vector>

#include "backend_matrix.hpp"
#include "problem_model.hpp"

namespace {
std::atomic<long> g_news{0};
}

// The replacements pair malloc with free by design; GCC cannot see that operator new is
// replaced and warns about a new-expression released with free.
#pragma GCC diagnostic ignored "-Wmismatched-new-delete"

void *operator new(std::size_t n) {
  ++g_news;
  if (void *p = std::malloc(n ? n : 1)) return p;
  throw std::bad_alloc();
}
void operator delete(void *p) noexcept { std::free(p); }
void operator delete(void *p, std::size_t) noexcept { std::free(p); }

namespace {

using moeperm::testing::BackendConfig;
using Param = std::tuple<bool, BackendConfig>;  // dropAndPad, backend
class HotPathAllocations : public moeperm::testing::BackendCase<Param> {};

TEST_P(HotPathAllocations, RunAllocatesNothing) {
  moeperm::tools::ProblemSpec s;
  s.T = 301, s.H = 257, s.E = 9, s.K = 3, s.capacity = 29, s.drop_and_pad = std::get<0>(GetParam());
  moeperm::tools::Problem p = moeperm::tools::make_problem(s);
  moeperm::tools::UnpermuteTensors u = moeperm::tools::make_unpermute_tensors(p);
  const moeperm::Plan fwd = moeperm::plan_permute(p.permute_desc(), {backend()});
  const moeperm::Plan bwd = moeperm::plan_permute_grad(p.grad_desc(), {backend()});
  const moeperm::Plan un =
      moeperm::plan_unpermute(moeperm::tools::unpermute_desc(p, u), {backend()});
  const moeperm::Plan un_bwd =
      moeperm::plan_unpermute_grad(moeperm::tools::unpermute_grad_desc(p, u), {backend()});
  ASSERT_STREQ(fwd.backend_name(), config().info.name);
  ASSERT_STREQ(un.backend_name(), config().info.name);
  ASSERT_STREQ(un_bwd.backend_name(), config().info.name);
  std::vector<std::byte> ws_f(fwd.workspace_bytes()), ws_b(bwd.workspace_bytes());
  std::vector<std::byte> ws_u(un.workspace_bytes()), ws_ub(un_bwd.workspace_bytes());
  const moeperm::PermuteData fd = p.permute_data();
  const moeperm::PermuteGradData bd = p.grad_data();
  const moeperm::UnpermuteData ud = moeperm::tools::unpermute_data(p, u);
  const moeperm::UnpermuteGradData ubd = moeperm::tools::unpermute_grad_data(p, u);
  auto token_path = [&] {  // each reads what the one before wrote
    moeperm::run(fwd, fd, ws_f);
    moeperm::run(un, ud, ws_u);
    moeperm::run(un_bwd, ubd, ws_ub);
    moeperm::run(bwd, bd, ws_b);
  };
  token_path();  // warm-up: the thread pool starts here

  const long before = g_news.load();
  for (int i = 0; i < 3; ++i) token_path();
  EXPECT_EQ(g_news.load() - before, 0) << "operator new calls during run()";

  // The counter does see the library's allocations: the one-shot convenience plans and
  // allocates its workspace on every call.
  const long one_shot = g_news.load();
  moeperm::permute_grad(p.grad_desc(), bd, {backend()});
  EXPECT_GT(g_news.load() - one_shot, 0);
}

INSTANTIATE_TEST_SUITE_P(
    BothModes, HotPathAllocations,
    ::testing::Combine(::testing::Bool(), ::testing::ValuesIn(moeperm::testing::backend_configs(
                                              moeperm::testing::Matrix::full, {.devices = false}))),
    [](const ::testing::TestParamInfo<Param> &param_info) {
      return std::string(std::get<0>(param_info.param) ? "drop_and_pad_" : "dropless_") +
             moeperm::testing::config_name(std::get<1>(param_info.param));
    });

}  // namespace
