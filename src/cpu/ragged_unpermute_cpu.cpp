// ragged_unpermute, CPU, both modes (docs/ragged.md; core/ops/ragged_unpermute.cpp).
// Rows are grouped by token with a stable counting sort (build_token_csr, -1 rows left out),
// so each token sums its rows in ascending row order, owned by one thread
// (Note [Determinism]); with probs, row r's weight is probs[t, e(r)], e(r) = r / C
// (drop-and-pad) or the expert whose expert-major block of the map holds r (drop-less).
// fp32 products and accumulation from +0, one rounding (the row kernels' sum_scaled).
// Bytes moved: read R*H*b + R*4 [+ T*E*bm + T*E*bp], write T*H*b.
#include <algorithm>

#include "core/messages.hpp"
#include "core/op_desc.hpp"
#include "cpu/kernels.hpp"
#include "cpu/row_ops.hpp"
#include "cpu/threading.hpp"

namespace moeperm::detail::cpu {
namespace {

int64_t index_at(const Plan &p, const Buffers &b, int64_t r) {
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

Status ragged_unpermute(const Plan &p, const Buffers &b, std::byte *ws) {
  // All checks precede all writes (Note [Index validation]).
  if (const int64_t r = first_bad_index(p, 0, b.sorted_indices()); r >= 0)
    return bad_index(p, 0, r, index_at(p, b, r));
  const bool probs = p.has(Role::dense_probs);
  const int64_t *first = nullptr;
  if (probs && !p.drop_and_pad) {
    int64_t *counts = p.workspace.at<int64_t>(ws, p.ws_slot[kSlotExpertFirst]);
    int64_t *firsts = counts + token_blocks(p.T) * p.E;
    const int64_t pairs = expert_first_rows(p, b, counts, firsts);
    for (int64_t r = pairs; r < p.R; ++r)
      if (index_at(p, b, r) >= 0) return row_without_expert(p, r, index_at(p, b, r), pairs);
    first = firsts;
  }
  auto expert_of = [&](int64_t r) {
    if (p.drop_and_pad) return r / p.C;
    return static_cast<int64_t>(std::upper_bound(first, first + p.E + 1, r) - first) - 1;
  };
  int64_t *offsets = p.workspace.at<int64_t>(ws, p.ws_slot[kSlotCsrOffsets]);
  int64_t *rows = p.workspace.at<int64_t>(ws, p.ws_slot[kSlotCsrSlots]);
  float *weights = probs ? p.workspace.at<float>(ws, p.ws_slot[kSlotSlotValues]) : nullptr;
  build_token_csr(p, b.sorted_indices(), p.sorted_indices(), offsets, rows);
  const DType pt = probs ? p.dtype(Role::dense_probs) : DType::f32;
  const RowKernels &rk = kernels_of(p);
#pragma omp parallel num_threads(num_threads())
  {
    // Dynamic: tokens own uneven numbers of rows; ownership, hence the bits, does not
    // depend on the schedule.
#pragma omp for schedule(dynamic, 16)
    for (int64_t t = 0; t < p.T; ++t) {
      const int64_t *mine = rows + offsets[t];
      const int64_t count = offsets[t + 1] - offsets[t];
      float *w = probs ? weights + offsets[t] : nullptr;
      for (int64_t c = 0; probs && c < count; ++c)
        w[c] = load_value(pt, b.dense_probs(), p.dense_probs().at(t, expert_of(mine[c])));
      sum_rows_into(
          p, b, rk, t, count, [&](int64_t c) { return mine[c]; },
          probs ? SumWeights{.w = w} : SumWeights{});
    }
    rk.store_fence();
  }
  return Status::success();
}

}  // namespace moeperm::detail::cpu
