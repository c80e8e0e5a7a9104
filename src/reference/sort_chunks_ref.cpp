// sort_chunks and sort_chunks_grad, naive (core/ops/sort_chunks.cpp states the semantics):
// check the data rules in order (split_sizes, then sorted_index), then walk the output
// chunks j = 0 .. S-1 and move each row between its place among the sorted chunks and its
// place in input chunk sorted_index[j]: forward from the input's place to the sorted one,
// backward back again.
#include <unordered_map>
#include <vector>

#include "core/messages.hpp"
#include "core/op_desc.hpp"
#include "core/plan.hpp"
#include "reference/common_ref.hpp"
#include "reference/reference.hpp"

namespace moeperm::detail::ref {
namespace {

int64_t value_at(const void *base, const VectorGeom &g, int64_t i) {
  return *elem<int32_t>(base, g.at(i));
}

// split_sizes: each >= 0, summing to T; sorted_index: in [0, S), no chunk twice. Allocates
// in proportion to the chunks it has read before a repeat, not to S: an input view may
// repeat one element (stride 0), so S can be 2^31 in a few bytes of memory, and the data
// rules must still fail with the first repeat's message and not run out of memory.
Status check_chunks(const Plan &p, const Buffers &b) {
  int64_t sum = 0;
  for (int64_t c = 0; c < p.S; ++c) {
    const int64_t n = value_at(b.split_sizes(), p.split_sizes(), c);
    if (n < 0) return bad_split_size(p, 0, c, n);
    sum += n;
  }
  if (sum != p.T) return split_sizes_total(p, 0, sum, p.T);
  for (int64_t j = 0; j < p.S; ++j) {
    const int64_t c = value_at(b.chunk_order(), p.chunk_order(), j);
    if (c < 0 || c >= p.S) return bad_index(p, 0, j, c);
  }
  std::unordered_map<int64_t, int64_t> first;  // chunk -> the first j that names it
  for (int64_t j = 0; j < p.S; ++j) {
    const int64_t c = value_at(b.chunk_order(), p.chunk_order(), j);
    const auto [at, fresh] = first.try_emplace(c, j);
    if (!fresh) return repeated_index(p, 0, j, c, at->second);
  }
  return Status::success();
}

// Row `sorted` of the sorted chunks is row `original` of the input.
void move_row(const Plan &p, const Buffers &b, int64_t sorted, int64_t original) {
  const bool forward = p.op == Op::sort_chunks;
  for (int64_t h = 0; h < p.H; ++h) {
    if (forward)
      copy_value(p.value_dtype, b.permuted(), p.permuted().at(sorted, h), b.tokens(),
                 p.tokens().at(original, h));
    else
      copy_value(p.value_dtype, b.tokens(), p.tokens().at(original, h), b.permuted(),
                 p.permuted().at(sorted, h));
  }
  const Role out = forward ? Role::permuted_probs : Role::row_probs;
  const int64_t out_at = forward ? p.permuted_probs().at(sorted) : p.row_probs().at(original);
  if (p.probs == ProbsWork::zero_fill) store_zero(p.dtype(out), b[out], out_at);
  if (p.probs != ProbsWork::compute) return;
  if (forward)
    copy_value(p.dtype(out), b.permuted_probs(), out_at, b.row_probs(), p.row_probs().at(original));
  else
    copy_value(p.dtype(out), b.row_probs(), out_at, b.permuted_probs(),
               p.permuted_probs().at(sorted));
}

}  // namespace

Status sort_chunks(const Plan &p, const Buffers &b) {
  MOEPERM_TRY(check_chunks(p, b));
  // sorted_index is a permutation of the S chunks: S distinct elements in memory.
  std::vector<int64_t> start(static_cast<size_t>(p.S));
  for (int64_t c = 0, sum = 0; c < p.S; ++c) {
    start[static_cast<size_t>(c)] = sum;
    sum += value_at(b.split_sizes(), p.split_sizes(), c);
  }
  int64_t sorted = 0;
  for (int64_t j = 0; j < p.S; ++j) {
    const int64_t c = value_at(b.chunk_order(), p.chunk_order(), j);
    const int64_t n = value_at(b.split_sizes(), p.split_sizes(), c);
    for (int64_t i = 0; i < n; ++i) move_row(p, b, sorted++, start[static_cast<size_t>(c)] + i);
  }
  return Status::success();
}

}  // namespace moeperm::detail::ref
