// ragged_unpermute, naive (docs/ragged.md; core/ops/ragged_unpermute.cpp states the
// semantics): for each token, every row is scanned in ascending order and those naming the
// token are added (times their prob) into an fp32 accumulator, rounded once at the end.
#include <vector>

#include "core/plan.hpp"
#include "reference/ragged_rows_ref.hpp"
#include "reference/reference.hpp"

namespace moeperm::detail::ref {

Status ragged_unpermute(const Plan &p, const Buffers &b) {
  const bool probs = p.has(Role::dense_probs);
  std::vector<int64_t> experts;
  MOEPERM_TRY(check_rows(p, b, probs, &experts));
  const DType pt = probs ? p.dtype(Role::dense_probs) : DType::f32;
  std::vector<float> acc(p.T > 0 ? static_cast<size_t>(p.H) : 0);  // H may be anything at T = 0
  // Note [Work bounded by tensors]: at H = 0 unpermuted_tokens has no elements, whatever T is.
  for (int64_t t = 0; t < p.T && p.H > 0; ++t) {
    std::fill(acc.begin(), acc.end(), 0.0f);
    for (int64_t r = 0; r < p.R; ++r) {
      if (row_token(p, b, r) != t) continue;
      const float w = probs ? load_value(pt, b.dense_probs(),
                                         p.dense_probs().at(t, experts[static_cast<size_t>(r)]))
                            : 1.0f;
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
