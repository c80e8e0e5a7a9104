// Random problems of odd sizes in both modes: every fast backend (C++ and C API) must equal
// the reference bit for bit, and the reference must equal the suite's own oracle (naive.hpp).
// Matrix::one: these are the suite's biggest fast problems (up to T=300, H=1000), so each
// backend runs once at its defaults; conformance_isa and conformance_determinism cover the
// variants and thread counts.
// Sizes mix T in {1, 7, 37, 300}, H in {1, 3, 129, 1000}, E in {1, 5, 9, 64}, K in
// {1, 2, 3, 8} and capacities from 1 to C = T, plus K = 512 (CANN's limit) and ragged
// routing (tokens with fewer than K experts, K > E included).
//
// Contributors: conformance is parameterised over the backends (support/backend_matrix.hpp:
// every registered backend, forced ISA and thread count), so a new operator adds cases, not
// drivers. Its random problems go here (a TEST_P beside these, on the operator's run
// function from support/testing.hpp), its hand-checked examples in worked_examples_test.cpp,
// and its dtype, probs-option, strided, empty, rounding, adjoint and determinism cases in the
// files of those names; every run goes through run_op (support/testing.cpp), which also
// checks that the plan ran on the backend under test. Device backends pick the cases up
// through DEVICE_CASES in tests/CMakeLists.txt.
#include <gtest/gtest.h>

#include "acl_support.hpp"
#include "backend_matrix.hpp"
#include "naive.hpp"
#include "testing.hpp"

