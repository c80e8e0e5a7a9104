// ragged_permute_grad as data (docs/ragged.md): the backward of ragged_permute.
//   tokens_grad[t] = the sum of the rows r that sorted_indices names t, ascending r, in
//   fp32, rounded once (ragged_unpermute without probs); probs_grad[t, e] = the sum of
//   permuted_probs_grad[r] over those rows whose expert e(r) is e (one row at most for a
//   permute's index), +0 elsewhere; e(r) as for ragged_unpermute (r / C drop-and-pad; the
//   map's expert-major blocks drop-less). permuted_probs_grad is read only with probs_grad,
//   which needs it and the routing map.
#include "core/ops/ragged_permute_grad.hpp"
#include "core/messages.hpp"
#include "core/op_desc.hpp"
#include "core/ops/ragged_capacity.hpp"

namespace moeperm::detail {
namespace {

using namespace ragged_permute_grad_operands;
enum : int8_t { kNumTokens };  // integer attributes
constexpr const char *kApi = "moeperm::ragged_permute_grad";

Status check_attributes(const OperandSet &set) {
  if (set.ints[kNumTokens] < 0)
    return invalid_attribute(kApi, "num_tokens", ">= 0", set.ints[kNumTokens]);
  return Status::success();
}

Status derive_sizes(PlanContext &c) {
  const TensorDesc &g = *c.set[G];
  Sizes &z = c.sizes;
  z.rows = g.shape[0], z.hidden = g.shape[1], z.tokens = c.set.ints[kNumTokens];
  z.experts = c.set.given(M) ? c.set[M]->shape[1] : 0;
  if (z.rows < 0 || z.hidden < 0 || z.experts < 0)
    return inconsistent(kApi, cat("dimensions must be >= 0, got permuted_tokens_grad ",
                                  shape_string(g.shape), ", ", z.experts, " experts"));
  return Status::success();
}

// Drop-and-pad with probs_grad: row r belongs to expert r / C.
Status rows(PlanContext &c) {
  if (!c.set.drop_and_pad || !c.set.given(PG)) return Status::success();
  return ragged_capacity(kApi, c.sizes, "permuted_tokens_grad", "routing_map");
}

constexpr const char *kRows = "(the rows of permuted_tokens_grad)";

constexpr OperandDesc kOperands[] = {
    {.name = "permuted_tokens_grad",
     .role = Role::permuted,
     .dir = Dir::in,
     .rank = 2,
     .required = true,
     .dtype = {.kind = DtypeKind::float_value},
     .shape = {}},
    {.name = "permuted_probs_grad",
     .role = Role::permuted_probs,
     .dir = Dir::in,
     .rank = 1,
     .required = false,
     .used_only_with = PG,
     .dtype = {.kind = DtypeKind::float_value},
     .shape = {.dims = {Sym::R}, .why = kRows}},
    {.name = "sorted_indices",
     .role = Role::sorted_indices,
     .dir = Dir::in,
     .rank = 1,
     .required = true,
     .dtype = {.kind = DtypeKind::int32},
     .shape = {.dims = {Sym::R}, .why = kRows}},
    {.name = "routing_map",
     .role = Role::routing_map,
     .dir = Dir::in,
     .rank = 2,
     .required = false,
     .dtype = {.kind = DtypeKind::any_routing_map},
     .shape = {.dims = {Sym::T, Sym::free}, .free_label = "experts", .why = "(num_tokens rows)"}},
    {.name = "tokens_grad",
     .role = Role::tokens,
     .dir = Dir::out,
     .rank = 2,
     .required = true,
     .dtype = {.kind = DtypeKind::same_as, .ref = G},
     .shape = {.dims = {Sym::T, Sym::H}, .why = "(num_tokens, hidden size)"}},
    {.name = "probs_grad",
     .role = Role::dense_probs_grad,
     .dir = Dir::out,
     .rank = 2,
     .required = false,
     .dtype = {.kind = DtypeKind::float_value, .same_as_when_given = P},
     .shape = {.dims = {Sym::T, Sym::E}, .why = "(num_tokens, experts of routing_map)"}},
};
constexpr int8_t kParameterOrder[] = {G, P, S, M, TG, PG};
// probs_grad needs what it is made of: the probs' gradient, and the map for each row's expert.
constexpr PresenceRule kPresence[] = {{.needed = P, .when_given = PG},
                                      {.needed = M, .when_given = PG}};
constexpr int8_t kShapeOrder[] = {M, kCheckRows, kCheckBytes, P, S, TG, PG};
constexpr IndexRule kIndexRules[] = {{.role = Role::sorted_indices,
                                      .name = "sorted_indices",
                                      .dropless_bound = Sym::T,
                                      .drop_and_pad_bound = Sym::T,
                                      .dropless_allows_minus_one = true,
                                      .drop_and_pad_allows_minus_one = true}};

}  // namespace

extern const OpDesc kRaggedPermuteGradOp{
    .op = Op::ragged_permute_grad,
    .api = kApi,
    .short_name = "ragged_permute_grad",
    .backward = true,
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
    .values = G,
    .probs_in = P,
    .probs_out = PG,
    .index_rules = kIndexRules,
};

OperandSet to_set(const RaggedPermuteGradOperands &o) {
  OperandSet set{.op = Op::ragged_permute_grad, .drop_and_pad = o.drop_and_pad};
  set.tensors = {o.permuted_tokens_grad, o.permuted_probs_grad, o.sorted_indices,
                 o.routing_map,          o.tokens_grad,         o.probs_grad};
  set.ints[kNumTokens] = o.num_tokens;
  return set;
}

}  // namespace moeperm::detail
