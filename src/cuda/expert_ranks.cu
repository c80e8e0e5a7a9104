// Expert-major ranks of the routing map without atomics in anything that is summed:
// 1. count_tiles: one warp per tile of 32 tokens walks the experts; a ballot gives, per
//    expert, the routed tokens of the tile (and each lane keeps its token's expert count);
// 2. scan_tiles: per expert, an exclusive scan over its tiles (one block per expert), then
//    one block scans the experts' totals into expert_offsets (offsets[E] = nnz);
// 3. the rank kernels walk the experts again: a routed (t, e) sits at expert-major position
//    offsets[e] + scan[e][tile] + (routed lanes below t in the ballot).
// Every step is a pure function of the map, so the ranks equal the reference's stable sort.
#include <cub/block/block_scan.cuh>

#include "cuda/launch.hpp"
#include "cuda/row_ops.cuh"

namespace moeperm::cuda {
namespace {

constexpr int kWarpsPerBlock = 8;
constexpr unsigned kFull = 0xffffffffu;

__device__ __forceinline__ bool routed(const DMatrix &map, int64_t t, int64_t e) {
  return *map.at(t, e) != 0;  // int8 or bool: any nonzero byte routes
}

__device__ __forceinline__ int64_t warp_tile() {
  return (static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x) / 32;
}

__device__ __forceinline__ unsigned lanes_below() { return (1u << (threadIdx.x & 31u)) - 1u; }

unsigned blocks_for_tiles(int64_t tiles) {
  return static_cast<unsigned>((tiles + kWarpsPerBlock - 1) / kWarpsPerBlock);
}

__global__ void count_tiles_kernel(DMatrix map, int64_t T, int64_t E, int64_t tiles,
                                   int32_t *counts, int64_t row_limit, DeviceStatus *status) {
  const int64_t tile = warp_tile();
  if (tile >= tiles) return;  // whole warps exit together
  const int64_t t = tile * 32 + (threadIdx.x & 31);
  const bool valid = t < T;
  int64_t row = 0;
  for (int64_t e = 0; e < E; ++e) {
    const bool r = valid && routed(map, t, e);
    const unsigned mask = __ballot_sync(kFull, r);
    if ((threadIdx.x & 31) == 0) counts[e * tiles + tile] = __popc(mask);
    row += r;
  }
  if (row_limit >= 0 && valid && row > row_limit)
    atomicMin(&status->first_bad, static_cast<unsigned long long>(t));
}

// One block per expert: exclusive scan of its tile counts in place; its total to offsets[e].
__global__ void scan_tiles_kernel(int32_t *counts, int64_t tiles, int64_t *offsets) {
  using Scan = cub::BlockScan<int64_t, 256>;
  __shared__ typename Scan::TempStorage temp;
  int32_t *c = counts + static_cast<int64_t>(blockIdx.x) * tiles;
  int64_t carry = 0;
  for (int64_t base = 0; base < tiles; base += 256) {
    const int64_t i = base + threadIdx.x;
    const int64_t v = i < tiles ? c[i] : 0;
    int64_t excl, total;
    Scan(temp).ExclusiveSum(v, excl, total);
    if (i < tiles) c[i] = static_cast<int32_t>(carry + excl);  // < T: fits int32
    carry += total;
    __syncthreads();  // temp is reused
  }
  if (threadIdx.x == 0) offsets[blockIdx.x] = carry;
}

// One block: exclusive scan of the experts' totals; offsets[E] = nnz.
__global__ void scan_experts_kernel(int64_t *offsets, int64_t E) {
  using Scan = cub::BlockScan<int64_t, 256>;
  __shared__ typename Scan::TempStorage temp;
  int64_t carry = 0;
  for (int64_t base = 0; base < E; base += 256) {
    const int64_t i = base + threadIdx.x;
    const int64_t v = i < E ? offsets[i] : 0;
    int64_t excl, total;
    Scan(temp).ExclusiveSum(v, excl, total);
    __syncthreads();  // every thread has read offsets[base..] before any is overwritten
    if (i < E) offsets[i] = carry + excl;
    carry += total;
    __syncthreads();
  }
  if (threadIdx.x == 0) offsets[E] = carry;
}

__global__ void finalize_status_kernel(DeviceStatus *st, int kind_if_bad, const int64_t *offsets,
                                       int64_t E, bool check_pairs, int64_t R, DVector sorted,
                                       DMatrix map) {
  if (st->first_bad != kNone) {
    const auto pos = static_cast<int64_t>(st->first_bad);
    st->kind = kind_if_bad;
    if (kind_if_bad == kBadSortedIndex) {
      st->bad_value = *reinterpret_cast<const int32_t *>(sorted.at(pos));
    } else {  // kTooManyExpertsInRow: the row's expert count
      long long n = 0;
      for (int64_t e = 0; e < E; ++e) n += routed(map, pos, e);
      st->bad_value = n;
    }
    st->failed = 1;
  } else if (check_pairs && offsets[E] > R) {
    st->kind = kTooManyRoutedPairs;
    st->routed_pairs = offsets[E];
    st->failed = 1;
  }
}

__global__ void rank_forward_dropless_kernel(DMatrix map, int64_t T, int64_t E, int64_t K,
                                             int64_t tiles, const int32_t *scan,
                                             const int64_t *offsets, DVector sorted, DMatrix probs,
                                             DVector permuted_probs, bool with_probs,
                                             const DeviceStatus *status) {
  if (status->failed) return;
  const int64_t tile = warp_tile();
  if (tile >= tiles) return;
  const int64_t t = tile * 32 + (threadIdx.x & 31);
  const bool valid = t < T;
  int64_t slot = 0;
  for (int64_t e = 0; e < E; ++e) {
    const bool r = valid && routed(map, t, e);
    const unsigned mask = __ballot_sync(kFull, r);
    if (r) {
      const int64_t j = offsets[e] + scan[e * tiles + tile] + __popc(mask & lanes_below());
      *reinterpret_cast<int32_t *>(sorted.at(t * K + slot)) = static_cast<int32_t>(j);
      if (with_probs) copy_element(permuted_probs.at(j), probs.at(t, e), probs.es);
      ++slot;
    }
  }
  for (; valid && slot < K; ++slot) *reinterpret_cast<int32_t *>(sorted.at(t * K + slot)) = -1;
}

__global__ void rank_forward_dp_kernel(DMatrix map, int64_t T, int64_t E, int64_t C,
                                       int64_t tiles, const int32_t *scan, const int64_t *offsets,
                                       DVector sorted, const DeviceStatus *status) {
  if (status->failed) return;
  const int64_t tile = warp_tile();
  if (tile >= tiles) return;
  const int64_t t = tile * 32 + (threadIdx.x & 31);
  const bool valid = t < T;
  for (int64_t e = 0; e < E; ++e) {
    const bool r = valid && routed(map, t, e);
    const unsigned mask = __ballot_sync(kFull, r);
    if (!valid) continue;
    const int64_t routed_before = scan[e * tiles + tile] + __popc(mask & lanes_below());
    const int64_t routed_total = offsets[e + 1] - offsets[e];
    // Routed tokens first (ascending), then the unrouted ones (ascending), truncated to C.
    const int64_t pos = r ? routed_before : routed_total + (t - routed_before);
    if (pos < C) *reinterpret_cast<int32_t *>(sorted.at(e * C + pos)) = static_cast<int32_t>(t);
  }
}

__global__ void rank_grad_probs_kernel(DMatrix map, int64_t T, int64_t E, int64_t tiles,
                                       const int32_t *scan, const int64_t *offsets, DMatrix dense,
                                       DVector permuted_probs, const DeviceStatus *status) {
  if (status->failed) return;
  const int64_t tile = warp_tile();
  if (tile >= tiles) return;
  const int64_t t = tile * 32 + (threadIdx.x & 31);
  const bool valid = t < T;
  for (int64_t e = 0; e < E; ++e) {
    const bool r = valid && routed(map, t, e);
    const unsigned mask = __ballot_sync(kFull, r);
    if (!valid) continue;
    if (r) {
      const int64_t j = offsets[e] + scan[e * tiles + tile] + __popc(mask & lanes_below());
      copy_element(dense.at(t, e), permuted_probs.at(j), dense.es);
    } else {
      zero_element(dense.at(t, e), dense.es);
    }
  }
}

}  // namespace

Status count_tiles(const detail::Plan &p, const DMatrix &map, int32_t *tile_counts,
                   int64_t row_limit, DeviceStatus *status, cudaStream_t stream) {
  const int64_t tiles = tiles_of(p.T);
  if (tiles == 0 || p.E == 0) return Status::success();
  count_tiles_kernel<<<blocks_for_tiles(tiles), kWarpsPerBlock * 32, 0, stream>>>(
      map, p.T, p.E, tiles, tile_counts, row_limit, status);
  return launched("count_tiles");
}

Status scan_tiles(const detail::Plan &p, int32_t *tile_counts, int64_t *expert_offsets,
                  cudaStream_t stream) {
  const int64_t tiles = tiles_of(p.T);
  if (p.E > 0 && tiles > 0) {
    scan_tiles_kernel<<<static_cast<unsigned>(p.E), 256, 0, stream>>>(tile_counts, tiles,
                                                                       expert_offsets);
    MOEPERM_TRY(launched("scan_tiles"));
  } else if (p.E > 0) {
    MOEPERM_TRY(cuda_status(
        cudaMemsetAsync(expert_offsets, 0, static_cast<size_t>(p.E) * sizeof(int64_t), stream),
        "cudaMemsetAsync"));
  }
  scan_experts_kernel<<<1, 256, 0, stream>>>(expert_offsets, p.E);
  return launched("scan_experts");
}

Status finalize_status(const detail::Plan &p, DeviceStatus *status, const int64_t *expert_offsets,
                       bool check_routed_pairs, const DVector &sorted_indices, const DMatrix &map,
                       cudaStream_t stream) {
  const int kind = p.op == detail::Op::permute_grad ? kBadSortedIndex : kTooManyExpertsInRow;
  finalize_status_kernel<<<1, 1, 0, stream>>>(status, kind, expert_offsets, p.E,
                                              check_routed_pairs, p.R, sorted_indices, map);
  return launched("finalize_status");
}

Status rank_forward_dropless(const detail::Plan &p, const DMatrix &map, const Workspace &ws,
                             const DVector &sorted, const DMatrix &probs,
                             const DVector &permuted_probs, cudaStream_t stream) {
  const int64_t tiles = tiles_of(p.T);
  if (tiles == 0) return Status::success();
  rank_forward_dropless_kernel<<<blocks_for_tiles(tiles), kWarpsPerBlock * 32, 0, stream>>>(
      map, p.T, p.E, p.K, tiles, ws.tile_counts, ws.expert_offsets, sorted, probs,
      permuted_probs, p.probs == detail::ProbsWork::compute, ws.status);
  return launched("rank_forward_dropless");
}

Status rank_forward_drop_and_pad(const detail::Plan &p, const DMatrix &map, const Workspace &ws,
                                 const DVector &sorted, cudaStream_t stream) {
  const int64_t tiles = tiles_of(p.T);
  if (tiles == 0 || p.C == 0) return Status::success();
  rank_forward_dp_kernel<<<blocks_for_tiles(tiles), kWarpsPerBlock * 32, 0, stream>>>(
      map, p.T, p.E, p.C, tiles, ws.tile_counts, ws.expert_offsets, sorted, ws.status);
  return launched("rank_forward_drop_and_pad");
}

Status rank_grad_probs(const detail::Plan &p, const DMatrix &map, const Workspace &ws,
                       const DMatrix &dense_probs, const DVector &permuted_probs,
                       cudaStream_t stream) {
  const int64_t tiles = tiles_of(p.T);
  if (tiles == 0) return Status::success();
  rank_grad_probs_kernel<<<blocks_for_tiles(tiles), kWarpsPerBlock * 32, 0, stream>>>(
      map, p.T, p.E, tiles, ws.tile_counts, ws.expert_offsets, dense_probs, permuted_probs,
      ws.status);
  return launched("rank_grad_probs");
}

}  // namespace moeperm::cuda
