// SPEC §4 numerics of the grad sums, on hand-built rows whose exact results are known:
// bf16/fp16 sums accumulate in fp32 and round once, half to even (both tie directions, both
// signs, a sticky bit below the half, fp16 overflow to infinity, subnormal results); fp32 sums
// follow the reference order (ascending k drop-less, ascending j drop-and-pad), which is
// visible when an fp32 partial sum rounds. Every case runs in both modes on every backend,
// the reference included, and per CPU variant (Matrix::isas: the vector bodies round, one
// token block so threads would not split anything), over 37 columns (so vector bodies and
// tails both see it).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>

#include "backend_matrix.hpp"
#include "fp_reference.hpp"
#include "testing.hpp"

namespace moeperm::testing {
namespace {

constexpr int64_t kH = 37;

struct SumCase {
  const char *name;
  DType dtype;
  std::vector<double> terms;  // the values summed into one token, in summation order
  uint32_t want;              // expected bits of the result
};

const SumCase kCases[] = {
    // bf16 has 8 significant bits: 1 + 2^-8 lies halfway between 1 and 1 + 2^-7.
    {"bf16_tie_to_even_below", DType::bf16, {1.0, 0x1p-8}, 0x3f80},
    {"bf16_tie_to_even_above", DType::bf16, {1.0 + 0x1p-7, 0x1p-8}, 0x3f82},
    {"bf16_negative_tie_below", DType::bf16, {-1.0, -0x1p-8}, 0xbf80},
    {"bf16_negative_tie_above", DType::bf16, {-1.0 - 0x1p-7, -0x1p-8}, 0xbf82},
    // A sticky bit past the half decides: rounding once from fp32 goes up; rounding each
    // partial sum to bf16 would give 1.
    {"bf16_sticky_bit_rounds_up", DType::bf16, {1.0, 0x1p-8, 0x1p-20}, 0x3f81},
    {"bf16_many_small_terms", DType::bf16, {1.0, 0x1p-9, 0x1p-9, 0x1p-9}, 0x3f81},
    {"bf16_cancellation_exact", DType::bf16, {256.0, 0x1p-6, -256.0}, 0x3c80},
    {"bf16_subnormal_sum", DType::bf16, {0x1p-133, 0x1p-133, 0x1p-132}, 0x0004},
    {"bf16_overflow_to_inf", DType::bf16, {0x1.8p127, 0x1.8p127}, 0x7f80},
    // fp16 has 11 significant bits.
    {"f16_tie_to_even_below", DType::f16, {1.0, 0x1p-11}, 0x3c00},
    {"f16_tie_to_even_above", DType::f16, {1.0 + 0x1p-10, 0x1p-11}, 0x3c02},
    {"f16_sticky_bit_rounds_up", DType::f16, {1.0, 0x1p-11, 0x1p-20}, 0x3c01},
    {"f16_largest_finite_stays", DType::f16, {65504.0, 8.0}, 0x7bff},
    {"f16_overflow_tie_to_inf", DType::f16, {65504.0, 16.0}, 0x7c00},
    {"f16_overflow_negative", DType::f16, {-65504.0, -16.0}, 0xfc00},
    {"f16_overflow_far", DType::f16, {32768.0, 32768.0, 32768.0}, 0x7c00},
    {"f16_subnormal_sum", DType::f16, {0x1p-24, 0x1p-24, 0x1p-23}, 0x0004},
    {"f16_cancellation_to_subnormal", DType::f16, {0x1p-14, -(0x1p-14 - 0x1p-24)}, 0x0001},
    {"f16_cancellation_to_zero", DType::f16, {0x1p-24, -0x1p-24}, 0x0000},
    // fp32: order matters once a partial sum rounds. 2^24 + 1 ties to 2^24 (even).
    {"f32_big_first_absorbs_ones", DType::f32, {0x1p24, 1.0, 1.0}, 0x4b800000},
    {"f32_ones_first_accumulate", DType::f32, {1.0, 1.0, 0x1p24}, 0x4b800001},
    {"f32_subnormal_sum", DType::f32, {0x1p-149, 0x1p-149}, 0x00000002},
};

// One token (t = 0) receives every term; token 1 receives nothing and must be +0.
//   drop-less:     T = 2, K = n: S = [0, 1, .., n-1, -1 x n], G row k = terms[k]
//   drop-and-pad:  T = 2, E = n, C = 1: S = [0] * n, G row j = terms[j]
Problem sum_problem(const SumCase &c, bool dp) {
  const int64_t n = static_cast<int64_t>(c.terms.size());
  ProblemSpec s;
  s.T = 2, s.H = kH, s.drop_and_pad = dp, s.dtype = c.dtype, s.with_probs = false;
  s.E = dp ? n : 1, s.K = dp ? 1 : n, s.capacity = 1;
  Problem p = tools::make_problem(s);
  std::vector<int32_t> S;
  for (int64_t k = 0; k < n; ++k) S.push_back(dp ? 0 : static_cast<int32_t>(k));
  if (!dp) S.insert(S.end(), static_cast<size_t>(n), -1);
  write_indices(p.sorted_indices, S);
  for (int64_t j = 0; j < p.spec.rows(); ++j)
    for (int64_t h = 0; h < kH; ++h)
      set_bits(p.grad, j, h, j < n ? encode(c.dtype, c.terms[static_cast<size_t>(j)]) : 0x3c00);
  return p;
}

class SumRounding : public BackendCase<std::tuple<SumCase, BackendConfig>> {};

TEST_P(SumRounding, ResultHasTheExpectedBits) {
  const SumCase &c = std::get<0>(GetParam());
  for (double term : c.terms)  // the terms themselves are exact in the value dtype
    ASSERT_EQ(round_to(c.dtype, term), term) << term;
  for (bool dp : {false, true}) {
    SCOPED_TRACE(dp ? "dropAndPad=true" : "dropAndPad=false");
    Problem p = sum_problem(c, dp);
    run_backward(p, backend());
    for (int64_t h = 0; h < kH; ++h) {
      ASSERT_EQ(bits_at(p.tokens_grad, 0, h), c.want) << "column " << h;
      ASSERT_EQ(bits_at(p.tokens_grad, 1, h), 0u) << "column " << h;
    }
  }
}

INSTANTIATE_TEST_SUITE_P(
    Spec4, SumRounding,
    ::testing::Combine(::testing::ValuesIn(kCases),
                       ::testing::ValuesIn(backend_configs(Matrix::isas, {.reference = true}))),
    [](const auto &param_info) {
      return std::string(std::get<0>(param_info.param).name) + "_" +
             config_name(std::get<1>(param_info.param));
    });

// Drop-less sums run in ascending k (the order of S's slots), not ascending row: the same G
// with the slots permuted gives the other fp32 result.
class SumOrder : public BackendCase<> {};

TEST_P(SumOrder, DroplessFollowsSlotOrderNotRowOrder) {
  const SumCase &c = *std::find_if(std::begin(kCases), std::end(kCases), [](const SumCase &x) {
    return std::string(x.name) == "f32_big_first_absorbs_ones";
  });
  Problem p = sum_problem(c, false);                       // rows [2^24, 1, 1], S = [0, 1, 2]
  write_indices(p.sorted_indices, {1, 2, 0, -1, -1, -1});  // k order: 1, 1, 2^24
  run_backward(p, backend());
  EXPECT_EQ(bits_at(p.tokens_grad, 0, 0), 0x4b800001u);
}

INSTANTIATE_TEST_SUITE_P(Spec4, SumOrder,
                         ::testing::ValuesIn(backend_configs(Matrix::isas, {.reference = true})),
                         ConfigName);

// NaN and infinities in G: sums that see a NaN, or +inf and -inf, are NaN; sums that see one
// infinity are that infinity; the backends produce the same bits (same operations in the
// same order), in every value dtype.
class SumSpecialValues : public BackendCase<> {};

TEST_P(SumSpecialValues, NonFiniteTermsPropagateIdentically) {
  for (DType dtype : {DType::bf16, DType::f16, DType::f32})
    for (bool dp : {false, true}) {
      ProblemSpec s;
      s.T = 37, s.H = 33, s.E = 9, s.K = 3, s.capacity = 5, s.drop_and_pad = dp;
      s.dtype = s.probs_dtype = dtype, s.seed = 12;
      Problem ref = tools::make_problem(s);
      run_forward(ref, Backend::reference);
      std::mt19937_64 rng(5);
      const double specials[] = {NAN, INFINITY, -INFINITY};
      for (int n = 0; n < 60; ++n) {
        const int64_t j = static_cast<int64_t>(rng() % static_cast<uint64_t>(s.rows()));
        const int64_t h = static_cast<int64_t>(rng() % static_cast<uint64_t>(s.H));
        set_bits(ref.grad, j, h, encode(dtype, specials[rng() % 3]));
      }
      Problem fast = ref;
      run_backward(ref, Backend::reference);
      run_backward(fast, backend());
      EXPECT_TRUE(BitwiseEqual(fast.tokens_grad, ref.tokens_grad))
          << to_string(dtype) << " dropAndPad=" << dp;
      int64_t nonfinite = 0;
      for (int64_t t = 0; t < s.T; ++t)
        for (int64_t h = 0; h < s.H; ++h) nonfinite += !std::isfinite(ref.tokens_grad.get(t, h));
      EXPECT_GT(nonfinite, 0);
    }
}

INSTANTIATE_TEST_SUITE_P(Spec4, SumSpecialValues,
                         ::testing::ValuesIn(backend_configs(Matrix::isas)), ConfigName);

}  // namespace
}  // namespace moeperm::testing
