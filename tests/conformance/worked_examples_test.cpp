// Hand-worked examples with every expected number written out: SPEC §2's worked example
// and its backward, a drop-and-pad example with dropping and padding (and a padding slot that
// counts in the grad sum and assigns a prob gradient to an unrouted pair), and a ragged
// drop-less example with -1 sentinels and zero rows. Both backends, and the C API.
#include <gtest/gtest.h>

#include "acl_support.hpp"
#include "backend_matrix.hpp"
#include "naive.hpp"
#include "testing.hpp"

namespace moeperm::testing {
namespace {

enum class Api { cxx, c };
using Param = std::tuple<Api, BackendConfig>;

class WorkedExample : public BackendCase<Param> {
 protected:
  bool c_api() const { return std::get<0>(GetParam()) == Api::c; }
  void forward(Problem &p) {
    if (c_api()) {
      const CStatus st = c_forward(p, memory());
      ASSERT_EQ(st.code, 0) << st.message;
    } else {
      run_forward(p, backend());
    }
  }
  void backward(Problem &p) {
    if (c_api()) {
      const CStatus st = c_backward(p, memory());
      ASSERT_EQ(st.code, 0) << st.message;
    } else {
      run_backward(p, backend());
    }
  }
};

// An fp32 problem with the given routing (rows of expert ids), tokens x[t][h] = 10*t + h + 1,
// probs p[t][e] = t + e / 4, and outputs poisoned.
Problem example(int64_t T, int64_t E, int64_t H, int64_t K, int64_t C, bool dp,
                const std::vector<std::vector<int64_t>> &routes) {
  ProblemSpec s;
  s.T = T, s.E = E, s.H = H, s.K = K, s.capacity = C, s.drop_and_pad = dp;
  s.dtype = s.probs_dtype = DType::f32;
  s.map_dtype = DType::i8;
  Problem p = tools::make_problem(s);
  for (int64_t t = 0; t < T; ++t) {
    for (int64_t e = 0; e < E; ++e) p.routing_map.set(t, e, 0);
    for (int64_t e : routes[static_cast<size_t>(t)]) p.routing_map.set(t, e, 1);
    for (int64_t h = 0; h < H; ++h) p.tokens.set(t, h, static_cast<double>(10 * t + h + 1));
    for (int64_t e = 0; e < E; ++e) p.probs.set(t, e, static_cast<double>(t) + e / 4.0);
  }
  return p;
}

std::vector<double> column(const HostTensor &t, int64_t h = 0) {
  std::vector<double> v;
  for (int64_t i = 0; i < t.desc.shape[0]; ++i) v.push_back(t.get(i, h));
  return v;
}

std::vector<double> matrix(const HostTensor &t) {
  std::vector<double> v;
  for (int64_t i = 0; i < t.desc.shape[0]; ++i)
    for (int64_t j = 0; j < t.desc.shape[1]; ++j) v.push_back(t.get(i, j));
  return v;
}

// SPEC §2: T=3, E=2, all routed, numOutTokens=6, drop-less.
TEST_P(WorkedExample, SpecForwardAndBackward) {
  Problem p = example(3, 2, 2, 2, 0, false, {{0, 1}, {0, 1}, {0, 1}});
  forward(p);
  EXPECT_EQ(read_indices(p.sorted_indices), (std::vector<int32_t>{0, 3, 1, 4, 2, 5}));
  // permuteTokensOut = [x0, x1, x2, x0, x1, x2]; x_t = [10t+1, 10t+2]
  EXPECT_EQ(matrix(p.permuted_tokens),
            (std::vector<double>{1, 2, 11, 12, 21, 22, 1, 2, 11, 12, 21, 22}));
  // permuteProbsOut = probs.T masked: [p00, p10, p20, p01, p11, p21]
  EXPECT_EQ(column(p.permuted_probs), (std::vector<double>{0, 1, 2, 0.25, 1.25, 2.25}));

  // Backward: G[j] = [j, 100j], P[j] = j / 8.
  for (int64_t j = 0; j < 6; ++j) {
    p.grad.set(j, 0, static_cast<double>(j));
    p.grad.set(j, 1, 100.0 * static_cast<double>(j));
    p.probs_grad.set(j, j / 8.0);
  }
  backward(p);
  // tokensGrad[t] = G[S[2t]] + G[S[2t+1]] = G[t] + G[t+3]
  EXPECT_EQ(matrix(p.tokens_grad), (std::vector<double>{3, 300, 5, 500, 7, 700}));
  // probsGrad[t, e] = P[e*3 + t]
  EXPECT_EQ(matrix(p.dense_probs_grad),
            (std::vector<double>{0, 3 / 8.0, 1 / 8.0, 4 / 8.0, 2 / 8.0, 5 / 8.0}));
}

// Drop-and-pad, T=4, E=3, C=2. Routing: t0 -> {0, 1}, t1 -> {1}, t2 -> {0, 1, 2}, t3 -> {}.
//   expert 0: routed [0, 2]           -> [0, 2]
//   expert 1: routed [0, 1, 2]        -> [0, 1]   (token 2 dropped)
//   expert 2: routed [2], pad [0,1,3] -> [2, 0]   (token 0 pads)
TEST_P(WorkedExample, DropAndPadDropsAndPads) {
  Problem p = example(4, 3, 1, 1, 2, true, {{0, 1}, {1}, {0, 1, 2}, {}});
  forward(p);
  EXPECT_EQ(read_indices(p.sorted_indices), (std::vector<int32_t>{0, 2, 0, 1, 2, 0}));
  EXPECT_EQ(column(p.permuted_tokens), (std::vector<double>{1, 21, 1, 11, 21, 1}));
  // permuteProbsOut[j] = probs[S[j], j / C]; the padding slot reads p[0][2] though unrouted.
  EXPECT_EQ(column(p.permuted_probs), (std::vector<double>{0, 2, 0.25, 1.25, 2.5, 0.5}));

  const double g[] = {1, 2, 4, 8, 16, 32};
  for (int64_t j = 0; j < 6; ++j) {
    p.grad.set(j, 0, g[j]);
    p.probs_grad.set(j, static_cast<double>(j + 1));
  }
  backward(p);
  // tokensGrad[t] = sum of G[j] with S[j] == t: t0 = 1 + 4 + 32 (padding slot 5 counts),
  // t1 = 8, t2 = 2 + 16, t3 = 0 (no slot names it).
  EXPECT_EQ(column(p.tokens_grad), (std::vector<double>{37, 8, 18, 0}));
  // probsGrad[S[j], j / C] = P[j]: also at (0, 2), which only the padding slot names.
  EXPECT_EQ(matrix(p.dense_probs_grad), (std::vector<double>{1, 3, 6,  //
                                                             0, 4, 0,  //
                                                             2, 0, 5,  //
                                                             0, 0, 0}));
}

// Ragged drop-less, T=3, E=3, K=2 (R=6). Routing: t0 -> {0, 2}, t1 -> {}, t2 -> {1}.
// f = [0 (e0), 2 (e1), 0 (e2)]: 3 rows filled, rows 3..5 zero; t1 and t2 leave -1 slots.
TEST_P(WorkedExample, RaggedDroplessHasSentinelsAndZeroRows) {
  Problem p = example(3, 3, 2, 2, 0, false, {{0, 2}, {}, {1}});
  forward(p);
  EXPECT_EQ(read_indices(p.sorted_indices), (std::vector<int32_t>{0, 2, -1, -1, 1, -1}));
  EXPECT_EQ(matrix(p.permuted_tokens), (std::vector<double>{1, 2, 21, 22, 1, 2, 0, 0, 0, 0, 0, 0}));
  EXPECT_EQ(column(p.permuted_probs), (std::vector<double>{0, 2.25, 0.5, 0, 0, 0}));
  for (int64_t j = 3; j < 6; ++j) EXPECT_EQ(bits_at(p.permuted_probs, j), 0u) << j;

  for (int64_t j = 0; j < 6; ++j) {
    p.grad.set(j, 0, static_cast<double>(1 << j));
    p.grad.set(j, 1, -static_cast<double>(1 << j));
    p.probs_grad.set(j, static_cast<double>(j + 1));
  }
  backward(p);
  // t0 = G0 + G2, t1 = 0 (only -1 slots), t2 = G1; G rows 3..5 are never read.
  EXPECT_EQ(matrix(p.tokens_grad), (std::vector<double>{5, -5, 0, 0, 2, -2}));
  // masked scatter over M.T: (e0, t0) <- P0, (e1, t2) <- P1, (e2, t0) <- P2.
  EXPECT_EQ(matrix(p.dense_probs_grad), (std::vector<double>{1, 0, 3,  //
                                                             0, 0, 0,  //
                                                             0, 2, 0}));
}

// The suite's oracle agrees with the hand-worked numbers above (so agreeing with it means
// something in the randomised tests).
TEST(WorkedExampleOracle, NaiveForwardMatchesHandWork) {
  const Problem dp = example(4, 3, 1, 1, 2, true, {{0, 1}, {1}, {0, 1, 2}, {}});
  EXPECT_EQ(expected_forward(read_routing(dp.routing_map), 6, true).sorted_indices,
            (std::vector<int32_t>{0, 2, 0, 1, 2, 0}));
  const Problem rg = example(3, 3, 2, 2, 0, false, {{0, 2}, {}, {1}});
  const ForwardExpect x = expected_forward(read_routing(rg.routing_map), 6, false);
  EXPECT_EQ(x.sorted_indices, (std::vector<int32_t>{0, 2, -1, -1, 1, -1}));
  EXPECT_EQ(x.row_token, (std::vector<int64_t>{0, 2, 0, -1, -1, -1}));
  EXPECT_EQ(x.row_expert, (std::vector<int64_t>{0, 1, 2, -1, -1, -1}));
}

INSTANTIATE_TEST_SUITE_P(
    Paths, WorkedExample,
    ::testing::Combine(::testing::Values(Api::cxx, Api::c),
                       ::testing::ValuesIn(backend_configs(Matrix::full, {.reference = true}))),
    [](const ::testing::TestParamInfo<Param> &param_info) {
      return std::string(std::get<0>(param_info.param) == Api::c ? "c_" : "cxx_") +
             config_name(std::get<1>(param_info.param));
    });

}  // namespace
}  // namespace moeperm::testing
