// SPEC §5 rules 1-6 of every operator, one ctest per table row (rule_tables()): each row
// breaks one rule of a valid argument set and must get the row's status code and message
// through both the C API (GetWorkspaceSize + aclGetRecentErrMsg) and the C++ API
// (moeperm::Error::code() / what()), in both modes where the rule applies.
#include <gtest/gtest.h>

#include <set>

#include "rule_tables.hpp"

namespace moeperm::testing {
namespace {

std::vector<TableRows> rule_rows() {
  std::vector<TableRows> v;
  for (const RuleTable &t : rule_tables()) v.push_back(t.rows);
  return v;
}
// The parameters point into this list, which lives as long as the process.
const std::vector<TableRows> &all_rule_rows() {
  static const std::vector<TableRows> rows = rule_rows();
  return rows;
}

class Rule : public ::testing::TestWithParam<RowRef> {};

TEST_P(Rule, FailsWithItsCodeAndMessage) { EXPECT_TRUE(GetParam().rows->check(GetParam().index)); }

INSTANTIATE_TEST_SUITE_P(Spec5, Rule, ::testing::ValuesIn(every_row(all_rule_rows())), RowName);

class RuleTableProperties : public ::testing::TestWithParam<size_t> {
 protected:
  const RuleTable &table() const { return rule_tables()[GetParam()]; }
};

// The control: without a mutation both APIs accept the arguments, so every row above fails
// because of its own mutation.
TEST_P(RuleTableProperties, ValidArgumentsAreAccepted) { EXPECT_TRUE(table().accepts()); }

// The table covers every status code the spec assigns to the operator's validation.
TEST_P(RuleTableProperties, TableCoversEveryCode) {
  EXPECT_EQ(table().codes(), table().spec_codes);
}

std::string table_name(const ::testing::TestParamInfo<size_t> &param_info) {
  return rule_tables()[param_info.param].rows.table;
}

INSTANTIATE_TEST_SUITE_P(Spec5, RuleTableProperties,
                         ::testing::Range(size_t{0}, rule_tables().size()), table_name);

// A table whose operator SPEC §5 orders lists the rules in that order (the order
// first_failure_test relies on).
class OrderedRuleTable : public RuleTableProperties {};

TEST_P(OrderedRuleTable, TableFollowsSpecOrder) {
  ASSERT_TRUE(table().spec_ordered);
  const std::vector<int> rules = table().rules();
  for (size_t i = 1; i < rules.size(); ++i) {
    EXPECT_LE(rules[i - 1], rules[i]) << table().rows.name(i);
  }
}

std::vector<size_t> ordered_tables() {
  std::vector<size_t> v;
  for (size_t i = 0; i < rule_tables().size(); ++i)
    if (rule_tables()[i].spec_ordered) v.push_back(i);
  return v;
}

INSTANTIATE_TEST_SUITE_P(Spec5, OrderedRuleTable, ::testing::ValuesIn(ordered_tables()),
                         table_name);

// Without probs the unpermute Grad's rule 3 leaves the routing map's rank alone (CANN's
// order), and rule 4 rejects a 1-D map as a shape. The planner read such a map's second
// dimension before rule 4 (out of bounds; found by fuzzing:
// tests/fuzz/regressions/crash-unpermute-grad-map-columns-of-1d). Not a table row: removing
// P changes which rules the other rows break.
TEST(UnpermuteGradRules, OneDimensionalMapWithoutProbsIsAShapeError) {
  for (bool dp : {false, true}) {
    for (bool with_probs_grad : {false, true}) {
      UnpermuteGradArgs a = valid_args<UnpermuteGradOp>(dp);
      a.P.reset(), a.X.reset();
      if (!with_probs_grad) a.PG.reset();
      a.M = dense(DType::i8, {12});
      EXPECT_TRUE(CheckBothApis(a, 161002,
                                {"aclnnMoeTokenUnpermuteWithRoutingMapGrad: routingMapOptional: "
                                 "expected 2-D, got 1-D [12]"}))
          << "dropAndPad=" << dp << ", probsGradOut " << with_probs_grad;
    }
  }
}

}  // namespace
}  // namespace moeperm::testing
