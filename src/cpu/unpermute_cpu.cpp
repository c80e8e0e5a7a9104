// MoeTokenUnpermuteWithRoutingMap, CPU, both modes (SPEC-unpermute U1).
//   X = permutedTokens [R, H] (role permuted), S = sortedIndices [R], M = routingMap [T, E],
//   P = probs [T, E]; out = unpermutedTokens [T, H] (role tokens).
//   Drop-less (K = R / T): out[t] = sum over valid k ascending of X[S[t*K+k]] * q, q =
//   P[t, e_k(t)]; a slot is valid when S != -1 and (with P) q != 0.
//   Drop-and-pad (C = R / E): out[t] = sum over j ascending with S[j] == t of Y_j, Y_j =
//   X[j] * P[t, j / C] rounded to X's dtype when P has it.
// fp32 accumulation from +0, products rounded to fp32 before they are added (the CPU layer
// is compiled with contraction off), one rounding at the end.
// Token t is owned by one thread and sums its rows in the order above (Note [Determinism]).
// Bytes moved: read R*H*b (X) + R*4 (S) [+ T*E (M) + T*E*bp (P)], write T*H*b [+ side outputs].
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

void store_index(const Plan &p, const Buffers &b, Role role, int64_t j, int64_t v) {
  if (p.has(role)) *elem<int32_t>(b[role], p.vector(role).at(j)) = static_cast<int32_t>(v);
}

// permuteProbs[j] = P[t, e] (moved bit for bit), or +0 when the slot has no prob (e < 0).
void store_slot_prob(const Plan &p, const Buffers &b, int64_t j, int64_t t, int64_t e) {
  if (!p.has(Role::permuted_probs)) return;
  const int64_t es = element_size(p.dtype(Role::permuted_probs));
  if (e >= 0 && p.has(Role::dense_probs))
    copy_elem(b.permuted_probs(), p.permuted_probs().at(j), b.dense_probs(),
              p.dense_probs().at(t, e), es);
  else
    zero_elem(b.permuted_probs(), p.permuted_probs().at(j), es);
}

}  // namespace

Status unpermute_dropless(const Plan &p, const Buffers &b, std::byte *) {
  // All checks precede all writes (Note [Index validation]).
  if (const int64_t j = first_bad_index(p, 0, b.sorted_indices()); j >= 0)
    return bad_index(p, 0, j, index_at(b.sorted_indices(), p.sorted_indices(), j));
  const bool probs = p.has(Role::dense_probs);
  const DType pt = probs ? p.dtype(Role::dense_probs) : DType::f32;
  const RowKernels &rk = kernels_of(p);
  const int64_t K = p.K;             // <= kMaxTopK: U4 forward rule 4 (the planner's limit)
  const TokenBlocks blocks(p.T, K);  // K slots per token (-1 slots are few: Note [Token blocks])
#pragma omp parallel num_threads(num_threads())
  {
    int64_t rows[kMaxTopK], experts[kMaxTopK];
    float weights[kMaxTopK];
    for_each_token(blocks, [&](int64_t t) {
      const int64_t n_experts = probs ? experts_of(p, b.routing_map(), t, experts, K) : 0;
      int64_t count = 0;
      for (int64_t k = 0; k < K; ++k) {
        const int64_t i = t * K + k, s = index_at(b.sorted_indices(), p.sorted_indices(), i);
        const int64_t e = k < n_experts ? experts[k] : -1;
        const float q = e >= 0 ? load_value(pt, b.dense_probs(), p.dense_probs().at(t, e)) : 0.0f;
        store_index(p, b, Role::out_index, i, s);
        store_index(p, b, Role::token_id, i, t);
        store_slot_prob(p, b, i, t, e);
        if (s < 0 || (probs && q == 0.0f)) continue;  // CANN skips a zero prob's slot
        rows[count] = s;
        weights[count++] = q;
      }
      sum_rows_into(
          p, b, rk, t, count, [&](int64_t c) { return rows[c]; },
          probs ? SumWeights{.w = weights} : SumWeights{});
    });
    rk.store_fence();
  }
  return Status::success();
}

Status unpermute_drop_and_pad(const Plan &p, const Buffers &b, std::byte *ws) {
  if (const int64_t j = first_bad_index(p, 0, b.sorted_indices()); j >= 0)
    return bad_index(p, 0, j, index_at(b.sorted_indices(), p.sorted_indices(), j));
  // Slots grouped by token, ascending j within a token (a stable counting sort): the order
  // of each token's sum, and also permuteTokenId (S sorted) and outIndex (its argsort).
  int64_t *offsets = p.workspace.at<int64_t>(ws, p.ws_slot[kSlotCsrOffsets]);
  int64_t *slots = p.workspace.at<int64_t>(ws, p.ws_slot[kSlotCsrSlots]);
  float *weights = p.workspace.at<float>(ws, p.ws_slot[kSlotSlotValues]);
  build_token_csr(p, b.sorted_indices(), p.sorted_indices(), offsets, slots);
  const bool probs = p.has(Role::dense_probs);
  const DType pt = probs ? p.dtype(Role::dense_probs) : DType::f32;
  // Y_j rounds to the token dtype when P has it (CANN multiplies in that dtype).
  const bool round_products = probs && pt == p.value_dtype;
  const RowKernels &rk = kernels_of(p);
  // Blocks balanced by slots: drop-and-pad favours low token ids (Note [Token blocks]).
  const TokenBlocks blocks(p.T, offsets);
#pragma omp parallel num_threads(num_threads())
  {
    for_each_token(blocks, [&](int64_t t) {
      const int64_t *mine = slots + offsets[t];
      const int64_t count = offsets[t + 1] - offsets[t];
      float *w = weights + offsets[t];
      for (int64_t c = 0; c < count; ++c) {
        if (probs) w[c] = load_value(pt, b.dense_probs(), p.dense_probs().at(t, mine[c] / p.C));
        store_index(p, b, Role::out_index, offsets[t] + c, mine[c]);
        store_index(p, b, Role::token_id, offsets[t] + c, t);
      }
      sum_rows_into(
          p, b, rk, t, count, [&](int64_t c) { return mine[c]; },
          probs ? SumWeights{.w = w, .round_products = round_products} : SumWeights{});
    });
    rk.store_fence();
  }
  if (p.has(Role::permuted_probs)) {
#pragma omp parallel for num_threads(num_threads()) schedule(static)
    for (int64_t j = 0; j < p.R; ++j)
      store_slot_prob(p, b, j, index_at(b.sorted_indices(), p.sorted_indices(), j),
                      probs ? j / p.C : -1);
  }
  return Status::success();
}

}  // namespace moeperm::detail::cpu
