// The backward is the adjoint of the forward: for any x and g,
//   <permute(x), g> = <x, grad(g)>           (tokens)
//   <permuteProbs(p), q> = <p, probsGrad(q)>  (probabilities)
// This ties the two operators together without restating either formula, and holds in both
// modes, with dropping, padding and ragged routing alike. Every backend, the reference
// included, once at its defaults (Matrix::one: T=300 problems, three seeds each).
//
// Tolerance: zero. Values are fp32 multiples of 2^-6 in [-4, 4) (fill_random); every grad
// sum has at most a few hundred such terms, so the fp32 accumulation is exact, and the inner
// products are sums of fewer than 2^22 multiples of 2^-12 below 2^4 in magnitude, which fp64
// holds exactly (38 bits). Both sides are therefore computed without rounding.
#include <gtest/gtest.h>

#include "backend_matrix.hpp"
#include "testing.hpp"

namespace moeperm::testing {
namespace {

double dot(const HostTensor &a, const HostTensor &b) {
  const bool two_d = a.desc.shape.size() == 2;
  const int64_t rows = a.desc.shape[0], cols = two_d ? a.desc.shape[1] : 1;
  double s = 0;
  for (int64_t i = 0; i < rows; ++i)
    for (int64_t j = 0; j < cols; ++j) s += a.get(i, j) * b.get(i, j);
  return s;
}

struct Case {
  const char *name;
  int64_t T, H, E, K, C;
  bool dp, ragged;
};

const Case kCases[] = {
    {"dropless", 300, 33, 16, 4, 0, false, false},
    {"dropless_ragged", 300, 33, 16, 4, 0, false, true},
    {"dropless_K_exceeds_E", 37, 5, 3, 5, 0, false, false},
    {"droppad_dropping", 300, 33, 16, 4, 8, true, false},
    {"droppad_padding", 37, 33, 16, 2, 30, true, false},
    {"droppad_capacity_equals_tokens", 37, 5, 4, 1, 37, true, false},
};

class Adjoint : public BackendCase<std::tuple<Case, BackendConfig>> {};

TEST_P(Adjoint, BackwardIsTheAdjointOfTheForward) {
  const Case &c = std::get<0>(GetParam());
  for (uint64_t seed : {1u, 2u, 3u}) {
    ProblemSpec s;
    s.T = c.T, s.H = c.H, s.E = c.E, s.K = c.K, s.capacity = c.C, s.drop_and_pad = c.dp;
    s.ragged = c.ragged, s.dtype = s.probs_dtype = DType::f32, s.seed = seed;
    SCOPED_TRACE(describe(s));
    Problem p = tools::make_problem(s);
    run_both(p, backend());
    const double lhs = dot(p.permuted_tokens, p.grad), rhs = dot(p.tokens, p.tokens_grad);
    EXPECT_EQ(lhs, rhs);
    EXPECT_NE(lhs, 0.0);  // not vacuous
    EXPECT_EQ(dot(p.permuted_probs, p.probs_grad), dot(p.probs, p.dense_probs_grad));
  }
}

INSTANTIATE_TEST_SUITE_P(
    Modes, Adjoint,
    ::testing::Combine(::testing::ValuesIn(kCases),
                       ::testing::ValuesIn(backend_configs(Matrix::one, {.reference = true}))),
    [](const auto &param_info) {
      return std::string(std::get<0>(param_info.param).name) + "_" +
             config_name(std::get<1>(param_info.param));
    });

}  // namespace
}  // namespace moeperm::testing
