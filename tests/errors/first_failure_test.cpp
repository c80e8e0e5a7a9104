// SPEC §5 "first failure wins": with two rules broken at once, the one that comes first in
// validation order is reported. Checked for every pair of table rows that break different
// operands (so neither mutation undoes the other), through both APIs, plus a few pairs
// spelled out for readability.
#include <gtest/gtest.h>

#include "rule_tables.hpp"

namespace moeperm::testing {
namespace {

// Every pair of rows of each operator's table (check_all_pairs, rule_tables.hpp).
class FirstFailureWinsInTable : public ::testing::TestWithParam<size_t> {};

TEST_P(FirstFailureWinsInTable, EveryPairOfRows) {
  const RuleTable &table = rule_tables()[GetParam()];
  EXPECT_GT(table.check_all_pairs(), table.min_pairs);
}

INSTANTIATE_TEST_SUITE_P(Spec5, FirstFailureWinsInTable,
                         ::testing::Range(size_t{0}, rule_tables().size()),
                         [](const ::testing::TestParamInfo<size_t> &param_info) {
                           return rule_tables()[param_info.param].rows.table;
                         });

// Rule 1 beats rule 2: an invalid numExperts is reported even though G is null.
TEST(FirstFailureWins, AttributeBeforeNullTensor) {
  GradArgs a = valid_grad_args(false);
  a.num_experts = 0;
  a.G.reset();
  EXPECT_TRUE(CheckBothApis(a, 161002, {"numExperts must be > 0, got 0"}));
}

// Rule 2 beats rule 3: a null S is reported although S would also have the wrong dtype
// and G has one too.
TEST(FirstFailureWins, NullTensorBeforeDtype) {
  GradArgs a = valid_grad_args(true);
  a.G->dtype = DType::i64;
  a.S.reset();
  EXPECT_TRUE(CheckBothApis(a, 161001, {"sortedIndices must not be null"}));
}

// Rule 3 beats rules 4 and 5: a G that is int32, 1-D and too long only reports its dtype.
TEST(FirstFailureWins, DtypeBeforeRankAndTopK) {
  GradArgs a = valid_grad_args(false);
  a.G = dense(DType::i32, {513 * kT});
  EXPECT_TRUE(CheckBothApis(a, 161002, {"permutedTokenOutputGrad must have dtype"}));
}

// Rule 5 beats rule 6: K = 513 with inconsistent outputs reports CANN's tiling limit.
TEST(FirstFailureWins, TopKBeforeShapes) {
  GradArgs a = valid_grad_args(false);
  a.G = dense(DType::f32, {513 * kT, kH});
  a.TG = dense(DType::f32, {kT + 1, kH + 1});
  EXPECT_TRUE(CheckBothApis(a, 561103, {"topK = 513 exceeds the supported maximum of 512"}));
}

// Within rule 6 shapes are compared before views are checked: a wrong length of S is reported
// although permuteTokensOut also overlaps itself.
TEST(FirstFailureWins, ShapesBeforeViews) {
  PermuteArgs a = valid_permute_args(false);
  a.S = dense(DType::i32, {3});
  a.Y->strides = {0, 0};
  EXPECT_TRUE(CheckBothApis(a, 161002, {"sortedIndicesOut has length 3"}));
}

}  // namespace
}  // namespace moeperm::testing
