// ragged_unpermute_grad, CPU, both modes (docs/ragged.md;
// core/ops/ragged_unpermute_grad.cpp). Token t (one thread) writes the rows that name it,
// dX[r] = G[t] (times probs[t, e(r)], rounded once), and its probs_grad row: +0, then per
// expert the sum of its rows' U3 dot products (the rows of one (token, expert) are adjacent:
// see ragged_permute_grad_cpu.cpp). Rows that name no token get +0 in a pass of their own.
// Bytes moved: read T*H*b + R*4 [+ R*H*b X] [+ T*E*(bm + bp)], write R*H*b [+ T*E*bp].
#include "cpu/kernels.hpp"
#include "cpu/row_ops.hpp"
#include "cpu/threading.hpp"

namespace moeperm::detail::cpu {

Status ragged_unpermute_grad(const Plan &p, const Buffers &b, std::byte *ws) {
  const bool probs = p.has(Role::dense_probs), dp = p.has(Role::dense_probs_grad);
  RaggedRows g;
  MOEPERM_TRY(group_rows_by_token(p, b, ws, probs, &g));
  const RowKernels &rk = kernels_of(p);
  const DType pt = probs ? p.dtype(Role::dense_probs) : DType::f32;
  const DType gt = dp ? p.dtype(Role::dense_probs_grad) : DType::f32;
  const int64_t es = element_size(p.value_dtype);
  const TokenBlocks blocks(p.T, g.offsets);  // tokens own uneven numbers of rows
#pragma omp parallel num_threads(num_threads())
  {
    for_each_token(blocks, [&](int64_t t) {
      const int64_t *mine = g.rows + g.offsets[t];
      const int64_t count = g.offsets[t + 1] - g.offsets[t];
      if (dp) zero_row(b.dense_probs_grad(), p.dense_probs_grad(), t, element_size(gt));
      for (int64_t c = 0; c < count;) {
        // One search per (token, expert) run, not per row.
        const int64_t e = probs ? g.expert(p, mine[c]) : -1;
        const int64_t end = probs ? g.expert_end(p, e) : p.R;
        const float w = probs ? load_value(pt, b.dense_probs(), p.dense_probs().at(t, e)) : 1.0f;
        float acc = 0.0f;
        for (; c < count && mine[c] < end; ++c) {
          // The row after this one in token order (the next token's first after the last):
          // prefetched only.
          const int64_t next = g.offsets[t] + c + 1 < g.offsets[p.T] ? mine[c + 1] : -1;
          if (dp)
            acc += write_row_and_dot(p, b, rk, mine[c], t, w, next);
          else
            write_row(p, b, rk, mine[c], t, probs, w);
        }
        if (dp) store_value(gt, b.dense_probs_grad(), p.dense_probs_grad().at(t, e), acc);
      }
    });
#pragma omp for schedule(static)
    for (int64_t r = 0; r < p.R; ++r)
      if (*elem<int32_t>(b.sorted_indices(), p.sorted_indices().at(r)) < 0)
        zero_row(b.permuted(), p.permuted(), r, es);
    rk.store_fence();
  }
  return Status::success();
}

}  // namespace moeperm::detail::cpu
