// aclnnMoeTokenPermuteWithRoutingMap as data (SPEC §2, validated per §5). SPEC orders the
// Grad operator's rules; the forward follows the same rule order: attributes, required
// tensors, dtypes, ranks, the topK limit, consistent shapes, views.
#include "core/ops/permute.hpp"
#include "core/checked_math.hpp"
#include "core/limits.hpp"
#include "core/messages.hpp"
#include "core/op_desc.hpp"

namespace moeperm::detail {
namespace {

using namespace permute_operands;
enum : int8_t { kNumOutTokens };  // integer attributes
constexpr const char *kApi = "aclnnMoeTokenPermuteWithRoutingMap";

// Why the outputs have R rows, in the mode's own terms.
std::string rows_why(const PlanContext &c) {
  const Sizes &z = c.sizes;
  return c.set.drop_and_pad ? cat("(numExperts * capacity = ", z.experts, " * ", z.capacity, ")")
                            : cat("(tokens * topK = ", z.tokens, " * ", z.top_k,
                                  ", topK = numOutTokens / tokens)");
}

Status check_attributes(const OperandSet &set) {
  if (set.ints[kNumOutTokens] < 0)
    return invalid_attribute(kApi, "numOutTokens", ">= 0", set.ints[kNumOutTokens]);
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
                        cat("routingMap: dimensions must be >= 0, got ", shape_string(m.shape)));
  z.top_k = (!c.set.drop_and_pad && z.tokens > 0) ? c.set.ints[kNumOutTokens] / z.tokens : 0;
  return Status::success();
}

Status rows(PlanContext &c) {
  Sizes &z = c.sizes;
  const int64_t n = c.set.ints[kNumOutTokens];
  if (!c.set.drop_and_pad) {
    z.rows = z.tokens * z.top_k;  // <= numOutTokens: cannot overflow
    return Status::success();
  }
  if (z.experts == 0)
    return inconsistent(kApi,
                        "routingMap has 0 experts (columns); dropAndPad=true needs at "
                        "least one to derive capacity = numOutTokens / numExperts");
  z.capacity = n / z.experts;
  if (z.capacity > z.tokens)
    return inconsistent(
        kApi, cat("capacity = numOutTokens / numExperts = ", n, " / ", z.experts, " = ", z.capacity,
                  " exceeds the ", z.tokens, " tokens an expert can be given (dropAndPad=true)"));
  z.rows = z.experts * z.capacity;
  return Status::success();
}

// sortedIndicesOut is int32: it holds row ids < R (drop-less) or token ids < T.
Status index_width(const PlanContext &c) {
  constexpr int64_t kInt32Max = 2147483647;
  const bool dp = c.set.drop_and_pad;
  const int64_t largest = (dp ? c.sizes.tokens : c.sizes.rows) - 1;
  if (largest > kInt32Max)
    return inconsistent(kApi, cat("sortedIndicesOut is int32 but would have to hold ",
                                  dp ? "token ids up to T-1 = " : "row ids up to R-1 = ", largest,
                                  ", past 2147483647"));
  return Status::success();
}

std::string routing_map_why(const PlanContext &c) {
  return cat("(its rows are the tokens of tokens ", shape_string(c.set[X]->shape), ")");
}

constexpr OperandDesc kOperands[] = {
    {.name = "tokens",
     .role = Role::tokens,
     .dir = Dir::in,
     .rank = 2,
     .required = true,
     .dtype = {.kind = DtypeKind::float_value},
     .shape = {}},
    {.name = "routingMap",
     .role = Role::routing_map,
     .dir = Dir::in,
     .rank = 2,
     .required = true,
     .dtype = {.kind = DtypeKind::routing_map},
     .shape = {.dims = {Sym::T, Sym::free}, .free_label = "numExperts", .why_fn = routing_map_why}},
    {.name = "probsOptional",
     .role = Role::dense_probs,
     .dir = Dir::in,
     .rank = 2,
     .required = false,
     .dtype = {.kind = DtypeKind::probs_for, .ref = X},
     .shape = {.dims = {Sym::T, Sym::E}, .why = "(the shape of routingMap)"}},
    {.name = "permuteTokensOut",
     .role = Role::permuted,
     .dir = Dir::out,
     .rank = 2,
     .required = true,
     .dtype = {.kind = DtypeKind::same_as, .ref = X},
     .shape = {.dims = {Sym::R, Sym::H}, .why_fn = rows_why}},
    {.name = "permuteProbsOutOptional",
     .role = Role::permuted_probs,
     .dir = Dir::out,
     .rank = 1,
     .required = false,
     .dtype = {.kind = DtypeKind::probs_for, .ref = X, .same_as_when_given = PR},
     .shape = {.dims = {Sym::R}, .why_fn = rows_why}},
    {.name = "sortedIndicesOut",
     .role = Role::sorted_indices,
     .dir = Dir::out,
     .rank = 1,
     .required = true,
     .dtype = {.kind = DtypeKind::int32},
     .shape = {.dims = {Sym::R}, .why_fn = rows_why}},
};
constexpr int8_t kParameterOrder[] = {X, M, PR, Y, YP, S};
// SPEC §5, forward: probsOptional without permuteProbsOutOptional is 161001 (CANN's rule).
constexpr PresenceRule kPresence[] = {{.needed = YP, .when_given = PR}};
constexpr LimitRule kLimits[] = {kTopKLimit};  // rule 5, as for the Grad (SPEC §5.5)
constexpr int8_t kShapeOrder[] = {M, PR, kCheckRows, kCheckBytes, kCheckIndexWidth, Y, YP, S};

}  // namespace

extern const OpDesc kPermuteOp{
    .op = Op::permute,
    .api = kApi,
    .short_name = "permute",
    .backward = false,
    .operands = kOperands,
    .dtype_order = kParameterOrder,
    .rank_order = kParameterOrder,
    .shape_order = kShapeOrder,
    .view_order = kParameterOrder,
    .presence = kPresence,
    .limits = kLimits,
    .check_attributes = check_attributes,
    .derive_sizes = derive_sizes,
    .rows = rows,
    .index_width = index_width,
    .values = X,
    .probs_in = PR,
    .probs_out = YP,
    // No index rule: the forward writes sortedIndicesOut, it reads no index.
};

OperandSet to_set(const PermuteOperands &o) {
  OperandSet set{.op = Op::permute, .drop_and_pad = o.drop_and_pad};
  set.tensors = {o.tokens,          o.routing_map,    o.probs,
                 o.permuted_tokens, o.permuted_probs, o.sorted_indices};
  set.ints[kNumOutTokens] = o.num_out_tokens;
  return set;
}

}  // namespace moeperm::detail
