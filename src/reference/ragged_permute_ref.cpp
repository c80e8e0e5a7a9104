// ragged_permute, naive (docs/ragged.md; core/ops/ragged_permute.cpp states the semantics):
// every row starts empty, then the routed pairs are visited expert by expert, tokens
// ascending, and each kept pair fills the next row of its expert's range.
#include "core/plan.hpp"
#include "reference/common_ref.hpp"
#include "reference/reference.hpp"

namespace moeperm::detail::ref {

Status ragged_permute(const Plan &p, const Buffers &b) {
  const bool probs_out = p.probs != ProbsWork::none, probs_in = p.probs == ProbsWork::compute;
  auto set_index = [&](int64_t r, int64_t t) {
    *elem<int32_t>(b.sorted_indices(), p.sorted_indices().at(r)) = static_cast<int32_t>(t);
  };
  for (int64_t r = 0; r < p.R; ++r) {
    set_index(r, -1);
    for (int64_t h = 0; h < p.H; ++h)
      store_zero(p.value_dtype, b.permuted(), p.permuted().at(r, h));
    if (probs_out) store_zero(p.permuted_probs_dtype, b.permuted_probs(), p.permuted_probs().at(r));
  }
  auto fill = [&](int64_t r, int64_t t, int64_t e) {
    set_index(r, t);
    for (int64_t h = 0; h < p.H; ++h)
      copy_value(p.value_dtype, b.permuted(), p.permuted().at(r, h), b.tokens(),
                 p.tokens().at(t, h));
    if (probs_in)
      copy_value(p.probs_dtype, b.permuted_probs(), p.permuted_probs().at(r), b.dense_probs(),
                 p.dense_probs().at(t, e));
  };
  int64_t next = 0;  // drop-less: the next row of the expert-major list
  // At T = 0 the map has no elements, whatever E is (Note [Work bounded by tensors]).
  for (int64_t e = 0; e < p.E && p.T > 0; ++e) {
    int64_t taken = 0;  // drop-and-pad: rows of expert e filled so far
    for (int64_t t = 0; t < p.T; ++t) {
      if (!routed_at(p.routing_map_dtype, b.routing_map(), p.routing_map().at(t, e))) continue;
      if (!p.drop_and_pad) {
        if (next < p.R) fill(next, t, e);
        ++next;
      } else if (taken < p.C) {
        fill(e * p.C + taken++, t, e);
      }
    }
  }
  return Status::success();
}

}  // namespace moeperm::detail::ref
