// Tests of Note [Streams]: a stream is an in-order queue; a failure of work on a stream is kept and
// returned (and cleared) by the next aclrtSynchronizeStream of that stream, with its message
// on the synchronising thread; work enqueued after a failure is skipped until then. On the
// default stream (nullptr) work is synchronous and the second phase returns its own status.
#include <acl/acl.h>
#include <gtest/gtest.h>

#include <thread>

#include "acl_support.hpp"
#include "testing.hpp"

namespace moeperm::testing {
namespace {

constexpr const char *kBadIndexMessage = "sortedIndices[5] = 99 is outside [0, 12) or -1";

// One operator call on host memory, ready to be enqueued: tensors, workspace, problem.
struct Call {
  Problem p;
  AclTensorPtr a, b, c, d, e, f;
  std::vector<std::byte> ws;
  bool grad = false;

  // The backward of a drop-less problem (T=6, E=4, K=2: R=12) whose S[5] is 99.
  static std::unique_ptr<Call> bad_grad() {
    auto call = std::make_unique<Call>();
    call->p = tools::make_problem(spec(6, 3, 4, 2));
    run_forward(call->p, Backend::reference);
    std::vector<int32_t> S = read_indices(call->p.sorted_indices);
    S[5] = 99;
    write_indices(call->p.sorted_indices, S);
    call->grad = true;
    return call;
  }
  static std::unique_ptr<Call> forward(int64_t T, int64_t H, int64_t E, int64_t K) {
    auto call = std::make_unique<Call>();
    call->p = tools::make_problem(spec(T, H, E, K));
    return call;
  }
  static ProblemSpec spec(int64_t T, int64_t H, int64_t E, int64_t K) {
    ProblemSpec s;
    s.T = T, s.H = H, s.E = E, s.K = K, s.dtype = DType::bf16, s.probs_dtype = DType::f32;
    return s;
  }

  // Phase 1 and phase 2 on `stream`; returns phase 2's status.
  int32_t enqueue(aclrtStream stream) {
    uint64_t size = 0;
    aclOpExecutor *exec = nullptr;
    if (grad) {
      a = make_acl_tensor(p.grad), b = make_acl_tensor(p.probs_grad);
      c = make_acl_tensor(p.sorted_indices), d = make_acl_tensor(p.routing_map);
      e = make_acl_tensor(p.tokens_grad), f = make_acl_tensor(p.dense_probs_grad);
      EXPECT_EQ(aclnnMoeTokenPermuteWithRoutingMapGradGetWorkspaceSize(
                    a.get(), b.get(), c.get(), d.get(), p.spec.E, p.spec.T, false, e.get(), f.get(),
                    &size, &exec),
                0);
      ws.assign(size, std::byte{0});
      return aclnnMoeTokenPermuteWithRoutingMapGrad(ws.data(), size, exec, stream);
    }
    a = make_acl_tensor(p.tokens), b = make_acl_tensor(p.routing_map);
    c = make_acl_tensor(p.probs), d = make_acl_tensor(p.permuted_tokens);
    e = make_acl_tensor(p.permuted_probs), f = make_acl_tensor(p.sorted_indices);
    EXPECT_EQ(aclnnMoeTokenPermuteWithRoutingMapGetWorkspaceSize(
                  a.get(), b.get(), c.get(), p.spec.num_out_tokens(), false, d.get(), e.get(),
                  f.get(), &size, &exec),
              0);
    ws.assign(size, std::byte{0});
    return aclnnMoeTokenPermuteWithRoutingMap(ws.data(), size, exec, stream);
  }
  bool outputs_untouched() const {
    return grad ? untouched(p.tokens_grad) && untouched(p.dense_probs_grad)
                : untouched(p.permuted_tokens) && untouched(p.sorted_indices);
  }
};

class Streams : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_EQ(aclrtCreateStream(&s1_), ACL_SUCCESS);
    ASSERT_EQ(aclrtCreateStream(&s2_), ACL_SUCCESS);
  }
  void TearDown() override {
    EXPECT_EQ(aclrtDestroyStream(s1_), ACL_SUCCESS) << aclGetRecentErrMsg();
    EXPECT_EQ(aclrtDestroyStream(s2_), ACL_SUCCESS) << aclGetRecentErrMsg();
  }
  aclrtStream s1_ = nullptr, s2_ = nullptr;
};

