// Expert-major ranks of the routing map (SPEC §2's `f`), without atomics in anything summed.
// The map is cut into cells of 32 tokens (a tile, one lane each) x 32 experts (a chunk), one
// warp per cell, so that the work has T/32 * E/32 independent warps rather than a walk over
// all E experts per warp. Each lane first loads its token's 32 routing bytes (two 16-byte
// loads when the row is contiguous and aligned) into a bit mask.
// 1. count_cells: per expert, the routed tokens of the tile (a ballot per expert); per token,
//    its routed experts in the chunk (a popcount);
// 2. check_rows (forward, drop-less): a token with more than K experts is a data error;
// 3. scan_tiles: per expert, an exclusive scan over its tiles (one block per expert), then
//    one block scans the experts' totals into expert_offsets (offsets[E] = nnz);
// 4. the rank kernels: a routed (t, e) sits at expert-major position
//    offsets[e] + scan[e][tile] + (routed lanes below t in e's ballot), and is the
//    (routed experts of t before chunk) + (bits of t below e in the chunk)-th expert of t.
// Every step is a pure function of the map, so the ranks equal the reference's stable sort.
#include <cub/block/block_scan.cuh>

#include "cuda/launch.hpp"
#include "cuda/row_ops.cuh"

namespace moeperm::cuda {
namespace {

constexpr int kWarpsPerBlock = 8;
constexpr int kChunk = 32;  // experts per cell
constexpr unsigned kFull = 0xffffffffu;

__device__ __forceinline__ unsigned lane() { return threadIdx.x & 31u; }
__device__ __forceinline__ unsigned lanes_below() { return (1u << lane()) - 1u; }

struct Cell {
  int64_t tile, chunk, t, e0;
  bool valid;  // the lane's token exists
};

// Cells are handed to warps by a warp-stride loop (the grid is capped: grid_of):
//   for (int64_t w = first_warp(); w < cells; w += grid_warps())
// w is the same for a warp's 32 lanes, so whole warps enter and leave each step together
// and every ballot and shuffle sees all 32 lanes.
__device__ __forceinline__ int64_t first_warp() {
  return (static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x) / 32;
}
__device__ __forceinline__ int64_t grid_warps() {
  return static_cast<int64_t>(gridDim.x) * blockDim.x / 32;
}
__device__ __forceinline__ Cell cell_at(int64_t w, int64_t T, int64_t chunks) {
  Cell c;
  c.tile = w / chunks;
  c.chunk = w % chunks;
  c.t = c.tile * 32 + lane();
  c.e0 = c.chunk * kChunk;
  c.valid = c.t < T;
  return c;
}

// Bit i: token c.t is routed to expert c.e0 + i (any nonzero element routes: bool, int8,
// uint8, or int32 for the ragged pair, whose values a one-byte read would miss).
__device__ __forceinline__ unsigned routing_bits(const DMatrix &map, int64_t E, const Cell &c) {
  if (!c.valid) return 0;
  const int64_t n = E - c.e0 < kChunk ? E - c.e0 : kChunk;
  const char *p = map.at(c.t, c.e0);
  unsigned bits = 0;
  if (n == kChunk && map.es == 1 && map.contiguous_rows() && aligned16(p)) {
    uint4 v[2];
    v[0] = reinterpret_cast<const uint4 *>(p)[0];
    v[1] = reinterpret_cast<const uint4 *>(p)[1];
    const unsigned char *b = reinterpret_cast<const unsigned char *>(v);
#pragma unroll
    for (int i = 0; i < kChunk; ++i) bits |= static_cast<unsigned>(b[i] != 0) << i;
    return bits;
  }
  for (int64_t i = 0; i < n; ++i)
    bits |= static_cast<unsigned>(routed_element(map.at(c.t, c.e0 + i), map.es)) << i;
  return bits;
}

unsigned blocks_for_cells(int64_t cells) {
  return grid_of((cells + kWarpsPerBlock - 1) / kWarpsPerBlock);
}

__global__ void count_cells_kernel(DMatrix map, int64_t T, int64_t E, int64_t tiles, int64_t chunks,
                                   int32_t *tile_counts, int32_t *chunk_counts) {
  for (int64_t w = first_warp(); w < tiles * chunks; w += grid_warps()) {
    const Cell c = cell_at(w, T, chunks);
    const unsigned bits = routing_bits(map, E, c);
    int32_t mine = 0;  // lane i: the tile's routed tokens for expert e0 + i
#pragma unroll
    for (int i = 0; i < kChunk; ++i) {
      const unsigned m = __ballot_sync(kFull, (bits >> i) & 1u);
      if (lane() == static_cast<unsigned>(i)) mine = __popc(m);
    }
    if (c.e0 + lane() < E) tile_counts[(c.e0 + lane()) * tiles + c.tile] = mine;
    if (c.valid) chunk_counts[c.t * chunks + c.chunk] = __popc(bits);
  }
}

__global__ void check_rows_kernel(const int32_t *chunk_counts, int64_t T, int64_t chunks, int64_t K,
                                  DeviceStatus *status) {
  for (int64_t t = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; t < T;
       t += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    int64_t n = 0;
    for (int64_t c = 0; c < chunks; ++c) n += chunk_counts[t * chunks + c];
    if (n > K) atomicMin(&status->first_bad, static_cast<unsigned long long>(t));
  }
}

// One block per expert: exclusive scan of its tile counts in place; its total to offsets[e].
__global__ void scan_tiles_kernel(int32_t *counts, int64_t tiles, int64_t *offsets) {
  using Scan = cub::BlockScan<int64_t, 256>;
  __shared__ typename Scan::TempStorage temp;
  int32_t *cnt = counts + static_cast<int64_t>(blockIdx.x) * tiles;
  int64_t carry = 0;
  for (int64_t base = 0; base < tiles; base += 256) {
    const int64_t i = base + threadIdx.x;
    const int64_t v = i < tiles ? cnt[i] : 0;
    int64_t excl, total;
    Scan(temp).ExclusiveSum(v, excl, total);
    if (i < tiles) cnt[i] = static_cast<int32_t>(carry + excl);  // < T: fits int32
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
      for (int64_t e = 0; e < E; ++e) n += *map.at(pos, e) != 0;
      st->bad_value = n;
    }
    st->failed = 1;
  } else if (check_pairs && offsets[E] > R) {
    st->kind = kTooManyRoutedPairs;
    st->routed_pairs = offsets[E];
    st->failed = 1;
  }
}

// What every rank kernel needs per expert, loaded once by lane i for expert e0 + i and then
// broadcast with __shfl_sync: the expert's expert-major start, its routed tokens before this
// tile, and its total.
struct ExpertBases {
  int64_t offset = 0, before_tile = 0, total = 0;
};

__device__ __forceinline__ ExpertBases expert_bases(const Cell &c, int64_t E, int64_t tiles,
                                                    const int32_t *scan, const int64_t *offsets) {
  ExpertBases b;
  const int64_t e = c.e0 + lane();
  if (e < E) {
    b.offset = offsets[e];
    b.before_tile = scan[e * tiles + c.tile];
    b.total = offsets[e + 1] - offsets[e];
  }
  return b;
}

__global__ void rank_forward_dropless_kernel(DMatrix map, int64_t T, int64_t E, int64_t K,
                                             int64_t tiles, int64_t chunks, const int32_t *scan,
                                             const int32_t *chunk_counts, const int64_t *offsets,
                                             DVector sorted, DMatrix probs, DVector permuted_probs,
                                             bool with_probs, const DeviceStatus *status) {
  if (status->failed) return;
  for (int64_t w = first_warp(); w < tiles * chunks; w += grid_warps()) {
    const Cell c = cell_at(w, T, chunks);
    const unsigned bits = routing_bits(map, E, c);
    const ExpertBases b = expert_bases(c, E, tiles, scan, offsets);
    int64_t slot = 0;  // token t's experts in earlier chunks
    if (c.valid)
      for (int64_t k = 0; k < c.chunk; ++k) slot += chunk_counts[c.t * chunks + k];
#pragma unroll
    for (int i = 0; i < kChunk; ++i) {
      const bool r = (bits >> i) & 1u;
      const unsigned m = __ballot_sync(kFull, r);
      const int64_t start = __shfl_sync(kFull, b.offset + b.before_tile, i);
      if (r) {
        const int64_t j = start + __popc(m & lanes_below());
        const int64_t s = slot + __popc(bits & ((1u << i) - 1u));
        *reinterpret_cast<int32_t *>(sorted.at(c.t * K + s)) = static_cast<int32_t>(j);
        if (with_probs) copy_element(permuted_probs.at(j), probs.at(c.t, c.e0 + i), probs.es);
      }
    }
    // The last chunk's warp knows the token's total: its remaining slots hold -1.
    if (c.valid && c.chunk == chunks - 1)
      for (int64_t s = slot + __popc(bits); s < K; ++s)
        *reinterpret_cast<int32_t *>(sorted.at(c.t * K + s)) = -1;
  }
}

__global__ void rank_forward_dp_kernel(DMatrix map, int64_t T, int64_t E, int64_t C, int64_t tiles,
                                       int64_t chunks, const int32_t *scan, const int64_t *offsets,
                                       DVector sorted, const DeviceStatus *status) {
  if (status->failed) return;
  for (int64_t w = first_warp(); w < tiles * chunks; w += grid_warps()) {
    const Cell c = cell_at(w, T, chunks);
    const unsigned bits = routing_bits(map, E, c);
    const ExpertBases b = expert_bases(c, E, tiles, scan, offsets);
#pragma unroll
    for (int i = 0; i < kChunk; ++i) {
      const bool r = (bits >> i) & 1u;
      const unsigned m = __ballot_sync(kFull, r);
      // Tokens of the expert routed before t (the rank of t among them when t is routed).
      const int64_t before = __shfl_sync(kFull, b.before_tile, i) + __popc(m & lanes_below());
      const int64_t total = __shfl_sync(kFull, b.total, i);
      if (!c.valid || c.e0 + i >= E) continue;
      // Routed tokens first (ascending), then the unrouted ones (ascending), truncated to C.
      const int64_t pos = r ? before : total + (c.t - before);
      if (pos < C)
        *reinterpret_cast<int32_t *>(sorted.at((c.e0 + i) * C + pos)) = static_cast<int32_t>(c.t);
    }
  }
}

// The ragged pair's forward (docs/ragged.md): routed (t, e) has rank `before` among expert e's
// tokens; drop-less its row is offsets[e] + before (kept while < R), drop-and-pad e * C +
// before (kept while before < C). Each kept row gets its token (and its prob).
__global__ void rank_ragged_kernel(DMatrix map, int64_t T, int64_t E, int64_t R, int64_t C,
                                   bool drop_and_pad, int64_t tiles, int64_t chunks,
                                   const int32_t *scan, const int64_t *offsets, DVector sorted,
                                   DMatrix probs, DVector permuted_probs, bool with_probs,
                                   const DeviceStatus *status) {
  if (status->failed) return;
  for (int64_t w = first_warp(); w < tiles * chunks; w += grid_warps()) {
    const Cell c = cell_at(w, T, chunks);
    const unsigned bits = routing_bits(map, E, c);
    const ExpertBases b = expert_bases(c, E, tiles, scan, offsets);
#pragma unroll
    for (int i = 0; i < kChunk; ++i) {
      const bool r = (bits >> i) & 1u;
      const unsigned m = __ballot_sync(kFull, r);
      const int64_t before = __shfl_sync(kFull, b.before_tile, i) + __popc(m & lanes_below());
      const int64_t offset = __shfl_sync(kFull, b.offset, i);
      if (!r) continue;
      const int64_t e = c.e0 + i;
      if (drop_and_pad ? before >= C : offset + before >= R) continue;  // dropped
      const int64_t row = drop_and_pad ? e * C + before : offset + before;
      *reinterpret_cast<int32_t *>(sorted.at(row)) = static_cast<int32_t>(c.t);
      if (with_probs) copy_element(permuted_probs.at(row), probs.at(c.t, e), probs.es);
    }
  }
}

__global__ void rank_grad_probs_kernel(DMatrix map, int64_t T, int64_t E, int64_t tiles,
                                       int64_t chunks, const int32_t *scan, const int64_t *offsets,
                                       DMatrix dense, DVector permuted_probs,
                                       const DeviceStatus *status) {
  if (status->failed) return;
  for (int64_t w = first_warp(); w < tiles * chunks; w += grid_warps()) {
    const Cell c = cell_at(w, T, chunks);
    const unsigned bits = routing_bits(map, E, c);
    const ExpertBases b = expert_bases(c, E, tiles, scan, offsets);
#pragma unroll
    for (int i = 0; i < kChunk; ++i) {
      const bool r = (bits >> i) & 1u;
      const unsigned m = __ballot_sync(kFull, r);
      const int64_t start = __shfl_sync(kFull, b.offset + b.before_tile, i);
      if (!c.valid || c.e0 + i >= E) continue;
      if (r)
        copy_element(dense.at(c.t, c.e0 + i), permuted_probs.at(start + __popc(m & lanes_below())),
                     dense.es);
      else
        zero_element(dense.at(c.t, c.e0 + i), dense.es);
    }
  }
}

}  // namespace

