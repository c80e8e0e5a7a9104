// SPEC §5 rules 1-6 for aclnnMoeTokenPermuteWithRoutingMapGrad, one ctest per table row:
// each row breaks one rule of a valid argument set and must get the row's status code and
// message through both the C API (GetWorkspaceSize + aclGetRecentErrMsg) and the C++ API
// (moeperm::Error::code() / what()), in both modes where the rule applies.
#include <gtest/gtest.h>

#include <set>

#include "rule_tables.hpp"

namespace moeperm::testing {
namespace {

class GradRule : public ::testing::TestWithParam<size_t> {};

TEST_P(GradRule, FailsWithItsCodeAndMessage) {
  const GradRow &row = grad_rule_rows()[GetParam()];
  int modes_run = 0;
  for (bool dp : {false, true}) {
    if (!applies(row.modes, dp)) continue;
    SCOPED_TRACE(dp ? "dropAndPad=true" : "dropAndPad=false");
    GradArgs a = valid_grad_args(dp);
    row.mutate(a);
    EXPECT_TRUE(CheckBothApis(a, row.code, row.substrings));
    ++modes_run;
  }
  EXPECT_GT(modes_run, 0);
}

INSTANTIATE_TEST_SUITE_P(Spec5, GradRule, ::testing::Range(size_t{0}, grad_rule_rows().size()),
                         [](const ::testing::TestParamInfo<size_t> &param_info) {
                           return std::string(grad_rule_rows()[param_info.param].name);
                         });

// The control: without a mutation both APIs accept the arguments, so every row above fails
// because of its own mutation.
TEST(GradRules, ValidArgumentsAreAccepted) {
  for (bool dp : {false, true}) {
    SCOPED_TRACE(dp ? "dropAndPad=true" : "dropAndPad=false");
    EXPECT_TRUE(CheckBothApis(valid_grad_args(dp), 0, {}));
  }
}

// The table lists the rules in SPEC §5 order (the order first_failure_test relies on) and
// covers every status code SPEC §5 assigns to this operator's validation.
TEST(GradRules, TableFollowsSpecOrderAndCoversEveryCode) {
  const auto &rows = grad_rule_rows();
  std::set<int32_t> codes;
  for (size_t i = 0; i < rows.size(); ++i) {
    if (i > 0) {
      EXPECT_LE(rows[i - 1].rule, rows[i].rule) << rows[i].name;
    }
    codes.insert(rows[i].code);
  }
  EXPECT_EQ(codes, (std::set<int32_t>{161001, 161002, 561103}));
}

}  // namespace
}  // namespace moeperm::testing
