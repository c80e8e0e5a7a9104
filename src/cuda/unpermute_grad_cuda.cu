// MoeTokenUnpermuteWithRoutingMapGrad on the GPU (SPEC-unpermute U2), bitwise equal to the
// reference (finite values):
//   check       outIndex in range and naming no row twice, permuteTokenId in range
//               (drop-and-pad) (index_checks.cu); nothing is written on failure.
//   drop-less   one block per token t: thread 0 lists t's first K routed experts; the block
//               writes dX[O[t*K + k]] = G[t] * p (or G[t] without probs) for each k, and warp
//               k % warps computes U3's dot(X[r], G[t]) for dP[t, e_k] (warp_dot: lane l holds
//               part[l], then the halving tree), after the block zeroed dP's row t.
//   drop-and-pad  one block per slot i writes dX[O[i]] and its dot product into the
//               workspace; dP is zeroed, each entry's largest naming slot is found (atomicMax
//               of slot positions: the value is chosen, never summed) and written from it.
//   Rows of dX no slot names are zeroed (ws.first_named from the uniqueness check).
#include "cuda/launch.hpp"
#include "cuda/row_ops.cuh"

namespace moeperm::cuda {
namespace {

constexpr int kRowThreads = 256;
constexpr int kWarps = kRowThreads / 32;
using detail::kMaxTopK;  // with probs, drop-less K <= 512 (U4 Grad rule 3)

struct Args {
  DMatrix G, X, dX, map, P, dP;
  DVector O, I;
  DType pdt, pgdt;
  bool probs, dp;
  int64_t K, C;
};

// dX[r] = G[t] * pv with probs, else G[t]; all threads of the block.
template <class V>
__device__ __forceinline__ void write_row(const Args &a, int64_t r, int64_t t, float pv) {
  if (a.probs)
    scale_row_to_row<V>(a.dX, r, a.G, t, pv);
  else
    copy_row_to_rows(a.dX, &r, 1, a.G, t);
}

template <class V>
__global__ void dropless_kernel(Args a, const DeviceStatus *status) {
  if (status->failed) return;
  __shared__ int64_t experts[kMaxTopK];
  __shared__ int n_experts;
  const int warp = static_cast<int>(threadIdx.x / 32), lane = static_cast<int>(threadIdx.x % 32);
  for (int64_t t = blockIdx.x; t < a.G.rows; t += gridDim.x) {
    if (threadIdx.x == 0) {
      int n = 0;
      for (int64_t e = 0; a.probs && e < a.map.cols && n < a.K; ++e)
        if (*a.map.at(t, e) != 0) experts[n++] = e;
      n_experts = n;
    }
    if (a.dp)
      for (int64_t e = threadIdx.x; e < a.dP.cols; e += blockDim.x)
        zero_element(a.dP.at(t, e), a.dP.es);
    __syncthreads();
    for (int64_t k = 0; k < a.K; ++k) {
      const int64_t r = index_at(a.O, t * a.K + k);
      if (r < 0) continue;
      const float pv = k < n_experts ? load_as_float(a.P.at(t, experts[k]), a.pdt) : 0.0f;
      write_row<V>(a, r, t, pv);
    }
    if (a.dp)
      for (int64_t k = warp; k < n_experts; k += kWarps) {
        const int64_t r = index_at(a.O, t * a.K + k);
        if (r < 0) continue;
        const float d = warp_dot<V>(a.X, r, a.G, t);
        if (lane == 0) store_from_float(a.dP.at(t, experts[k]), a.pgdt, d);
      }
    __syncthreads();  // experts and n_experts are rewritten for the next token
  }
}

template <class V>
__global__ void drop_and_pad_kernel(Args a, float *dots, const DeviceStatus *status) {
  if (status->failed) return;
  for (int64_t i = blockIdx.x; i < a.O.len; i += gridDim.x) {
    const int64_t t = index_at(a.I, i), r = index_at(a.O, i);
    const float pv = a.probs ? load_as_float(a.P.at(t, r / a.C), a.pdt) : 0.0f;
    write_row<V>(a, r, t, pv);
    if (a.dp && threadIdx.x < 32) {
      const float d = warp_dot<V>(a.X, r, a.G, t);
      if (threadIdx.x == 0) dots[i] = d;
    }
  }
}

// winners[t * E + e] = 1 + the largest slot naming dP[t, e] (U2: a later slot wins).
__global__ void winners_kernel(Args a, unsigned long long *winners, const DeviceStatus *status) {
  if (status->failed) return;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < a.O.len;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const int64_t t = index_at(a.I, i), e = index_at(a.O, i) / a.C;
    atomicMax(winners + t * a.dP.cols + e, static_cast<unsigned long long>(i + 1));
  }
}

__global__ void store_dots_kernel(Args a, const float *dots, const unsigned long long *winners,
                                  const DeviceStatus *status) {
  if (status->failed) return;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < a.O.len;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const int64_t t = index_at(a.I, i), e = index_at(a.O, i) / a.C;
    if (winners[t * a.dP.cols + e] == static_cast<unsigned long long>(i + 1))
      store_from_float(a.dP.at(t, e), a.pgdt, dots[i]);
  }
}

