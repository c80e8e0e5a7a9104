// The backward on the GPU (SPEC §3), bitwise equal to the reference:
//   check      every S[j] in range (first bad j by atomicMin) and, with probs in drop-less
//              mode, nnz(M) <= R; nothing is written when either fails (Note [Device errors]).
//   drop-less  one block per token sums G[S[t*K + k]] over ascending k in fp32 registers;
//              probsGrad from the expert-major ranks of M (expert_ranks.cu).
//   drop-and-pad  a stable radix sort of (S[j], j) pairs (CUB) groups each token's slots in
//              ascending j: the device counting sort of the CPU backend's CSR. One block per
//              token then sums its run in that order; probsGrad[S[j], j / C] = P[j] is written
//              by one thread per token walking its run in ascending j, so a later j wins a
//              repeated target, as in the reference.
// No sum uses atomics: each output element is reduced by one thread in a fixed order.
#include <cub/device/device_radix_sort.cuh>

#include "cuda/launch.hpp"
#include "cuda/row_ops.cuh"

namespace moeperm::cuda {
namespace {

constexpr int kRowThreads = 256;
using detail::kMaxTopK;

__global__ void check_indices_kernel(DVector S, int64_t lo, int64_t hi, bool allow_minus_one,
                                     DeviceStatus *status) {
  for (int64_t j = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; j < S.len;
       j += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const int64_t s = index_at(S, j);
    const bool ok = (s >= lo && s < hi) || (allow_minus_one && s == -1);
    if (!ok) atomicMin(&status->first_bad, static_cast<unsigned long long>(j));
  }
}

template <class V>
__global__ void sum_dropless_kernel(DMatrix tokens_grad, DMatrix G, DVector S, int64_t K,
                                    const DeviceStatus *status) {
  if (status->failed) return;
  __shared__ int64_t raw[kMaxTopK], rows[kMaxTopK];
  __shared__ int n;
  for (int64_t t = blockIdx.x; t < tokens_grad.rows; t += gridDim.x) {
    for (int64_t k = threadIdx.x; k < K; k += blockDim.x) raw[k] = index_at(S, t * K + k);
    __syncthreads();
    if (threadIdx.x == 0) {  // ascending k, skipping -1 slots
      int c = 0;
      for (int64_t k = 0; k < K; ++k)
        if (raw[k] != -1) rows[c++] = raw[k];
      n = c;
    }
    __syncthreads();
    sum_rows_to_row<V>(tokens_grad, t, G, rows, n);
    __syncthreads();
  }
}

// Keys: the token id, or T for a -1 (an empty row of the ragged pair: sorted last, in no
// token's run).
__global__ void make_pairs_kernel(DVector S, int64_t T, int32_t *keys, int64_t *values,
                                  const DeviceStatus *status) {
  // After a failed check the keys may be out of range: sort zeros instead (nothing uses them).
  const bool failed = status->failed != 0;
  for (int64_t j = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; j < S.len;
       j += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const int64_t s = index_at(S, j);
    keys[j] = failed ? 0 : static_cast<int32_t>(s < 0 ? T : s);
    values[j] = j;
  }
}

// runs[t] = start of token t's run in the sorted keys, runs[T + t] = its end (both 0 when
// no slot names t: the memset before this kernel). Key T (the -1 rows) has no run.
__global__ void run_bounds_kernel(const int32_t *keys, int64_t R, int64_t T, int64_t *runs,
                                  const DeviceStatus *status) {
  if (status->failed) return;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < R;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const int32_t k = keys[i];
    if (k >= T) continue;
    if (i == 0 || keys[i - 1] != k) runs[k] = i;
    if (i == R - 1 || keys[i + 1] != k) runs[T + k] = i + 1;
  }
}

template <class V>
__global__ void sum_runs_kernel(DMatrix tokens_grad, DMatrix G, const int64_t *values,
                                const int64_t *runs, int64_t T, const DeviceStatus *status) {
  if (status->failed) return;
  for (int64_t t = blockIdx.x; t < T; t += gridDim.x) {
    const int64_t begin = runs[t], end = runs[T + t];
    sum_rows_to_row<V>(tokens_grad, t, G, values + begin, end - begin);
  }
}

// One thread per token: its run in ascending j, so the last write to a target is the
// largest j (the reference's assignment order).
__global__ void scatter_probs_kernel(DMatrix dense, DVector P, const int64_t *values,
                                     const int64_t *runs, int64_t T, int64_t C,
                                     const DeviceStatus *status) {
  if (status->failed) return;
  for (int64_t t = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; t < T;
       t += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    for (int64_t i = runs[t]; i < runs[T + t]; ++i) {
      const int64_t j = values[i];
      copy_element(dense.at(t, j / C), P.at(j), dense.es);
    }
  }
}

}  // namespace

// Bits of the sort key: enough for every token id and for T (the key of a -1; the check
// keeps the ids in [0, T)).
int sort_key_bits(int64_t T) {
  int bits = 1;
  while (bits < 31 && (int64_t{1} << bits) <= T) ++bits;
  return bits;
}

