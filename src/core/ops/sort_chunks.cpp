// sort_chunks and sort_chunks_grad as data (docs/sort_chunks.md). One table serves both:
// the backward reads and writes the same tensors as the forward with the roles of input
// and output swapped (tokens <-> permuted, row_probs <-> permuted_probs), so the kernels
// are one row gather whose direction the operator picks.
//   T rows in S chunks: chunk c is rows start(c) .. start(c) + split_sizes[c] - 1 of the
//   input, start(c) = the sum of split_sizes[0 .. c-1]; output chunk j is input chunk
//   sorted_index[j]. Data rules (second phase, before anything is written): every
//   split_sizes[c] >= 0 and their sum is T; sorted_index is a permutation of 0 .. S-1
//   (values in [0, S), none twice: a row written twice would race and another never).
#include "core/ops/sort_chunks.hpp"

#include <array>

#include "core/messages.hpp"
#include "core/op_desc.hpp"

namespace moeperm::detail {
namespace {

using namespace sort_chunks_operands;

Status no_attributes(const OperandSet &) { return Status::success(); }
Status no_rows(PlanContext &) { return Status::success(); }

// T and H from the rows in, S from split_sizes; the output has the input's T rows (R = T).
template <const char *const &kApi>
Status derive_sizes(PlanContext &c) {
  const TensorDesc &x = *c.set[X], &sizes = *c.set[SZ];
  Sizes &z = c.sizes;
  z.tokens = x.shape[0], z.hidden = x.shape[1], z.rows = x.shape[0], z.chunks = sizes.shape[0];
  if (z.tokens < 0 || z.hidden < 0 || z.chunks < 0)
    return inconsistent(kApi, cat("dimensions must be >= 0, got ", shape_string(x.shape),
                                  " rows and ", shape_string(sizes.shape), " split sizes"));
  // sorted_index is int32 and must name every chunk 0 .. S-1 once: no permutation of more
  // than 2^31 chunks can be written, so the data rules would fail whatever the values. Said
  // here, before any backend sizes its per-chunk workspace or loops over S (a stride-0
  // split_sizes of 2^62 elements fits in 4 bytes of memory).
  constexpr int64_t kMaxChunks = int64_t{1} << 31;
  if (z.chunks > kMaxChunks)
    return inconsistent(kApi, cat("split_sizes has ", z.chunks,
                                  " chunks, but sorted_index is int32 and can name at most ",
                                  kMaxChunks, " (chunks 0 .. 2147483647)"));
  return Status::success();
}

struct Names {
  const char *x, *probs_in, *y, *probs_out;
  Role x_role, probs_in_role, y_role, probs_out_role;
};

constexpr std::array<OperandDesc, 6> operands(const Names &n) {
  return {{
      {.name = n.x,
       .role = n.x_role,
       .dir = Dir::in,
       .rank = 2,
       .required = true,
       .dtype = {.kind = DtypeKind::float_value},
       .shape = {}},
      {.name = "split_sizes",
       .role = Role::split_sizes,
       .dir = Dir::in,
       .rank = 1,
       .required = true,
       .dtype = {.kind = DtypeKind::int32},
       .shape = {.dims = {Sym::S}, .why = "(the chunks)"}},
      {.name = "sorted_index",
       .role = Role::chunk_order,
       .dir = Dir::in,
       .rank = 1,
       .required = true,
       .dtype = {.kind = DtypeKind::int32},
       .shape = {.dims = {Sym::S}, .why = "(one per chunk of split_sizes)"}},
      {.name = n.probs_in,
       .role = n.probs_in_role,
       .dir = Dir::in,
       .rank = 1,
       .required = false,
       .dtype = {.kind = DtypeKind::float_value},  // any float dtype with any token dtype
       .shape = {.dims = {Sym::T}, .why = "(one per row)"}},
      {.name = n.y,
       .role = n.y_role,
       .dir = Dir::out,
       .rank = 2,
       .required = true,
       .dtype = {.kind = DtypeKind::same_as, .ref = X},
       .shape = {.dims = {Sym::R, Sym::H}, .why = "(the rows in)"}},
      {.name = n.probs_out,
       .role = n.probs_out_role,
       .dir = Dir::out,
       .rank = 1,
       .required = false,
       .dtype = {.kind = DtypeKind::float_value, .same_as_when_given = PR},
       .shape = {.dims = {Sym::R}, .why = "(one per row)"}},
  }};
}

constexpr std::array<OperandDesc, 6> kForward = operands({.x = "tokens",
                                                          .probs_in = "probs",
                                                          .y = "sorted_tokens",
                                                          .probs_out = "sorted_probs",
                                                          .x_role = Role::tokens,
                                                          .probs_in_role = Role::row_probs,
                                                          .y_role = Role::permuted,
                                                          .probs_out_role = Role::permuted_probs});
constexpr std::array<OperandDesc, 6> kBackward = operands({.x = "sorted_tokens_grad",
                                                           .probs_in = "sorted_probs_grad",
                                                           .y = "tokens_grad",
                                                           .probs_out = "probs_grad",
                                                           .x_role = Role::permuted,
                                                           .probs_in_role = Role::permuted_probs,
                                                           .y_role = Role::tokens,
                                                           .probs_out_role = Role::row_probs});

constexpr int8_t kParameterOrder[] = {X, SZ, IX, PR, Y, YP};
constexpr PresenceRule kPresence[] = {{.needed = YP, .when_given = PR}};
constexpr int8_t kShapeOrder[] = {SZ, IX, PR, kCheckBytes, Y, YP};
constexpr IndexRule kIndexRules[] = {{.role = Role::chunk_order,
                                      .name = "sorted_index",
                                      .dropless_bound = Sym::S,
                                      .drop_and_pad_bound = Sym::S,
                                      .dropless_allows_minus_one = false,
                                      .unique = true,
                                      .names = "chunk"}};
constexpr SplitRule kForwardSplit[] = {
    {.role = Role::split_sizes, .name = "split_sizes", .total = Sym::T, .total_name = "tokens"}};
constexpr SplitRule kBackwardSplit[] = {{.role = Role::split_sizes,
                                         .name = "split_sizes",
                                         .total = Sym::T,
                                         .total_name = "sorted_tokens_grad"}};

constexpr const char *kForwardApi = "moeperm::sort_chunks";
constexpr const char *kBackwardApi = "moeperm::sort_chunks_grad";

constexpr OpDesc describe(Op op, const char *api, const char *short_name, bool backward,
                          std::span<const OperandDesc> ops, std::span<const SplitRule> split,
                          Status (*derive)(PlanContext &)) {
  return {.op = op,
          .api = api,
          .short_name = short_name,
          .backward = backward,
          .operands = ops,
          .dtype_order = kParameterOrder,
          .rank_order = kParameterOrder,
          .shape_order = kShapeOrder,
          .view_order = kParameterOrder,
          .presence = kPresence,
          .mode_name = "",
          .check_attributes = no_attributes,
          .derive_sizes = derive,
          .rows = no_rows,
          .values = X,
          .probs_in = PR,
          .probs_out = YP,
          .index_rules = kIndexRules,
          .split_rules = split};
}

}  // namespace

extern const OpDesc kSortChunksOp = describe(Op::sort_chunks, kForwardApi, "sort_chunks", false,
                                             kForward, kForwardSplit, derive_sizes<kForwardApi>);
extern const OpDesc kSortChunksGradOp =
    describe(Op::sort_chunks_grad, kBackwardApi, "sort_chunks_grad", true, kBackward,
             kBackwardSplit, derive_sizes<kBackwardApi>);

OperandSet to_set(const SortChunksOperands &o) {
  OperandSet set{.op = Op::sort_chunks};
  set.tensors = {o.tokens, o.split_sizes, o.sorted_index, o.probs, o.sorted_tokens, o.sorted_probs};
  return set;
}

OperandSet to_set(const SortChunksGradOperands &o) {
  OperandSet set{.op = Op::sort_chunks_grad};
  set.tensors = {o.sorted_tokens_grad, o.split_sizes, o.sorted_index,
                 o.sorted_probs_grad,  o.tokens_grad, o.probs_grad};
  return set;
}

}  // namespace moeperm::detail