__global__ void zero_unnamed_rows_kernel(DMatrix dX, const unsigned long long *first,
                                         const DeviceStatus *status) {
  if (status->failed) return;
  for (int64_t r = blockIdx.x; r < dX.rows; r += gridDim.x)
    if (first[r] == kNone) zero_row(dX, r);
}

Status drop_and_pad_probs_grad(const detail::Plan &p, const Args &a, const Workspace &ws,
                               cudaStream_t stream) {
  MOEPERM_TRY(zero_matrix(a.dP, ws.status, stream));
  if (p.R == 0) return Status::success();  // no slot names an entry
  const auto entries = static_cast<size_t>(p.T * p.E);
  MOEPERM_TRY(cuda_status(cudaMemsetAsync(ws.winners, 0, entries * sizeof(uint64_t), stream),
                          "cudaMemsetAsync"));
  winners_kernel<<<blocks_for(p.R), 256, 0, stream>>>(a, ws.winners, ws.status);
  MOEPERM_TRY(launched("unpermute_grad_winners"));
  store_dots_kernel<<<blocks_for(p.R), 256, 0, stream>>>(a, ws.slot_values, ws.winners, ws.status);
  return launched("unpermute_grad_store_dots");
}

}  // namespace

Status unpermute_grad(const detail::Plan &p, const detail::Buffers &b, const Workspace &ws,
                      cudaStream_t stream) {
  using detail::Role;
  const bool probs = p.has(Role::dense_probs), dp = p.probs == detail::ProbsWork::compute;
  const Args a{view(p.tokens(), b.tokens(), p.value_dtype),
               view(p.saved_permuted(), b.saved_permuted(), p.value_dtype),
               view(p.permuted(), b.permuted(), p.value_dtype),
               view(p.routing_map(), b.routing_map(), p.routing_map_dtype),
               view(p.dense_probs(), b.dense_probs(), p.dtype(Role::dense_probs)),
               view(p.dense_probs_grad(), b.dense_probs_grad(), p.dtype(Role::dense_probs_grad)),
               view(p.out_index(), b.out_index(), DType::i32),
               view(p.token_id(), b.token_id(), DType::i32),
               p.dtype(Role::dense_probs),
               p.dtype(Role::dense_probs_grad),
               probs,
               dp,
               p.K,
               p.C};
  MOEPERM_TRY(check_index_rules(p, b, ws, stream));
  if (!p.drop_and_pad) {
    if (p.T > 0)
      MOEPERM_TRY(with_value_type(p.value_dtype, [&](auto v) {
        dropless_kernel<decltype(v)><<<grid_of(p.T), kRowThreads, 0, stream>>>(a, ws.status);
        return launched("unpermute_grad_dropless");
      }));
  } else if (p.R > 0) {
    MOEPERM_TRY(with_value_type(p.value_dtype, [&](auto v) {
      drop_and_pad_kernel<decltype(v)>
          <<<grid_of(p.R), kRowThreads, 0, stream>>>(a, ws.slot_values, ws.status);
      return launched("unpermute_grad_drop_and_pad");
    }));
  }
  if (p.R > 0) {
    zero_unnamed_rows_kernel<<<grid_of(p.R), kRowThreads, 0, stream>>>(a.dX, ws.first_named,
                                                                       ws.status);
    MOEPERM_TRY(launched("unpermute_grad_zero_unnamed_rows"));
  }
  if (dp && p.drop_and_pad) return drop_and_pad_probs_grad(p, a, ws, stream);
  // Drop-less dP rows were zeroed and written by their token's block; without P every
  // entry is 0.
  if (p.probs == detail::ProbsWork::zero_fill) return zero_matrix(a.dP, ws.status, stream);
  return Status::success();
}

}  // namespace moeperm::cuda
