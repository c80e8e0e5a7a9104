// The generic planner: walks an operator's description (core/op_desc.hpp) through the rules
// of SPEC §5 in order, so that for every operator the first failure wins by construction.
// Pure: reads descriptors only, never tensor data (Note [Operators as data]).
#include <iterator>
#include <optional>

#include "core/checked_math.hpp"
#include "core/dtype.hpp"
#include "core/limits.hpp"
#include "core/messages.hpp"
#include "core/op_desc.hpp"
#include "core/rules.hpp"
#include "core/tensor_geometry.hpp"

namespace moeperm::detail {

extern const OpDesc kPermuteOp, kPermuteGradOp, kUnpermuteOp, kUnpermuteGradOp,  // core/ops/
    kRaggedPermuteOp, kRaggedUnpermuteOp, kRaggedPermuteGradOp, kRaggedUnpermuteGradOp,
    kSortChunksOp, kSortChunksGradOp;

namespace {

// Indexed by Op: one description per Op, in Op order (a unit test checks the order).
constexpr const OpDesc *kOps[] = {
    &kPermuteOp,       &kPermuteGradOp,     &kUnpermuteOp,         &kUnpermuteGradOp,
    &kRaggedPermuteOp, &kRaggedUnpermuteOp, &kRaggedPermuteGradOp, &kRaggedUnpermuteGradOp,
    &kSortChunksOp,    &kSortChunksGradOp};
static_assert(std::size(kOps) == static_cast<size_t>(kOpCount),
              "every Op needs its description in kOps");

class Planner {
 public:
  // With `inputs_only`, outputs are neither required nor checked (infer_outputs derives them).
  Planner(const OpDesc &op, const OperandSet &set, bool inputs_only)
      : op_(op), ctx_{op_, set, Sizes{}}, inputs_only_(inputs_only) {}

  Status validate() {
    MOEPERM_TRY(op_.check_attributes(ctx_.set));  // rule 1
    MOEPERM_TRY(check_nulls());                   // rule 2
    for (int8_t i : op_.dtype_order)              // rule 3
      if (checked(i)) MOEPERM_TRY(check_dtype(i));
    for (int8_t i : op_.rank_order)  // rule 4
      MOEPERM_TRY(check_rank_step(i));
    MOEPERM_TRY(op_.derive_sizes(ctx_));
    MOEPERM_TRY(check_limits(op_, ctx_.set, ctx_.sizes));  // rule 5
    for (int8_t i : op_.shape_order)                       // rule 6
      MOEPERM_TRY(check_shape_step(i));
    for (int8_t i : op_.view_order)
      if (checked(i))
        MOEPERM_TRY(check_view(op_.api, operand(i).name, *tensor(i), operand(i).dir == Dir::out));
    return Status::success();
  }

  void fill(Plan &p) const;
  void infer(InferredOutputs &out) const;

 private:
  const OperandDesc &operand(int i) const { return op_.operands[static_cast<size_t>(i)]; }
  const TensorDesc *tensor(int i) const { return ctx_.set[i]; }
  bool given(int i) const { return ctx_.set.given(i); }
  bool skipped(int i) const { return inputs_only_ && operand(i).dir == Dir::out; }
  bool checked(int i) const { return given(i) && !skipped(i); }

  // SPEC §5.2: the required tensors first, then the description's presence rules.
  Status check_nulls() const {
    for (int i = 0; i < static_cast<int>(op_.operands.size()); ++i)
      if (operand(i).required && !given(i) && !skipped(i))
        return null_argument(op_.api, operand(i).name);
    return check_presence(RuleScope{op_, ctx_.set, inputs_only_});
  }

  // Rule 4 for one entry of rank_order: an operand's rank, or an integer array's length.
  Status check_rank_step(int8_t ref) const {
    if (is_int_array_ref(ref))
      return given(ref) ? check_int_array_length(op_, ctx_.set, ref) : Status::success();
    if (!checked(ref)) return Status::success();
    if (const int8_t with = operand(ref).rank_checked_with; with >= 0 && !given(with))
      return Status::success();  // then its shape rule checks the rank (161002)
    return check_rank(op_.api, operand(ref).name, *tensor(ref), operand(ref).rank, op_.rank_status);
  }

  // The rule in force: an output that follows its input when the input is given.
  DtypeRule rule_of(int i) const {
    const DtypeRule &r = operand(i).dtype;
    if (given(r.same_as_when_given))
      return {.kind = DtypeKind::same_as, .ref = r.same_as_when_given};
    return r;
  }

