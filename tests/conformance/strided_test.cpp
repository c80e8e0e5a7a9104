// SPEC §5: inputs may be non-contiguous (any strides, a storage offset) and outputs may be
// strided too. Every tensor of a problem is moved into another layout (padded rows, a column
// step, column-major storage, a storage offset, or a mix), every backend runs on it (the
// reference included; the CPU backend per variant, Matrix::isas: its strided row paths are per
// variant, and the problems are one token block), and the results must equal the contiguous
// reference element for element, with no byte written outside any output view.
#include <gtest/gtest.h>

#include <array>

#include "backend_matrix.hpp"
#include "naive.hpp"
#include "testing.hpp"

namespace moeperm::testing {
namespace {

struct LayoutSet {
  const char *name;
  std::array<Layout, 5> layouts;  // tensor i of a problem gets layouts[i % 5]
};

constexpr Layout kContig{};
constexpr Layout kPadded{3, 1, 5, false};
constexpr Layout kStepped{0, 2, 1, false};
constexpr Layout kColumnMajor{0, 1, 7, true};
constexpr Layout kEverything{2, 3, 3, true};

const LayoutSet kSets[] = {
    {"padded_rows_and_offset", {kPadded, kPadded, kPadded, kPadded, kPadded}},
    {"column_step_2", {kStepped, kStepped, kStepped, kStepped, kStepped}},
    {"column_major", {kColumnMajor, kColumnMajor, kColumnMajor, kColumnMajor, kColumnMajor}},
    {"padded_stepped_column_major",
     {kEverything, kEverything, kEverything, kEverything, kEverything}},
    {"mixed", {kContig, kPadded, kStepped, kColumnMajor, kEverything}},
    {"mixed_rotated", {kEverything, kColumnMajor, kContig, kStepped, kPadded}},
};

// p with every tensor in its layout: inputs carry p's values, outputs are poisoned.
Problem restrided(const Problem &p, const LayoutSet &set) {
  Problem q = p;
  HostTensor *inputs[] = {&q.tokens, &q.routing_map, &q.probs, &q.grad, &q.probs_grad};
  HostTensor *outputs[] = {&q.permuted_tokens, &q.permuted_probs, &q.sorted_indices, &q.tokens_grad,
                           &q.dense_probs_grad};
  size_t i = 0;
  for (HostTensor *t : inputs)
    if (!t->desc.shape.empty()) *t = relayout(*t, set.layouts[i++ % 5]);  // empty: no probs
  for (HostTensor *t : outputs)
    if (!t->desc.shape.empty()) *t = poisoned_like(*t, set.layouts[i++ % 5]);
  return q;
}

using Param = std::tuple<LayoutSet, bool, BackendConfig>;
class Strided : public BackendCase<Param> {};

TEST_P(Strided, EqualsContiguousReference) {
  const LayoutSet &set = std::get<0>(GetParam());
  const bool dp = std::get<1>(GetParam());
  ProblemSpec s;
  s.T = 37, s.H = 20, s.E = 9, s.K = 3, s.capacity = 5, s.drop_and_pad = dp;
  s.dtype = DType::bf16, s.probs_dtype = DType::f32, s.ragged = true, s.seed = 3;
  Problem contiguous = tools::make_problem(s);
  Problem strided = restrided(contiguous, set);
  ASSERT_NE(strided.grad.desc.strides, contiguous.grad.desc.strides);  // G is strided in every set
  run_both(contiguous, Backend::reference);
  run_both(strided, backend());
  EXPECT_TRUE(SameOutputs(strided, contiguous));
  for (const HostTensor *out :
       {&strided.permuted_tokens, &strided.permuted_probs, &strided.sorted_indices,
        &strided.tokens_grad, &strided.dense_probs_grad})
    EXPECT_EQ(bytes_written_outside_view(*out), 0);
}

INSTANTIATE_TEST_SUITE_P(
    Layouts, Strided,
    ::testing::Combine(::testing::ValuesIn(kSets), ::testing::Bool(),
                       ::testing::ValuesIn(backend_configs(Matrix::isas, {.reference = true}))),
    [](const ::testing::TestParamInfo<Param> &param_info) {
      return std::string(std::get<0>(param_info.param).name) +
             (std::get<1>(param_info.param) ? "_droppad_" : "_dropless_") +
             config_name(std::get<2>(param_info.param));
    });

// A copy of t viewed through negative strides: row i (and, for 2-D, column j) is stored
// where row rows-1-i (column cols-1-j) of t is, so the storage offset points at the end.
HostTensor reversed(const HostTensor &t, bool poison) {
  HostTensor r = poisoned_like(t);
  const bool two_d = r.desc.shape.size() == 2;
  for (size_t d = 0; d < r.desc.shape.size(); ++d) {
    r.desc.offset += (r.desc.shape[d] - 1) * r.desc.strides[d];
    r.desc.strides[d] = -r.desc.strides[d];
  }
  if (!poison)
    for (int64_t i = 0; i < t.desc.shape[0]; ++i)
      for (int64_t j = 0; j < (two_d ? t.desc.shape[1] : 1); ++j)
        set_bits(r, i, j, bits_at(t, i, j));
  return r;
}

// Every tensor, inputs and outputs, walked backwards in both dimensions.
class StridedNegative : public BackendCase<> {};

TEST_P(StridedNegative, EveryTensorReversed) {
  for (bool dp : {false, true}) {
    ProblemSpec s;
    s.T = 37, s.H = 20, s.E = 9, s.K = 3, s.capacity = 5, s.drop_and_pad = dp;
    s.dtype = DType::f16, s.probs_dtype = DType::f16, s.seed = 4;
    Problem contiguous = tools::make_problem(s);
    Problem q = contiguous;
    for (HostTensor *t : {&q.tokens, &q.routing_map, &q.probs, &q.grad, &q.probs_grad})
      *t = reversed(*t, false);
    for (HostTensor *t : {&q.permuted_tokens, &q.permuted_probs, &q.sorted_indices, &q.tokens_grad,
                          &q.dense_probs_grad})
      *t = reversed(*t, true);
    ASSERT_LT(q.tokens.desc.strides[0], 0);
    run_both(contiguous, Backend::reference);
    run_both(q, backend());
    EXPECT_TRUE(SameOutputs(q, contiguous)) << "dropAndPad=" << dp;
  }
}

INSTANTIATE_TEST_SUITE_P(Layouts, StridedNegative,
                         ::testing::ValuesIn(backend_configs(Matrix::isas, {.reference = true})),
                         ConfigName);

// Inputs may alias themselves (only outputs may not): a zero row stride broadcasts one row.
// Here every token has the same values and the same routing, G repeats one row, and S
// repeats one index; the result is still defined by the spec and the backends must agree.
class StridedBroadcast : public BackendCase<> {};

TEST_P(StridedBroadcast, ZeroStrideInputs) {
  for (bool dp : {false, true}) {
    ProblemSpec s;
    s.T = 37, s.H = 20, s.E = 9, s.K = 3, s.capacity = 5, s.drop_and_pad = dp;
    s.dtype = DType::bf16, s.probs_dtype = DType::f32, s.seed = 8;
    Problem ref = tools::make_problem(s);
    for (HostTensor *t : {&ref.tokens, &ref.routing_map, &ref.probs}) t->desc.strides[0] = 0;
    run_forward(ref, Backend::reference);
    ASSERT_TRUE(ForwardMatchesSpec(ref));
    Problem fast = ref;
    fast.permuted_tokens = poisoned_like(ref.permuted_tokens);
    fast.sorted_indices = poisoned_like(ref.sorted_indices);
    fast.permuted_probs = poisoned_like(ref.permuted_probs);
    run_forward(fast, backend());
    EXPECT_TRUE(SameOutputs(fast, ref)) << "forward, dropAndPad=" << dp;

    write_indices(ref.sorted_indices, {dp ? 2 : 4});  // S[0]; stride 0 repeats it
    ref.sorted_indices.desc.strides = {0};
    ref.grad.desc.strides[0] = 0;
    ref.probs_grad.desc.strides = {0};
    fast.sorted_indices = ref.sorted_indices, fast.grad = ref.grad,
    fast.probs_grad = ref.probs_grad;
    run_backward(ref, Backend::reference);
    run_backward(fast, backend());
    EXPECT_TRUE(BackwardMatchesSpec(ref));
    EXPECT_TRUE(SameOutputs(fast, ref)) << "backward, dropAndPad=" << dp;
  }
}

INSTANTIATE_TEST_SUITE_P(Layouts, StridedBroadcast,
                         ::testing::ValuesIn(backend_configs(Matrix::isas)), ConfigName);

// Rows wider than the CPU kernel's accumulator chunk (4096 fp32), strided, both modes.
class StridedWide : public BackendCase<> {};

TEST_P(StridedWide, RowsLongerThanOneAccumulatorChunk) {
  for (bool dp : {false, true}) {
    ProblemSpec s;
    s.T = 7, s.H = 4100, s.E = 5, s.K = 2, s.capacity = 3, s.drop_and_pad = dp;
    s.dtype = DType::bf16, s.with_probs = false;
    Problem contiguous = tools::make_problem(s);
    Problem strided = restrided(contiguous, kSets[1]);
    run_both(contiguous, Backend::reference);
    run_both(strided, backend());
    EXPECT_TRUE(SameOutputs(strided, contiguous)) << "dropAndPad=" << dp;
  }
}

INSTANTIATE_TEST_SUITE_P(Layouts, StridedWide, ::testing::ValuesIn(backend_configs(Matrix::isas)),
                         ConfigName);

}  // namespace
}  // namespace moeperm::testing
