// The SPEC §5 rules as tables, one row per way to break one rule, in validation order
// (oneDNN's *_EF tables; OpInfo's error_inputs). A row mutates a valid argument set
// (operand_args.hpp) so that exactly one rule fails, and states the status code and the
// stable message substrings that must come back, through both APIs.
//
// Order: the grad table follows SPEC §5 (rules 1-6 in order, and within a rule the order in
// which the spec lists the arguments). SPEC only orders the grad operator; the forward table
// follows the same rule order, as src/core/plan_permute.cpp documents.
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
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

const std::vector<GradRow> &grad_rule_rows();
const std::vector<PermuteRow> &permute_rule_rows();

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

}  // namespace moeperm::testing
