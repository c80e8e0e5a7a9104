// The ragged pair's permute and its backward on the GPU (docs/ragged.md), bitwise equal to
// the reference:
//   ragged_permute       the map's expert-major ranks (expert_ranks.cu) give each kept
//                        routed pair its row (rank_ragged_forward writes the row's token and
//                        prob); then one block per row gathers its token's row, or writes an
//                        empty row (-1, +0): drop-less the rows past min(pairs, R),
//                        drop-and-pad the rows of expert e past min(its pairs, C).
//   ragged_permute_grad  each token's rows in ascending order (the radix sort of
//                        ragged_rows_cuda.cu); one block per token sums them (fp32 from +0,
//                        one rounding); one thread per token writes its probs_grad row: +0,
//                        then per expert the fp32 sum of its adjacent rows' probs gradients.
// No sum uses atomics: each output element is reduced by one thread in a fixed order.
#include "cuda/launch.hpp"
#include "cuda/ragged_rows.cuh"
#include "cuda/row_ops.cuh"

namespace moeperm::cuda {
namespace {

constexpr int kRowThreads = 256;

struct PermuteArgs {
  DMatrix permuted, tokens;
  DVector sorted, permuted_probs;
  int64_t E, C, R;
  bool drop_and_pad;
  detail::ProbsWork probs;
};

// Row r holds no pair: drop-less past the kept pairs, drop-and-pad past its expert's pairs.
__device__ __forceinline__ bool empty_row(const PermuteArgs &a, const int64_t *offsets, int64_t r) {
  if (!a.drop_and_pad) return r >= min(offsets[a.E], a.R);
  const int64_t e = r / a.C;
  return r % a.C >= min(offsets[e + 1] - offsets[e], a.C);
}

__global__ void fill_rows_kernel(PermuteArgs a, const int64_t *offsets,
                                 const DeviceStatus *status) {
  if (status->failed) return;
  for (int64_t r = blockIdx.x; r < a.R; r += gridDim.x) {
    if (empty_row(a, offsets, r)) {
      zero_row(a.permuted, r);
      if (threadIdx.x == 0) {
        *reinterpret_cast<int32_t *>(a.sorted.at(r)) = -1;
        if (a.probs != detail::ProbsWork::none)
          zero_element(a.permuted_probs.at(r), a.permuted_probs.es);
      }
      continue;
    }
    copy_row_to_rows(a.permuted, &r, 1, a.tokens, index_at(a.sorted, r));
    if (threadIdx.x == 0 && a.probs == detail::ProbsWork::zero_fill)
      zero_element(a.permuted_probs.at(r), a.permuted_probs.es);
  }
}

template <class V>
__global__ void sum_runs_kernel(DMatrix tokens_grad, DMatrix G, const int64_t *rows,
                                const int64_t *runs, const DeviceStatus *status) {
  if (status->failed) return;
  const int64_t T = tokens_grad.rows;
  for (int64_t t = blockIdx.x; t < T; t += gridDim.x)
    sum_rows_to_row<V>(tokens_grad, t, G, rows + runs[t], runs[T + t] - runs[t]);
}

// Row r's probs gradient, as fp32.
struct RowProbsGrad {
  DVector PG;
  DType dtype;
  __device__ __forceinline__ float operator()(int64_t r) const {
    return load_as_float(PG.at(r), dtype);
  }
};

}  // namespace

Status ragged_permute(const detail::Plan &p, const detail::Buffers &b, const Workspace &ws,
                      cudaStream_t stream) {
  const PermuteArgs a{view(p.permuted(), b.permuted(), p.value_dtype),
                      view(p.tokens(), b.tokens(), p.value_dtype),
                      view(p.sorted_indices(), b.sorted_indices(), DType::i32),
                      view(p.permuted_probs(), b.permuted_probs(), p.permuted_probs_dtype),
                      p.E,
                      p.C,
                      p.R,
                      p.drop_and_pad,
                      p.probs};
  const DMatrix map = view(p.routing_map(), b.routing_map(), p.routing_map_dtype);
  const DMatrix probs = view(p.dense_probs(), b.dense_probs(), p.probs_dtype);
  MOEPERM_TRY(count_tiles(p, map, ws, -1, stream));
  MOEPERM_TRY(scan_tiles(p, ws.tile_counts, ws.expert_offsets, stream));
  MOEPERM_TRY(rank_ragged_forward(p, map, ws, a.sorted, probs, a.permuted_probs, stream));
  if (p.R == 0) return Status::success();
  fill_rows_kernel<<<grid_of(p.R), kRowThreads, 0, stream>>>(a, ws.expert_offsets, ws.status);
  return launched("ragged_fill_rows");
}

Status ragged_permute_grad(const detail::Plan &p, const detail::Buffers &b, const Workspace &ws,
                           cudaStream_t stream) {
  const bool probs = p.probs == detail::ProbsWork::compute;
  const DMatrix tokens_grad = view(p.tokens(), b.tokens(), p.value_dtype);
  const DMatrix G = view(p.permuted(), b.permuted(), p.value_dtype);
  const DMatrix dP = view(p.dense_probs_grad(), b.dense_probs_grad(), p.probs_dtype);
  const DVector PG = view(p.permuted_probs(), b.permuted_probs(), p.permuted_probs_dtype);
  MOEPERM_TRY(check_ragged_rows(p, b, ws, probs, stream));
  if (p.R == 0) {  // no row names a token: every sum is empty
    MOEPERM_TRY(zero_matrix(tokens_grad, ws.status, stream));
    return probs ? zero_matrix(dP, ws.status, stream) : Status::success();
  }
  const int64_t *rows = nullptr;
  MOEPERM_TRY(ragged_rows_by_token(p, b, ws, stream, &rows));
  if (p.T == 0) return Status::success();
  MOEPERM_TRY(with_value_type(p.value_dtype, [&](auto v) {
    sum_runs_kernel<decltype(v)>
        <<<grid_of(p.T), kRowThreads, 0, stream>>>(tokens_grad, G, rows, ws.token_runs, ws.status);
    return launched("ragged_sum_runs");
  }));
  if (!probs) return Status::success();
  const RowExperts experts{ws.expert_offsets, p.E, p.C, p.drop_and_pad};
  ragged_probs_grad_kernel<<<blocks_for(p.T), 256, 0, stream>>>(
      dP, p.probs_dtype, experts, rows, ws.token_runs, RowProbsGrad{PG, p.permuted_probs_dtype},
      ws.status);
  return launched("ragged_probs_grad");
}

}  // namespace moeperm::cuda