Status sort_slots_by_token(const detail::Plan &p, const DVector &ids, const Workspace &ws,
                           cudaStream_t stream, const int32_t **keys_out,
                           const int64_t **values_out) {
  const int64_t R = ids.len;
  make_pairs_kernel<<<blocks_for(R), 256, 0, stream>>>(ids, p.T, ws.sort_keys, ws.sort_values,
                                                       ws.status);
  MOEPERM_TRY(launched("make_pairs"));
  cub::DoubleBuffer<int32_t> keys(ws.sort_keys, ws.sort_keys + R);
  cub::DoubleBuffer<int64_t> values(ws.sort_values, ws.sort_values + R);
  size_t temp_bytes = ws.sort_temp_bytes;
  MOEPERM_TRY(cuda_status(cub::DeviceRadixSort::SortPairs(ws.sort_temp, temp_bytes, keys, values, R,
                                                          0, sort_key_bits(p.T), stream),
                          "cub::DeviceRadixSort::SortPairs"));
  MOEPERM_TRY(cuda_status(
      cudaMemsetAsync(ws.token_runs, 0, static_cast<size_t>(2 * p.T) * sizeof(int64_t), stream),
      "cudaMemsetAsync"));
  run_bounds_kernel<<<blocks_for(R), 256, 0, stream>>>(keys.Current(), R, p.T, ws.token_runs,
                                                       ws.status);
  MOEPERM_TRY(launched("run_bounds"));
  *keys_out = keys.Current();
  *values_out = values.Current();
  return Status::success();
}

Status permute_grad(const detail::Plan &p, const detail::Buffers &b, const Workspace &ws,
                    cudaStream_t stream) {
  const DMatrix tokens_grad = view(p.tokens(), b.tokens(), p.value_dtype);
  const DMatrix G = view(p.permuted(), b.permuted(), p.value_dtype);
  const DMatrix map = view(p.routing_map(), b.routing_map(), p.routing_map_dtype);
  const DMatrix dense = view(p.dense_probs(), b.dense_probs(), p.probs_dtype);
  const DVector P = view(p.permuted_probs(), b.permuted_probs(), p.permuted_probs_dtype);
  const DVector S = view(p.sorted_indices(), b.sorted_indices(), DType::i32);
  const bool probs_from_ranks = p.probs == detail::ProbsWork::compute && !p.drop_and_pad;

  // 1. Checks (SPEC §5.7) before any write.
  if (p.R > 0) {
    const detail::IndexRange range = detail::index_range(p);
    check_indices_kernel<<<blocks_for(p.R), 256, 0, stream>>>(S, 0, range.bound,
                                                              range.allows_minus_one, ws.status);
    MOEPERM_TRY(launched("check_indices"));
  }
  if (probs_from_ranks) {
    MOEPERM_TRY(count_tiles(p, map, ws, -1, stream));
    MOEPERM_TRY(scan_tiles(p, ws.tile_counts, ws.expert_offsets, stream));
  }
  MOEPERM_TRY(finalize_status(p, ws.status, kBadSortedIndex, ws.expert_offsets, probs_from_ranks, S,
                              map, stream));

  // 2. tokensGrad.
  if (!p.drop_and_pad) {
    MOEPERM_TRY(with_value_type(p.value_dtype, [&](auto v) {
      sum_dropless_kernel<decltype(v)>
          <<<grid_of(p.T), kRowThreads, 0, stream>>>(tokens_grad, G, S, p.K, ws.status);
      return launched("sum_dropless");
    }));
  } else {
    if (p.R > 0) {
      const int32_t *keys = nullptr;
      const int64_t *values = nullptr;
      MOEPERM_TRY(sort_slots_by_token(p, S, ws, stream, &keys, &values));
      MOEPERM_TRY(with_value_type(p.value_dtype, [&](auto v) {
        sum_runs_kernel<decltype(v)><<<grid_of(p.T), kRowThreads, 0, stream>>>(
            tokens_grad, G, values, ws.token_runs, p.T, ws.status);
        return launched("sum_runs");
      }));
      if (p.probs == detail::ProbsWork::compute) {
        MOEPERM_TRY(zero_matrix(dense, ws.status, stream));
        scatter_probs_kernel<<<blocks_for(p.T), 256, 0, stream>>>(dense, P, values, ws.token_runs,
                                                                  p.T, p.C, ws.status);
        MOEPERM_TRY(launched("scatter_probs"));
      }
    } else {
      // R = 0: no slot names any token; every tokensGrad row is an empty sum.
      MOEPERM_TRY(zero_matrix(tokens_grad, ws.status, stream));
      if (p.probs == detail::ProbsWork::compute) MOEPERM_TRY(zero_matrix(dense, ws.status, stream));
    }
  }

  // 3. probsGrad (drop-less), or zeros when P was not given.
  if (probs_from_ranks) MOEPERM_TRY(rank_grad_probs(p, map, ws, dense, P, stream));
  if (p.probs == detail::ProbsWork::zero_fill) MOEPERM_TRY(zero_matrix(dense, ws.status, stream));
  return Status::success();
}

}  // namespace moeperm::cuda
