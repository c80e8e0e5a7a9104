// The forward on the GPU (SPEC §2). Drop-less: ranks -> sortedIndicesOut (and the permuted
// probs), then one block per token copies its row once from memory to each of its (at most
// K) permuted rows; rows past nnz are zeroed. Drop-and-pad: ranks -> sortedIndicesOut, then
// one block per permuted row gathers its token. Nothing here sums: the forward is pure data
// movement, so it is bit-exact by construction.
#include "cuda/launch.hpp"
#include "cuda/row_ops.cuh"

namespace moeperm::cuda {
namespace {

constexpr int kRowThreads = 256;
using detail::kMaxTopK;  // a larger K is rejected at plan time

// Block per token: its rows are sorted[t*K + r] for r < K that are not -1.
__global__ void scatter_tokens_kernel(DMatrix permuted, DMatrix tokens, DVector sorted, int64_t K,
                                      const DeviceStatus *status) {
  if (status->failed) return;
  __shared__ int64_t raw[kMaxTopK], rows[kMaxTopK];
  __shared__ int n;
  for (int64_t t = blockIdx.x; t < tokens.rows; t += gridDim.x) {
    for (int64_t r = threadIdx.x; r < K; r += blockDim.x)
      raw[r] = *reinterpret_cast<const int32_t *>(sorted.at(t * K + r));
    __syncthreads();
    if (threadIdx.x == 0) {  // keep the slots' order; -1 marks an unused slot
      int c = 0;
      for (int64_t r = 0; r < K; ++r)
        if (raw[r] >= 0) rows[c++] = raw[r];
      n = c;
    }
    __syncthreads();
    copy_row_to_rows(permuted, rows, n, tokens, t);
    __syncthreads();  // raw, rows and n are rewritten for the next token
  }
}

// Rows nnz..R-1 of the drop-less output hold no token: zeros (and zero probs).
__global__ void zero_tail_kernel(DMatrix permuted, DVector permuted_probs, bool with_probs,
                                 const int64_t *nnz_at, int64_t R, const DeviceStatus *status) {
  if (status->failed) return;
  const int64_t nnz = *nnz_at;
  for (int64_t j = nnz + blockIdx.x; j < R; j += gridDim.x) {
    zero_row(permuted, j);
    if (with_probs && threadIdx.x == 0) zero_element(permuted_probs.at(j), permuted_probs.es);
  }
}

// Block per permuted row j: permuted[j] = tokens[sorted[j]], probs[sorted[j], j / C].
__global__ void gather_tokens_kernel(DMatrix permuted, DMatrix tokens, DVector sorted, int64_t C,
                                     DMatrix probs, DVector permuted_probs,
                                     detail::ProbsWork probs_work, const DeviceStatus *status) {
  if (status->failed) return;
  for (int64_t j = blockIdx.x; j < permuted.rows; j += gridDim.x) {
    const int64_t t = *reinterpret_cast<const int32_t *>(sorted.at(j));
    copy_row_to_rows(permuted, &j, 1, tokens, t);
    if (threadIdx.x == 0) {
      if (probs_work == detail::ProbsWork::compute)
        copy_element(permuted_probs.at(j), probs.at(t, j / C), permuted_probs.es);
      else if (probs_work == detail::ProbsWork::zero_fill)
        zero_element(permuted_probs.at(j), permuted_probs.es);
    }
  }
}

}  // namespace

Status permute(const detail::Plan &p, const detail::Buffers &b, const Workspace &ws,
               cudaStream_t stream) {
  const DMatrix tokens = view(p.tokens(), b.tokens(), p.value_dtype);
  const DMatrix permuted = view(p.permuted(), b.permuted(), p.value_dtype);
  const DMatrix map = view(p.routing_map(), b.routing_map(), p.routing_map_dtype);
  const DMatrix probs = view(p.dense_probs(), b.dense_probs(), p.probs_dtype);
  const DVector permuted_probs =
      view(p.permuted_probs(), b.permuted_probs(), p.permuted_probs_dtype);
  const DVector sorted = view(p.sorted_indices(), b.sorted_indices(), DType::i32);

  // Ranks, and the drop-less row check (more than K experts), before any output is written.
  MOEPERM_TRY(count_tiles(p, map, ws, p.drop_and_pad ? -1 : p.K, stream));
  MOEPERM_TRY(scan_tiles(p, ws.tile_counts, ws.expert_offsets, stream));
  MOEPERM_TRY(finalize_status(p, ws.status, kTooManyExpertsInRow, ws.expert_offsets, false, sorted,
                              map, stream));

  if (!p.drop_and_pad) {
    MOEPERM_TRY(rank_forward_dropless(p, map, ws, sorted, probs, permuted_probs, stream));
    if (p.probs == detail::ProbsWork::zero_fill)
      MOEPERM_TRY(zero_vector(permuted_probs, ws.status, stream));
    if (p.T > 0) {
      scatter_tokens_kernel<<<grid_of(p.T), kRowThreads, 0, stream>>>(permuted, tokens, sorted, p.K,
                                                                      ws.status);
      MOEPERM_TRY(launched("scatter_tokens"));
    }
    if (p.R > 0) {
      const unsigned grid = static_cast<unsigned>(p.R < 4096 ? p.R : 4096);
      zero_tail_kernel<<<grid, kRowThreads, 0, stream>>>(permuted, permuted_probs,
                                                         p.probs == detail::ProbsWork::compute,
                                                         ws.expert_offsets + p.E, p.R, ws.status);
      MOEPERM_TRY(launched("zero_tail"));
    }
    return Status::success();
  }
  MOEPERM_TRY(rank_forward_drop_and_pad(p, map, ws, sorted, stream));
  if (p.R > 0) {
    gather_tokens_kernel<<<grid_of(p.R), kRowThreads, 0, stream>>>(
        permuted, tokens, sorted, p.C, probs, permuted_probs, p.probs, ws.status);
    MOEPERM_TRY(launched("gather_tokens"));
  }
  return Status::success();
}

}  // namespace moeperm::cuda
