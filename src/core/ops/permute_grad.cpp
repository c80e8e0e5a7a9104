// aclnnMoeTokenPermuteWithRoutingMapGrad as data (SPEC §3, validated per §5 in the spec's
// order: each list below is the order in which §5 names the arguments of that rule).
#include "core/ops/permute_grad.hpp"
#include "core/limits.hpp"
#include "core/messages.hpp"
#include "core/op_desc.hpp"

namespace moeperm::detail {
namespace {

using namespace permute_grad_operands;
enum : int8_t { kNumExperts, kTokensNum };  // integer attributes
constexpr const char *kApi = "aclnnMoeTokenPermuteWithRoutingMapGrad";

Status check_attributes(const OperandSet &set) {
  if (set.ints[kNumExperts] <= 0)
    return invalid_attribute(kApi, "numExperts", "> 0", set.ints[kNumExperts]);
  if (set.ints[kTokensNum] <= 0)
    return invalid_attribute(kApi, "tokensNum", "> 0", set.ints[kTokensNum]);
  return Status::success();
}

// T and E are attributes, R and H the shape of G; K is known from the shapes alone, so the
// topK limit (rule 5) comes before the shape rules.
Status derive_sizes(PlanContext &c) {
  Sizes &z = c.sizes;
  z.tokens = c.set.ints[kTokensNum], z.experts = c.set.ints[kNumExperts];
  z.rows = c.set[G]->shape[0], z.hidden = c.set[G]->shape[1];
  z.top_k = (!c.set.drop_and_pad && z.rows >= 0) ? z.rows / z.tokens : 0;
  return Status::success();
}

Status rows(PlanContext &c) {
  Sizes &z = c.sizes;
  if (z.rows < 0 || z.hidden < 0)
    return inconsistent(kApi, cat("permutedTokenOutputGrad: dimensions must be >= 0, got ",
                                  shape_string(c.set[G]->shape)));
  if (!c.set.drop_and_pad) {
    if (z.rows % z.tokens != 0)
      return inconsistent(kApi, cat("permutedTokenOutputGrad has ", z.rows,
                                    " rows, which is not divisible by tokensNum=", z.tokens,
                                    " (dropAndPad=false, rows = tokensNum * topK)"));
    z.top_k = z.rows / z.tokens;
  } else {
    if (z.rows % z.experts != 0)
      return inconsistent(kApi, cat("permutedTokenOutputGrad has ", z.rows,
                                    " rows, which is not divisible by numExperts=", z.experts,
                                    " (dropAndPad=true, rows = numExperts * capacity)"));
    z.capacity = z.rows / z.experts;
  }
  return Status::success();
}

constexpr const char *kRowsOfG = "(the rows of permutedTokenOutputGrad)";
constexpr const char *kTokensByExperts = "(tokensNum, numExperts)";

constexpr OperandDesc kOperands[] = {
    {.name = "permutedTokenOutputGrad",
     .role = Role::permuted,
     .dir = Dir::in,
     .rank = 2,
     .required = true,
     .dtype = {.kind = DtypeKind::float_value},
     .shape = {}},
    {.name = "permutedProbsOutputGradOptional",
     .role = Role::permuted_probs,
     .dir = Dir::in,
     .rank = 1,
     .required = false,
     .used_only_with = PG,
     .dtype = {.kind = DtypeKind::probs_for, .ref = G},
     .shape = {.dims = {Sym::R}, .why = kRowsOfG}},
    {.name = "sortedIndices",
     .role = Role::sorted_indices,
     .dir = Dir::in,
     .rank = 1,
     .required = true,
     .dtype = {.kind = DtypeKind::int32},
     .shape = {.dims = {Sym::R}, .why = kRowsOfG}},
    {.name = "routingMapOptional",
     .role = Role::routing_map,
     .dir = Dir::in,
     .rank = 2,
     .required = false,
     .dtype = {.kind = DtypeKind::routing_map},
     .shape = {.dims = {Sym::T, Sym::E}, .why = kTokensByExperts}},
    {.name = "tokensGradOut",
     .role = Role::tokens,
     .dir = Dir::out,
     .rank = 2,
     .required = true,
     .dtype = {.kind = DtypeKind::same_as, .ref = G},
     .shape = {.dims = {Sym::T, Sym::H},
               .why = "(tokensNum, hidden size of permutedTokenOutputGrad)"}},
    {.name = "probsGradOutOptional",
     .role = Role::dense_probs,
     .dir = Dir::out,
     .rank = 2,
     .required = false,
     .dtype = {.kind = DtypeKind::probs_for, .ref = G, .same_as_when_given = P, .says_why = false},
     .shape = {.dims = {Sym::T, Sym::E}, .why = kTokensByExperts}},
};
constexpr PresenceRule kPresence[] = {{.needed = M, .when_given = P}};  // SPEC §5.2
constexpr LimitRule kLimits[] = {kTopKLimit};                           // SPEC §5.5
// SPEC §5.7: S in [0, R) or -1 drop-less, [0, T) drop-and-pad.
constexpr IndexRule kIndexRules[] = {{.role = Role::sorted_indices,
                                      .name = "sortedIndices",
                                      .dropless_bound = Sym::R,
                                      .drop_and_pad_bound = Sym::T,
                                      .dropless_allows_minus_one = true}};
constexpr int8_t kParameterOrder[] = {G, P, S, M, TG, PG};
constexpr int8_t kDtypeOrder[] = {G, TG, P, PG, M, S};                        // SPEC §5.3
constexpr int8_t kRankOrder[] = {G, S, P, M, TG, PG};                         // SPEC §5.4
constexpr int8_t kShapeOrder[] = {kCheckRows, S, P, M, TG, PG, kCheckBytes};  // SPEC §5.6

}  // namespace

extern const OpDesc kPermuteGradOp{
    .op = Op::permute_grad,
    .api = kApi,
    .short_name = "permute_grad",
    .backward = true,
    .operands = kOperands,
    .dtype_order = kDtypeOrder,
    .rank_order = kRankOrder,
    .shape_order = kShapeOrder,
    .view_order = kParameterOrder,
    .presence = kPresence,
    .limits = kLimits,
    .check_attributes = check_attributes,
    .derive_sizes = derive_sizes,
    .rows = rows,
    .values = G,
    .probs_in = P,
    .probs_out = PG,
    .index_rules = kIndexRules,
};

OperandSet to_set(const PermuteGradOperands &o) {
  OperandSet set{.op = Op::permute_grad, .drop_and_pad = o.drop_and_pad};
  set.tensors = {o.grad,        o.probs_grad,  o.sorted_indices,
                 o.routing_map, o.tokens_grad, o.dense_probs_grad};
  set.ints[kNumExperts] = o.num_experts;
  set.ints[kTokensNum] = o.tokens_num;
  return set;
}

}  // namespace moeperm::detail
