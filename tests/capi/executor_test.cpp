// Note [Executor lifetime] / SPEC §6: an aclOpExecutor is single-use; the second phase
// consumes and frees it on every path, failures included, and misuse is an error, never a
// crash. The global environment's aclFinalize (acl_environment.cpp) fails if any executor
// created here is still alive at the end.
#include <acl/acl.h>
#include <gtest/gtest.h>

#include <thread>

#include "acl_support.hpp"
#include "testing.hpp"

namespace moeperm::testing {
namespace {

constexpr const char *kNotLive = "executor is not live";

// A small drop-and-pad problem (its CPU backward needs a workspace) and live aclTensors
// over its host storage.
struct Fixture {
  Problem p;
  AclTensorPtr x, m, pr, y, yp, s, g, pg, tg, pgo;

  Fixture() {
    ProblemSpec spec;
    spec.T = 10, spec.H = 6, spec.E = 4, spec.K = 2, spec.capacity = 3, spec.drop_and_pad = true;
    spec.dtype = spec.probs_dtype = DType::f32;
    p = tools::make_problem(spec);
    x = make_acl_tensor(p.tokens), m = make_acl_tensor(p.routing_map);
    pr = make_acl_tensor(p.probs), y = make_acl_tensor(p.permuted_tokens);
    yp = make_acl_tensor(p.permuted_probs), s = make_acl_tensor(p.sorted_indices);
    g = make_acl_tensor(p.grad), pg = make_acl_tensor(p.probs_grad);
    tg = make_acl_tensor(p.tokens_grad), pgo = make_acl_tensor(p.dense_probs_grad);
  }
  aclOpExecutor *forward(uint64_t *ws) {
    aclOpExecutor *e = nullptr;
    EXPECT_EQ(aclnnMoeTokenPermuteWithRoutingMapGetWorkspaceSize(
                  x.get(), m.get(), pr.get(), 12, true, y.get(), yp.get(), s.get(), ws, &e),
              0)
        << aclGetRecentErrMsg();
    return e;
  }
  aclOpExecutor *grad(uint64_t *ws) {
    aclOpExecutor *e = nullptr;
    EXPECT_EQ(aclnnMoeTokenPermuteWithRoutingMapGradGetWorkspaceSize(
                  g.get(), pg.get(), s.get(), m.get(), 4, 10, true, tg.get(), pgo.get(), ws, &e),
              0)
        << aclGetRecentErrMsg();
    return e;
  }
};

TEST(Executor, NullExecutorIsANullPointerError) {
  EXPECT_EQ(aclnnMoeTokenPermuteWithRoutingMap(nullptr, 0, nullptr, nullptr), 161001);
  EXPECT_NE(std::string(aclGetRecentErrMsg())
                .find("aclnnMoeTokenPermuteWithRoutingMap: executor must not be null"),
            std::string::npos)
      << aclGetRecentErrMsg();
  EXPECT_EQ(aclnnMoeTokenPermuteWithRoutingMapGrad(nullptr, 0, nullptr, nullptr), 161001);
  EXPECT_NE(std::string(aclGetRecentErrMsg())
                .find("aclnnMoeTokenPermuteWithRoutingMapGrad: executor must not be null"),
            std::string::npos)
      << aclGetRecentErrMsg();
}

TEST(Executor, ExecutingTwiceIsAnErrorNotACrash) {
  Fixture f;
  uint64_t ws = 0;
  aclOpExecutor *e = f.forward(&ws);
  std::vector<std::byte> work(ws);
  ASSERT_EQ(aclnnMoeTokenPermuteWithRoutingMap(work.data(), ws, e, nullptr), 0);
  const std::vector<int32_t> first = read_indices(f.p.sorted_indices);
  write_indices(f.p.sorted_indices, std::vector<int32_t>(first.size(), 77));
  EXPECT_EQ(aclnnMoeTokenPermuteWithRoutingMap(work.data(), ws, e, nullptr), 161002);
  EXPECT_NE(std::string(aclGetRecentErrMsg()).find(kNotLive), std::string::npos)
      << aclGetRecentErrMsg();
  EXPECT_EQ(read_indices(f.p.sorted_indices), std::vector<int32_t>(first.size(), 77));
}

TEST(Executor, ForwardExecutorGivenToGradIsRejectedAndConsumed) {
  Fixture f;
  uint64_t ws = 0;
  aclOpExecutor *e = f.forward(&ws);
  std::vector<std::byte> work(ws + 1024);
  EXPECT_EQ(aclnnMoeTokenPermuteWithRoutingMapGrad(work.data(), work.size(), e, nullptr), 161002);
  EXPECT_NE(std::string(aclGetRecentErrMsg())
                .find("executor was created by "
                      "aclnnMoeTokenPermuteWithRoutingMapGetWorkspaceSize"),
            std::string::npos)
      << aclGetRecentErrMsg();
  EXPECT_TRUE(untouched(f.p.permuted_tokens));
  EXPECT_TRUE(untouched(f.p.tokens_grad));
  // Consumed by the failing call: the right operator cannot run it any more.
  EXPECT_EQ(aclnnMoeTokenPermuteWithRoutingMap(work.data(), ws, e, nullptr), 161002);
  EXPECT_NE(std::string(aclGetRecentErrMsg()).find(kNotLive), std::string::npos);
  EXPECT_TRUE(untouched(f.p.permuted_tokens));
}

TEST(Executor, GradExecutorGivenToForwardIsRejected) {
  Fixture f;
  uint64_t ws = 0;
  aclOpExecutor *e = f.grad(&ws);
  std::vector<std::byte> work(ws);
  EXPECT_EQ(aclnnMoeTokenPermuteWithRoutingMap(work.data(), ws, e, nullptr), 161002);
  EXPECT_NE(std::string(aclGetRecentErrMsg())
                .find("executor was created by "
                      "aclnnMoeTokenPermuteWithRoutingMapGradGetWorkspaceSize"),
            std::string::npos)
      << aclGetRecentErrMsg();
  EXPECT_TRUE(untouched(f.p.tokens_grad));
}

TEST(Executor, WorkspaceOneByteShortFailsAndFreesTheExecutor) {
  Fixture f;
  uint64_t ws = 0;
  aclOpExecutor *e = f.grad(&ws);
  ASSERT_GT(ws, 0u);
  std::vector<std::byte> work(ws);
  EXPECT_EQ(aclnnMoeTokenPermuteWithRoutingMapGrad(work.data(), ws - 1, e, nullptr), 161002);
  EXPECT_NE(std::string(aclGetRecentErrMsg())
                .find("workspaceSize = " + std::to_string(ws - 1) + " is smaller than the " +
                      std::to_string(ws) + " bytes the first phase asked for"),
            std::string::npos)
      << aclGetRecentErrMsg();
  EXPECT_EQ(aclnnMoeTokenPermuteWithRoutingMapGrad(work.data(), ws, e, nullptr), 161002);
  EXPECT_NE(std::string(aclGetRecentErrMsg()).find(kNotLive), std::string::npos)
      << aclGetRecentErrMsg();
  EXPECT_TRUE(untouched(f.p.tokens_grad));
}

TEST(Executor, UnknownHandleIsNotLive) {
  auto *bogus = reinterpret_cast<aclOpExecutor *>(uintptr_t{0xdead0});
  EXPECT_EQ(aclnnMoeTokenPermuteWithRoutingMapGrad(nullptr, 0, bogus, nullptr), 161002);
  EXPECT_NE(std::string(aclGetRecentErrMsg()).find("was not created by a GetWorkspaceSize call"),
            std::string::npos)
      << aclGetRecentErrMsg();
}

TEST(Executor, FirstPhaseNeedsItsOutParameters) {
  Fixture f;
  aclOpExecutor *e = nullptr;
  uint64_t ws = 0;
  EXPECT_EQ(aclnnMoeTokenPermuteWithRoutingMapGradGetWorkspaceSize(
                f.g.get(), f.pg.get(), f.s.get(), f.m.get(), 4, 10, true, f.tg.get(), f.pgo.get(),
                nullptr, &e),
            161001);
  EXPECT_NE(std::string(aclGetRecentErrMsg()).find("workspaceSize must not be null"),
            std::string::npos);
  EXPECT_EQ(e, nullptr);
  EXPECT_EQ(aclnnMoeTokenPermuteWithRoutingMapGetWorkspaceSize(f.x.get(), f.m.get(), f.pr.get(), 12,
                                                               true, f.y.get(), f.yp.get(),
                                                               f.s.get(), &ws, nullptr),
            161001);
  EXPECT_NE(std::string(aclGetRecentErrMsg()).find("executor must not be null"), std::string::npos);
}

// Executors hold pointers, not copies: data written between the phases is what runs, and
// two live executors run in either order.
TEST(Executor, ExecutorsBindPointersAndRunInAnyOrder) {
  Fixture f;
  Problem ref = f.p;
  uint64_t fws = 0, gws = 0;
  aclOpExecutor *fe = f.forward(&fws);
  std::mt19937_64 rng(99);
  tools::fill_random(f.p.tokens, rng);  // new tokens after phase 1
  ref.tokens = f.p.tokens;
  run_both(ref, Backend::reference);
  std::vector<std::byte> fw(fws);
  ASSERT_EQ(aclnnMoeTokenPermuteWithRoutingMap(fw.data(), fws, fe, nullptr), 0);
  aclOpExecutor *ge1 = f.grad(&gws);
  aclOpExecutor *ge2 = f.grad(&gws);
  std::vector<std::byte> gw(gws);
  ASSERT_EQ(aclnnMoeTokenPermuteWithRoutingMapGrad(gw.data(), gws, ge2, nullptr), 0);
  ASSERT_EQ(aclnnMoeTokenPermuteWithRoutingMapGrad(gw.data(), gws, ge1, nullptr), 0);
  EXPECT_TRUE(SameOutputs(f.p, ref));
}

// Several threads, each running its own problems through both phases on the default stream
// (executors are created and consumed concurrently): every result is right.
TEST(Executor, ConcurrentCallersOnTheDefaultStream) {
  constexpr int kThreads = 4, kRounds = 5;
  std::vector<int> wrong(kThreads, 0);
  std::vector<std::thread> threads;
  for (int i = 0; i < kThreads; ++i)
    threads.emplace_back([i, &wrong] {
      for (int round = 0; round < kRounds; ++round) {
        ProblemSpec s;
        s.T = 64 + i, s.H = 24, s.E = 8, s.K = 2, s.capacity = 9, s.drop_and_pad = (i + round) % 2;
        s.dtype = DType::bf16, s.probs_dtype = DType::f32;
        s.seed = static_cast<uint64_t>(100 * i + round);
        Problem p = tools::make_problem(s);
        Problem ref = p;
        run_both(ref, Backend::reference);
        const bool ok = c_forward(p).code == 0 && c_backward(p).code == 0 && SameOutputs(p, ref);
        wrong[static_cast<size_t>(i)] += !ok;
      }
    });
  for (std::thread &t : threads) t.join();
  EXPECT_EQ(wrong, std::vector<int>(kThreads, 0));
}

// A failing first phase creates no executor (aclFinalize in the environment would notice).
TEST(Executor, FailedFirstPhaseLeavesNoExecutor) {
  Fixture f;
  aclOpExecutor *e = nullptr;
  uint64_t ws = 0;
  EXPECT_EQ(
      aclnnMoeTokenPermuteWithRoutingMapGradGetWorkspaceSize(
          f.g.get(), f.pg.get(), f.s.get(), nullptr, 4, 10, true, f.tg.get(), f.pgo.get(), &ws, &e),
      161001);
  EXPECT_EQ(e, nullptr);
}

}  // namespace
}  // namespace moeperm::testing
