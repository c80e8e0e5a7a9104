// aclnnMoeTokenUnpermuteWithRoutingMap as data (SPEC-unpermute U1, validated per U4 in its
// order: null tensors, then "probs and restoreShape both null", then "probs in drop-less
// mode without the map"; dtypes; ranks; the topK limit; consistent shapes; views).
#include "core/ops/unpermute.hpp"
#include "core/limits.hpp"
#include "core/messages.hpp"
#include "core/op_desc.hpp"

namespace moeperm::detail {
namespace {

using namespace unpermute_operands;
constexpr int8_t kRestoreShape = int_array_ref(0);
constexpr const char *kApi = "aclnnMoeTokenUnpermuteWithRoutingMap";

Status no_attributes(const OperandSet &) { return Status::success(); }

// R and H from permutedTokens; T from probs, else restoreShape[0]; E from probs, else the
// routing map (0 without either: nothing reads it then).
Status derive_sizes(PlanContext &c) {
  const OperandSet &s = c.set;
  Sizes &z = c.sizes;
  const TensorDesc &x = *s[X];
  z.rows = x.shape[0], z.hidden = x.shape[1];
  if (z.rows < 0 || z.hidden < 0)
    return inconsistent(
        kApi, cat("permutedTokens: dimensions must be >= 0, got ", shape_string(x.shape)));
  if (s.given(P)) {
    z.tokens = s[P]->shape[0], z.experts = s[P]->shape[1];
  } else {
    z.tokens = s.int_array(kRestoreShape)[0];
    z.experts = s.given(M) ? s[M]->shape[1] : 0;
  }
  if (z.tokens < 0 || z.experts < 0)
    return inconsistent(
        kApi, cat("tokens and experts must be >= 0, got T=", z.tokens, ", E=", z.experts,
                  s.given(P) ? " (the shape of probsOptional)" : " (restoreShapeOptional[0])"));
  z.top_k = (!s.drop_and_pad && z.tokens > 0) ? z.rows / z.tokens : 0;
  return Status::success();
}

// R = T * K drop-less, E * C drop-and-pad with probs (SPEC-unpermute U4 rule 5).
Status rows(PlanContext &c) {
  Sizes &z = c.sizes;
  if (z.tokens == 0 && z.rows > 0)
    return inconsistent(kApi, cat("permutedTokens has ", z.rows,
                                  " rows but there are no tokens (T = 0) to return them to"));
  if (!c.set.drop_and_pad) {
    if (z.tokens > 0 && z.rows % z.tokens != 0)
      return inconsistent(
          kApi, cat("permutedTokens has ", z.rows, " rows, which is not divisible by T=", z.tokens,
                    " (paddedMode=false, rows = tokens * topK)"));
    return Status::success();
  }
  if (!c.set.given(P)) return Status::success();  // S alone says where each row goes
  if (z.experts == 0 && z.rows > 0)
    return inconsistent(kApi,
                        "probsOptional has 0 experts (columns); paddedMode=true needs at "
                        "least one to derive capacity = rows / experts");
  if (z.experts > 0 && z.rows % z.experts != 0)
    return inconsistent(
        kApi, cat("permutedTokens has ", z.rows, " rows, which is not divisible by E=", z.experts,
                  " (paddedMode=true, rows = experts * capacity)"));
  z.capacity = z.experts > 0 ? z.rows / z.experts : 0;
  return Status::success();
}

constexpr const char *kRowsOfX = "(the rows of permutedTokens)";
constexpr const char *kTokensByExperts = "(tokens, experts)";

constexpr OperandDesc kOperands[] = {
    {.name = "permutedTokens",
     .role = Role::permuted,
     .dir = Dir::in,
     .rank = 2,
     .required = true,
     .dtype = {.kind = DtypeKind::float_value},
     .shape = {}},
    {.name = "sortedIndices",
     .role = Role::sorted_indices,
     .dir = Dir::in,
     .rank = 1,
     .required = true,
     .dtype = {.kind = DtypeKind::int32},
     .shape = {.dims = {Sym::R}, .why = kRowsOfX}},
    {.name = "routingMapOptional",
     .role = Role::routing_map,
     .dir = Dir::in,
     .rank = 2,
     .required = false,
     .dtype = {.kind = DtypeKind::routing_map},
     .shape = {.dims = {Sym::T, Sym::E}, .why = kTokensByExperts}},
    {.name = "probsOptional",
     .role = Role::dense_probs,
     .dir = Dir::in,
     .rank = 2,
     .required = false,
     .dtype = {.kind = DtypeKind::probs_for, .ref = X},
     .shape = {}},  // T and E come from it
    {.name = "unpermutedTokens",
     .role = Role::tokens,
     .dir = Dir::out,
     .rank = 2,
     .required = true,
     .dtype = {.kind = DtypeKind::same_as, .ref = X},
     .shape = {.dims = {Sym::T, Sym::H}, .why = "(tokens, hidden size of permutedTokens)"}},
    {.name = "outIndex",
     .role = Role::out_index,
     .dir = Dir::out,
     .rank = 1,
     .required = false,
     .dtype = {.kind = DtypeKind::int32},
     .shape = {.dims = {Sym::R}, .why = kRowsOfX}},
    {.name = "permuteTokenId",
     .role = Role::token_id,
     .dir = Dir::out,
     .rank = 1,
     .required = false,
     .dtype = {.kind = DtypeKind::int32},
     .shape = {.dims = {Sym::R}, .why = kRowsOfX}},
    {.name = "permuteProbs",
     .role = Role::permuted_probs,
     .dir = Dir::out,
     .rank = 1,
     .required = false,
     // The dtype of probs; without probs any float dtype (it is filled with zeros).
     .dtype = {.kind = DtypeKind::float_value, .same_as_when_given = P},
     .shape = {.dims = {Sym::R}, .why = kRowsOfX}},
};
constexpr IntArrayDesc kIntArrays[] = {{.name = "restoreShapeOptional",
                                        .length = 2,
                                        .values = {Sym::T, Sym::H},
                                        .why = "(tokens, hidden size of permutedTokens)"}};
constexpr int8_t kParameterOrder[] = {X, S, M, P, Y, O, I, PP};
constexpr int8_t kDtypeOrder[] = {X, S, P, Y, O, I, PP, M};                      // U4 rule 2
constexpr int8_t kRankOrder[] = {X, S, Y, P, kRestoreShape, M, O, I, PP};        // U4 rule 3
constexpr int8_t kShapeOrder[] = {kCheckRows, kRestoreShape, Y, S, M, O, I, PP,  // U4 rule 5
                                  kCheckBytes};
constexpr OneOfRule kOneOf[] = {{P, kRestoreShape}};
// [moeperm] CANN reads a null map there: probs in drop-less mode need the routing map.
constexpr PresenceRule kPresence[] = {{.needed = M, .when_given = P, .mode = Mode::dropless}};
constexpr LimitRule kLimits[] = {kTopKLimit};  // U4 rule 4
// U4 rule 6: S in [0, R) or -1 drop-less, token ids in [0, T) drop-and-pad.
constexpr IndexRule kIndexRules[] = {{.role = Role::sorted_indices,
                                      .name = "sortedIndices",
                                      .dropless_bound = Sym::R,
                                      .drop_and_pad_bound = Sym::T,
                                      .dropless_allows_minus_one = true}};

}  // namespace

extern const OpDesc kUnpermuteOp{
    .op = Op::unpermute,
    .api = kApi,
    .short_name = "unpermute",
    .backward = false,
    .operands = kOperands,
    .int_arrays = kIntArrays,
    .dtype_order = kDtypeOrder,
    .rank_order = kRankOrder,
    .shape_order = kShapeOrder,
    .view_order = kParameterOrder,
    .one_of = kOneOf,
    .presence = kPresence,
    .limits = kLimits,
    .mode_name = "paddedMode",
    .check_attributes = no_attributes,
    .derive_sizes = derive_sizes,
    .rows = rows,
    .values = X,
    .probs_in = P,
    .probs_out = PP,
    .index_rules = kIndexRules,
};

OperandSet to_set(const UnpermuteOperands &o) {
  OperandSet set{.op = Op::unpermute, .drop_and_pad = o.padded_mode};
  set.tensors = {o.permuted_tokens,   o.sorted_indices, o.routing_map,      o.probs,
                 o.unpermuted_tokens, o.out_index,      o.permute_token_id, o.permute_probs};
  set.int_arrays[0] = o.restore_shape;
  return set;
}

}  // namespace moeperm::detail
