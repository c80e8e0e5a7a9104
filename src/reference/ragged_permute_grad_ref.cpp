// ragged_permute_grad, naive (docs/ragged.md; core/ops/ragged_permute_grad.cpp states the
// semantics): each token's rows summed in ascending row order in fp32; each row's probs
// gradient added at (its token, its expert), every other element +0.
#include <vector>

#include "core/plan.hpp"
#include "reference/ragged_rows_ref.hpp"
#include "reference/reference.hpp"

namespace moeperm::detail::ref {

Status ragged_permute_grad(const Plan &p, const Buffers &b) {
  const bool probs = p.probs == ProbsWork::compute;
  std::vector<int64_t> experts;
  MOEPERM_TRY(check_rows(p, b, probs, &experts));
  // One fp32 accumulator per output element; rows visited once, in ascending order, so each
  // token's sum takes its rows in ascending order (linear: the token-by-token scan of every
  // row was quadratic, and timed out the fuzz harness at T = 65536).
  const int64_t T = p.H > 0 ? p.T : 0;  // H may be 0 (Note [Work bounded by tensors])
  std::vector<float> acc(static_cast<size_t>(T * p.H), 0.0f);
  for (int64_t r = 0; r < p.R && T > 0; ++r)
    if (const int64_t t = row_token(p, b, r); t >= 0)
      for (int64_t h = 0; h < p.H; ++h)
        acc[static_cast<size_t>(t * p.H + h)] +=
            load_value(p.value_dtype, b.permuted(), p.permuted().at(r, h));
  for (int64_t t = 0; t < T; ++t)
    for (int64_t h = 0; h < p.H; ++h)
      store_value(p.value_dtype, b.tokens(), p.tokens().at(t, h),
                  acc[static_cast<size_t>(t * p.H + h)]);
  if (!probs) return Status::success();
  std::vector<float> dp(static_cast<size_t>(p.T * p.E), 0.0f);
  for (int64_t r = 0; r < p.R; ++r)
    if (const int64_t t = row_token(p, b, r); t >= 0)
      dp[static_cast<size_t>(t * p.E + experts[static_cast<size_t>(r)])] +=
          load_value(p.permuted_probs_dtype, b.permuted_probs(), p.permuted_probs().at(r));
  store_dense_probs_grad(p, b, dp);
  return Status::success();
}

}  // namespace moeperm::detail::ref
