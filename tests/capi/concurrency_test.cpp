// Concurrency (docs/robustness.md): many threads call both operators at once, sharing the
// read-only inputs and writing their own outputs. Half of them go through the C API on a
// stream of their own (forward, then the backward that reads the forward's sortedIndices,
// one synchronisation); the other half call the C++ API's run() on plans shared by every
// thread. Every result must be the reference's, bit for bit, and the shared inputs must be
// unchanged. The tsan preset runs this binary under ThreadSanitizer.
#include <acl/acl.h>
#include <gtest/gtest.h>

#include <array>
#include <atomic>
#include <string>
#include <thread>
#include <vector>

#include "acl_support.hpp"
#include "testing.hpp"

namespace moeperm::testing {
namespace {

constexpr int kThreads = 8;
constexpr int kRounds = 10;

// The two modes' problems: inputs (shared by every thread) and reference outputs.
struct Shared {
  std::array<Problem, 2> input;  // [0] drop-less, [1] drop-and-pad; outputs poisoned
  std::array<Problem, 2> want;   // the reference's outputs (forward and backward)
  std::array<Plan, 2> forward_plans{Plan(nullptr), Plan(nullptr)};
  std::array<Plan, 2> grad_plans{Plan(nullptr), Plan(nullptr)};

  Shared() {
    for (int mode = 0; mode < 2; ++mode) {
      ProblemSpec spec;
      spec.T = 301, spec.H = 263, spec.E = 12, spec.K = 3, spec.capacity = 41;
      spec.drop_and_pad = mode == 1;
      spec.dtype = mode == 1 ? DType::f16 : DType::bf16;
      spec.probs_dtype = mode == 1 ? DType::f16 : DType::f32;
      spec.seed = 7 + static_cast<uint64_t>(mode);
      const auto m = static_cast<size_t>(mode);
      input[m] = tools::make_problem(spec);
      want[m] = input[m];
      run_both(want[m], Backend::reference);
      // The backward's inputs are shared too, S included: every caller's backward must
      // read the same S its own forward writes.
      input[m].sorted_indices = want[m].sorted_indices;
      forward_plans[m] = plan_permute(input[m].permute_desc());
      grad_plans[m] = plan_permute_grad(input[m].grad_desc());
    }
  }
};

// One caller's outputs for one mode: fresh poisoned tensors, the shared problem's layout.
struct Outputs {
  HostTensor y, yp, s, tg, pg;
  explicit Outputs(const Problem &p)
      : y(poisoned_like(p.permuted_tokens)),
        yp(poisoned_like(p.permuted_probs)),
        s(poisoned_like(p.sorted_indices)),
        tg(poisoned_like(p.tokens_grad)),
        pg(poisoned_like(p.dense_probs_grad)) {}