// Forward, then the backward that reads the forward's sortedIndices, on one stream, one
// synchronisation: the backward must see the forward's complete output.
TEST_F(Streams, WorkOnAStreamRunsInOrder) {
  Problem p = tools::make_problem(Call::spec(2000, 512, 32, 4));
  Problem ref = p;
  run_both(ref, Backend::reference);
  auto x = make_acl_tensor(p.tokens), m = make_acl_tensor(p.routing_map);
  auto pr = make_acl_tensor(p.probs), y = make_acl_tensor(p.permuted_tokens);
  auto yp = make_acl_tensor(p.permuted_probs), s = make_acl_tensor(p.sorted_indices);
  auto g = make_acl_tensor(p.grad), pg = make_acl_tensor(p.probs_grad);
  auto tg = make_acl_tensor(p.tokens_grad), pgo = make_acl_tensor(p.dense_probs_grad);
  uint64_t fws = 0, gws = 0;
  aclOpExecutor *fe = nullptr, *ge = nullptr;
  ASSERT_EQ(aclnnMoeTokenPermuteWithRoutingMapGetWorkspaceSize(
                x.get(), m.get(), pr.get(), 8000, false, y.get(), yp.get(), s.get(), &fws, &fe),
            0);
  ASSERT_EQ(
      aclnnMoeTokenPermuteWithRoutingMapGradGetWorkspaceSize(
          g.get(), pg.get(), s.get(), m.get(), 32, 2000, false, tg.get(), pgo.get(), &gws, &ge),
      0);
  std::vector<std::byte> fw(fws), gw(gws);
  ASSERT_EQ(aclnnMoeTokenPermuteWithRoutingMap(fw.data(), fws, fe, s1_), 0);
  ASSERT_EQ(aclnnMoeTokenPermuteWithRoutingMapGrad(gw.data(), gws, ge, s1_), 0);
  ASSERT_EQ(aclrtSynchronizeStream(s1_), ACL_SUCCESS) << aclGetRecentErrMsg();
  EXPECT_TRUE(SameOutputs(p, ref));
}

TEST_F(Streams, IndexErrorSurfacesAtSynchronize) {
  auto call = Call::bad_grad();
  EXPECT_EQ(call->enqueue(s1_), 0);  // enqueued: the error is not known yet
  EXPECT_EQ(aclrtSynchronizeStream(s1_), 161002);
  EXPECT_NE(std::string(aclGetRecentErrMsg()).find(kBadIndexMessage), std::string::npos)
      << aclGetRecentErrMsg();
  EXPECT_TRUE(call->outputs_untouched());
  EXPECT_EQ(aclrtSynchronizeStream(s1_), ACL_SUCCESS);  // reported once, then cleared
}

TEST_F(Streams, TheMessageIsOnTheSynchronisingThread) {
  void *p = nullptr;
  ASSERT_EQ(aclrtMalloc(&p, 0, ACL_MEM_MALLOC_HUGE_FIRST), ACL_ERROR_INVALID_PARAM);
  const std::string main_message = aclGetRecentErrMsg();
  auto call = Call::bad_grad();
  ASSERT_EQ(call->enqueue(s1_), 0);
  int status = 0;
  std::string message;
  std::thread syncer([&] {
    status = aclrtSynchronizeStream(s1_);
    message = aclGetRecentErrMsg();
  });
  syncer.join();
  EXPECT_EQ(status, 161002);
  EXPECT_NE(message.find(kBadIndexMessage), std::string::npos) << message;
  EXPECT_EQ(std::string(aclGetRecentErrMsg()), main_message);  // per-thread messages
}

TEST_F(Streams, WorkAfterAFailureIsSkippedUntilSynchronize) {
  auto bad = Call::bad_grad();
  auto later = Call::forward(50, 8, 6, 2);
  ASSERT_EQ(bad->enqueue(s1_), 0);
  ASSERT_EQ(later->enqueue(s1_), 0);
  EXPECT_EQ(aclrtSynchronizeStream(s1_), 161002);
  EXPECT_TRUE(later->outputs_untouched());
  // Once the failure is collected the stream runs work again.
  ASSERT_EQ(later->enqueue(s1_), 0);
  ASSERT_EQ(aclrtSynchronizeStream(s1_), ACL_SUCCESS) << aclGetRecentErrMsg();
  Problem ref = tools::make_problem(later->p.spec);
  run_forward(ref, Backend::reference);
  EXPECT_TRUE(BitwiseEqual(later->p.permuted_tokens, ref.permuted_tokens));
}

