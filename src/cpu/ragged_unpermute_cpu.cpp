// ragged_unpermute, CPU, both modes (docs/ragged.md; core/ops/ragged_unpermute.cpp).
// Rows grouped by token (group_rows_by_token), so each token sums its rows in ascending row
// order, owned by one thread (Note [Determinism]); with probs, row r's weight is
// probs[t, e(r)]. fp32 products and accumulation from +0, one rounding (the row kernels'
// sum_scaled).
// Bytes moved: read R*H*b + R*4 [+ T*E*bm + T*E*bp], write T*H*b.
#include "cpu/kernels.hpp"
#include "cpu/row_ops.hpp"
#include "cpu/threading.hpp"

namespace moeperm::detail::cpu {

Status ragged_unpermute(const Plan &p, const Buffers &b, std::byte *ws) {
  const bool probs = p.has(Role::dense_probs);
  RaggedRows g;
  MOEPERM_TRY(group_rows_by_token(p, b, ws, probs, &g));
  float *weights = probs ? p.workspace.at<float>(ws, p.ws_slot[kSlotSlotValues]) : nullptr;
  const DType pt = probs ? p.dtype(Role::dense_probs) : DType::f32;
  const RowKernels &rk = kernels_of(p);
  const TokenBlocks blocks(p.T, g.offsets);  // tokens own uneven numbers of rows
#pragma omp parallel num_threads(num_threads())
  {
    for_each_token(blocks, [&](int64_t t) {
      const int64_t *mine = g.rows + g.offsets[t];
      const int64_t count = g.offsets[t + 1] - g.offsets[t];
      float *w = probs ? weights + g.offsets[t] : nullptr;
      // One expert search and one prob load per (token, expert) run, not per row.
      for (int64_t c = 0; probs && c < count;) {
        const int64_t e = g.expert(p, mine[c]), end = g.expert_end(p, e);
        const float q = load_value(pt, b.dense_probs(), p.dense_probs().at(t, e));
        for (; c < count && mine[c] < end; ++c) w[c] = q;
      }
      sum_rows_into(
          p, b, rk, t, count, [&](int64_t c) { return mine[c]; },
          probs ? SumWeights{.w = w} : SumWeights{});
    });
    rk.store_fence();
  }
  return Status::success();
}

}  // namespace moeperm::detail::cpu