namespace moeperm::testing {
namespace {

struct Case {
  int64_t T, H, E, K, C;
  bool dp;
  DType dtype, probs;
  bool with_probs, ragged;
  DType map;
};

constexpr DType bf = DType::bf16, hf = DType::f16, f = DType::f32, b8 = DType::boolean,
                i8 = DType::i8;

const Case kCases[] = {
    // T    H     E    K   C   dp     values probs  probs? ragged map
    {1, 1, 1, 1, 0, false, f, f, true, false, i8},
    {7, 3, 5, 2, 0, false, bf, bf, true, false, b8},
    {37, 129, 9, 3, 0, false, hf, hf, true, false, i8},
    {300, 129, 64, 8, 0, false, bf, f, true, false, b8},
    {37, 1000, 64, 8, 0, false, f, f, true, false, i8},
    {300, 3, 5, 3, 0, false, bf, bf, true, true, i8},
    {7, 1000, 9, 8, 0, false, hf, hf, false, false, b8},
    {1, 129, 64, 2, 0, false, bf, f, true, false, i8},
    {300, 1, 1, 2, 0, false, f, f, true, false, b8},  // K > E: every token leaves a -1
    {37, 3, 9, 1, 0, false, hf, hf, true, true, b8},
    {8, 8, 600, 512, 0, false, bf, f, true, false, i8},  // K = 512
    {1, 3, 1, 1, 1, true, bf, bf, true, false, i8},      // C = T
    {7, 129, 5, 2, 7, true, f, f, true, false, b8},      // C = T
    {37, 3, 9, 3, 5, true, hf, hf, true, false, i8},
    {300, 129, 64, 8, 16, true, bf, f, true, false, b8},
    {300, 1000, 5, 2, 300, true, bf, bf, false, false, i8},  // C = T, every expert padded
    {37, 1, 64, 1, 1, true, f, f, true, false, b8},
    {7, 1000, 9, 8, 3, true, hf, hf, true, false, i8},
};

std::string case_name(const Case &c) {
  std::string s = (c.dp ? "droppad_T" : "dropless_T") + std::to_string(c.T) + "_H" +
                  std::to_string(c.H) + "_E" + std::to_string(c.E) +
                  (c.dp ? "_C" + std::to_string(c.C) : "_K" + std::to_string(c.K)) + "_" +
                  to_string(c.dtype);
  if (c.with_probs) s += std::string("_probs_") + to_string(c.probs);
  if (c.ragged) s += "_ragged";
  return s;
}

ProblemSpec spec_of(const Case &c, uint64_t seed) {
  ProblemSpec s;
  s.T = c.T, s.H = c.H, s.E = c.E, s.K = c.K, s.capacity = c.C, s.drop_and_pad = c.dp;
  s.dtype = c.dtype, s.probs_dtype = c.probs, s.with_probs = c.with_probs;
  s.ragged = c.ragged, s.map_dtype = c.map, s.seed = seed;
  return s;
}

using Param = std::tuple<Case, BackendConfig>;

class RandomProblem : public BackendCase<Param> {
 protected:
  const Case &shape() const { return std::get<0>(GetParam()); }
};

TEST_P(RandomProblem, BackendEqualsReferenceAndReferenceEqualsSpec) {
  for (uint64_t seed : {1u, 2u}) {
    const ProblemSpec s = spec_of(shape(), seed);
    SCOPED_TRACE(describe(s));
    const Problem fresh = tools::make_problem(s);
    Problem ref = fresh, fast = fresh, capi = fresh;
    run_both(ref, Backend::reference);
    ASSERT_TRUE(ForwardMatchesSpec(ref));
    ASSERT_TRUE(BackwardMatchesSpec(ref));
    ASSERT_TRUE(ProbsGradMatchesSlotFormula(ref));
    run_both(fast, backend());
    EXPECT_TRUE(SameOutputs(fast, ref));
    const CStatus fwd = c_forward(capi, memory());
    ASSERT_EQ(fwd.code, 0) << fwd.message;
    const CStatus bwd = c_backward(capi, memory());
    ASSERT_EQ(bwd.code, 0) << bwd.message;
    EXPECT_TRUE(SameOutputs(capi, ref));
  }
}

// The backward alone with S from the other backend's forward: backends must agree on the
// backward even when its input did not come from themselves.
TEST_P(RandomProblem, BackwardOfReferenceForward) {
  const ProblemSpec s = spec_of(shape(), 3);
  SCOPED_TRACE(describe(s));
  Problem ref = tools::make_problem(s);
  run_forward(ref, Backend::reference);
  Problem fast = ref;
  run_backward(ref, Backend::reference);
  run_backward(fast, backend());
  EXPECT_TRUE(BitwiseEqual(fast.tokens_grad, ref.tokens_grad));
  if (s.with_probs) {
    EXPECT_TRUE(BitwiseEqual(fast.dense_probs_grad, ref.dense_probs_grad));
  }
}

// The backward on indices that no forward produced (repeated, skipped, -1 anywhere in
// drop-less mode; any token, any number of times, in drop-and-pad mode): still defined by
// SPEC §3, and the backends must agree. Drop-and-pad repeats a token within one expert, where
// the later slot's P wins the assignment.
TEST_P(RandomProblem, BackwardOfArbitraryValidIndices) {
  const ProblemSpec s = spec_of(shape(), 4);
  SCOPED_TRACE(describe(s));
  Problem ref = tools::make_problem(s);
  std::mt19937_64 rng(17);
  const int64_t R = s.rows();
  std::uniform_int_distribution<int64_t> pick(s.drop_and_pad ? 0 : -1,
                                              (s.drop_and_pad ? s.T : R) - 1);
  std::vector<int32_t> S(static_cast<size_t>(R));
  for (int32_t &v : S) v = static_cast<int32_t>(pick(rng));
  write_indices(ref.sorted_indices, S);
  Problem fast = ref;
  run_backward(ref, Backend::reference);
  run_backward(fast, backend());
  EXPECT_TRUE(BitwiseEqual(fast.tokens_grad, ref.tokens_grad));
  if (s.with_probs) {
    EXPECT_TRUE(BitwiseEqual(fast.dense_probs_grad, ref.dense_probs_grad));
  }
  EXPECT_TRUE(BackwardMatchesSpec(ref));
}

// numOutTokens is divided, not required to be a multiple: T*K + T-1 (drop-less) and
// E*C + E-1 (drop-and-pad) give the same outputs as T*K and E*C.
TEST_P(RandomProblem, NumOutTokensIsRoundedDown) {
  const ProblemSpec s = spec_of(shape(), 5);
  Problem exact = tools::make_problem(s);
  Problem rounded = exact;
  run_forward(exact, backend());
  PermuteDesc d = rounded.permute_desc();
  d.num_out_tokens += (s.drop_and_pad ? s.E : s.T) - 1;
  run_with(rounded, backend(), d, rounded.permute_data());
  EXPECT_TRUE(SameOutputs(rounded, exact));
}

INSTANTIATE_TEST_SUITE_P(Shapes, RandomProblem,
                         ::testing::Combine(::testing::ValuesIn(kCases),
                                            ::testing::ValuesIn(backend_configs(Matrix::one))),
                         [](const ::testing::TestParamInfo<Param> &param_info) {
                           return case_name(std::get<0>(param_info.param)) + "_" +
                                  config_name(std::get<1>(param_info.param));
                         });

}  // namespace
}  // namespace moeperm::testing
