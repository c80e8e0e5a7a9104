// ragged_unpermute_grad, naive (docs/ragged.md; core/ops/ragged_unpermute_grad.cpp states
// the semantics): each row is its token's gradient (times its prob, rounded once), and each
// row's U3 dot product is added at (its token, its expert); every other element +0.
#include <vector>

#include "core/plan.hpp"
#include "reference/ragged_rows_ref.hpp"
#include "reference/reference.hpp"

namespace moeperm::detail::ref {

Status ragged_unpermute_grad(const Plan &p, const Buffers &b) {
  const bool probs = p.has(Role::dense_probs), dp_out = p.has(Role::dense_probs_grad);
  std::vector<int64_t> experts;
  MOEPERM_TRY(check_rows(p, b, probs, &experts));
  const DType pt = probs ? p.dtype(Role::dense_probs) : DType::f32;
  std::vector<float> dp(dp_out ? static_cast<size_t>(p.T * p.E) : 0, 0.0f);
  for (int64_t r = 0; r < p.R; ++r) {
    const int64_t t = row_token(p, b, r);
    if (t < 0) {
      for (int64_t h = 0; h < p.H; ++h)
        store_zero(p.value_dtype, b.permuted(), p.permuted().at(r, h));
      continue;
    }
    const int64_t e = probs ? experts[static_cast<size_t>(r)] : -1;
    const float w = probs ? load_value(pt, b.dense_probs(), p.dense_probs().at(t, e)) : 1.0f;
    // Without probs the row is copied (the ragged permute's copy, bit for bit: a signalling
    // NaN stays signalling), not multiplied by 1.
    for (int64_t h = 0; h < p.H; ++h)
      if (probs)
        store_value(p.value_dtype, b.permuted(), p.permuted().at(r, h),
                    load_value(p.value_dtype, b.tokens(), p.tokens().at(t, h)) * w);
      else
        copy_value(p.value_dtype, b.permuted(), p.permuted().at(r, h), b.tokens(),
                   p.tokens().at(t, h));
    if (dp_out) dp[static_cast<size_t>(t * p.E + e)] += u3_dot(p, b, r, t);
  }
  if (dp_out) store_dense_probs_grad(p, b, dp);
  return Status::success();
}

}  // namespace moeperm::detail::ref
