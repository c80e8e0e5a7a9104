// The validation rules of aclnnMoeTokenPermuteWithRoutingMap, one ctest per table row,
// through both APIs and in both modes where the rule applies (see rule_tables.hpp).
#include <gtest/gtest.h>

#include <set>

#include "rule_tables.hpp"

namespace moeperm::testing {
namespace {

class PermuteRule : public ::testing::TestWithParam<size_t> {};

TEST_P(PermuteRule, FailsWithItsCodeAndMessage) {
  const PermuteRow &row = permute_rule_rows()[GetParam()];
  int modes_run = 0;
  for (bool dp : {false, true}) {
    if (!applies(row.modes, dp)) continue;
    SCOPED_TRACE(dp ? "dropAndPad=true" : "dropAndPad=false");
    PermuteArgs a = valid_permute_args(dp);
    row.mutate(a);
    EXPECT_TRUE(CheckBothApis(a, row.code, row.substrings));
    ++modes_run;
  }
  EXPECT_GT(modes_run, 0);
}

INSTANTIATE_TEST_SUITE_P(Spec5, PermuteRule,
                         ::testing::Range(size_t{0}, permute_rule_rows().size()),
                         [](const ::testing::TestParamInfo<size_t> &param_info) {
                           return std::string(permute_rule_rows()[param_info.param].name);
                         });

TEST(PermuteRules, ValidArgumentsAreAccepted) {
  for (bool dp : {false, true}) {
    SCOPED_TRACE(dp ? "dropAndPad=true" : "dropAndPad=false");
    EXPECT_TRUE(CheckBothApis(valid_permute_args(dp), 0, {}));
  }
}

TEST(PermuteRules, TableCoversEveryCode) {
  std::set<int32_t> codes;
  for (const PermuteRow &row : permute_rule_rows()) codes.insert(row.code);
  EXPECT_EQ(codes, (std::set<int32_t>{161001, 161002, 561103}));
}

}  // namespace
}  // namespace moeperm::testing
