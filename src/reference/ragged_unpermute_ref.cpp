// ragged_unpermute, naive (docs/ragged.md; core/ops/ragged_unpermute.cpp states the
// semantics): the rows in ascending order, each added (times its prob) into its token's fp32
// accumulators, rounded once at the end.
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
  // One fp32 accumulator per output element; rows visited once, in ascending order, so each
  // token's sum takes its rows in ascending order (linear: the token-by-token scan of every
  // row was quadratic, and timed out the fuzz harness at T = 65536).
  const int64_t T = p.H > 0 ? p.T : 0;  // H may be 0 (Note [Work bounded by tensors])
  std::vector<float> acc(static_cast<size_t>(T * p.H), 0.0f);
  for (int64_t r = 0; r < p.R && T > 0; ++r) {
    const int64_t t = row_token(p, b, r);
    if (t < 0) continue;
    const float w = probs ? load_value(pt, b.dense_probs(),
                                       p.dense_probs().at(t, experts[static_cast<size_t>(r)]))
                          : 1.0f;
    for (int64_t h = 0; h < p.H; ++h) {
      const float x = load_value(p.value_dtype, b.permuted(), p.permuted().at(r, h));
      acc[static_cast<size_t>(t * p.H + h)] += probs ? x * w : x;
    }
  }
  for (int64_t t = 0; t < T; ++t)
    for (int64_t h = 0; h < p.H; ++h)
      store_value(p.value_dtype, b.tokens(), p.tokens().at(t, h),
                  acc[static_cast<size_t>(t * p.H + h)]);
  return Status::success();
}

}  // namespace moeperm::detail::ref
