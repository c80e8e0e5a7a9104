// ragged_unpermute_grad as data (docs/ragged.md): the backward of ragged_unpermute.
//   permuted_tokens_grad[r] = unpermuted_tokens_grad[t] (times probs[t, e(r)] with probs, the
//   fp32 product rounded once) for the token t = sorted_indices[r], +0 for a -1 row;
//   probs_grad[t, e] = the sum over the rows r naming t with e(r) = e of SPEC-unpermute U3's
//   dot product of unpermuted_tokens_grad[t] and permuted_tokens[r], +0 elsewhere. e(r) as for
//   ragged_unpermute. probs_grad needs probs and the forward's permuted_tokens.
#include "core/ops/ragged_unpermute_grad.hpp"
#include "core/messages.hpp"
#include "core/op_desc.hpp"
#include "core/ops/ragged_capacity.hpp"

namespace moeperm::detail {
namespace {

using namespace ragged_unpermute_grad_operands;
constexpr const char *kApi = "moeperm::ragged_unpermute_grad";

Status no_attributes(const OperandSet &) { return Status::success(); }

Status derive_sizes(PlanContext &c) {
  const OperandSet &s = c.set;
  Sizes &z = c.sizes;
  const TensorDesc &g = *s[G];
  z.tokens = g.shape[0], z.hidden = g.shape[1], z.rows = s[S]->shape[0];
  z.experts = s.given(P) ? s[P]->shape[1] : s.given(M) ? s[M]->shape[1] : 0;
  if (z.tokens < 0 || z.hidden < 0 || z.rows < 0 || z.experts < 0)
    return inconsistent(
        kApi, cat("dimensions must be >= 0, got unpermuted_tokens_grad ", shape_string(g.shape),
                  ", sorted_indices [", z.rows, "], ", z.experts, " experts"));
  return Status::success();
}

// Drop-and-pad with probs: row r belongs to expert r / C.
Status rows(PlanContext &c) {
  if (!c.set.drop_and_pad || !c.set.given(P)) return Status::success();
  return ragged_capacity(kApi, c.sizes, "sorted_indices", "probs");
}

constexpr const char *kTokensByExperts = "(tokens, experts)";

constexpr OperandDesc kOperands[] = {
    {.name = "unpermuted_tokens_grad",
     .role = Role::tokens,
     .dir = Dir::in,
     .rank = 2,
     .required = true,
     .dtype = {.kind = DtypeKind::float_value},
     .shape = {}},
    {.name = "sorted_indices",
     .role = Role::sorted_indices,
     .dir = Dir::in,
     .rank = 1,
     .required = true,
     .dtype = {.kind = DtypeKind::int32},
     .shape = {}},  // R comes from it
    {.name = "routing_map",
     .role = Role::routing_map,
     .dir = Dir::in,
     .rank = 2,
     .required = false,
     .dtype = {.kind = DtypeKind::any_routing_map},
     .shape = {.dims = {Sym::T, Sym::E}, .why = kTokensByExperts}},
    {.name = "permuted_tokens",
     .role = Role::saved_permuted,
     .dir = Dir::in,
     .rank = 2,
     .required = false,
     .used_only_with = DP,
     .dtype = {.kind = DtypeKind::same_as, .ref = G},
     .shape = {.dims = {Sym::R, Sym::H}, .why = "(the rows of sorted_indices, hidden size)"}},
    {.name = "probs",
     .role = Role::dense_probs,
     .dir = Dir::in,
     .rank = 2,
     .required = false,
     .dtype = {.kind = DtypeKind::float_value},
     .shape = {.dims = {Sym::T, Sym::free}, .free_label = "experts", .why = kTokensByExperts}},
    {.name = "permuted_tokens_grad",
     .role = Role::permuted,
     .dir = Dir::out,
     .rank = 2,
     .required = true,
     .dtype = {.kind = DtypeKind::same_as, .ref = G},
     .shape = {.dims = {Sym::R, Sym::H}, .why = "(the rows of sorted_indices, hidden size)"}},
    {.name = "probs_grad",
     .role = Role::dense_probs_grad,
     .dir = Dir::out,
     .rank = 2,
     .required = false,
     .dtype = {.kind = DtypeKind::float_value, .same_as_when_given = P},
     .shape = {.dims = {Sym::T, Sym::E}, .why = "(the shape of probs)"}},
};
constexpr int8_t kParameterOrder[] = {G, S, M, X, P, DX, DP};
constexpr PresenceRule kPresence[] = {{.needed = M, .when_given = P, .mode = Mode::dropless},
                                      {.needed = P, .when_given = DP},
                                      {.needed = X, .when_given = DP}};
constexpr int8_t kShapeOrder[] = {P, M, kCheckRows, kCheckBytes, X, DX, DP};
constexpr IndexRule kIndexRules[] = {{.role = Role::sorted_indices,
                                      .name = "sorted_indices",
                                      .dropless_bound = Sym::T,
                                      .drop_and_pad_bound = Sym::T,
                                      .dropless_allows_minus_one = true,
                                      .drop_and_pad_allows_minus_one = true}};

}  // namespace

extern const OpDesc kRaggedUnpermuteGradOp{
    .op = Op::ragged_unpermute_grad,
    .api = kApi,
    .short_name = "ragged_unpermute_grad",
    .backward = true,
    .operands = kOperands,
    .dtype_order = kParameterOrder,
    .rank_order = kParameterOrder,
    .shape_order = kShapeOrder,
    .view_order = kParameterOrder,
    .presence = kPresence,
    .mode_name = "drop_and_pad",
    .check_attributes = no_attributes,
    .derive_sizes = derive_sizes,
    .rows = rows,
    .values = G,
    .index_rules = kIndexRules,
};

OperandSet to_set(const RaggedUnpermuteGradOperands &o) {
  OperandSet set{.op = Op::ragged_unpermute_grad, .drop_and_pad = o.drop_and_pad};
  set.tensors = {
      o.unpermuted_tokens_grad, o.sorted_indices, o.routing_map, o.permuted_tokens, o.probs,
      o.permuted_tokens_grad,   o.probs_grad};
  return set;
}

}  // namespace moeperm::detail
