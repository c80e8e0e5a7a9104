// Reference backward, SPEC §3, transcribed literally (the seed's formulas). Token loops are
// skipped when their inner extent is 0 (Note [Work bounded by tensors]).
#include <algorithm>
#include <numeric>
#include <vector>

#include "core/messages.hpp"
#include "core/op_desc.hpp"
#include "reference/common_ref.hpp"
#include "reference/reference.hpp"

namespace moeperm::detail::ref {

Status permute_grad(const Plan &p, const Buffers &b) {
  const DType vt = p.value_dtype;
  std::vector<int64_t> S(static_cast<size_t>(p.R));
  for (int64_t j = 0; j < p.R; ++j)
    S[static_cast<size_t>(j)] = *elem<int32_t>(b.sorted_indices(), p.sorted_indices().at(j));

  // Every index is checked before anything is written (Note [Index validation]).
  const IndexRange range = index_range(p);
  for (int64_t j = 0; j < p.R; ++j) {
    const int64_t s = S[static_cast<size_t>(j)];
    if (!range.contains(s)) return bad_sorted_index(p, j, s);
  }
  if (p.probs == ProbsWork::compute && !p.drop_and_pad) {
    int64_t nnz = 0;
    for (int64_t t = 0; p.E > 0 && t < p.T; ++t)
      for (int64_t e = 0; e < p.E; ++e) nnz += routed(p, b.routing_map(), t, e);
    if (nnz > p.R) return too_many_routed_pairs(p, nnz);
  }

  // tokensGrad: fp32 sums in ascending k (drop-less) or ascending j (drop-and-pad).
  std::vector<float> acc(static_cast<size_t>(p.T * p.H), 0.0f);
  if (!p.drop_and_pad) {
    for (int64_t t = 0; p.K > 0 && t < p.T; ++t)
      for (int64_t k = 0; k < p.K; ++k) {
        const int64_t s = S[static_cast<size_t>(t * p.K + k)];
        if (s == -1) continue;
        for (int64_t h = 0; h < p.H; ++h)
          acc[static_cast<size_t>(t * p.H + h)] +=
              load_value(vt, b.permuted(), p.permuted().at(s, h));
      }
  } else {
    // permuteTokenId, outIndex = S.sort(); tokensGrad[permuteTokenId[i]] += G[outIndex[i]]
    std::vector<int64_t> out_index(static_cast<size_t>(p.R));
    std::iota(out_index.begin(), out_index.end(), 0);
    std::stable_sort(out_index.begin(), out_index.end(), [&](int64_t a, int64_t c) {
      return S[static_cast<size_t>(a)] < S[static_cast<size_t>(c)];
    });
    for (int64_t i = 0; i < p.R; ++i) {
      const int64_t j = out_index[static_cast<size_t>(i)], t = S[static_cast<size_t>(j)];
      for (int64_t h = 0; h < p.H; ++h)
        acc[static_cast<size_t>(t * p.H + h)] +=
            load_value(vt, b.permuted(), p.permuted().at(j, h));
    }
  }
  for (int64_t t = 0; p.H > 0 && t < p.T; ++t)
    for (int64_t h = 0; h < p.H; ++h)
      store_value(vt, b.tokens(), p.tokens().at(t, h), acc[static_cast<size_t>(t * p.H + h)]);

  if (p.probs == ProbsWork::none) return Status::success();
  for (int64_t t = 0; p.E > 0 && t < p.T; ++t)
    for (int64_t e = 0; e < p.E; ++e)
      store_zero(p.probs_dtype, b.dense_probs(), p.dense_probs().at(t, e));
  if (p.probs == ProbsWork::zero_fill) return Status::success();
  if (!p.drop_and_pad) {
    // zeros(E, T).masked_scatter(M.T, P).T
    int64_t j = 0;
    for (int64_t e = 0; e < p.E; ++e)
      for (int64_t t = 0; t < p.T; ++t)
        if (routed(p, b.routing_map(), t, e))
          copy_value(p.probs_dtype, b.dense_probs(), p.dense_probs().at(t, e), b.permuted_probs(),
                     p.permuted_probs().at(j++));
  } else {
    // probsGrad[S[j], j / C] = P[j], ascending j (a later j wins a repeated target)
    for (int64_t j = 0; j < p.R; ++j)
      copy_value(p.probs_dtype, b.dense_probs(),
                 p.dense_probs().at(S[static_cast<size_t>(j)], j / p.C), b.permuted_probs(),
                 p.permuted_probs().at(j));
  }
  return Status::success();
}

}  // namespace moeperm::detail::ref
