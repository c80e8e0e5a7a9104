// aclnnMoeTokenUnpermuteWithRoutingMapGrad as data (SPEC-unpermute U2, validated per U4 in
// its order: nulls; dtypes; CANN's tiling rejections (561002: ranks, index lengths, and with
// probs the topK and capacity limits); consistent shapes; views).
#include "core/ops/unpermute_grad.hpp"
#include "core/limits.hpp"
#include "core/messages.hpp"
#include "core/op_desc.hpp"

namespace moeperm::detail {
namespace {

using namespace unpermute_grad_operands;
constexpr const char *kApi = "aclnnMoeTokenUnpermuteWithRoutingMapGrad";

Status no_attributes(const OperandSet &) { return Status::success(); }

// T and H from the gradient, R from outIndex (permuteTokenId must match it: a tiling
// rejection, 561002), E from probs, else the map, else probsGradOut.
Status derive_sizes(PlanContext &c) {
  const OperandSet &s = c.set;
  Sizes &z = c.sizes;
  const TensorDesc &g = *s[G];
  z.tokens = g.shape[0], z.hidden = g.shape[1];
  z.rows = s[O]->shape[0];
  if (s[I]->shape[0] != z.rows)
    return fail(Code::tiling_error, cat(kApi,
                                        ": outIndex and permuteTokenId must have the same "
                                        "length, got ",
                                        z.rows, " and ", s[I]->shape[0]));
  if (z.tokens < 0 || z.hidden < 0 || z.rows < 0)
    return inconsistent(kApi, cat("unpermutedTokensGrad and outIndex: dimensions must be >= 0, "
                                  "got ",
                                  shape_string(g.shape), " and ", shape_string(s[O]->shape)));
  // Columns are read only from a 2-D tensor: without probs rule 4 leaves the map's rank
  // unchecked (CANN's order: a wrong rank is then rule 6's shape error, after this; a 1-D map
  // was read past its shape, found by fuzzing), and infer_outputs never checks an output's
  // (a placeholder probsGradOut of rank 0 was read past its shape).
  auto columns_of = [&](int i) { return s.given(i) && s[i]->shape.size() == 2; };
  z.experts = s.given(P)       ? s[P]->shape[1]
              : columns_of(M)  ? s[M]->shape[1]
              : columns_of(PG) ? s[PG]->shape[1]
                               : 0;
  if (z.experts < 0) return inconsistent(kApi, cat("experts must be >= 0, got ", z.experts));
  if (!s.drop_and_pad)
    z.top_k = z.tokens > 0 ? z.rows / z.tokens : 0;
  else
    z.capacity = z.experts > 0 ? z.rows / z.experts : 0;
  return Status::success();
}

// R = T * K drop-less, E * C drop-and-pad (with probs, where E is known).
Status rows(PlanContext &c) {
  const Sizes &z = c.sizes;
  if (z.tokens == 0 && z.rows > 0)
    return inconsistent(kApi, cat("outIndex has ", z.rows,
                                  " entries but there are no tokens (T = 0) to take them from"));
  if (!c.set.drop_and_pad) {
    if (z.tokens > 0 && z.rows % z.tokens != 0)
      return inconsistent(
          kApi, cat("outIndex has ", z.rows, " entries, which is not divisible by T=", z.tokens,
                    " (dropAndPad=false, rows = tokens * topK)"));
    return Status::success();
  }
  if (!c.set.given(P)) return Status::success();
  if (z.experts == 0 && z.rows > 0)
    return inconsistent(kApi,
                        "probsOptional has 0 experts (columns); dropAndPad=true needs at "
                        "least one to derive capacity = rows / experts");
  if (z.experts > 0 && z.rows % z.experts != 0)
    return inconsistent(kApi, cat("outIndex has ", z.rows, " entries, which is not divisible by E=",
                                  z.experts, " (dropAndPad=true, rows = experts * capacity)"));
  return Status::success();
}

constexpr const char *kRowsOfO = "(the length of outIndex)";
constexpr const char *kTokensByExperts = "(tokens, experts)";

constexpr OperandDesc kOperands[] = {
    {.name = "unpermutedTokensGrad",
     .role = Role::tokens,
     .dir = Dir::in,
     .rank = 2,
     .required = true,
     .dtype = {.kind = DtypeKind::float_value},
     .shape = {}},
    {.name = "outIndex",
     .role = Role::out_index,
     .dir = Dir::in,
     .rank = 1,
     .required = true,
     .dtype = {.kind = DtypeKind::int32},
     .shape = {}},  // R comes from it
    {.name = "permuteTokenId",
     .role = Role::token_id,
     .dir = Dir::in,
     .rank = 1,
     .required = true,
     .dtype = {.kind = DtypeKind::int32},
     .shape = {.dims = {Sym::R}, .why = kRowsOfO}},
    {.name = "routingMapOptional",
     .role = Role::routing_map,
     .dir = Dir::in,
     .rank = 2,
     .required = false,
     .rank_checked_with = P,
     .dtype = {.kind = DtypeKind::routing_map},
     .shape = {.dims = {Sym::T, Sym::E}, .why = kTokensByExperts}},
    {.name = "permutedTokensOptional",
     .role = Role::saved_permuted,
     .dir = Dir::in,
     .rank = 2,
     .required = false,
     .used_only_with = PG,
     .rank_checked_with = P,
     .dtype = {.kind = DtypeKind::same_as, .ref = G},
     .shape = {.dims = {Sym::R, Sym::H}, .why = "(the length of outIndex, hidden size)"}},
    {.name = "probsOptional",
     .role = Role::dense_probs,
     .dir = Dir::in,
     .rank = 2,
     .required = false,
     .dtype = {.kind = DtypeKind::probs_for, .ref = G},
     .shape = {.dims = {Sym::T, Sym::E}, .why = kTokensByExperts}},
    {.name = "permutedTokensGradOut",
     .role = Role::permuted,
     .dir = Dir::out,
     .rank = 2,
     .required = true,
     .dtype = {.kind = DtypeKind::same_as, .ref = G},
     .shape = {.dims = {Sym::R, Sym::H}, .why = "(the length of outIndex, hidden size)"}},
    {.name = "probsGradOutOptional",
     .role = Role::dense_probs_grad,
     .dir = Dir::out,
     .rank = 2,
     .required = false,
     // The dtype of probs; without probs any float dtype (it is filled with zeros).
     .dtype = {.kind = DtypeKind::float_value, .same_as_when_given = P},
     .shape = {.dims = {Sym::T, Sym::E}, .why = kTokensByExperts}},
};
constexpr int8_t kParameterOrder[] = {G, O, I, M, X, P, DX, PG};
constexpr int8_t kDtypeOrder[] = {G, DX, O, I, M, P, PG, X};  // U4 Grad rule 2
constexpr int8_t kRankOrder[] = {G, O, I, M, X, P};           // U4 Grad rule 3 (561002)
constexpr int8_t kShapeOrder[] = {kCheckRows, DX, X, M, P, PG, kCheckBytes};  // rule 4
constexpr PresenceRule kPresence[] = {
    {.needed = M, .when_given = P},
    // [moeperm] X is read only for dP: required when probsGradOut is given with P.
    {.needed = X, .when_given = PG, .and_given = P},
};
// U4 Grad rule 3, only with probs: CANN's tiling rejects these with 561002.
constexpr LimitRule kLimits[] = {
    {.value = Sym::K,
     .label = "topK",
     .max = kMaxTopK,
     .status = Code::tiling_error,
     .mode = Mode::dropless,
     .only_with = P,
     .why = "CANN's tiling limit"},
    {.value = Sym::K,
     .label = "topK",
     .max_sym = Sym::E,
     .max_label = "experts",
     .status = Code::tiling_error,
     .mode = Mode::dropless,
     .only_with = P},
    {.value = Sym::C,
     .label = "capacity",
     .max_sym = Sym::T,
     .max_label = "tokens",
     .status = Code::tiling_error,
     .mode = Mode::drop_and_pad,
     .only_with = P},
};
// U4 Grad rule 5: outIndex names rows of dX (no row twice: the scatter would race),
// permuteTokenId tokens (read in drop-and-pad mode only).
constexpr IndexRule kIndexRules[] = {
    {.role = Role::out_index,
     .name = "outIndex",
     .dropless_bound = Sym::R,
     .drop_and_pad_bound = Sym::R,
     .dropless_allows_minus_one = true,
     .unique = true},
    {.role = Role::token_id,
     .name = "permuteTokenId",
     .dropless_bound = Sym::T,
     .drop_and_pad_bound = Sym::T,
     .dropless_allows_minus_one = false,
     .mode = Mode::drop_and_pad},
};

}  // namespace

extern const OpDesc kUnpermuteGradOp{
    .op = Op::unpermute_grad,
    .api = kApi,
    .short_name = "unpermute_grad",
    .backward = true,
    .operands = kOperands,
    .dtype_order = kDtypeOrder,
    .rank_order = kRankOrder,
    .shape_order = kShapeOrder,
    .view_order = kParameterOrder,
    .presence = kPresence,
    .rank_status = Code::tiling_error,
    .limits = kLimits,
    .check_attributes = no_attributes,
    .derive_sizes = derive_sizes,
    .rows = rows,
    .values = G,
    .probs_in = P,
    .probs_out = PG,
    .index_rules = kIndexRules,
};

OperandSet to_set(const UnpermuteGradOperands &o) {
  OperandSet set{.op = Op::unpermute_grad, .drop_and_pad = o.drop_and_pad};
  set.tensors = {o.unpermuted_tokens_grad, o.out_index, o.permute_token_id,     o.routing_map,
                 o.permuted_tokens,        o.probs,     o.permuted_tokens_grad, o.probs_grad};
  (void)o.restore_shape;  // not read (U2)
  return set;
}

}  // namespace moeperm::detail
