// ragged_unpermute, naive (docs/ragged.md; core/ops/ragged_unpermute.cpp states the
// semantics): for each token, every row is scanned in ascending order and those naming the
// token are added (times their prob) into an fp32 accumulator, rounded once at the end.
#include <vector>

#include "core/messages.hpp"
#include "core/op_desc.hpp"
#include "core/plan.hpp"
#include "reference/common_ref.hpp"
#include "reference/reference.hpp"

namespace moeperm::detail::ref {

Status ragged_unpermute(const Plan &p, const Buffers &b) {
  auto index = [&](int64_t r) {
    return int64_t{*elem<int32_t>(b.sorted_indices(), p.sorted_indices().at(r))};
  };
  const IndexRange range = index_range(p);
  for (int64_t r = 0; r < p.R; ++r)
    if (!range.contains(index(r))) return bad_index(p, 0, r, index(r));
  const bool probs = p.has(Role::dense_probs);
  // Drop-less, expert e's rows are [first[e], first[e + 1]): its routed pairs, in order.
  std::vector<int64_t> first(static_cast<size_t>(p.E) + 1, 0);
  if (probs && !p.drop_and_pad) {
    for (int64_t e = 0; e < p.E; ++e) {
      int64_t n = 0;
      for (int64_t t = 0; t < p.T; ++t)
        n += routed_at(p.routing_map_dtype, b.routing_map(), p.routing_map().at(t, e));
      first[static_cast<size_t>(e) + 1] = first[static_cast<size_t>(e)] + n;
    }
    const int64_t pairs = first.back();
    for (int64_t r = pairs; r < p.R; ++r)
      if (index(r) >= 0) return row_without_expert(p, r, index(r), pairs);
  }
  auto expert_of = [&](int64_t r) {
    if (p.drop_and_pad) return r / p.C;
    int64_t e = 0;
    while (first[static_cast<size_t>(e) + 1] <= r) ++e;
    return e;
  };
  const DType pt = probs ? p.dtype(Role::dense_probs) : DType::f32;
  std::vector<float> acc(static_cast<size_t>(p.H));
  for (int64_t t = 0; t < p.T; ++t) {
    std::fill(acc.begin(), acc.end(), 0.0f);
    for (int64_t r = 0; r < p.R; ++r) {
      if (index(r) != t) continue;
      const float w =
          probs ? load_value(pt, b.dense_probs(), p.dense_probs().at(t, expert_of(r))) : 1.0f;
      for (int64_t h = 0; h < p.H; ++h) {
        const float x = load_value(p.value_dtype, b.permuted(), p.permuted().at(r, h));
        acc[static_cast<size_t>(h)] += probs ? x * w : x;
      }
    }
    for (int64_t h = 0; h < p.H; ++h)
      store_value(p.value_dtype, b.tokens(), p.tokens().at(t, h), acc[static_cast<size_t>(h)]);
  }
  return Status::success();
}

}  // namespace moeperm::detail::ref
