// The ragged pair's row checks and row groups on the GPU (docs/ragged.md; the CUDA side of
// cpu/ragged_rows.cpp): sorted_indices in range or -1 (index_checks.cu), then, drop-less when
// rows need their expert, the map's expert-major ranks (expert_ranks.cu) and the first row
// past the routed pairs that names a token; each token's rows in ascending order by the
// stable radix sort of the permute Grad (a -1 sorts last, in no token's run).
#include "cuda/launch.hpp"
#include "cuda/row_ops.cuh"

namespace moeperm::cuda {
namespace {

__global__ void rows_past_pairs_kernel(DVector S, const int64_t *pairs_at, DeviceStatus *st) {
  if (st->failed) return;
  const int64_t pairs = *pairs_at;
  for (int64_t r = pairs + static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; r < S.len;
       r += static_cast<int64_t>(gridDim.x) * blockDim.x)
    if (index_at(S, r) >= 0) atomicMin(&st->first_bad, static_cast<unsigned long long>(r));
}

__global__ void finalize_rows_kernel(DeviceStatus *st, DVector S, const int64_t *pairs_at) {
  if (st->failed || st->first_bad == kNone) return;
  st->bad_value = index_at(S, static_cast<int64_t>(st->first_bad));
  st->routed_pairs = *pairs_at;
  st->kind = kRowWithoutExpert;
  st->failed = 1;
}

}  // namespace

Status check_ragged_rows(const detail::Plan &p, const detail::Buffers &b, const Workspace &ws,
                         bool need_experts, cudaStream_t stream) {
  MOEPERM_TRY(check_index_rules(p, b, ws, stream));
  if (!need_experts || p.drop_and_pad) return Status::success();
  const DMatrix map = view(p.routing_map(), b.routing_map(), p.routing_map_dtype);
  MOEPERM_TRY(count_tiles(p, map, ws, -1, stream));
  MOEPERM_TRY(scan_tiles(p, ws.tile_counts, ws.expert_offsets, stream));
  if (p.R == 0) return Status::success();
  const DVector S = view(p.sorted_indices(), b.sorted_indices(), DType::i32);
  rows_past_pairs_kernel<<<grid_of((p.R + 255) / 256), 256, 0, stream>>>(S, ws.expert_offsets + p.E,
                                                                         ws.status);
  MOEPERM_TRY(launched("ragged_rows_past_pairs"));
  finalize_rows_kernel<<<1, 1, 0, stream>>>(ws.status, S, ws.expert_offsets + p.E);
  return launched("ragged_finalize_rows");
}

Status ragged_rows_by_token(const detail::Plan &p, const detail::Buffers &b, const Workspace &ws,
                            cudaStream_t stream, const int64_t **rows) {
  const DVector S = view(p.sorted_indices(), b.sorted_indices(), DType::i32);
  const int32_t *keys = nullptr;
  return sort_slots_by_token(p, S, ws, stream, &keys, rows);
}

}  // namespace moeperm::cuda
