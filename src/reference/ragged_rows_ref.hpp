// What the ragged pair's reference kernels share (docs/ragged.md): the index checks and the
// expert of each row, naively.
#pragma once

#include <vector>

#include "core/messages.hpp"
#include "core/op_desc.hpp"
#include "core/plan.hpp"
#include "reference/common_ref.hpp"

namespace moeperm::detail::ref {

inline int64_t row_token(const Plan &p, const Buffers &b, int64_t r) {
  return *elem<int32_t>(b.sorted_indices(), p.sorted_indices().at(r));
}

// The expert of each row: r / C drop-and-pad; drop-less, the expert whose block of the
// map's expert-major pair list holds r, or -1 past the pairs.
inline std::vector<int64_t> row_experts(const Plan &p, const Buffers &b) {
  std::vector<int64_t> experts(static_cast<size_t>(p.R), -1);
  if (p.drop_and_pad) {
    for (int64_t r = 0; r < p.R; ++r) experts[static_cast<size_t>(r)] = r / p.C;
    return experts;
  }
  int64_t r = 0;
  // At T = 0 the map has no elements, whatever E is (Note [Work bounded by tensors]).
  for (int64_t e = 0; e < p.E && p.T > 0; ++e)
    for (int64_t t = 0; t < p.T; ++t)
      if (routed_at(p.routing_map_dtype, b.routing_map(), p.routing_map().at(t, e)) && r < p.R)
        experts[static_cast<size_t>(r++)] = e;
  return experts;
}

// Stores dp[t * E + e] to probs_grad[t, e] for every element: none at E = 0, whatever T is
// (Note [Work bounded by tensors]).
inline void store_dense_probs_grad(const Plan &p, const Buffers &b, const std::vector<float> &dp) {
  for (int64_t t = 0; t < p.T && p.E > 0; ++t)
    for (int64_t e = 0; e < p.E; ++e)
      store_value(p.dtype(Role::dense_probs_grad), b.dense_probs_grad(),
                  p.dense_probs_grad().at(t, e), dp[static_cast<size_t>(t * p.E + e)]);
}

// Every index in range; when rows need an expert, a row naming a token must have one.
inline Status check_rows(const Plan &p, const Buffers &b, bool need_experts,
                         std::vector<int64_t> *experts) {
  const IndexRange range = index_range(p);
  for (int64_t r = 0; r < p.R; ++r)
    if (!range.contains(row_token(p, b, r))) return bad_index(p, 0, r, row_token(p, b, r));
  if (!need_experts) return Status::success();
  *experts = row_experts(p, b);
  if (p.drop_and_pad) return Status::success();
  for (int64_t r = 0; r < p.R; ++r)
    if (row_token(p, b, r) >= 0 && (*experts)[static_cast<size_t>(r)] < 0) {
      int64_t all = 0;  // the message names every routed pair, not only those with a row
      for (int64_t e = 0; e < p.E && p.T > 0; ++e)
        for (int64_t t = 0; t < p.T; ++t)
          all += routed_at(p.routing_map_dtype, b.routing_map(), p.routing_map().at(t, e));
      return row_without_expert(p, r, row_token(p, b, r), all);
    }
  return Status::success();
}

}  // namespace moeperm::detail::ref
