// The CUDA backend's own contract (label gpu; skipped without a GPU): where a data error
// surfaces (Note [Device errors]), run_async's completion callback, streams in parallel,
// and the rejection of host memory by GPU plans.
#include <acl/acl.h>
#include <gtest/gtest.h>

#include <atomic>
#include <string>
#include <thread>
#include <vector>

#include "acl_support.hpp"
#include "naive.hpp"
#include "testing.hpp"

namespace moeperm::testing {
namespace {

class Gpu : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!cuda_built()) GTEST_SKIP() << "no CUDA GPU: this moeperm was built without CUDA";
    if (cuda_device_count() == 0) GTEST_SKIP() << "no CUDA GPU: the CUDA driver reports none";
    ScopedEnv env("MOEPERM_DEVICE", "cuda");
    ASSERT_EQ(aclrtSetDevice(0), ACL_SUCCESS) << aclGetRecentErrMsg();
  }
};

ProblemSpec spec(bool drop_and_pad, uint64_t seed) {
  ProblemSpec s;
  s.T = 37, s.H = 129, s.E = 9, s.K = 3, s.capacity = 5;
  s.drop_and_pad = drop_and_pad;
  s.dtype = DType::bf16, s.probs_dtype = DType::f32;
  s.seed = seed;
  return s;
}

// A backward problem with a valid S, then one index broken at position `bad`.
Problem broken_backward(bool drop_and_pad, int64_t bad) {
  Problem p = tools::make_problem(spec(drop_and_pad, 7));
  run_forward(p, Backend::reference);
  std::vector<int32_t> s = read_indices(p.sorted_indices);
  s[static_cast<size_t>(bad)] = 1 << 30;
  write_indices(p.sorted_indices, s);
  return p;
}

void *upload(const HostTensor &t) {
  void *d = nullptr;
  EXPECT_EQ(aclrtMalloc(&d, t.storage.size(), ACL_MEM_MALLOC_HUGE_FIRST), ACL_SUCCESS);
  EXPECT_EQ(aclrtMemcpy(d, t.storage.size(), t.storage.data(), t.storage.size(),
                        ACL_MEMCPY_HOST_TO_DEVICE),
            ACL_SUCCESS);
  return d;
}

// On an aclrtStream the second phase only enqueues: the data error is returned by the next
// aclrtSynchronizeStream, and nothing was written.
TEST_F(Gpu, DataErrorSurfacesAtStreamSynchronize) {
  for (bool dp : {false, true}) {
    Problem p = broken_backward(dp, 4);
    void *g = upload(p.grad), *s = upload(p.sorted_indices), *m = upload(p.routing_map),
         *tg = upload(p.tokens_grad), *pg = upload(p.probs_grad), *dg = upload(p.dense_probs_grad);
    auto G = make_acl_tensor(p.grad.desc, g), S = make_acl_tensor(p.sorted_indices.desc, s),
         M = make_acl_tensor(p.routing_map.desc, m), TG = make_acl_tensor(p.tokens_grad.desc, tg),
         P = make_acl_tensor(p.probs_grad.desc, pg),
         DG = make_acl_tensor(p.dense_probs_grad.desc, dg);
    aclrtStream stream = nullptr;
    ASSERT_EQ(aclrtCreateStream(&stream), ACL_SUCCESS);
    uint64_t ws_size = 0;
    aclOpExecutor *exec = nullptr;
    ASSERT_EQ(aclnnMoeTokenPermuteWithRoutingMapGradGetWorkspaceSize(
                  G.get(), P.get(), S.get(), M.get(), p.spec.E, p.spec.T, dp, TG.get(), DG.get(),
                  &ws_size, &exec),
              0)
        << aclGetRecentErrMsg();
    void *ws = nullptr;
    if (ws_size) {
      ASSERT_EQ(aclrtMalloc(&ws, ws_size, ACL_MEM_MALLOC_HUGE_FIRST), ACL_SUCCESS);
    }
    EXPECT_EQ(aclnnMoeTokenPermuteWithRoutingMapGrad(ws, ws_size, exec, stream), 0)
        << "the second phase on a stream only enqueues";
    EXPECT_EQ(aclrtSynchronizeStream(stream), 161002);
    EXPECT_NE(std::string(aclGetRecentErrMsg()).find("sortedIndices[4] = 1073741824"),
              std::string::npos)
        << aclGetRecentErrMsg();
    EXPECT_EQ(aclrtSynchronizeStream(stream), ACL_SUCCESS) << "the error is returned once";
    HostTensor out = poisoned_like(p.tokens_grad);
    ASSERT_EQ(aclrtMemcpy(out.storage.data(), out.storage.size(), tg, out.storage.size(),
                          ACL_MEMCPY_DEVICE_TO_HOST),
              ACL_SUCCESS);
    EXPECT_TRUE(untouched(out)) << "a failed run writes nothing";
    EXPECT_EQ(aclrtDestroyStream(stream), ACL_SUCCESS);
    for (void *d : {g, s, m, tg, pg, dg, ws})
      if (d) {
        EXPECT_EQ(aclrtFree(d), ACL_SUCCESS);
      }
  }
}

