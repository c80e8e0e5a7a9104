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

}  // namespace moeperm::testing
