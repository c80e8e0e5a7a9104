// MoeTokenPermuteWithRoutingMap, drop-less, CPU (SPEC §2).
//   f = expert-major token list of routingMap; K = numOutTokens / T; R = T*K.
//   sortedIndicesOut[t*K + r] = position in f of token t's r-th expert (-1 past its count);
//   permuteTokensOut[j] = tokens[f[j]] (zeros for j >= len(f));
//   permuteProbsOut[j] = probs[f[j], e(j)] (zeros for j >= len(f)).
// The stable argsort of f is a counting sort by construction: token block b's rank base
// for expert e comes from an exclusive scan of per-block counts (expert_block_ranks), and
// within a block tokens are visited in ascending id.
// Bytes moved: read T*H*b + T*E, write R*H*b + R*4 (+ R*bp probs).
#include <algorithm>

#include "cpu/kernels.hpp"
#include "cpu/row_ops.hpp"
#include "cpu/threading.hpp"

namespace moeperm::detail::cpu {

Status permute_dropless(const Plan &p, const Buffers &b, std::byte *ws) {
  int64_t *ranks = p.workspace.at<int64_t>(ws, p.ws_slot[kSlotBlockRanks]);
  int64_t nnz = 0;
  MOEPERM_TRY(expert_block_ranks(p, b.routing_map(), ranks, &nnz, p.K));  // checks rows <= K

  const int64_t es = element_size(p.value_dtype), ps = element_size(p.permuted_probs_dtype);
  const int64_t E = p.E, K = p.K;
  const bool probs = p.probs == ProbsWork::compute;
  const RowKernels &rk = kernels_of(p);
#pragma omp parallel num_threads(num_threads())
  {
#pragma omp for schedule(static)
    for (int64_t blk = 0; blk < token_blocks(p.T); ++blk) {
      int64_t *cursor = ranks + blk * E;
      for (int64_t t = blk * kTokenBlock; t < std::min(p.T, (blk + 1) * kTokenBlock); ++t) {
        int64_t r = 0;
        for_each_routed(p, b.routing_map(), t, [&](int64_t e) {
          const int64_t j = cursor[e]++;
          *elem<int32_t>(b.sorted_indices(), p.sorted_indices().at(t * K + r++)) =
              static_cast<int32_t>(j);
          copy_row(b.permuted(), p.permuted(), j, b.tokens(), p.tokens(), t, es, rk,
                   p.stream_stores);
          if (probs)
            copy_elem(b.permuted_probs(), p.permuted_probs().at(j), b.dense_probs(),
                      p.dense_probs().at(t, e), ps);
        });
        for (; r < K; ++r)
          *elem<int32_t>(b.sorted_indices(), p.sorted_indices().at(t * K + r)) = -1;
      }
    }
    rk.store_fence();
  }
  // Rows that no (token, expert) pair fills.
#pragma omp parallel for num_threads(num_threads()) schedule(static)
  for (int64_t j = nnz; j < p.R; ++j) zero_row(b.permuted(), p.permuted(), j, es);
  if (p.probs != ProbsWork::none)
    for (int64_t j = probs ? nnz : 0; j < p.R; ++j)
      zero_elem(b.permuted_probs(), p.permuted_probs().at(j), ps);
  return Status::success();
}

}  // namespace moeperm::detail::cpu
