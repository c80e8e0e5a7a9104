// Host-side launchers of the CUDA kernels, one group per file. They enqueue on `stream` and
// return the launch error, if any (cudaGetLastError), as a Status.
#pragma once

#include <cuda_runtime.h>

#include "core/limits.hpp"
#include "core/op_desc.hpp"
#include "core/plan.hpp"
#include "core/status.hpp"
#include "cuda/device_elements.cuh"
#include "cuda/device_views.cuh"
#include "cuda/grid_cap.hpp"

namespace moeperm::cuda {

using detail::Status;

// Tokens per tile of the rank kernels: one lane per token.
inline constexpr int64_t kTileTokens = 32;
inline int64_t tiles_of(int64_t T) { return (T + kTileTokens - 1) / kTileTokens; }
// Chunks of 32 experts (at least one); expert_ranks.cu.
int64_t chunks_of(int64_t E);

// The workspace views every run receives (Plan::ws_slot ids resolved to pointers).
struct Workspace {
  DeviceStatus *status = nullptr;
  int32_t *tile_counts = nullptr;     // [E][tiles]: routed tokens per tile, then their scan
  int32_t *chunk_counts = nullptr;    // [T][chunks]: each token's routed experts per chunk
  int64_t *expert_offsets = nullptr;  // [E + 1]: expert-major start of each expert; [E] = nnz
  int32_t *sort_keys = nullptr;       // [2][R]  drop-and-pad backward: S, then sorted
  int64_t *sort_values = nullptr;     // [2][R]  j, then in key order (stable)
  int64_t *token_runs = nullptr;      // [2][T]  [start, end) of each token's run
  void *sort_temp = nullptr;          // CUB's temporary storage
  size_t sort_temp_bytes = 0;
  unsigned long long *first_named = nullptr;  // [R]  a unique index rule's first positions
  float *slot_values = nullptr;           // [R]  the unpermute Grad's dot products; ragged: per row
  unsigned long long *winners = nullptr;  // [T * E]  1 + the slot that writes each dP entry
  int64_t *chunk_starts = nullptr;        // [2S + 1]  sort_chunks: input chunk starts, sorted ones
};

// expert_ranks.cu: expert-major ranks of the routing map (SPEC §2's `f`).
// Fills ws.tile_counts and ws.chunk_counts; row_limit >= 0 also flags the first token with
// more than row_limit experts in ws.status.
Status count_tiles(const detail::Plan &p, const DMatrix &map, const Workspace &ws,
                   int64_t row_limit, cudaStream_t stream);
Status scan_tiles(const detail::Plan &p, int32_t *tile_counts, int64_t *expert_offsets,
                  cudaStream_t stream);
// Fills in the offending value and `failed` (Note [Device errors]); `kind` is the error a
// bad position means for the calling kernel (kBadSortedIndex, kTooManyExpertsInRow).
Status finalize_status(const detail::Plan &p, DeviceStatus *status, int kind,
                       const int64_t *expert_offsets, bool check_routed_pairs,
                       const DVector &sorted_indices, const DMatrix &map, cudaStream_t stream);
// Forward, drop-less: sortedIndicesOut and permuteProbsOut from the ranks.
Status rank_forward_dropless(const detail::Plan &p, const DMatrix &map, const Workspace &ws,
                             const DVector &sorted, const DMatrix &probs,
                             const DVector &permuted_probs, cudaStream_t stream);
// Forward, drop-and-pad: sortedIndicesOut (routed tokens, then unrouted, truncated to C).
Status rank_forward_drop_and_pad(const detail::Plan &p, const DMatrix &map, const Workspace &ws,
                                 const DVector &sorted, cudaStream_t stream);
// Backward, drop-less: probsGrad[t, e] = P[rank of (e, t)] where routed, else 0.
Status rank_grad_probs(const detail::Plan &p, const DMatrix &map, const Workspace &ws,
                       const DMatrix &dense_probs, const DVector &permuted_probs,
                       cudaStream_t stream);

// index_checks.cu: every index rule of the plan's operator and mode, in order (range, then
// `unique`), into the status word; ws.first_named then holds the last unique rule's first
// positions (kNone: a value no position names).
Status check_index_rules(const detail::Plan &p, const detail::Buffers &b, const Workspace &ws,
                         cudaStream_t stream);

// permute_grad_cuda.cu: a stable radix sort of the positions j < ids.len by their (checked)
// token id (a -1 sorts last, as T, in no token's run); on return (*values)[pos] is the j at
// sorted position pos, (*keys)[pos] its token, and ws.token_runs[t], ws.token_runs[T + t]
// the [start, end) of token t's positions.
Status sort_slots_by_token(const detail::Plan &p, const DVector &ids, const Workspace &ws,
                           cudaStream_t stream, const int32_t **keys, const int64_t **values);

// The ragged pair's forward (docs/ragged.md): each kept routed pair's row gets its token in
// `sorted` (and its prob), from the ranks of count_tiles / scan_tiles.
Status rank_ragged_forward(const detail::Plan &p, const DMatrix &map, const Workspace &ws,
                           const DVector &sorted, const DMatrix &probs,
                           const DVector &permuted_probs, cudaStream_t stream);

// ragged_rows_cuda.cu, for the ragged kernels that read a row -> token index: the index rule
// (index_checks.cu) and, when rows need their expert in drop-less mode, the map's ranks
// (ws.expert_offsets: each expert's first row, [E] = the routed pairs) and the rule that a
// row past the pairs names no token (kRowWithoutExpert). Nothing is written on failure.
Status check_ragged_rows(const detail::Plan &p, const detail::Buffers &b, const Workspace &ws,
                         bool need_experts, cudaStream_t stream);
// Each token's rows in ascending order: (*rows)[ws.token_runs[t] .. ws.token_runs[T + t]).
Status ragged_rows_by_token(const detail::Plan &p, const detail::Buffers &b, const Workspace &ws,
                            cudaStream_t stream, const int64_t **rows);

// permute_cuda.cu / permute_grad_cuda.cu / unpermute_cuda.cu / unpermute_grad_cuda.cu /
// ragged_permute_cuda.cu / ragged_unpermute_cuda.cu.
Status permute(const detail::Plan &p, const detail::Buffers &b, const Workspace &ws,
               cudaStream_t stream);
Status permute_grad(const detail::Plan &p, const detail::Buffers &b, const Workspace &ws,
                    cudaStream_t stream);
Status unpermute(const detail::Plan &p, const detail::Buffers &b, const Workspace &ws,
                 cudaStream_t stream);
Status unpermute_grad(const detail::Plan &p, const detail::Buffers &b, const Workspace &ws,
                      cudaStream_t stream);
Status ragged_permute(const detail::Plan &p, const detail::Buffers &b, const Workspace &ws,
                      cudaStream_t stream);
Status ragged_permute_grad(const detail::Plan &p, const detail::Buffers &b, const Workspace &ws,
                           cudaStream_t stream);
Status ragged_unpermute(const detail::Plan &p, const detail::Buffers &b, const Workspace &ws,
                        cudaStream_t stream);
Status ragged_unpermute_grad(const detail::Plan &p, const detail::Buffers &b, const Workspace &ws,
                             cudaStream_t stream);
// sort_chunks_cuda.cu: both directions (the plan's operator picks).
Status sort_chunks(const detail::Plan &p, const detail::Buffers &b, const Workspace &ws,
                   cudaStream_t stream);

// Small shared kernels (fill.cu).
Status zero_matrix(const DMatrix &m, const DeviceStatus *status, cudaStream_t stream);
Status zero_vector(const DVector &v, const DeviceStatus *status, cudaStream_t stream);

// A CUDA error as a Status (ACLNN_ERR_RUNTIME_ERROR, naming the call).
Status cuda_status(cudaError_t err, const char *what);
inline Status launched(const char *kernel) { return cuda_status(cudaGetLastError(), kernel); }

// Calls f(V{}) with the element policy (DBf16, DF16, DF32) of a value dtype: the one
// dispatch from a plan's runtime dtype to a kernel template.
template <class F>
Status with_value_type(DType dtype, F &&f) {
  switch (dtype) {
    case DType::bf16: return f(DBf16{});
    case DType::f16: return f(DF16{});
    default: return f(DF32{});
  }
}

}  // namespace moeperm::cuda

namespace moeperm::cuda {
// Blocks for a grid-stride loop over n items (the grid's x limit is far above any real n;
// the cap only bounds launch size, the loop covers the rest). Every kernel launched with a
// grid from here loops: the cap drops no work.
inline unsigned grid_of(int64_t n) {
  const int64_t cap = max_grid_blocks();
  return static_cast<unsigned>(n < cap ? n : cap);
}
// Blocks of 256 threads for a grid-stride loop with one thread per item.
inline unsigned blocks_for(int64_t n) { return grid_of((n + 255) / 256); }
}  // namespace moeperm::cuda