// At least one chunk, so that E = 0 still gives every token its cell (drop-less: all -1).
int64_t chunks_of(int64_t E) { return E == 0 ? 1 : (E + kChunk - 1) / kChunk; }

Status count_tiles(const detail::Plan &p, const DMatrix &map, const Workspace &ws,
                   int64_t row_limit, cudaStream_t stream) {
  const int64_t tiles = tiles_of(p.T), chunks = chunks_of(p.E);
  if (tiles == 0) return Status::success();
  count_cells_kernel<<<blocks_for_cells(tiles * chunks), kWarpsPerBlock * 32, 0, stream>>>(
      map, p.T, p.E, tiles, chunks, ws.tile_counts, ws.chunk_counts);
  MOEPERM_TRY(launched("count_cells"));
  if (row_limit < 0) return Status::success();
  check_rows_kernel<<<grid_of((p.T + 255) / 256), 256, 0, stream>>>(ws.chunk_counts, p.T, chunks,
                                                                    row_limit, ws.status);
  return launched("check_rows");
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

Status finalize_status(const detail::Plan &p, DeviceStatus *status, int kind,
                       const int64_t *expert_offsets, bool check_routed_pairs,
                       const DVector &sorted_indices, const DMatrix &map, cudaStream_t stream) {
  finalize_status_kernel<<<1, 1, 0, stream>>>(status, kind, expert_offsets, p.E, check_routed_pairs,
                                              p.R, sorted_indices, map);
  return launched("finalize_status");
}

Status rank_forward_dropless(const detail::Plan &p, const DMatrix &map, const Workspace &ws,
                             const DVector &sorted, const DMatrix &probs,
                             const DVector &permuted_probs, cudaStream_t stream) {
  const int64_t tiles = tiles_of(p.T), chunks = chunks_of(p.E);
  if (tiles == 0) return Status::success();
  rank_forward_dropless_kernel<<<blocks_for_cells(tiles * chunks), kWarpsPerBlock * 32, 0,
                                 stream>>>(
      map, p.T, p.E, p.K, tiles, chunks, ws.tile_counts, ws.chunk_counts, ws.expert_offsets, sorted,
      probs, permuted_probs, p.probs == detail::ProbsWork::compute, ws.status);
  return launched("rank_forward_dropless");
}

Status rank_forward_drop_and_pad(const detail::Plan &p, const DMatrix &map, const Workspace &ws,
                                 const DVector &sorted, cudaStream_t stream) {
  const int64_t tiles = tiles_of(p.T), chunks = chunks_of(p.E);
  if (tiles == 0 || chunks == 0 || p.C == 0) return Status::success();
  rank_forward_dp_kernel<<<blocks_for_cells(tiles * chunks), kWarpsPerBlock * 32, 0, stream>>>(
      map, p.T, p.E, p.C, tiles, chunks, ws.tile_counts, ws.expert_offsets, sorted, ws.status);
  return launched("rank_forward_drop_and_pad");
}

Status rank_ragged_forward(const detail::Plan &p, const DMatrix &map, const Workspace &ws,
                           const DVector &sorted, const DMatrix &probs,
                           const DVector &permuted_probs, cudaStream_t stream) {
  const int64_t tiles = tiles_of(p.T), chunks = chunks_of(p.E);
  if (tiles == 0 || p.E == 0 || p.R == 0) return Status::success();
  rank_ragged_kernel<<<blocks_for_cells(tiles * chunks), kWarpsPerBlock * 32, 0, stream>>>(
      map, p.T, p.E, p.R, p.C, p.drop_and_pad, tiles, chunks, ws.tile_counts, ws.expert_offsets,
      sorted, probs, permuted_probs, p.probs == detail::ProbsWork::compute, ws.status);
  return launched("rank_ragged_forward");
}

Status rank_grad_probs(const detail::Plan &p, const DMatrix &map, const Workspace &ws,
                       const DMatrix &dense_probs, const DVector &permuted_probs,
                       cudaStream_t stream) {
  const int64_t tiles = tiles_of(p.T), chunks = chunks_of(p.E);
  if (tiles == 0 || chunks == 0) return Status::success();
  rank_grad_probs_kernel<<<blocks_for_cells(tiles * chunks), kWarpsPerBlock * 32, 0, stream>>>(
      map, p.T, p.E, tiles, chunks, ws.tile_counts, ws.expert_offsets, dense_probs, permuted_probs,
      ws.status);
  return launched("rank_grad_probs");
}

}  // namespace moeperm::cuda
