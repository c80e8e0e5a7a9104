// An operator as data (Note [Operators as data]): its CANN API name, its operands in CANN's
// parameter order, each with role, direction, rank, dtype rule, presence and shape rule, the
// order in which SPEC §5 checks them, and the few hooks where an operator derives sizes of
// its own. One generic planner (planner.cpp) walks a description, so SPEC §5's
// "first failure wins" holds by construction for every operator, and infer_outputs reads
// the same shape rules.
#pragma once

#include <moeperm/moeperm.hpp>

#include <array>
#include <cstdint>
#include <initializer_list>
#include <span>
#include <string>

#include "core/plan.hpp"
#include "core/status.hpp"

namespace moeperm::detail {

inline constexpr int kMaxOperands = 12;
inline constexpr int kMaxIntAttributes = 4;

// The arguments of one call as the core sees them: descriptors only (never data), and
// nullable, because "not given" is itself something SPEC §5 validates. `tensors` follows the
// operator's description order; `ints` its integer attributes in CANN's order.
struct OperandSet {
  Op op{};
  std::array<const TensorDesc *, kMaxOperands> tensors{};
  std::array<int64_t, kMaxIntAttributes> ints{};
  bool drop_and_pad = false;

  const TensorDesc *operator[](int i) const { return tensors[static_cast<size_t>(i)]; }
  bool given(int i) const { return i >= 0 && tensors[static_cast<size_t>(i)] != nullptr; }
};

// What a dtype rule allows (SPEC §5.3).
enum class DtypeKind : uint8_t {
  float_value,  // bf16, fp16, fp32
  routing_map,  // int8, bool
  int32,
  same_as,    // exactly the dtype of operand `ref`
  probs_for,  // a probs dtype for the values of operand `ref` (probs_dtype_matches)
};

struct DtypeRule {
  DtypeKind kind = DtypeKind::float_value;
  int8_t ref = -1;
  // When this operand is given, the rule is same_as(it) instead (an output that follows its
  // input when there is one, e.g. permuteProbsOut follows probsOptional).
  int8_t same_as_when_given = -1;
  // probs_for: the message explains the choice with " (to match <ref>)".
  bool says_why = true;
};

// The sizes a shape dimension can be bound to (SPEC notation), or `free`: not compared, and
// printed by its label.
enum class Sym : uint8_t { T, H, E, R, free };

struct OperandDesc;
struct OpDesc;

// What the hooks and the planner know while planning one call.
struct PlanContext {
  const OpDesc &op;
  const OperandSet &set;
  Sizes sizes;
};

struct ShapeRule {
  std::array<Sym, 2> dims{Sym::free, Sym::free};  // rank 1 uses dims[0]
  const char *free_label = "";                    // printed for a free dimension
  // Why these dimensions, appended to the message: static text, or computed (then `why`
  // is null).
  const char *why = nullptr;
  std::string (*why_fn)(const PlanContext &) = nullptr;
};

enum class Dir : uint8_t { in, out };

struct OperandDesc {
  const char *name;  // the CANN parameter name, as messages print it
  Role role;         // where the plan keeps its geometry and the run its pointer
  Dir dir;
  int8_t rank;
  bool required;
  int8_t required_with = -1;   // an optional operand required when this one is given
  int8_t used_only_with = -1;  // read or written only when this one is given too
  DtypeRule dtype;
  ShapeRule shape;
};

// Markers in an OpDesc's shape order besides operand indices.
inline constexpr int8_t kCheckRows = -1;        // the operator's rows() hook
inline constexpr int8_t kCheckBytes = -2;       // every tensor fits in int64 bytes
inline constexpr int8_t kCheckIndexWidth = -3;  // the operator's index_width() hook

// The data-dependent rule on an index operand (Note [Index validation]): the indices in
// `role` lie in [0, bound) for the mode, or are -1 where allowed.
struct IndexRule {
  Role role = Role::sorted_indices;
  const char *name = "";  // printed in the error
  Sym dropless_bound = Sym::R, drop_and_pad_bound = Sym::T;
  bool dropless_allows_minus_one = true;
  bool checked = false;  // false: the operator writes these indices, it never reads them
};

struct OpDesc {
  Op op;
  const char *api;         // the CANN API name, prefix of every message
  const char *short_name;  // in to_string(plan)
  bool backward;
  std::span<const OperandDesc> operands;
  // SPEC §5 orders rules 3, 4 and 6 by its own lists; each is a list of operand indices
  // (shape_order also holds the kCheck* markers).
  std::span<const int8_t> dtype_order, rank_order, shape_order, view_order;
  // Rule 1.
  Status (*check_attributes)(const OperandSet &set);
  // After ranks: T, E, H (and K where shapes alone give it), with their own checks.
  Status (*derive_sizes)(PlanContext &ctx);
  // kCheckRows in shape_order: C and R (and K where it needs them), with their checks.
  Status (*rows)(PlanContext &ctx);
  // kCheckIndexWidth: the index outputs can hold every value they will be given.
  Status (*index_width)(const PlanContext &ctx) = nullptr;
  // The role of the values input (tokens / G): the plan's value dtype.
  int8_t values = 0;
  // The probabilities path: the output is computed from the input, or zero-filled when only
  // the output is given (SPEC §3, §5).
  int8_t probs_in = -1, probs_out = -1;
  IndexRule index_rule;
};

const OpDesc &op_desc(Op op);

// The run's buffers from an operator's data pointers, one per operand in description order
// (CANN's parameter order; null where not given): each lands at its operand's role.
Buffers buffers_of(Op op, std::initializer_list<const void *> data);

// Validates a call against its description (SPEC §5, first failure wins) and derives the
// plan's sizes, dtypes and geometry; backend fields are left to the backend layer.
Status make_plan(const OperandSet &set, Plan *plan);

// The descriptors of the outputs planning would accept for `set`'s inputs (contiguous):
// outputs[i] is set for every output i that is required, given in `set`, or whose probs
// input is given. Fails where the inputs and attributes alone are invalid, with the
// planner's status and message.
struct InferredOutputs {
  std::array<std::optional<TensorDesc>, kMaxOperands> outputs;
};
Status infer_outputs(const OperandSet &set, InferredOutputs *out);

// The index range of the plan's checked index operand (its IndexRule for the plan's mode).
struct IndexRange {
  int64_t bound = 0;
  bool allows_minus_one = false;
  bool contains(int64_t v) const { return (v >= 0 && v < bound) || (allows_minus_one && v == -1); }
};
IndexRange index_range(const Plan &plan);

// The role of the operator's probabilities output (what a zero fill writes).
inline Role probs_output_role(const Plan &plan) {
  const OpDesc &op = op_desc(plan.op);
  return op.operands[static_cast<size_t>(op.probs_out)].role;
}

}  // namespace moeperm::detail