  Status check_dtype(int i) const {
    const OperandDesc &o = operand(i);
    const DType got = tensor(i)->dtype;
    const DtypeRule r = rule_of(i);
    switch (r.kind) {
      case DtypeKind::float_value:
        if (is_float_value(got)) return Status::success();
        return expected_dtype(op_.api, o.name, "bfloat16, float16 or float32", got);
      case DtypeKind::routing_map:
        if (is_routing_map_dtype(got)) return Status::success();
        return expected_dtype(op_.api, o.name, "int8 or bool", got);
      case DtypeKind::any_routing_map:
        if (is_any_routing_map_dtype(got)) return Status::success();
        return expected_dtype(op_.api, o.name, "bool, int8, uint8 or int32", got);
      case DtypeKind::int32:
        if (got == DType::i32) return Status::success();
        return expected_dtype(op_.api, o.name, "int32", got);
      case DtypeKind::same_as: {
        const DType want = tensor(r.ref)->dtype;
        if (got == want) return Status::success();
        return expected_dtype(op_.api, o.name,
                              cat(to_string(want), " (the dtype of ", operand(r.ref).name, ")"),
                              got);
      }
      case DtypeKind::probs_for: {
        const DType values = tensor(r.ref)->dtype;
        if (is_float_value(got) && probs_dtype_matches(got, values)) return Status::success();
        return expected_dtype(
            op_.api, o.name,
            cat(to_string(values), values == DType::bf16 ? " or float32" : "",
                r.says_why ? cat(" (to match ", operand(r.ref).name, ")") : std::string()),
            got);
      }
    }
    return internal_error(op_.api, "unknown dtype rule");
  }

  Status check_shape_step(int8_t step) {
    const Sizes &z = ctx_.sizes;
    switch (step) {
      case kCheckRows: return op_.rows(ctx_);
      case kCheckBytes:
        if (problem_bytes_fit(z.rows, z.tokens, z.experts, z.hidden)) return Status::success();
        return inconsistent(
            op_.api, cat("sizes overflow int64: R=", z.rows, ", T=", z.tokens, ", E=", z.experts,
                         ", H=", z.hidden, " (tensor sizes in bytes must fit in int64)"));
      case kCheckIndexWidth: return op_.index_width ? op_.index_width(ctx_) : Status::success();
      default:
        if (is_int_array_ref(step))
          return given(step) ? check_int_array_values(op_, ctx_.set, step, z) : Status::success();
        return checked(step) ? check_shape(step) : Status::success();
    }
  }

  Status check_shape(int i) const {
    const OperandDesc &o = operand(i);
    const ShapeRule &r = o.shape;
    const TensorDesc &d = *tensor(i);
    // An operand whose rank rule 4 did not check (absent from rank_order, or its rank rule
    // off without rank_checked_with): a wrong rank is a wrong shape.
    if (static_cast<int64_t>(d.shape.size()) != o.rank)
      return check_rank(op_.api, o.name, d, o.rank, Code::invalid_param);
    bool ok = true;
    for (int k = 0; k < o.rank; ++k) {
      const Sym s = r.dims[static_cast<size_t>(k)];
      if (s != Sym::free && d.shape[static_cast<size_t>(k)] != size_of(ctx_.sizes, s)) ok = false;
    }
    if (ok) return Status::success();
    const std::string why = r.why ? std::string(r.why) : r.why_fn ? r.why_fn(ctx_) : std::string();
    auto expected = [&](int k) {
      const Sym s = r.dims[static_cast<size_t>(k)];
      return s == Sym::free ? std::string(r.free_label) : cat(size_of(ctx_.sizes, s));
    };
    if (o.rank == 1)
      return inconsistent(
          op_.api, cat(o.name, " has length ", d.shape[0], ", expected ", expected(0), " ", why));
    return inconsistent(op_.api, cat(o.name, " has shape ", shape_string(d.shape), ", expected [",
                                     expected(0), ", ", expected(1), "] ", why));
  }

