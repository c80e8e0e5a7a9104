// The ragged pair's unpermute and its backward on the GPU (docs/ragged.md), bitwise equal to
// the reference:
//   ragged_unpermute       each token's rows in ascending order (the radix sort of
//                          ragged_rows_cuda.cu); with probs, one thread per row first finds
//                          its weight probs[t, e(r)]; one block per token then sums its rows
//                          (weighted_sum_to_row: fp32 products, fp32 sums from +0, one rounding).
//   ragged_unpermute_grad  one block per row writes dX[r] = G[t] (times its weight, rounded
//                          once), +0 for a -1 row, and with probs_grad its U3 dot product
//                          (warp_dot) into the workspace; one thread per token then writes its
//                          probs_grad row: +0, then per expert the fp32 sum of its adjacent
//                          rows' dot products in ascending row order.
// No sum uses atomics: each output element is reduced by one thread in a fixed order.
#include "cuda/launch.hpp"
#include "cuda/ragged_rows.cuh"
#include "cuda/row_ops.cuh"

namespace moeperm::cuda {
namespace {

constexpr int kRowThreads = 256;

// Row r's weight: probs[t, e(r)] for the token t it names (rows naming none are never read).
__global__ void row_weights_kernel(DVector S, DMatrix P, DType pdt, RowExperts experts, float *w,
                                   const DeviceStatus *status) {
  if (status->failed) return;
  for (int64_t r = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; r < S.len;
       r += static_cast<int64_t>(gridDim.x) * blockDim.x)
    if (const int64_t t = index_at(S, r); t >= 0) w[r] = load_as_float(P.at(t, experts.of(r)), pdt);
}

// The weight of the i-th row of a token's run: fp32 products, never rounded to the storage
// dtype (the ragged pair multiplies in fp32 whatever the dtypes).
struct RowWeights {
  static constexpr bool kWeighted = true;
  const float *by_row;
  const int64_t *rows;
  bool round_products = false;
  __device__ __forceinline__ float operator()(int64_t i) const { return by_row[rows[i]]; }
};

template <class V>
__global__ void sum_runs_kernel(DMatrix out, DMatrix X, const int64_t *rows, const int64_t *runs,
                                const float *weights, const DeviceStatus *status) {
  if (status->failed) return;
  const int64_t T = out.rows;
  for (int64_t t = blockIdx.x; t < T; t += gridDim.x) {
    const int64_t *mine = rows + runs[t];
    const int64_t n = runs[T + t] - runs[t];
    if (weights)
      weighted_sum_to_row<V>(out, t, X, mine, n, RowWeights{weights, mine});
    else
      sum_rows_to_row<V>(out, t, X, mine, n);
  }
}

struct GradArgs {
  DMatrix G, X, dX, P;
  DVector S;
  DType pdt;
  bool probs, dp;
  RowExperts experts;
};

template <class V>
__global__ void grad_rows_kernel(GradArgs a, float *dots, const DeviceStatus *status) {
  if (status->failed) return;
  for (int64_t r = blockIdx.x; r < a.dX.rows; r += gridDim.x) {
    const int64_t t = index_at(a.S, r);
    if (t < 0) {
      zero_row(a.dX, r);
      continue;
    }
    // Without probs the row is copied bit for bit (a signalling NaN stays signalling).
    if (a.probs)
      scale_row_to_row<V>(a.dX, r, a.G, t, load_as_float(a.P.at(t, a.experts.of(r)), a.pdt));
    else
      copy_row_to_rows(a.dX, &r, 1, a.G, t);
    if (a.dp && threadIdx.x < 32) {
      const float d = warp_dot<V>(a.X, r, a.G, t);
      if (threadIdx.x == 0) dots[r] = d;
    }
  }
}

// Row r's U3 dot product (grad_rows_kernel's).
struct RowDots {
  const float *dots;
  __device__ __forceinline__ float operator()(int64_t r) const { return dots[r]; }
};

}  // namespace

Status ragged_unpermute(const detail::Plan &p, const detail::Buffers &b, const Workspace &ws,
                        cudaStream_t stream) {
  using detail::Role;
  const bool probs = p.has(Role::dense_probs);
  const DMatrix out = view(p.tokens(), b.tokens(), p.value_dtype);
  const DMatrix X = view(p.permuted(), b.permuted(), p.value_dtype);
  MOEPERM_TRY(check_ragged_rows(p, b, ws, probs, stream));
  if (p.R == 0) return zero_matrix(out, ws.status, stream);  // no row names a token
  const int64_t *rows = nullptr;
  MOEPERM_TRY(ragged_rows_by_token(p, b, ws, stream, &rows));
  if (probs) {
    const DType pdt = p.dtype(Role::dense_probs);
    row_weights_kernel<<<blocks_for(p.R), 256, 0, stream>>>(
        view(p.sorted_indices(), b.sorted_indices(), DType::i32),
        view(p.dense_probs(), b.dense_probs(), pdt), pdt,
        RowExperts{ws.expert_offsets, p.E, p.C, p.drop_and_pad}, ws.slot_values, ws.status);
    MOEPERM_TRY(launched("ragged_row_weights"));
  }
  if (p.T == 0) return Status::success();
  return with_value_type(p.value_dtype, [&](auto v) {
    sum_runs_kernel<decltype(v)><<<grid_of(p.T), kRowThreads, 0, stream>>>(
        out, X, rows, ws.token_runs, probs ? ws.slot_values : nullptr, ws.status);
    return launched("ragged_unpermute_runs");
  });
}

Status ragged_unpermute_grad(const detail::Plan &p, const detail::Buffers &b, const Workspace &ws,
                             cudaStream_t stream) {
  using detail::Role;
  const bool probs = p.has(Role::dense_probs), dp = p.has(Role::dense_probs_grad);
  const RowExperts experts{ws.expert_offsets, p.E, p.C, p.drop_and_pad};
  const GradArgs a{view(p.tokens(), b.tokens(), p.value_dtype),
                   view(p.saved_permuted(), b.saved_permuted(), p.value_dtype),
                   view(p.permuted(), b.permuted(), p.value_dtype),
                   view(p.dense_probs(), b.dense_probs(), p.dtype(Role::dense_probs)),
                   view(p.sorted_indices(), b.sorted_indices(), DType::i32),
                   p.dtype(Role::dense_probs),
                   probs,
                   dp,
                   experts};
  MOEPERM_TRY(check_ragged_rows(p, b, ws, probs, stream));
  if (p.R > 0)
    MOEPERM_TRY(with_value_type(p.value_dtype, [&](auto v) {
      grad_rows_kernel<decltype(v)>
          <<<grid_of(p.R), kRowThreads, 0, stream>>>(a, ws.slot_values, ws.status);
      return launched("ragged_unpermute_grad_rows");
    }));
  if (!dp) return Status::success();
  const DType dpdt = p.dtype(Role::dense_probs_grad);
  const DMatrix dP = view(p.dense_probs_grad(), b.dense_probs_grad(), dpdt);
  if (p.R == 0) return zero_matrix(dP, ws.status, stream);  // no row names an entry
  const int64_t *rows = nullptr;
  MOEPERM_TRY(ragged_rows_by_token(p, b, ws, stream, &rows));
  if (p.T == 0) return Status::success();
  ragged_probs_grad_kernel<<<blocks_for(p.T), 256, 0, stream>>>(
      dP, dpdt, experts, rows, ws.token_runs, RowDots{ws.slot_values}, ws.status);
  return launched("ragged_unpermute_grad_probs");
}

}  // namespace moeperm::cuda
