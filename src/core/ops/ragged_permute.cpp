// ragged_permute as data (docs/ragged.md). Validated in the permute's rule order: the
// attribute, required tensors and presence, dtypes, ranks, consistent shapes, views.
//   Drop-less: R = num_out_tokens rows; the routed (token, expert) pairs in expert-major
//   order (tokens ascending inside an expert) fill rows 0 .. min(R, pairs) - 1; pairs past
//   row R are dropped, rows past the pairs are empty.
//   Drop-and-pad: capacity C = num_out_tokens / E; expert e's first C routed tokens
//   (ascending) fill rows e*C .. e*C + C - 1; the rest of the expert's rows are empty.
//   sorted_indices[r] is row r's token (Megatron's sorted_indices), -1 for an empty row, whose
//   permuted_tokens row and permuted_probs are +0.
#include "core/ops/ragged_permute.hpp"
#include "core/messages.hpp"
#include "core/op_desc.hpp"

namespace moeperm::detail {
namespace {

using namespace ragged_permute_operands;
enum : int8_t { kNumOutTokens };  // integer attributes
constexpr const char *kApi = "moeperm::ragged_permute";

std::string rows_why(const PlanContext &c) {
  const Sizes &z = c.sizes;
  return c.set.drop_and_pad
             ? cat("(experts * capacity = ", z.experts, " * ", z.capacity, ", drop_and_pad=true)")
             : cat("(num_out_tokens = ", z.rows, ")");
}

Status check_attributes(const OperandSet &set) {
  if (set.ints[kNumOutTokens] < 0)
    return invalid_attribute(kApi, "num_out_tokens", ">= 0", set.ints[kNumOutTokens]);
  return Status::success();
}

Status derive_sizes(PlanContext &c) {
  const TensorDesc &x = *c.set[X], &m = *c.set[M];
  Sizes &z = c.sizes;
  z.tokens = x.shape[0], z.hidden = x.shape[1], z.experts = m.shape[1];
  if (z.tokens < 0 || z.hidden < 0)
    return inconsistent(kApi, cat("tokens: dimensions must be >= 0, got ", shape_string(x.shape)));
  if (z.experts < 0 || m.shape[0] < 0)
    return inconsistent(kApi,
                        cat("routing_map: dimensions must be >= 0, got ", shape_string(m.shape)));
  z.rows = c.set.ints[kNumOutTokens];
  return Status::success();
}

// Drop-and-pad: every expert gets C rows, so R must be a multiple of E.
Status rows(PlanContext &c) {
  Sizes &z = c.sizes;
  if (!c.set.drop_and_pad) return Status::success();
  if (z.experts == 0 && z.rows > 0)
    return inconsistent(kApi,
                        "routing_map has 0 experts (columns); drop_and_pad=true needs at least "
                        "one to derive capacity = num_out_tokens / experts");
  if (z.experts > 0 && z.rows % z.experts != 0)
    return inconsistent(kApi, cat("num_out_tokens = ", z.rows, " is not a multiple of the ",
                                  z.experts, " experts (drop_and_pad=true: experts * capacity)"));
  z.capacity = z.experts > 0 ? z.rows / z.experts : 0;
  return Status::success();
}

// sorted_indices is int32: it holds token ids < T.
Status index_width(const PlanContext &c) {
  constexpr int64_t kInt32Max = 2147483647;
  if (c.sizes.tokens - 1 > kInt32Max)
    return inconsistent(kApi, cat("sorted_indices is int32 but would have to hold token ids up "
                                  "to T-1 = ",
                                  c.sizes.tokens - 1, ", past 2147483647"));
  return Status::success();
}

constexpr OperandDesc kOperands[] = {
    {.name = "tokens",
     .role = Role::tokens,
     .dir = Dir::in,
     .rank = 2,
     .required = true,
     .dtype = {.kind = DtypeKind::float_value},
     .shape = {}},
    {.name = "routing_map",
     .role = Role::routing_map,
     .dir = Dir::in,
     .rank = 2,
     .required = true,
     .dtype = {.kind = DtypeKind::any_routing_map},
     .shape = {.dims = {Sym::T, Sym::free},
               .free_label = "experts",
               .why = "(its rows are the tokens)"}},
    {.name = "probs",
     .role = Role::dense_probs,
     .dir = Dir::in,
     .rank = 2,
     .required = false,
     .dtype = {.kind = DtypeKind::float_value},  // any float dtype with any token dtype
     .shape = {.dims = {Sym::T, Sym::E}, .why = "(the shape of routing_map)"}},
    {.name = "permuted_tokens",
     .role = Role::permuted,
     .dir = Dir::out,
     .rank = 2,
     .required = true,
     .dtype = {.kind = DtypeKind::same_as, .ref = X},
     .shape = {.dims = {Sym::R, Sym::H}, .why_fn = rows_why}},
    {.name = "permuted_probs",
     .role = Role::permuted_probs,
     .dir = Dir::out,
     .rank = 1,
     .required = false,
     .dtype = {.kind = DtypeKind::float_value, .same_as_when_given = PR},
     .shape = {.dims = {Sym::R}, .why_fn = rows_why}},
    {.name = "sorted_indices",
     .role = Role::sorted_indices,
     .dir = Dir::out,
     .rank = 1,
     .required = true,
     .dtype = {.kind = DtypeKind::int32},
     .shape = {.dims = {Sym::R}, .why_fn = rows_why}},
};
constexpr int8_t kParameterOrder[] = {X, M, PR, Y, YP, S};
constexpr PresenceRule kPresence[] = {{.needed = YP, .when_given = PR}};
constexpr int8_t kShapeOrder[] = {M, PR, kCheckRows, kCheckBytes, kCheckIndexWidth, Y, YP, S};

}  // namespace

extern const OpDesc kRaggedPermuteOp{
    .op = Op::ragged_permute,
    .api = kApi,
    .short_name = "ragged_permute",
    .backward = false,
    .operands = kOperands,
    .dtype_order = kParameterOrder,
    .rank_order = kParameterOrder,
    .shape_order = kShapeOrder,
    .view_order = kParameterOrder,
    .presence = kPresence,
    .mode_name = "drop_and_pad",
    .check_attributes = check_attributes,
    .derive_sizes = derive_sizes,
    .rows = rows,
    .index_width = index_width,
    .values = X,
    .probs_in = PR,
    .probs_out = YP,
};

OperandSet to_set(const RaggedPermuteOperands &o) {
  OperandSet set{.op = Op::ragged_permute, .drop_and_pad = o.drop_and_pad};
  set.tensors = {o.tokens,          o.routing_map,    o.probs,
                 o.permuted_tokens, o.permuted_probs, o.sorted_indices};
  set.ints[kNumOutTokens] = o.num_out_tokens;
  return set;
}

}  // namespace moeperm::detail