// The default stream is synchronous: the second phase itself returns the data error.
TEST_F(Gpu, DefaultStreamReturnsTheDataErrorFromTheSecondPhase) {
  Problem p = broken_backward(false, 9);
  const CStatus st = c_backward(p, Backend::cuda);
  EXPECT_EQ(st.code, 161002);
  EXPECT_NE(st.message.find("sortedIndices[9] = 1073741824"), std::string::npos) << st.message;
  EXPECT_TRUE(untouched(p.tokens_grad));
}

struct Outcome {
  std::atomic<int> calls{0};
  std::atomic<int> code{-1};
};

void record(void *context, Code code, const char *) {
  auto *o = static_cast<Outcome *>(context);
  o->code = static_cast<int>(code);
  ++o->calls;
}

// run_async calls back exactly once per run: code 0, or the data error.
TEST_F(Gpu, RunAsyncReportsEachOutcomeOnce) {
  for (int bad : {-1, 2}) {
    Problem p = bad < 0 ? tools::make_problem(spec(false, 3)) : broken_backward(false, bad);
    if (bad < 0) run_forward(p, Backend::reference);
    void *g = upload(p.grad), *s = upload(p.sorted_indices), *m = upload(p.routing_map),
         *tg = upload(p.tokens_grad);
    ProblemSpec no_probs = p.spec;
    no_probs.with_probs = false;
    Problem shape = tools::make_problem(no_probs);
    const Plan plan = plan_permute_grad(shape.grad_desc(), {Backend::cuda});
    void *ws = nullptr;
    if (plan.workspace_bytes()) {
      ASSERT_EQ(aclrtMalloc(&ws, plan.workspace_bytes(), ACL_MEM_MALLOC_HUGE_FIRST), ACL_SUCCESS);
    }
    Outcome outcome;
    run_async(plan, PermuteGradData{g, nullptr, s, m, tg, nullptr},
              {static_cast<std::byte *>(ws), plan.workspace_bytes()}, nullptr, record, &outcome);
    ASSERT_EQ(aclrtSynchronizeDevice(), ACL_SUCCESS);
    EXPECT_EQ(outcome.calls.load(), 1);
    EXPECT_EQ(outcome.code.load(), bad < 0 ? 0 : 161002);
    for (void *d : {g, s, m, tg, ws})
      if (d) {
        EXPECT_EQ(aclrtFree(d), ACL_SUCCESS);
      }
  }
}

// A GPU plan given host memory is rejected before any launch (no illegal access).
TEST_F(Gpu, HostMemoryIsRejected) {
  Problem p = tools::make_problem(spec(false, 5));
  ScopedEnv env("MOEPERM_TEST_DEVICE", "cpu");  // c_forward below must pass host memory
  const CStatus st = c_forward(p);
  EXPECT_EQ(st.code, 161002);
  EXPECT_NE(st.message.find("expected GPU memory"), std::string::npos) << st.message;
  EXPECT_TRUE(untouched(p.permuted_tokens));
}

// Threads on their own streams, sharing read-only inputs, all get the reference's bits.
TEST_F(Gpu, StreamsInParallelMatchTheReference) {
  Problem want = tools::make_problem(spec(true, 11));
  run_both(want, Backend::reference);
  std::vector<std::thread> threads;
  std::atomic<int> mismatches{0};
  for (int i = 0; i < 4; ++i)
    threads.emplace_back([&] {
      Problem p = tools::make_problem(spec(true, 11));
      run_forward(p, Backend::cuda);
      run_backward(p, Backend::cuda);
      if (count_bit_differences(p.tokens_grad, want.tokens_grad) != 0 ||
          count_bit_differences(p.permuted_tokens, want.permuted_tokens) != 0)
        ++mismatches;
    });
  for (std::thread &t : threads) t.join();
  EXPECT_EQ(mismatches.load(), 0);
}

}  // namespace
}  // namespace moeperm::testing