  bool matches(const Problem &want) const {
    return BitwiseEqual(y, want.permuted_tokens) && BitwiseEqual(yp, want.permuted_probs) &&
           BitwiseEqual(s, want.sorted_indices) && BitwiseEqual(tg, want.tokens_grad) &&
           BitwiseEqual(pg, want.dense_probs_grad);
  }
};

AclTensorPtr shared_tensor(const HostTensor &t) {
  // The operators only read inputs; the C API's aclTensor takes a non-const pointer.
  return make_acl_tensor(t.desc, const_cast<void *>(t.data()));
}

// Forward and backward of `in` through the C API on `stream`; outputs into `out`.
// Returns the first failing status with its message, or an empty string.
std::string c_api_call(const Problem &in, Outputs &out, aclrtStream stream) {
  const ProblemSpec &spec = in.spec;
  auto x = shared_tensor(in.tokens), m = shared_tensor(in.routing_map);
  auto pr = shared_tensor(in.probs), g = shared_tensor(in.grad);
  auto pgi = shared_tensor(in.probs_grad);
  auto y = make_acl_tensor(out.y), yp = make_acl_tensor(out.yp), s = make_acl_tensor(out.s);
  auto tg = make_acl_tensor(out.tg), pg = make_acl_tensor(out.pg);
  uint64_t fws = 0, gws = 0;
  aclOpExecutor *fe = nullptr, *ge = nullptr;
  if (aclnnMoeTokenPermuteWithRoutingMapGetWorkspaceSize(x.get(), m.get(), pr.get(),
                                                         spec.num_out_tokens(), spec.drop_and_pad,
                                                         y.get(), yp.get(), s.get(), &fws, &fe))
    return std::string("forward phase 1: ") + aclGetRecentErrMsg();
  if (aclnnMoeTokenPermuteWithRoutingMapGradGetWorkspaceSize(g.get(), pgi.get(), s.get(), m.get(),
                                                             spec.E, spec.T, spec.drop_and_pad,
                                                             tg.get(), pg.get(), &gws, &ge)) {
    discard_executor(fe, false);
    return std::string("backward phase 1: ") + aclGetRecentErrMsg();
  }
  std::vector<std::byte> fw(fws), gw(gws);
  if (aclnnMoeTokenPermuteWithRoutingMap(fw.data(), fws, fe, stream)) {
    discard_executor(ge, true);
    return std::string("forward phase 2: ") + aclGetRecentErrMsg();
  }
  if (aclnnMoeTokenPermuteWithRoutingMapGrad(gw.data(), gws, ge, stream))
    return std::string("backward phase 2: ") + aclGetRecentErrMsg();
  if (aclrtSynchronizeStream(stream)) return std::string("synchronize: ") + aclGetRecentErrMsg();
  return {};
}

// Forward and backward of `in` through the C++ API on the shared plans.
void cxx_api_call(const Shared &shared, int mode, Outputs &out) {
  const Problem &in = shared.input[static_cast<size_t>(mode)];
  PermuteData fd;
  fd.tokens = in.tokens.data(), fd.routing_map = in.routing_map.data(), fd.probs = in.probs.data();
  fd.permuted_tokens = out.y.data(), fd.permuted_probs = out.yp.data();
  fd.sorted_indices = out.s.data();
  const Plan &fp = shared.forward_plans[static_cast<size_t>(mode)];
  std::vector<std::byte> fw(fp.workspace_bytes());
  run(fp, fd, fw);
  PermuteGradData gd;
  gd.permuted_token_output_grad = in.grad.data(),
  gd.permuted_probs_output_grad = in.probs_grad.data();
  gd.sorted_indices = out.s.data(), gd.routing_map = in.routing_map.data();
  gd.tokens_grad_out = out.tg.data(), gd.probs_grad_out = out.pg.data();
  const Plan &gp = shared.grad_plans[static_cast<size_t>(mode)];
  std::vector<std::byte> gw(gp.workspace_bytes());
  run(gp, gd, gw);
}

TEST(Concurrency, ManyThreadsBothOperatorsBothApisSharedInputs) {
  const Shared shared;
  const Shared pristine;  // the same problems again, to prove the inputs stay unchanged
  std::vector<std::string> failures(kThreads);
  std::atomic<int> ready{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t)
    threads.emplace_back([&, t] {
      std::string &failure = failures[static_cast<size_t>(t)];
      aclrtStream stream = nullptr;
      const bool c_api = t % 2 == 0;
      if (c_api && aclrtCreateStream(&stream) != ACL_SUCCESS) {
        failure = std::string("aclrtCreateStream: ") + aclGetRecentErrMsg();
        return;
      }
      // Start together, so that the calls overlap.
      ready.fetch_add(1);
      while (ready.load() < kThreads) std::this_thread::yield();
      for (int round = 0; round < kRounds && failure.empty(); ++round) {
        const int mode = (t / 2 + round) % 2;
        const Problem &in = shared.input[static_cast<size_t>(mode)];
        Outputs out(in);
        if (c_api) {
          failure = c_api_call(in, out, stream);
        } else {
          try {
            cxx_api_call(shared, mode, out);
          } catch (const std::exception &e) {
            failure = std::string("run: ") + e.what();
          }
        }
        if (failure.empty() && !out.matches(shared.want[static_cast<size_t>(mode)]))
          failure = "round " + std::to_string(round) + " mode " + std::to_string(mode) +
                    ": result differs from the reference";
      }
      if (stream && aclrtDestroyStream(stream) != ACL_SUCCESS && failure.empty())
        failure = std::string("aclrtDestroyStream: ") + aclGetRecentErrMsg();
    });
  for (std::thread &th : threads) th.join();
  for (int t = 0; t < kThreads; ++t)
    EXPECT_EQ(failures[static_cast<size_t>(t)], "") << "thread " << t;
  for (size_t m = 0; m < 2; ++m) {
    const Problem &a = shared.input[m], &b = pristine.input[m];
    EXPECT_TRUE(BitwiseEqual(a.tokens, b.tokens));
    EXPECT_TRUE(BitwiseEqual(a.routing_map, b.routing_map));
    EXPECT_TRUE(BitwiseEqual(a.probs, b.probs));
    EXPECT_TRUE(BitwiseEqual(a.grad, b.grad));
    EXPECT_TRUE(BitwiseEqual(a.probs_grad, b.probs_grad));
    EXPECT_TRUE(BitwiseEqual(a.sorted_indices, b.sorted_indices));
  }
}

}  // namespace
}  // namespace moeperm::testing
