// MoeTokenPermuteWithRoutingMapGrad, drop-less, CPU (SPEC §3).
//   G = permutedTokenOutputGrad [R, H], S = sortedIndices [R], P = probs grad [R],
//   M = routingMap [T, E], K = R / T.
//   tokensGrad[t] = sum_{k=0..K-1, S[t*K+k] != -1} G[S[t*K+k]]   (fp32, ascending k, one rounding)
//   probsGrad     = zeros(E, T).masked_scatter(M.T, P).T
// Preconditions (plan): shapes consistent, R > 0, H > 0.
// Bytes moved: read R*H*b (G) + R*4 (S), write T*H*b; probs: read T*E + R*bp, write T*E*bp.
// Token t is owned by one thread; its sum runs in ascending k (Note [Determinism]).
#include <algorithm>

#include "core/limits.hpp"
#include "core/messages.hpp"
#include "cpu/kernels.hpp"
#include "cpu/row_ops.hpp"
#include "cpu/threading.hpp"

namespace moeperm::detail::cpu {
namespace {

void sum_tokens(const Plan &p, const Buffers &b) {
  const RowKernels &rk = kernels_of(p);
  const int64_t K = p.K;
  const TokenBlocks blocks(p.T, K);  // K slots per token (-1 slots are few: Note [Token blocks])
#pragma omp parallel num_threads(num_threads())
  {
    int64_t rows[kMaxTopK];  // token t's valid slots, ascending k
    for_each_token(blocks, [&](int64_t t) {
      int64_t count = 0;
      for (int64_t k = 0; k < K; ++k) {
        const int64_t s = *elem<int32_t>(b.sorted_indices(), p.sorted_indices().at(t * K + k));
        if (s >= 0) rows[count++] = s;
      }
      sum_rows_into(p, b, rk, t, count, [&](int64_t i) { return rows[i]; });
    });
    rk.store_fence();
  }
}

}  // namespace

Status permute_grad_dropless(const Plan &p, const Buffers &b, std::byte *ws) {
  // All checks precede all writes (Note [Index validation]).
  if (const int64_t j = first_bad_index(p, b.sorted_indices()); j >= 0)
    return bad_sorted_index(p, j, *elem<int32_t>(b.sorted_indices(), p.sorted_indices().at(j)));
  int64_t *ranks = nullptr;
  if (p.probs == ProbsWork::compute) {
    ranks = p.workspace.at<int64_t>(ws, p.ws_slot[kSlotBlockRanks]);
    int64_t nnz = 0;
    MOEPERM_TRY(expert_block_ranks(p, b.routing_map(), ranks, &nnz, -1));
    if (nnz > p.R) return too_many_routed_pairs(p, nnz);
  }

  sum_tokens(p, b);

  if (p.probs == ProbsWork::zero_fill) zero_probs_output(p, b);
  if (p.probs != ProbsWork::compute) return Status::success();
  with_element_bits(element_size(p.probs_dtype), [&](auto bits) {
    using P = decltype(bits);
    const int64_t E = p.E, mcs = p.routing_map().col_stride, ocs = p.dense_probs().col_stride;
    const P *in = elem<P>(b.permuted_probs(), 0);
#pragma omp parallel for num_threads(num_threads()) schedule(static)
    for (int64_t blk = 0; blk < token_blocks(p.T); ++blk) {
      int64_t *cursor = ranks + blk * E;  // this block's next rank per expert
      for (int64_t t = blk * kTokenBlock; t < std::min(p.T, (blk + 1) * kTokenBlock); ++t) {
        const uint8_t *m = map_row(p, b.routing_map(), t);
        P *out = elem<P>(b.dense_probs(), p.dense_probs().at(t, 0));
        for (int64_t e = 0; e < E; ++e)
          out[e * ocs] = m[e * mcs] ? in[p.permuted_probs().at(cursor[e]++)] : P{0};
      }
    }
  });
  return Status::success();
}

}  // namespace moeperm::detail::cpu