TEST_F(Streams, ErrorsStayOnTheirStream) {
  auto bad = Call::bad_grad();
  auto good = Call::forward(50, 8, 6, 2);
  ASSERT_EQ(bad->enqueue(s1_), 0);
  ASSERT_EQ(good->enqueue(s2_), 0);
  EXPECT_EQ(aclrtSynchronizeStream(s2_), ACL_SUCCESS) << aclGetRecentErrMsg();
  EXPECT_EQ(aclrtSynchronizeStream(s1_), 161002);
}

TEST_F(Streams, DefaultStreamReturnsTheErrorFromTheSecondPhase) {
  auto call = Call::bad_grad();
  EXPECT_EQ(call->enqueue(nullptr), 161002);
  EXPECT_NE(std::string(aclGetRecentErrMsg()).find(kBadIndexMessage), std::string::npos)
      << aclGetRecentErrMsg();
  EXPECT_TRUE(call->outputs_untouched());
}

TEST_F(Streams, SynchronizingTheDefaultStreamWaitsForEveryStream) {
  auto a = Call::forward(1000, 256, 16, 4), b = Call::forward(700, 128, 8, 2);
  ASSERT_EQ(a->enqueue(s1_), 0);
  ASSERT_EQ(b->enqueue(s2_), 0);
  ASSERT_EQ(aclrtSynchronizeStream(nullptr), ACL_SUCCESS) << aclGetRecentErrMsg();
  for (Call *c : {a.get(), b.get()}) {
    Problem ref = tools::make_problem(c->p.spec);
    run_forward(ref, Backend::reference);
    EXPECT_TRUE(SameOutputs(c->p, ref));
  }
}

TEST_F(Streams, DestroyingAStreamReportsAnUncollectedError) {
  aclrtStream s = nullptr;
  ASSERT_EQ(aclrtCreateStream(&s), ACL_SUCCESS);
  auto call = Call::bad_grad();
  ASSERT_EQ(call->enqueue(s), 0);
  EXPECT_EQ(aclrtDestroyStream(s), 161002);
  EXPECT_NE(
      std::string(aclGetRecentErrMsg()).find("work on the stream failed before it was destroyed"),
      std::string::npos)
      << aclGetRecentErrMsg();
}

TEST_F(Streams, DestroyedOrUnknownStreamsAreRejected) {
  aclrtStream s = nullptr;
  ASSERT_EQ(aclrtCreateStream(&s), ACL_SUCCESS);
  ASSERT_EQ(aclrtDestroyStream(s), ACL_SUCCESS);
  EXPECT_EQ(aclrtSynchronizeStream(s), ACL_ERROR_INVALID_PARAM);
  EXPECT_EQ(aclrtDestroyStream(s), ACL_ERROR_INVALID_PARAM);
  auto call = Call::forward(20, 4, 4, 1);
  EXPECT_EQ(call->enqueue(s), 161002);  // and the executor is consumed: nothing leaks
  EXPECT_NE(std::string(aclGetRecentErrMsg()).find("was not created by aclrtCreateStream"),
            std::string::npos)
      << aclGetRecentErrMsg();
  EXPECT_TRUE(call->outputs_untouched());
}

// The failure belongs to the next aclrtSynchronizeStream of its stream (Note [Streams]); a
// synchronous runtime call in between (which drains the streams) must not swallow it.
TEST_F(Streams, ErrorSurvivesAnUnrelatedMemcpy) {
  auto call = Call::bad_grad();
  ASSERT_EQ(call->enqueue(s1_), 0);
  int src = 1, dst = 0;
  ASSERT_EQ(aclrtMemcpy(&dst, sizeof dst, &src, sizeof src, ACL_MEMCPY_HOST_TO_HOST), 0);
  EXPECT_EQ(aclrtSynchronizeStream(s1_), 161002)
      << "the failure of work on the stream was lost by aclrtMemcpy";
}

// Default-stream work runs after the streams drain and returns its *own* status (Note
// [Streams]); a failure pending on another stream is not its failure and must not stop it.
TEST_F(Streams, PendingErrorOnAStreamDoesNotHijackDefaultStreamWork) {
  auto bad = Call::bad_grad();
  ASSERT_EQ(bad->enqueue(s1_), 0);
  auto good = Call::forward(50, 8, 6, 2);
  EXPECT_EQ(good->enqueue(nullptr), 0) << aclGetRecentErrMsg();
  EXPECT_FALSE(good->outputs_untouched()) << "the default-stream operator did not run";
  EXPECT_EQ(aclrtSynchronizeStream(s1_), 161002) << "the stream's failure was lost";
}

}  // namespace
}  // namespace moeperm::testing
