// ragged_permute_grad, CPU, both modes (docs/ragged.md; core/ops/ragged_permute_grad.cpp).
// Token t (one thread) sums its rows in ascending row order (sum_rows, fp32, one rounding)
// and writes its probs_grad row: +0, then each expert's share of the rows' probs gradient.
// A token's rows ascend and a row's expert never decreases with the row, so the rows of one
// (token, expert) are adjacent: their sum is one fp32 run, rounded once.
// Bytes moved: read R*H*b + R*4 [+ R*bp + T*E*bm], write T*H*b [+ T*E*bp].
#include "cpu/kernels.hpp"
#include "cpu/row_ops.hpp"
#include "cpu/threading.hpp"

namespace moeperm::detail::cpu {

Status ragged_permute_grad(const Plan &p, const Buffers &b, std::byte *ws) {
  const bool probs = p.probs == ProbsWork::compute;
  RaggedRows g;
  MOEPERM_TRY(group_rows_by_token(p, b, ws, probs, &g));
  const RowKernels &rk = kernels_of(p);
  const int64_t pes = element_size(p.probs_dtype);
  const TokenBlocks blocks(p.T, g.offsets);  // tokens own uneven numbers of rows
#pragma omp parallel num_threads(num_threads())
  {
    for_each_token(blocks, [&](int64_t t) {
      const int64_t *mine = g.rows + g.offsets[t];
      const int64_t count = g.offsets[t + 1] - g.offsets[t];
      sum_rows_into(p, b, rk, t, count, [&](int64_t c) { return mine[c]; });
      if (!probs) return;
      zero_row(b.dense_probs_grad(), p.dense_probs_grad(), t, pes);
      for (int64_t c = 0; c < count;) {
        // One search per (token, expert) run, not per row (it was 10% of the operator).
        const int64_t e = g.expert(p, mine[c]), end = g.expert_end(p, e);
        float acc = 0.0f;
        for (; c < count && mine[c] < end; ++c)
          acc += load_value(p.permuted_probs_dtype, b.permuted_probs(),
                            p.permuted_probs().at(mine[c]));
        store_value(p.probs_dtype, b.dense_probs_grad(), p.dense_probs_grad().at(t, e), acc);
      }
    });
    rk.store_fence();
  }
  return Status::success();
}

}  // namespace moeperm::detail::cpu
