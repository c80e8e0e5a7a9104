// SPEC §5: inputs may be non-contiguous (any strides, a storage offset) and outputs may be
// strided too. Every tensor of a problem is moved into another layout (padded rows, a column
// step, column-major storage, a storage offset, or a mix), both backends run on it, and the
// results must equal the contiguous reference element for element, with no byte written
// outside any output view.
#include <gtest/gtest.h>

#include <array>

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

using Param = std::tuple<LayoutSet, bool, Backend>;
class Strided : public ::testing::TestWithParam<Param> {};

TEST_P(Strided, EqualsContiguousReference) {
  const auto &[set, dp, backend] = GetParam();
  ProblemSpec s;
  s.T = 37, s.H = 20, s.E = 9, s.K = 3, s.capacity = 5, s.drop_and_pad = dp;
  s.dtype = DType::bf16, s.probs_dtype = DType::f32, s.ragged = true, s.seed = 3;
  Problem contiguous = tools::make_problem(s);
  Problem strided = restrided(contiguous, set);
  ASSERT_NE(strided.grad.desc.strides, contiguous.grad.desc.strides);  // G is strided in every set
  run_both(contiguous, Backend::reference);
  run_both(strided, backend);
  EXPECT_TRUE(SameOutputs(strided, contiguous));
  for (const HostTensor *out :
       {&strided.permuted_tokens, &strided.permuted_probs, &strided.sorted_indices,
        &strided.tokens_grad, &strided.dense_probs_grad})
    EXPECT_EQ(bytes_written_outside_view(*out), 0);
}

INSTANTIATE_TEST_SUITE_P(Layouts, Strided,
                         ::testing::Combine(::testing::ValuesIn(kSets), ::testing::Bool(),
                                            ::testing::Values(Backend::cpu, Backend::reference)),
                         [](const ::testing::TestParamInfo<Param> &param_info) {
                           return std::string(std::get<0>(param_info.param).name) +
                                  (std::get<1>(param_info.param) ? "_droppad" : "_dropless") +
                                  (std::get<2>(param_info.param) == Backend::cpu ? "_cpu"
                                                                                 : "_reference");
                         });

// Rows wider than the CPU kernel's accumulator chunk (4096 fp32), strided, both modes.
TEST(StridedWide, RowsLongerThanOneAccumulatorChunk) {
  for (bool dp : {false, true}) {
    ProblemSpec s;
    s.T = 7, s.H = 4100, s.E = 5, s.K = 2, s.capacity = 3, s.drop_and_pad = dp;
    s.dtype = DType::bf16, s.with_probs = false;
    Problem contiguous = tools::make_problem(s);
    Problem strided = restrided(contiguous, kSets[1]);
    run_both(contiguous, Backend::reference);
    run_both(strided, Backend::cpu);
    EXPECT_TRUE(SameOutputs(strided, contiguous)) << "dropAndPad=" << dp;
  }
}

}  // namespace
}  // namespace moeperm::testing
