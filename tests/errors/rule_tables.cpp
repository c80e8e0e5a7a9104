// Shared by the rule tables (grad_rule_table.cpp, permute_rule_table.cpp).
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
      make_rule_table("permute", permute_rule_rows(), 500, false),
      make_rule_table("grad", grad_rule_rows(), 1000, true),
  };
  return tables;
}

}  // namespace moeperm::testing
