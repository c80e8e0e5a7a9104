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
#include <optional>
#include <span>
#include <string>

#include "core/plan.hpp"
#include "core/status.hpp"

namespace moeperm::detail {

inline constexpr int kMaxOperands = 12;
inline constexpr int kMaxIntAttributes = 4;
inline constexpr int kMaxIntArrays = 2;

// An argument of a rule: an operand (its index in the description, >= 0) or an integer
// array attribute (int_array_ref(i), below -15), so that presence, rank and shape rules can
// name either.
inline constexpr int8_t int_array_ref(int i) { return static_cast<int8_t>(-16 - i); }
inline constexpr bool is_int_array_ref(int8_t ref) { return ref <= -16; }
inline constexpr int int_array_of(int8_t ref) { return -16 - ref; }

// The arguments of one call as the core sees them: descriptors only (never data), and
// nullable, because "not given" is itself something SPEC §5 validates. `tensors` follows the
// operator's description order; `ints` its integer attributes in CANN's order; `int_arrays`
// its integer-array attributes (aclIntArray; nullopt: not given) in CANN's order.
struct OperandSet {
  Op op{};
  std::array<const TensorDesc *, kMaxOperands> tensors{};
  std::array<int64_t, kMaxIntAttributes> ints{};
  std::array<std::optional<std::span<const int64_t>>, kMaxIntArrays> int_arrays{};
  bool drop_and_pad = false;

