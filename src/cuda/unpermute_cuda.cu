// MoeTokenUnpermuteWithRoutingMap on the GPU (SPEC-unpermute U1), bitwise equal to the
// reference (finite values; NaN payloads follow the x86 rules of row_ops.cuh):
//   check       sortedIndices in range (index_checks.cu); nothing is written on failure.
//   drop-less   one block per token: thread 0 walks the token's K slots (and its routed
//               experts for q), writes the three side outputs of its slots and lists the
//               valid rows (S != -1, q != 0 with probs) with their weights; the block then sums
//               them in that order (weighted_sum_to_row: fp32 products, fp32 sums, one rounding).
//   drop-and-pad  the stable radix sort of the permute Grad (sort_slots_by_token) gives each
//               token its slots in ascending j; one block per token sums them, products rounded
//               to the token dtype when probs have it; permuteTokenId / outIndex are the sorted
//               keys / positions; permuteProbs[j] = P[S[j], j / C].
// No sum uses atomics: each output element is reduced by one thread in a fixed order.
#include "cuda/launch.hpp"
#include "cuda/row_ops.cuh"

namespace moeperm::cuda {
namespace {

constexpr int kRowThreads = 256;
using detail::kMaxTopK;  // drop-less K <= 512 (U4 forward rule 4)

__device__ __forceinline__ void store_index(const DVector &v, int64_t j, int64_t x) {
  if (v.base) *reinterpret_cast<int32_t *>(v.at(j)) = static_cast<int32_t>(x);
}

struct Args {
  DMatrix out, X, map, P;
  DVector S, out_index, token_id, permute_probs;
  DType pdt;
  bool probs;
  int64_t K, C;
};

// permuteProbs[i] = P[t, e] moved bit for bit, or +0 for a slot without a prob (e < 0).
__device__ __forceinline__ void store_slot_prob(const Args &a, int64_t i, int64_t t, int64_t e) {
  if (!a.permute_probs.base) return;
  if (e >= 0)
    copy_element(a.permute_probs.at(i), a.P.at(t, e), a.permute_probs.es);
  else
    zero_element(a.permute_probs.at(i), a.permute_probs.es);
}

template <class V>
__global__ void dropless_kernel(Args a, const DeviceStatus *status) {
  if (status->failed) return;
  __shared__ int64_t rows[kMaxTopK];
  __shared__ float weights[kMaxTopK];
  __shared__ int n;
  for (int64_t t = blockIdx.x; t < a.out.rows; t += gridDim.x) {
    if (threadIdx.x == 0) {
      int c = 0;
      int64_t e = 0;  // the next expert to test: token t's k-th routed expert is found in order
      for (int64_t k = 0; k < a.K; ++k) {
        const int64_t i = t * a.K + k, s = index_at(a.S, i);
        int64_t ek = -1;
        if (a.probs) {
          while (e < a.map.cols && *a.map.at(t, e) == 0) ++e;
          if (e < a.map.cols) ek = e++;
        }
        const float q = ek >= 0 ? load_as_float(a.P.at(t, ek), a.pdt) : 0.0f;
        store_index(a.out_index, i, s);
        store_index(a.token_id, i, t);
        store_slot_prob(a, i, t, ek);
        if (s >= 0 && (!a.probs || q != 0.0f)) {  // CANN skips a zero prob's slot
          rows[c] = s;
          weights[c++] = q;
        }
      }
      n = c;
    }
    __syncthreads();
    if (a.probs)
      weighted_sum_to_row<V>(a.out, t, a.X, rows, n, SharedWeights{weights, false});
    else
      weighted_sum_to_row<V>(a.out, t, a.X, rows, n, NoWeights{});
    __syncthreads();  // rows, weights and n are rewritten for the next token
  }
}

// The weight of a token's i-th slot in drop-and-pad mode: q = P[t, j / C], j = slots[i].
struct RunWeights {
  static constexpr bool kWeighted = true;
  DMatrix P;
  DType pdt;
  int64_t t, C;
  const int64_t *slots;
  bool round_products;
  __device__ __forceinline__ float operator()(int64_t i) const {
    return load_as_float(P.at(t, slots[i] / C), pdt);
  }
};

template <class V>
__global__ void runs_kernel(Args a, const int64_t *values, const int64_t *runs, bool round_products,
                            const DeviceStatus *status) {
  if (status->failed) return;
  const int64_t T = a.out.rows;
  for (int64_t t = blockIdx.x; t < T; t += gridDim.x) {
    const int64_t *mine = values + runs[t];
    const int64_t n = runs[T + t] - runs[t];
    if (a.probs)
      weighted_sum_to_row<V>(a.out, t, a.X, mine, n,
                             RunWeights{a.P, a.pdt, t, a.C, mine, round_products});
    else
      weighted_sum_to_row<V>(a.out, t, a.X, mine, n, NoWeights{});
  }
}

// Drop-and-pad side outputs: permuteTokenId = S sorted, outIndex = its stable argsort,
// permuteProbs[j] = P[S[j], j / C].
__global__ void side_outputs_kernel(Args a, const int32_t *keys, const int64_t *values,
                                    const DeviceStatus *status) {
  if (status->failed) return;
  for (int64_t j = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; j < a.S.len;
       j += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    store_index(a.token_id, j, keys[j]);
    store_index(a.out_index, j, values[j]);
    store_slot_prob(a, j, index_at(a.S, j), a.probs ? j / a.C : -1);
  }
}

}  // namespace

Status unpermute(const detail::Plan &p, const detail::Buffers &b, const Workspace &ws,
                 cudaStream_t stream) {
  const bool probs = p.has(detail::Role::dense_probs);
  const Args a{view(p.tokens(), b.tokens(), p.value_dtype),
               view(p.permuted(), b.permuted(), p.value_dtype),
               view(p.routing_map(), b.routing_map(), p.routing_map_dtype),
               view(p.dense_probs(), b.dense_probs(), p.dtype(detail::Role::dense_probs)),
               view(p.sorted_indices(), b.sorted_indices(), DType::i32),
               view(p.out_index(), b.out_index(), DType::i32),
               view(p.token_id(), b.token_id(), DType::i32),
               view(p.permuted_probs(), b.permuted_probs(), p.dtype(detail::Role::permuted_probs)),
               p.dtype(detail::Role::dense_probs),
               probs,
               p.K,
               p.C};
  MOEPERM_TRY(check_index_rules(p, b, ws, stream));
  if (!p.drop_and_pad) {
    if (p.T == 0) return Status::success();
    return with_value_type(p.value_dtype, [&](auto v) {
      dropless_kernel<decltype(v)><<<grid_of(p.T), kRowThreads, 0, stream>>>(a, ws.status);
      return launched("unpermute_dropless");
    });
  }
  if (p.R == 0) return zero_matrix(a.out, ws.status, stream);  // no slot names any token
  const int32_t *keys = nullptr;
  const int64_t *values = nullptr;
  MOEPERM_TRY(sort_slots_by_token(p, a.S, ws, stream, &keys, &values));
  // Y_j rounds to the token dtype when probs have it (CANN multiplies in that dtype).
  const bool round_products = probs && p.dtype(detail::Role::dense_probs) == p.value_dtype;
  if (p.T > 0)
    MOEPERM_TRY(with_value_type(p.value_dtype, [&](auto v) {
      runs_kernel<decltype(v)><<<grid_of(p.T), kRowThreads, 0, stream>>>(a, values, ws.token_runs,
                                                                         round_products, ws.status);
      return launched("unpermute_runs");
    }));
  side_outputs_kernel<<<blocks_for(p.R), 256, 0, stream>>>(a, keys, values, ws.status);
  return launched("unpermute_side_outputs");
}

}  // namespace moeperm::cuda