  const OpDesc &op_;
  PlanContext ctx_;
  bool inputs_only_;
};

// A role's view: a 1-D tensor as [len, 1] with row_stride = its stride (Plan::vector).
MatrixGeom view_of(const TensorDesc &d) {
  if (d.shape.size() == 2) return matrix_geom(d);
  const VectorGeom v = vector_geom(d);
  return {.rows = v.len, .cols = 1, .row_stride = v.stride, .col_stride = 1, .offset = v.offset};
}

void Planner::fill(Plan &p) const {
  const Sizes &z = ctx_.sizes;
  p.op = op_.op;
  p.drop_and_pad = ctx_.set.drop_and_pad;
  p.T = z.tokens, p.E = z.experts, p.H = z.hidden, p.K = z.top_k, p.C = z.capacity, p.R = z.rows;
  p.S = z.chunks;
  for (int i = 0; i < static_cast<int>(op_.operands.size()); ++i) {
    if (!given(i)) continue;
    p.views[role_index(operand(i).role)] = view_of(*tensor(i));
    p.roles_given |= 1u << role_index(operand(i).role);
    p.role_dtypes[role_index(operand(i).role)] = tensor(i)->dtype;
    const int8_t with = operand(i).used_only_with;
    if (with < 0 || given(with)) p.used_operands |= 1u << i;
  }
  p.value_dtype = tensor(op_.values)->dtype;
  for (int i = 0; i < static_cast<int>(op_.operands.size()); ++i)
    if (given(i) && operand(i).role == Role::routing_map) {
      p.has_routing_map = true;
      p.routing_map_dtype = tensor(i)->dtype;
    }
  // The probabilities path: the input's dtype, else the output's, else the values'; the
  // output's, else the input's.
  const int in = op_.probs_in, out = op_.probs_out;
  if (in < 0 || out < 0) return;  // an operator without a probabilities path
  const DType in_dtype = given(in)    ? tensor(in)->dtype
                         : given(out) ? tensor(out)->dtype
                                      : p.value_dtype;
  const DType out_dtype = given(out) ? tensor(out)->dtype : in_dtype;
  const bool in_is_dense = operand(in).role == Role::dense_probs;
  p.probs_dtype = in_is_dense ? in_dtype : out_dtype;
  p.permuted_probs_dtype = in_is_dense ? out_dtype : in_dtype;
  p.probs = !given(out) ? ProbsWork::none : given(in) ? ProbsWork::compute : ProbsWork::zero_fill;
}

void Planner::infer(InferredOutputs &result) const {
  for (int i = 0; i < static_cast<int>(op_.operands.size()); ++i) {
    const OperandDesc &o = operand(i);
    if (o.dir != Dir::out) continue;
    if (!o.required && !given(i) && !given(o.dtype.same_as_when_given)) continue;
    const DtypeRule r = rule_of(i);
    DType dtype = DType::i32;
    if (r.kind == DtypeKind::same_as || (r.kind == DtypeKind::probs_for && !given(i)))
      dtype = tensor(r.ref)->dtype;
    else if (r.kind != DtypeKind::int32)
      dtype = tensor(i)->dtype;  // an optional output given without its input keeps its dtype
    std::vector<int64_t> shape;
    for (int k = 0; k < o.rank; ++k)
      shape.push_back(size_of(ctx_.sizes, o.shape.dims[static_cast<size_t>(k)]));
    result.outputs[static_cast<size_t>(i)] = TensorDesc::contiguous(dtype, std::move(shape));
  }
}

}  // namespace

const OpDesc &op_desc(Op op) { return *kOps[op_index(op)]; }

Buffers buffers_of(Op op, std::initializer_list<const void *> data) {
  const OpDesc &d = op_desc(op);
  Buffers b;
  size_t i = 0;
  for (const void *ptr : data) {
    if (i == d.operands.size()) break;  // more pointers than operands: a caller's bug
    // Inputs are never written: the role arrays are void* for both directions.
    b.data[role_index(d.operands[i++].role)] = const_cast<void *>(ptr);
  }
  return b;
}

const char *Plan::api() const { return op_desc(op).api; }

Status make_plan(const OperandSet &set, Plan *plan) {
  return make_plan_with(op_desc(set.op), set, plan);
}

Status make_plan_with(const OpDesc &op, const OperandSet &set, Plan *plan) {
  Planner planner(op, set, /*inputs_only=*/false);
  MOEPERM_TRY(planner.validate());
  Plan p;
  planner.fill(p);
  *plan = p;
  return Status::success();
}

Status infer_outputs(const OperandSet &set, InferredOutputs *out) {
  Planner planner(op_desc(set.op), set, /*inputs_only=*/true);
  MOEPERM_TRY(planner.validate());
  *out = InferredOutputs{};
  planner.infer(*out);
  return Status::success();
}

IndexRange index_range(const OpDesc &op, const Plan &p, int rule) {
  const IndexRule &r = op.index_rules[static_cast<size_t>(rule)];
  const Sizes z{.tokens = p.T,
                .experts = p.E,
                .hidden = p.H,
                .top_k = p.K,
                .capacity = p.C,
                .rows = p.R,
                .chunks = p.S};
  if (p.drop_and_pad)
    return {size_of(z, r.drop_and_pad_bound), r.drop_and_pad_allows_minus_one, r.unique};
  return {size_of(z, r.dropless_bound), r.dropless_allows_minus_one, r.unique};
}

}  // namespace moeperm::detail
