// MoeTokenUnpermuteWithRoutingMapGrad, CPU, both modes (SPEC-unpermute U2).
//   G = unpermutedTokensGrad [T, H] (role tokens), O = outIndex [R], I = permuteTokenId [R],
//   M = routingMap [T, E], X = permutedTokens [R, H] (role saved_permuted), P = probs [T, E];
//   dX = permutedTokensGradOut [R, H] (role permuted), dP = probsGradOut [T, E].
//   Drop-less (K = R / T), slot i = t*K + k, r = O[i] != -1: dX[r] = G[t] (* p with P,
//   p = P[t, e_k(t)], 0 when t has fewer experts); dP[t, e_k(t)] = dot(X[r], G[t]).
//   Drop-and-pad (C = R / E): t = I[i], r = O[i], e = r / C: the same two formulas.
//   Rows of dX that no slot names are 0; every other entry of dP is 0.
// O names no row twice (checked first), so every dX row has one writer: rows are spread
// over threads with no atomics. dP: drop-less, row t is owned by token t's thread;
// drop-and-pad, the dot products go to the workspace in slot order and one ascending pass
// stores them, so an entry named twice (indices not from the forward) takes the larger i's
// value, as U2 says, whatever the thread count (Note [Determinism]).
// Bytes moved: read T*H*b (G, K times from cache) + 2R*4 [+ R*H*b (X) with dP], write R*H*b.
#include <algorithm>

#include "core/limits.hpp"
#include "core/messages.hpp"
#include "cpu/kernels.hpp"
#include "cpu/row_ops.hpp"
#include "cpu/threading.hpp"

namespace moeperm::detail::cpu {
namespace {

int64_t index_at(const void *data, const VectorGeom &g, int64_t j) {
  return *elem<int32_t>(data, g.at(j));
}

// Rows of dX that no slot names (first_named[r] < 0) get +0.
void zero_unnamed_rows(const Plan &p, const Buffers &b, const int64_t *first_named) {
  const int64_t es = element_size(p.value_dtype);
#pragma omp parallel for num_threads(num_threads()) schedule(static)
  for (int64_t r = 0; r < p.R; ++r)
    if (first_named[r] < 0) zero_row(b.permuted(), p.permuted(), r, es);
}

void zero_dense_probs_grad(const Plan &p, const Buffers &b) {
  const int64_t es = element_size(p.dtype(Role::dense_probs_grad));
#pragma omp parallel for num_threads(num_threads()) schedule(static)
  for (int64_t t = 0; t < p.T; ++t) zero_row(b.dense_probs_grad(), p.dense_probs_grad(), t, es);
}

float prob(const Plan &p, const Buffers &b, int64_t t, int64_t e) {
  return load_value(p.dtype(Role::dense_probs), b.dense_probs(), p.dense_probs().at(t, e));
}

}  // namespace

Status unpermute_grad_dropless(const Plan &p, const Buffers &b, std::byte *ws) {
  // All checks precede all writes (Note [Index validation]).
  int64_t *first_named = p.workspace.at<int64_t>(ws, p.ws_slot[kSlotFirstNamed]);
  MOEPERM_TRY(check_index_rules(p, b, first_named));
  const bool probs = p.has(Role::dense_probs), dp = p.probs == ProbsWork::compute;
  const DType pgt = dp ? p.dtype(Role::dense_probs_grad) : DType::f32;
  const RowKernels &rk = kernels_of(p);
  const int64_t K = p.K;             // with P, <= kMaxTopK (U4 Grad rule 3, the planner's limit)
  const TokenBlocks blocks(p.T, K);  // K slots per token (-1 slots are few: Note [Token blocks])
#pragma omp parallel num_threads(num_threads())
  {
    int64_t experts[kMaxTopK];
    for_each_token(blocks, [&](int64_t t) {
      const int64_t n_experts = probs ? experts_of(p, b.routing_map(), t, experts, K) : 0;
      if (dp) zero_row(b.dense_probs_grad(), p.dense_probs_grad(), t, element_size(pgt));
      for (int64_t k = 0; k < K; ++k) {
        const int64_t r = index_at(b.out_index(), p.out_index(), t * K + k);
        if (r < 0) continue;
        const int64_t e = k < n_experts ? experts[k] : -1;
        const float pv = e >= 0 ? prob(p, b, t, e) : 0.0f;
        // The next slot's row (the next token's first, after the last k): prefetched only.
        const int64_t r_next =
            t * K + k + 1 < p.T * K ? index_at(b.out_index(), p.out_index(), t * K + k + 1) : -1;
        if (dp && e >= 0)
          store_value(pgt, b.dense_probs_grad(), p.dense_probs_grad().at(t, e),
                      write_row_and_dot(p, b, rk, r, t, pv, r_next));
        else
          write_row(p, b, rk, r, t, probs, pv);
      }
    });
    rk.store_fence();
  }
  zero_unnamed_rows(p, b, first_named);
  if (p.probs == ProbsWork::zero_fill) zero_dense_probs_grad(p, b);
  return Status::success();
}

Status unpermute_grad_drop_and_pad(const Plan &p, const Buffers &b, std::byte *ws) {
  int64_t *first_named = p.workspace.at<int64_t>(ws, p.ws_slot[kSlotFirstNamed]);
  MOEPERM_TRY(check_index_rules(p, b, first_named));
  const bool probs = p.has(Role::dense_probs), dp = p.probs == ProbsWork::compute;
  float *dots = dp ? p.workspace.at<float>(ws, p.ws_slot[kSlotSlotValues]) : nullptr;
  const RowKernels &rk = kernels_of(p);
  auto O = [&](int64_t i) { return index_at(b.out_index(), p.out_index(), i); };
  auto I = [&](int64_t i) { return index_at(b.token_id(), p.token_id(), i); };
#pragma omp parallel num_threads(num_threads())
  {
#pragma omp for schedule(static)
    for (int64_t i = 0; i < p.R; ++i) {
      const int64_t t = I(i), r = O(i);
      const float pv = probs ? prob(p, b, t, r / p.C) : 0.0f;
      if (dp)
        dots[i] = write_row_and_dot(p, b, rk, r, t, pv, i + 1 < p.R ? O(i + 1) : -1);
      else
        write_row(p, b, rk, r, t, probs, pv);
    }
    rk.store_fence();
  }
  zero_unnamed_rows(p, b, first_named);
  if (p.probs == ProbsWork::none) return Status::success();
  zero_dense_probs_grad(p, b);
  if (!dp) return Status::success();
  // Ascending i: an entry named twice keeps the larger i's value (U2).
  const DType pgt = p.dtype(Role::dense_probs_grad);
  for (int64_t i = 0; i < p.R; ++i)
    store_value(pgt, b.dense_probs_grad(), p.dense_probs_grad().at(I(i), O(i) / p.C), dots[i]);
  return Status::success();
}

}  // namespace moeperm::detail::cpu