  const TensorDesc *operator[](int i) const { return tensors[static_cast<size_t>(i)]; }
  // Whether the operand or integer array `ref` is given (-1 .. -15: never).
  bool given(int ref) const {
    if (is_int_array_ref(static_cast<int8_t>(ref)))
      return int_arrays[static_cast<size_t>(int_array_of(static_cast<int8_t>(ref)))].has_value();
    return ref >= 0 && tensors[static_cast<size_t>(ref)] != nullptr;
  }
  std::span<const int64_t> int_array(int ref) const {
    return *int_arrays[static_cast<size_t>(int_array_of(static_cast<int8_t>(ref)))];
  }
};

// What a dtype rule allows (SPEC §5.3).
enum class DtypeKind : uint8_t {
  float_value,      // bf16, fp16, fp32
  routing_map,      // int8, bool
  any_routing_map,  // bool, int8, uint8, int32 (the ragged operators)
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

// The sizes a shape dimension or a limit can be bound to (SPEC notation), or `free`: not
// compared, and printed by its label.
enum class Sym : uint8_t { T, H, E, R, K, C, S, free };

// When a rule applies: in both modes, or in one (the operator's mode attribute, OpDesc::
// mode_name: dropAndPad, paddedMode).
enum class Mode : uint8_t { any, dropless, drop_and_pad };
inline constexpr bool applies(Mode m, bool drop_and_pad) {
  return m == Mode::any || (m == Mode::drop_and_pad) == drop_and_pad;
}

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
  int8_t used_only_with = -1;  // read or written only when this one is given too
  // Its rank is a rule-4 check (with OpDesc::rank_status) only when this operand is given
  // (-1: always); otherwise its shape rule checks the rank with 161002 (SPEC-unpermute's
  // Grad: M, X and P are tiling-checked only with P).
  int8_t rank_checked_with = -1;
  DtypeRule dtype;
  ShapeRule shape;
};

// An integer-array attribute (aclIntArray), e.g. restoreShapeOptional. Its length is checked
// with the ranks (its int_array_ref in rank_order), its values with the shapes (in
// shape_order): value k must equal `values[k]` unless that is Sym::free. An array the
// operator does not read is listed without either (it is then only passed through).
struct IntArrayDesc {
  const char *name;
  bool required = false;
  int8_t length = 0;
  std::array<Sym, 2> values{Sym::free, Sym::free};
  const char *why = "";  // appended to the shape message
};

// SPEC's null rules after "required": both of `a` and `b` null is 161001 ("one of these is
// required"); operands or integer arrays.
struct OneOfRule {
  int8_t a, b;
};
// `needed` must be given when `when_given` is (and `and_given` too, unless -1), in `mode`:
// else 161001 "<needed> must not be null when <when_given> [and <and_given>] [is|are] given
// [(<mode attribute>=<value>)]".
struct PresenceRule {
  int8_t needed;
  int8_t when_given;
  int8_t and_given = -1;
  Mode mode = Mode::any;
};

// A bound on a derived size (SPEC's tiling limits): `value` above the constant `max`, or
// above the size `max_sym` when that is not free, is an error with `status`, in `mode` and
// only when operand `only_with` is given (-1: always). Checked after derive_sizes, before
// the shapes, in list order.
struct LimitRule {
  Sym value;
  const char *label;  // the size's name in messages ("topK")
  int64_t max = 0;
  Sym max_sym = Sym::free;
  const char *max_label = "";  // max_sym's name in messages ("numExperts")
  Code status = Code::invalid_param;
  Mode mode = Mode::any;
  int8_t only_with = -1;
  const char *why = "";  // appended in parentheses
};

// Markers in an OpDesc's shape order besides operand indices.
inline constexpr int8_t kCheckRows = -1;        // the operator's rows() hook
inline constexpr int8_t kCheckBytes = -2;       // every tensor fits in int64 bytes
inline constexpr int8_t kCheckIndexWidth = -3;  // the operator's index_width() hook

// A data-dependent rule on an index operand (Note [Index validation]): the indices in
// `role` lie in [0, bound) for the mode, or are -1 where allowed, and, when `unique`, no
// value other than -1 appears twice ("no row named twice": a scatter through them would
// race). Read only in `mode`. An operator lists one per index input it reads (none for an
// operator that only writes indices).
struct IndexRule {
  Role role = Role::sorted_indices;
  const char *name = "";  // printed in the error
  Sym dropless_bound = Sym::R, drop_and_pad_bound = Sym::T;
  bool dropless_allows_minus_one = true;
  bool drop_and_pad_allows_minus_one = false;
  bool unique = false;
  Mode mode = Mode::any;
  const char *names = "row";  // what a value names, in the "named twice" message
};

// A data-dependent rule on a sizes operand (sort_chunks' split_sizes): every value >= 0 and
// their sum equal to the size `total` (the rows the chunks split). Checked in the second
// phase with the index rules, before anything is written.
struct SplitRule {
  Role role = Role::split_sizes;
  const char *name = "";        // printed in the error
  Sym total = Sym::T;           // what the sizes must add up to
  const char *total_name = "";  // the tensor whose rows they split, in the error
};

struct OpDesc {
  Op op;
  const char *api;         // the CANN API name, prefix of every message
  const char *short_name;  // in to_string(plan)
  bool backward;
  std::span<const OperandDesc> operands;
  std::span<const IntArrayDesc> int_arrays = {};
  // SPEC §5 orders rules 3, 4 and 6 by its own lists; each is a list of operand indices
  // (rank_order and shape_order also hold int_array_refs, shape_order the kCheck* markers).
  std::span<const int8_t> dtype_order, rank_order, shape_order, view_order;
  // Null rules after the required operands and arrays: one_of, then presence, in order.
  std::span<const OneOfRule> one_of = {};
  std::span<const PresenceRule> presence = {};
  // Rank errors' status (SPEC-unpermute's Grad gives 561002, CANN's tiling rejection).
  Code rank_status = Code::invalid_param;
  std::span<const LimitRule> limits = {};
  // The mode attribute's CANN name, in messages; "" for an operator without one.
  const char *mode_name = "dropAndPad";
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
  std::span<const IndexRule> index_rules = {};
  std::span<const SplitRule> split_rules = {};
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

// The index range of an operator's index rule `rule` (its IndexRule for the plan's mode);
// the first rule when not named.
struct IndexRange {
  int64_t bound = 0;
  bool allows_minus_one = false;
  bool unique = false;
  bool contains(int64_t v) const { return (v >= 0 && v < bound) || (allows_minus_one && v == -1); }
};
IndexRange index_range(const OpDesc &op, const Plan &plan, int rule);
inline IndexRange index_range(const Plan &plan) { return index_range(op_desc(plan.op), plan, 0); }

// make_plan for a description that need not be the one registered for set.op (the planner's
// unit tests describe operators of their own).
Status make_plan_with(const OpDesc &op, const OperandSet &set, Plan *plan);

// The role of the operator's probabilities output (what a zero fill writes).
inline Role probs_output_role(const Plan &plan) {
  const OpDesc &op = op_desc(plan.op);
  return op.operands[static_cast<size_t>(op.probs_out)].role;
}

}  // namespace moeperm::detail
