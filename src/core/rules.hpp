// The rule lists of an operator description (core/op_desc.hpp) that the planner walks
// besides its operands: presence (one-of and conditional), integer-array attributes, and
// limits on derived sizes. Each returns the first failure in list order, with the
// catalog's messages (core/messages.hpp).
#pragma once

#include "core/op_desc.hpp"

namespace moeperm::detail {

// The value a size symbol stands for (-1 for Sym::free).
int64_t size_of(const Sizes &z, Sym s);

// The CANN name of an operand or integer array (an int_array_ref).
const char *ref_name(const OpDesc &op, int8_t ref);

// Whether the planner looks at argument `ref`: given, and not an output skipped by
// infer_outputs (which validates inputs only).
struct RuleScope {
  const OpDesc &op;
  const OperandSet &set;
  bool inputs_only;
  bool skipped(int8_t ref) const;
  bool considered(int8_t ref) const { return set.given(ref) && !skipped(ref); }
};

// SPEC's null rules after the required operands: required integer arrays, one_of, presence.
Status check_presence(const RuleScope &scope);

// An integer array's length (with the ranks) and values (with the shapes).
Status check_int_array_length(const OpDesc &op, const OperandSet &set, int8_t ref);
Status check_int_array_values(const OpDesc &op, const OperandSet &set, int8_t ref, const Sizes &z);

// The limits on derived sizes, in order.
Status check_limits(const OpDesc &op, const OperandSet &set, const Sizes &z);

}  // namespace moeperm::detail
