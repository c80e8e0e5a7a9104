// The SPEC §5 rules as tables, one row per way to break one rule, in validation order
// (oneDNN's *_EF tables; OpInfo's error_inputs). A row mutates a valid argument set
// (operand_args.hpp) so that exactly one rule fails, and states the status code and the
// stable message substrings that must come back, through both APIs.
//
// Order: the grad table follows SPEC §5 (rules 1-6 in order, and within a rule the order in
// which the spec lists the arguments). SPEC only orders the grad operator; the forward table
// follows the same rule order, as src/core/ops/permute.cpp documents.
//
// Contributors: a new operator's rows go in a file of their own, tests/errors/<op>_rule_table.cpp
// (one row per way to break each rule of its spec, in the spec's order; its valid argument
// set from tests/support/operand_args.hpp), added to the moeperm_rule_tables sources in
// tests/CMakeLists.txt and listed in rule_tables() (rule_tables.cpp). The drivers
// (errors_rules, errors_first_failure, errors_accepted) then run it through both APIs;
// nothing here is written per operator.
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <functional>
#include <set>
#include <string>
#include <vector>

#include "operand_args.hpp"

namespace moeperm::testing {

// Operands (and attributes) a row changes or whose relation it breaks; two rows touching
// disjoint sets can be applied together without one undoing the other.
enum Touch : uint32_t {
  kAttr = 1u << 0,   // numExperts (grad) / numOutTokens (forward)
  kAttrT = 1u << 7,  // tokensNum (grad)
  kOpG = 1u << 1,    // G / tokens
  kOpP = 1u << 2,    // P / probsOptional
  kOpS = 1u << 3,    // sortedIndices(Out)
  kOpM = 1u << 4,    // routing map
  kOpTG = 1u << 5,   // tokensGradOut / permuteTokensOut
  kOpPG = 1u << 6,   // probsGradOutOptional / permuteProbsOutOptional
};

enum class Modes { both, dropless, drop_and_pad };
inline bool applies(Modes m, bool drop_and_pad) {
  return m == Modes::both || (m == Modes::drop_and_pad) == drop_and_pad;
}

template <class Args>
struct RuleRow {
  const char *name;  // gtest name: r<rule>_<what>
  int rule;          // SPEC §5 rule number (6 also covers views)
  Modes modes;
  uint32_t touches;
  void (*mutate)(Args &);
  int32_t code;
  std::vector<std::string> substrings;  // all must occur in the message
};

using GradRow = RuleRow<GradArgs>;
using PermuteRow = RuleRow<PermuteArgs>;
using UnpermuteRow = RuleRow<UnpermuteArgs>;
using UnpermuteGradRow = RuleRow<UnpermuteGradArgs>;

const std::vector<GradRow> &grad_rule_rows();
const std::vector<PermuteRow> &permute_rule_rows();
const std::vector<UnpermuteRow> &unpermute_rule_rows();
const std::vector<UnpermuteGradRow> &unpermute_grad_rule_rows();

// Checks one outcome against a row: code and every substring.
::testing::AssertionResult MatchesRow(const Outcome &got, int32_t code,
                                      const std::vector<std::string> &substrings);

// Runs `a` through every API that can express it (the C++ plan function, the CANN first
// phase) and checks each outcome; where both can, their messages must also be identical (one
// catalog). Fails when neither API can express `a`.
template <class Args>
::testing::AssertionResult CheckBothApis(const Args &a, int32_t code,
                                         const std::vector<std::string> &substrings) {
  const bool cxx = expressible_in_cxx(a), c = expressible_in_c(a);
  if (!cxx && !c) return ::testing::AssertionFailure() << "neither API can express the arguments";
  Outcome from_cxx, from_c;
  if (cxx) {
    from_cxx = plan_cxx(a);
    if (auto r = MatchesRow(from_cxx, code, substrings); !r)
      return ::testing::AssertionFailure() << "C++ API: " << r.message();
  }
  if (c) {
    from_c = first_phase_c(a);
    if (auto r = MatchesRow(from_c, code, substrings); !r)
      return ::testing::AssertionFailure() << "C API: " << r.message();
  }
  if (cxx && c && from_cxx.message != from_c.message)
    return ::testing::AssertionFailure() << "C and C++ messages differ: \"" << from_c.message
                                         << "\" vs \"" << from_cxx.message << "\"";
  return ::testing::AssertionSuccess();
}

// Applies `mutate` to the valid arguments of each mode in `modes` and checks both APIs give
// `code` and `substrings` (0 and none: accepted). Fails when the row applies to no mode.
template <class Args>
::testing::AssertionResult CheckInEveryMode(Modes modes, void (*mutate)(Args &), int32_t code,
                                            const std::vector<std::string> &substrings) {
  int modes_run = 0;
  std::string failures;
  for (bool dp : {false, true}) {
    if (!applies(modes, dp)) continue;
    Args a = valid_args<OpOf<Args>>(dp);
    mutate(a);
    if (auto r = CheckBothApis(a, code, substrings); !r)
      failures += std::string(dp ? "dropAndPad=true: " : "dropAndPad=false: ") + r.message() + "\n";
    ++modes_run;
  }
  if (modes_run == 0) return ::testing::AssertionFailure() << "the row applies to no mode";
  if (!failures.empty()) return ::testing::AssertionFailure() << failures;
  return ::testing::AssertionSuccess();
}

// SPEC §5 "first failure wins" over every pair of rows of one table that break different
// operands (so neither mutation undoes the other): applies the later row first and the
// earlier one last (so a shared field keeps the earlier row's value), then expects the earlier
// row's outcome. Returns the number of pairs checked.
template <class Args>
int check_all_pairs(const std::vector<RuleRow<Args>> &rows) {
  int checked = 0;
  for (bool dp : {false, true})
    for (size_t i = 0; i < rows.size(); ++i)
      for (size_t j = i + 1; j < rows.size(); ++j) {
        const RuleRow<Args> &first = rows[i], &second = rows[j];
        if (!applies(first.modes, dp) || !applies(second.modes, dp)) continue;
        if (first.touches & second.touches) continue;
        Args a = valid_args<OpOf<Args>>(dp);
        second.mutate(a);
        first.mutate(a);
        if (!expressible_in_cxx(a) && !expressible_in_c(a)) continue;  // e.g. null G + 1 stride
        EXPECT_TRUE(CheckBothApis(a, first.code, first.substrings))
            << first.name << " (wins) + " << second.name << ", dropAndPad=" << dp;
        ++checked;
      }
  return checked;
}

// The rows of one table of one operator, type-erased so that one parameterised driver runs
// every operator's tables: one gtest case per row, named <table>_<row>.
struct TableRows {
  std::string table;
  size_t size = 0;
  std::function<std::string(size_t)> name;
  std::function<::testing::AssertionResult(size_t)> check;
};
struct RowRef {
  const TableRows *rows;
  size_t index;
};
std::vector<RowRef> every_row(const std::vector<TableRows> &tables);
std::string RowName(const ::testing::TestParamInfo<RowRef> &info);

// One operator's SPEC §5 rule table with the properties checked of the table as a whole.
struct RuleTable {
  TableRows rows;                                       // each row fails as it says
  std::function<::testing::AssertionResult()> accepts;  // the unmutated arguments plan
  std::function<std::vector<int>()> rules;              // the rows' rule numbers, in order
  std::function<std::set<int32_t>()> codes;             // the rows' status codes
  std::function<int()> check_all_pairs;                 // first failure wins, pairs checked
  std::set<int32_t> spec_codes;  // every status code the spec assigns to its validation
  int min_pairs;                 // guards against the pair filter silently leaving nothing to check
  bool spec_ordered;  // SPEC §5 orders this operator's rules (the grad operator only), and the
                      // table lists them in that order
};

template <class Args>
RuleTable make_rule_table(std::string table, const std::vector<RuleRow<Args>> &rows,
                          std::set<int32_t> spec_codes, int min_pairs, bool spec_ordered) {
  const std::vector<RuleRow<Args>> *r = &rows;
  return RuleTable{
      TableRows{std::move(table), rows.size(), [r](size_t i) { return std::string((*r)[i].name); },
                [r](size_t i) {
                  const RuleRow<Args> &row = (*r)[i];
                  return CheckInEveryMode(row.modes, row.mutate, row.code, row.substrings);
                }},
      [] { return CheckInEveryMode<Args>(Modes::both, [](Args &) {}, 0, {}); },
      [r] {
        std::vector<int> v;
        for (const RuleRow<Args> &row : *r) v.push_back(row.rule);
        return v;
      },
      [r] {
        std::set<int32_t> v;
        for (const RuleRow<Args> &row : *r) v.insert(row.code);
        return v;
      },
      [r] { return check_all_pairs(*r); },
      std::move(spec_codes),
      min_pairs,
      spec_ordered};
}

// Every operator's rule table (rule_tables.cpp): adding an operator adds one line there.
const std::vector<RuleTable> &rule_tables();

}  // namespace moeperm::testing
