// Shared by the rule tables (<op>_rule_table.cpp).
#include "rule_tables.hpp"

namespace moeperm::testing {

::testing::AssertionResult MatchesRow(const Outcome &got, int32_t code,
                                      const std::vector<std::string> &substrings) {
  if (got.code != code)
    return ::testing::AssertionFailure()
           << "status " << got.code << ", want " << code << "; message: " << got.message;
  for (const std::string &s : substrings)
    if (got.message.find(s) == std::string::npos)
      return ::testing::AssertionFailure()
             << "message \"" << got.message << "\" lacks \"" << s << "\"";
  return ::testing::AssertionSuccess();
}

std::vector<RowRef> every_row(const std::vector<TableRows> &tables) {
  std::vector<RowRef> v;
  for (const TableRows &t : tables)
    for (size_t i = 0; i < t.size; ++i) v.push_back({&t, i});
  return v;
}

std::string RowName(const ::testing::TestParamInfo<RowRef> &info) {
  return info.param.rows->table + "_" + info.param.rows->name(info.param.index);
}

const std::vector<RuleTable> &rule_tables() {
  static const std::vector<RuleTable> tables = {
      // SPEC §5: 561103 is the drop-less topK limit.
      make_rule_table("permute", permute_rule_rows(), {161001, 161002, 561103}, 500, false),
      make_rule_table("grad", grad_rule_rows(), {161001, 161002, 561103}, 1000, true),
      // SPEC-unpermute U4: the forward's topK limit is 561103, the Grad's tiling 561002.
      make_rule_table("unpermute", unpermute_rule_rows(), {161001, 161002, 561103}, 300, true),
      make_rule_table("unpermute_grad", unpermute_grad_rule_rows(), {161001, 161002, 561002}, 300,
                      true),
  };
  return tables;
}

}  // namespace moeperm::testing
