// MoeTokenPermuteWithRoutingMapGrad, drop-and-pad, CPU (SPEC §3).
//   C = R / E. tokensGrad[t] = sum over j with S[j] == t of G[j], ascending j (fp32, one
//   rounding); tokens no slot names get 0. probsGrad[S[j], j / C] = P[j], zeros elsewhere.
// No atomics and no comparison sort: a counting sort (CSR) of slots by token id, built in
// the workspace, gives each token its slots in ascending j; token t is then owned by one
// thread (Note [Determinism]).
// Bytes moved: read R*H*b + R*4, write T*H*b; probs: read R*bp, write T*E*bp.
#include <algorithm>

#include "core/messages.hpp"
#include "cpu/kernels.hpp"
#include "cpu/row_ops.hpp"
#include "cpu/threading.hpp"

namespace moeperm::detail::cpu {
namespace {

void sum_tokens(const Plan &p, const Buffers &b, const int64_t *offsets, const int64_t *slots) {
  const RowKernels &rk = kernels_of(p);
  // Blocks balanced by slots: drop-and-pad favours low token ids (Note [Token blocks]).
  const TokenBlocks blocks(p.T, offsets);
#pragma omp parallel num_threads(num_threads())
  {
    for_each_token(blocks, [&](int64_t t) {
      const int64_t *mine = slots + offsets[t];
      sum_rows_into(p, b, rk, t, offsets[t + 1] - offsets[t], [&](int64_t i) { return mine[i]; });
    });
    rk.store_fence();
  }
}

}  // namespace

Status permute_grad_drop_and_pad(const Plan &p, const Buffers &b, std::byte *ws) {
  if (const int64_t j = first_bad_index(p, b.sorted_indices()); j >= 0)
    return bad_sorted_index(p, j, *elem<int32_t>(b.sorted_indices(), p.sorted_indices().at(j)));

  // Counting sort of slots by token id; stable, so each token's slots stay ascending.
  int64_t *offsets = p.workspace.at<int64_t>(ws, p.ws_slot[kSlotCsrOffsets]);
  int64_t *slots = p.workspace.at<int64_t>(ws, p.ws_slot[kSlotCsrSlots]);
  build_token_csr(p, b.sorted_indices(), p.sorted_indices(), offsets, slots);
  auto S = [&](int64_t j) {
    return int64_t{*elem<int32_t>(b.sorted_indices(), p.sorted_indices().at(j))};
  };

  sum_tokens(p, b, offsets, slots);

  if (p.probs == ProbsWork::none) return Status::success();
  zero_probs_output(p, b);
  if (p.probs == ProbsWork::zero_fill) return Status::success();
  // Expert e's slots [e*C, (e+1)*C) all write column e: one thread per expert, ascending j.
  const int64_t es = element_size(p.probs_dtype);
#pragma omp parallel for num_threads(num_threads()) schedule(static)
  for (int64_t e = 0; e < p.E; ++e)
    for (int64_t j = e * p.C; j < (e + 1) * p.C; ++j)
      copy_elem(b.dense_probs(), p.dense_probs().at(S(j), e), b.permuted_probs(),
                p.permuted_probs().at(j), es);
  return Status::success();
}

}  // namespace moeperm::detail::cpu
