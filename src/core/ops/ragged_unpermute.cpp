// ragged_unpermute as data (docs/ragged.md). Validated in the unpermute's rule order: null
// tensors, then "probs and restore_shape both null", then "probs in drop-less mode without
// the map"; dtypes; ranks; consistent shapes; views.
//   unpermuted_tokens[t] = sum over rows r ascending with sorted_indices[r] == t of
//   permuted_tokens[r] (* probs[t, e(r)] with probs), in fp32 from +0, rounded once; e(r) is
//   the expert whose rows hold r: r / C drop-and-pad, the routing map's expert-major blocks
//   drop-less. A token no row names is +0.
#include "core/ops/ragged_unpermute.hpp"
#include "core/messages.hpp"
#include "core/op_desc.hpp"
#include "core/ops/ragged_capacity.hpp"

namespace moeperm::detail {
namespace {

using namespace ragged_unpermute_operands;
constexpr int8_t kRestoreShape = int_array_ref(0);
constexpr const char *kApi = "moeperm::ragged_unpermute";

Status no_attributes(const OperandSet &) { return Status::success(); }

// R and H from permuted_tokens; T from probs, else restore_shape[0]; E from probs, else the
// routing map (0 without either: nothing reads it then).
Status derive_sizes(PlanContext &c) {
  const OperandSet &s = c.set;
  Sizes &z = c.sizes;
  const TensorDesc &x = *s[X];
  z.rows = x.shape[0], z.hidden = x.shape[1];
  if (z.rows < 0 || z.hidden < 0)
    return inconsistent(
        kApi, cat("permuted_tokens: dimensions must be >= 0, got ", shape_string(x.shape)));
  if (s.given(P)) {
    z.tokens = s[P]->shape[0], z.experts = s[P]->shape[1];
  } else {
    z.tokens = s.int_array(kRestoreShape)[0];
    z.experts = s.given(M) ? s[M]->shape[1] : 0;
  }
  if (z.tokens < 0 || z.experts < 0)
    return inconsistent(kApi,
                        cat("tokens and experts must be >= 0, got T=", z.tokens, ", E=", z.experts,
                            s.given(P) ? " (the shape of probs)" : " (restore_shape[0])"));
  return Status::success();
}

// Drop-and-pad with probs: row r belongs to expert r / C, so R must be a multiple of E.
Status rows(PlanContext &c) {
  if (!c.set.drop_and_pad || !c.set.given(P)) return Status::success();
  return ragged_capacity(kApi, c.sizes, "permuted_tokens", "probs");
}

constexpr const char *kRowsOfX = "(the rows of permuted_tokens)";

constexpr OperandDesc kOperands[] = {
    {.name = "permuted_tokens",
     .role = Role::permuted,
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
     .shape = {.dims = {Sym::R}, .why = kRowsOfX}},
    {.name = "routing_map",
     .role = Role::routing_map,
     .dir = Dir::in,
     .rank = 2,
     .required = false,
     .dtype = {.kind = DtypeKind::any_routing_map},
     .shape = {.dims = {Sym::T, Sym::E}, .why = "(tokens, experts)"}},
    {.name = "probs",
     .role = Role::dense_probs,
     .dir = Dir::in,
     .rank = 2,
     .required = false,
     .dtype = {.kind = DtypeKind::float_value},  // any float dtype with any token dtype
     .shape = {}},                               // T and E come from it
    {.name = "unpermuted_tokens",
     .role = Role::tokens,
     .dir = Dir::out,
     .rank = 2,
     .required = true,
     .dtype = {.kind = DtypeKind::same_as, .ref = X},
     .shape = {.dims = {Sym::T, Sym::H}, .why = "(tokens, hidden size of permuted_tokens)"}},
};
constexpr IntArrayDesc kIntArrays[] = {{.name = "restore_shape",
                                        .length = 2,
                                        .values = {Sym::T, Sym::H},
                                        .why = "(tokens, hidden size of permuted_tokens)"}};
constexpr int8_t kParameterOrder[] = {X, S, M, P, Y};
constexpr int8_t kDtypeOrder[] = {X, S, P, Y, M};
constexpr int8_t kRankOrder[] = {X, S, Y, P, kRestoreShape, M};
constexpr int8_t kShapeOrder[] = {kCheckRows, kRestoreShape, Y, S, M, kCheckBytes};
constexpr OneOfRule kOneOf[] = {{P, kRestoreShape}};
// Drop-less, a row's expert comes from the map's expert-major blocks.
constexpr PresenceRule kPresence[] = {{.needed = M, .when_given = P, .mode = Mode::dropless}};
// Row -> token ids in [0, T), or -1 for an empty row, in both modes; a token may own many rows.
constexpr IndexRule kIndexRules[] = {{.role = Role::sorted_indices,
                                      .name = "sorted_indices",
                                      .dropless_bound = Sym::T,
                                      .drop_and_pad_bound = Sym::T,
                                      .dropless_allows_minus_one = true,
                                      .drop_and_pad_allows_minus_one = true}};

}  // namespace

extern const OpDesc kRaggedUnpermuteOp{
    .op = Op::ragged_unpermute,
    .api = kApi,
    .short_name = "ragged_unpermute",
    .backward = false,
    .operands = kOperands,
    .int_arrays = kIntArrays,
    .dtype_order = kDtypeOrder,
    .rank_order = kRankOrder,
    .shape_order = kShapeOrder,
    .view_order = kParameterOrder,
    .one_of = kOneOf,
    .presence = kPresence,
    .mode_name = "drop_and_pad",
    .check_attributes = no_attributes,
    .derive_sizes = derive_sizes,
    .rows = rows,
    .values = X,
    .index_rules = kIndexRules,
};

OperandSet to_set(const RaggedUnpermuteOperands &o) {
  OperandSet set{.op = Op::ragged_unpermute, .drop_and_pad = o.drop_and_pad};
  set.tensors = {o.permuted_tokens, o.sorted_indices, o.routing_map, o.probs, o.unpermuted_tokens};
  set.int_arrays[0] = o.restore_shape;
  return set;
}

}  // namespace moeperm::detail
