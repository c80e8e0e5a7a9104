// Reference forward, SPEC §2, transcribed literally.
//
// Loops do work only in proportion to tensor elements (Note [Work bounded by tensors]).
#include <algorithm>
#include <numeric>
#include <vector>

#include "core/messages.hpp"
#include "reference/common_ref.hpp"
#include "reference/reference.hpp"

namespace moeperm::detail::ref {

Status permute(const Plan &p, const Buffers &b) {
  const DType vt = p.value_dtype;
  std::vector<int32_t> sorted(static_cast<size_t>(p.R));  // sortedIndicesOut, built first

  if (!p.drop_and_pad) {
    // f: expert-major token list; e_of[j]: the expert of f[j].
    std::vector<int64_t> f, e_of;
    for (int64_t e = 0; p.T > 0 && e < p.E; ++e)
      for (int64_t t = 0; t < p.T; ++t)
        if (routed(p, b.routing_map(), t, e)) f.push_back(t), e_of.push_back(e);
    // A token with more than K experts is an error (checked before any write). Without
    // experts no token has any; T alone bounds no tensor (Note [Work bounded by tensors]).
    for (int64_t t = 0; p.E > 0 && t < p.T; ++t) {
      int64_t n = 0;
      for (int64_t e = 0; e < p.E; ++e) n += routed(p, b.routing_map(), t, e);
      if (n > p.K) return too_many_experts_in_row(p, t, n);
    }
    std::vector<int64_t> order(f.size());
    std::iota(order.begin(), order.end(), 0);
    std::stable_sort(order.begin(), order.end(), [&](int64_t a, int64_t c) { return f[a] < f[c]; });
    // order is grouped by token in ascending id; token t's run goes to slots t*K + r.
    std::fill(sorted.begin(), sorted.end(), -1);
    for (size_t i = 0; i < order.size();) {
      const int64_t t = f[static_cast<size_t>(order[i])];
      for (int64_t r = 0; i < order.size() && f[static_cast<size_t>(order[i])] == t; ++i, ++r)
        sorted[static_cast<size_t>(t * p.K + r)] = static_cast<int32_t>(order[i]);
    }
    for (int64_t j = 0; j < p.R; ++j) {
      const bool filled = j < static_cast<int64_t>(f.size());
      for (int64_t h = 0; h < p.H; ++h) {
        if (filled)
          copy_value(vt, b.permuted(), p.permuted().at(j, h), b.tokens(),
                     p.tokens().at(f[static_cast<size_t>(j)], h));
        else
          store_zero(vt, b.permuted(), p.permuted().at(j, h));
      }
      if (p.probs == ProbsWork::compute && filled)
        copy_value(p.probs_dtype, b.permuted_probs(), p.permuted_probs().at(j), b.dense_probs(),
                   p.dense_probs().at(f[static_cast<size_t>(j)], e_of[static_cast<size_t>(j)]));
      else if (p.probs != ProbsWork::none)
        store_zero(p.permuted_probs_dtype, b.permuted_probs(), p.permuted_probs().at(j));
    }
  } else {
    // Per expert: routed tokens ascending, then unrouted ascending, truncated to C (C > 0
    // implies T >= C > 0: the map then has T * E elements).
    for (int64_t e = 0; p.C > 0 && e < p.E; ++e) {
      std::vector<int64_t> list;
      for (int64_t t = 0; t < p.T; ++t)
        if (routed(p, b.routing_map(), t, e)) list.push_back(t);
      for (int64_t t = 0; t < p.T; ++t)
        if (!routed(p, b.routing_map(), t, e)) list.push_back(t);
      for (int64_t c = 0; c < p.C; ++c)
        sorted[static_cast<size_t>(e * p.C + c)] =
            static_cast<int32_t>(list[static_cast<size_t>(c)]);
    }
    for (int64_t j = 0; j < p.R; ++j) {
      const int64_t t = sorted[static_cast<size_t>(j)];
      for (int64_t h = 0; h < p.H; ++h)
        copy_value(vt, b.permuted(), p.permuted().at(j, h), b.tokens(), p.tokens().at(t, h));
      if (p.probs == ProbsWork::compute)
        copy_value(p.probs_dtype, b.permuted_probs(), p.permuted_probs().at(j), b.dense_probs(),
                   p.dense_probs().at(t, j / p.C));
      else if (p.probs == ProbsWork::zero_fill)
        store_zero(p.permuted_probs_dtype, b.permuted_probs(), p.permuted_probs().at(j));
    }
  }
  for (int64_t j = 0; j < p.R; ++j)
    *elem<int32_t>(b.sorted_indices(), p.sorted_indices().at(j)) = sorted[static_cast<size_t>(j)];
  return Status::success();
}

}  // namespace moeperm::detail::ref
