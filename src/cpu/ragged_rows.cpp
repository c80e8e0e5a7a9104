// The row groups the ragged pair's CPU kernels share (docs/ragged.md): the index checked,
// each token's rows in ascending order (a stable counting sort), and each row's expert.
#include <algorithm>

#include "core/messages.hpp"
#include "core/op_desc.hpp"
#include "cpu/kernels.hpp"
#include "cpu/row_ops.hpp"

namespace moeperm::detail::cpu {
namespace {

int64_t token_of(const Plan &p, const Buffers &b, int64_t r) {
  return *elem<int32_t>(b.sorted_indices(), p.sorted_indices().at(r));
}

// Drop-less: first[e] = the first row of expert e (first[E] = the routed pairs), from the
// per-block counts in `counts`.
int64_t expert_first_rows(const Plan &p, const Buffers &b, int64_t *counts, int64_t *first) {
  block_column_counts(p, b.routing_map(), counts);
  int64_t running = 0;
  for (int64_t e = 0; e < p.E; ++e) {
    first[e] = running;
    for (int64_t blk = 0; blk < token_blocks(p.T); ++blk) running += counts[blk * p.E + e];
  }
  first[p.E] = running;
  return running;
}

}  // namespace

int64_t RaggedRows::expert(const Plan &p, int64_t r) const {
  if (p.drop_and_pad) return r / p.C;
  return static_cast<int64_t>(std::upper_bound(first, first + p.E + 1, r) - first) - 1;
}

int64_t RaggedRows::expert_end(const Plan &p, int64_t e) const {
  return p.drop_and_pad ? (e + 1) * p.C : first[e + 1];
}

Status group_rows_by_token(const Plan &p, const Buffers &b, std::byte *ws, bool need_experts,
                           RaggedRows *out) {
  // All checks precede all writes (Note [Index validation]).
  if (const int64_t r = first_bad_index(p, 0, b.sorted_indices()); r >= 0)
    return bad_index(p, 0, r, token_of(p, b, r));
  if (need_experts && !p.drop_and_pad) {
    int64_t *counts = p.workspace.at<int64_t>(ws, p.ws_slot[kSlotExpertFirst]);
    int64_t *first = counts + token_blocks(p.T) * p.E;
    const int64_t pairs = expert_first_rows(p, b, counts, first);
    for (int64_t r = pairs; r < p.R; ++r)
      if (token_of(p, b, r) >= 0) return row_without_expert(p, r, token_of(p, b, r), pairs);
    out->first = first;
  }
  int64_t *offsets = p.workspace.at<int64_t>(ws, p.ws_slot[kSlotCsrOffsets]);
  int64_t *rows = p.workspace.at<int64_t>(ws, p.ws_slot[kSlotCsrSlots]);
  build_token_csr(p, b.sorted_indices(), p.sorted_indices(), offsets, rows);
  out->offsets = offsets;
  out->rows = rows;
  return Status::success();
}

}  // namespace moeperm::detail::cpu
